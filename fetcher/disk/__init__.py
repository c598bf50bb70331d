"""The disk layer: `.part` naming, atomic placing, writers, zero-copy receive, resume records, the run's own files.

names (`.part` names, what is at a target), place (exclusive creation,
renameat2, directory descriptors), partfile (the `.part` file of one
transfer), writer (`Download`, the bulk lane's `BodyWriter`), save (a
document written from the event loop), direct (splice and reused buffers),
resume (-C's records), reserved (the run's own files).
"""
