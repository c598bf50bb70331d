"""The archive room: the structured tap of every retrieval and the WARC recorder that keeps it.

`tap` is what the core and the handlers report to (loaded only when
something records); `recorder` is the only module that imports warcio, and
only for `--warc-file`.  Nothing is imported here, so that loading one
module of the room never loads the others.
"""
