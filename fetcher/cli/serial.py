"""`fetch -i FILE` without `-d`: the URLs one after another, each as `fetch URL` treats it.

`--help` says documents go to stdout when `-d` is not given, and so they do:
the documents of the command line and of the input list are written to
stdout in order, one after another (as curl writes several URLs), a listing
is printed as a listing, and `-O` saves each under its name as `fetch -O
URL URL` does.  Nothing is saved under a name the user did not ask for, so
no file of the current directory is replaced (issue 29: such a run used to
save into the current directory and replaced the user's own `hello.txt`).

The runs that must save files (`-r`, `--manifest`, `--skip-done`,
`--cluster`) need `-d DIR`; without it they are refused before anything runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Callable, Iterator

from fetcher.errors import UsageError
from fetcher.net import aio

#: Options that make a bulk run save files and write records of them: a directory is required.
_SAVING = (("recursive", "-r"), ("manifest", "--manifest"), ("skip_done", "--skip-done"), ("cluster", "--cluster"))


def prints_documents(args: argparse.Namespace) -> bool:
    """True for a bulk-looking run without -d that goes one URL at a time to stdout (or -O names).

    Refuses (UsageError) a run that saves files (`-r`, `--manifest`, ...) but says nowhere where.
    """
    if args.directory:
        return False
    saving = [option for name, option in _SAVING if getattr(args, name, None)]
    if saving:
        raise UsageError(
            f"{' and '.join(saving)} {'saves' if saving == ['-r'] else 'records'} files: give -d DIR for where they go",
            hint="-d . saves in the current directory (an existing file of the same name is replaced there); "
            "without -d, fetch -i FILE prints the documents to stdout",
        )
    if args.output and args.output != "-" and args.input_file:
        raise UsageError("-o names one file; give one URL, or use -d DIR for many")
    return True


class InputURLs:
    """The command line's URLs, then those of -i FILE (or stdin) as the run reaches them.

    The file is opened at once (a missing one is exit 2 before anything
    runs) and read a URL at a time in a worker thread, so `producer | fetch
    -i -` prints each document as its URL arrives and a long list is never
    held in memory.  `count`: the URLs handed out so far.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.count = 0
        self._urls: list[str] = list(args.urls)
        self._sources: list[Iterator[str]] = []
        self._close: Callable[[], None] | None = None
        if args.input_file:
            from fetcher.cli.inputs import Inputs, read_url_lines

            # Opened now (a missing file is exit 2); stdin is read line by line below, not up front.
            inputs = Inputs((), args.input_file, streamed=True)
            self._close = inputs.close
            self._sources.append(job.text for job in inputs)
            if args.input_file == "-":
                self._sources.append(text for text, _ in read_url_lines(sys.stdin))

    def __aiter__(self) -> AsyncIterator[str]:
        return self._each()

    async def _each(self) -> AsyncIterator[str]:
        try:
            for text in self._urls:
                self.count += 1
                yield text
            for source in self._sources:
                while (text := await aio.run_sync(next, source, None, abandon_on_cancel=True)) is not None:
                    self.count += 1
                    yield text
        finally:
            if self._close is not None:
                self._close()
