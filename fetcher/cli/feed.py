"""A bulk run's input, taken on a window at a time: -i FILE as URLs finish, -i - as stdin delivers them.

A list of millions is read as the run takes its URLs on, so memory does
not grow with the list: the run's `Window` (fetcher.bulk.window) holds at
most `WINDOW` URLs taken on and not finished, and the rest of the list
waits, unread, until half of them are.  Standard input is read as it
arrives (`find ... | fetch -i - -d out`), one thread hop per read of up to
64 KiB, with no line held past fetcher.cli.inputs' caps.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from fetcher.bulk.window import Window
from fetcher.cli.inputs import LineCutter, UrlLines
from fetcher.cli.jobs import Job
from fetcher.net import aio

if TYPE_CHECKING:
    from fetcher.cli.run import BulkRun

#: Input URLs in the run at once (read but not finished): a list of millions is read
#: as the run takes them on, so memory does not grow with the list.
WINDOW = 8192
#: Lines of input read between two checkpoints.
READ_BATCH = 512


class Feeder:
    """Takes the input of `run` on into its window (see the module docstring)."""

    def __init__(self, run: BulkRun) -> None:
        self.run = run
        self.window = Window(WINDOW)
        #: The input not read yet (`Inputs`, taken a window at a time).
        self._inputs: Iterator[Job] | None = None

    def begin(self, jobs: Iterable[Job], stream: int | None) -> bool:
        """Take the first window of `jobs` on; True while more of them is to be read (`feed_inputs`)."""
        self._inputs = iter(jobs)
        self.window.feeding = True
        reading = self._take(WINDOW)
        if not reading and stream is None:
            self._ended()  # it fit in one window
        return reading

    def rest(self) -> Iterator[Job]:
        """The input not read yet (Ctrl-C records it), once: the feeder reads no more."""
        rest, self._inputs = self._inputs, None
        return rest or iter(())

    def _stopped(self) -> bool:
        return self.run.fatal is not None

    def _take(self, lines: int) -> bool:
        """Up to `lines` more URLs of the input, while the window has room; False once it is read."""
        assert self._inputs is not None
        window = self.window
        try:
            for _ in range(lines):
                if window.full or self._stopped():
                    return True
                job = next(self._inputs, None)
                if job is None:
                    break
                self.run.add_inputs((job,))
            else:
                return True
        except OSError as error:
            self.run.progress.log(f"fetch: cannot read -i {self.run.options.input_file}: {error.strerror or error}; "
                                  "the URLs read so far are retrieved")  # fmt: skip
        self._inputs = None
        return False

    def _ended(self) -> None:
        """The whole input is read: the total is known (unless -r keeps finding URLs), and a run
        with nothing under way ends."""
        if not self.run.options.recursive:
            self.run.progress.total_known()
        self.window.end_of_input()

    async def feed_inputs(self) -> None:
        """-i FILE: the rest of the list, a window at a time as URLs finish."""
        try:
            while self._inputs is not None and not self._stopped():
                await self.window.wait_for_room(self._stopped)
                if not self._take(READ_BATCH):
                    break
                await aio.checkpoint()
        finally:
            self._ended()

    async def feed_stream(self, fd: int) -> None:
        """-i -: take URLs on as stdin delivers them, so a producer can still be writing."""
        import codecs

        reader, cutter = UrlLines(), LineCutter()
        decode = codecs.getincrementaldecoder("utf-8")("surrogateescape").decode
        try:
            while not cutter.ended:
                data = await aio.run_sync(os.read, fd, 1 << 16, abandon_on_cancel=True)
                lines = cutter.feed(decode(data, final=not data))
                if not data:
                    lines += cutter.close()
                found = [item for line in lines for item in reader.feed(line)]
                if not data or cutter.ended:
                    found += reader.close()
                self.run.add_inputs([Job(text=text, line=number) for text, number in found])
                if not data:
                    break
                await self.window.wait_for_room(self._stopped)
        except OSError as error:
            self.run.progress.log(f"fetch: cannot read -i -: {error.strerror or error}; "
                                  "the URLs read so far are retrieved")  # fmt: skip
        finally:
            self._ended()
