"""The `.part` file of one transfer, touched only from worker threads (or inline, for a few KiB).

It opens the `.part` afresh or for -C (checking it is a regular file of its
own, and hashing what is already there), or a special file named with -o
where it is; takes batches of chunks, a reused buffer (the direct path) or
a pipe's bytes (splice); keeps the response's validators beside it for a
later -C (`fetcher.disk.resume`); and on `finish` sets its time and puts it
in place (`fetcher.disk.place`).  Every OSError leaves as an `OutputError`.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from fetcher.disk.names import output_error
from fetcher.disk.place import create_exclusive, into_place
from fetcher.errors import OutputError
from fetcher.text import TerminalText

if TYPE_CHECKING:
    from fetcher.resource import Resource

#: A `.part` file to resume: an existing regular file, not reached through a symlink.
_RESUME = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
#: A special file named with -o (/dev/null, a FIFO, a terminal): written where it is.
_IN_PLACE = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class PartFile:
    """The `.part` file (or a special file written in place), touched only from worker threads.

    Every OSError leaves here as an `OutputError` (exit 9), with what did
    arrive still in `.part` for -C.
    """

    def __init__(
        self, partial: Path, start: int, digest: Any, *, in_place: Path | None = None,
        source: Resource | None = None, resumed: bool = False, user_named: bool = False,
    ) -> None:  # fmt: skip
        self.partial = partial
        self.start = start
        self.digest = digest
        self.in_place = in_place
        #: The user typed the target (-o): it may be one of the run's own files (see fetcher.disk.reserved).
        self.user_named = user_named
        self.sink: IO[bytes] | None = None
        self.terminal: TerminalText | None = None
        #: The response whose validators are kept beside a `.part` left for -C (fetcher/disk/resume.py).
        self.source = source
        #: A record may lie beside `.part` (this transfer resumed, or kept it): removed with it.
        self.recorded = resumed

    @property
    def where(self) -> Path:
        return self.in_place or self.partial

    def open(self, keep_record: bool = True) -> None:
        try:
            self._open()
        except OSError as error:
            raise output_error(error, self.where) from None
        if keep_record and self.source is not None and self.in_place is None:
            self._keep_record()

    def _keep_record(self) -> None:
        """What the response said about its document, beside the `.part` a -C may continue."""
        from fetcher.disk import resume

        assert self.source is not None
        if self.start and os.path.lexists(resume.record_path(self.partial)):
            return  # the handler checked the record against this response: it stands
        self.recorded = resume.record(self.partial, resume.Validators.of(self.source)) or self.recorded

    def _open(self) -> None:
        if self.in_place is not None:
            fd = os.open(self.in_place, _IN_PLACE)
            if stat.S_ISREG(os.fstat(fd).st_mode):  # `-o /dev/stdout >> log`: after what is there, as the shell would
                os.lseek(fd, 0, os.SEEK_END)
            if os.isatty(fd):  # -o /dev/tty: a terminal gets escaped text, as on stdout
                self.terminal = TerminalText()
            self.sink = os.fdopen(fd, "wb")
            return
        if not self.start:
            self.sink = os.fdopen(create_exclusive(self.partial), "wb")
            return
        fd = os.open(self.partial, _RESUME)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            raise OutputError(
                f"{self.partial} is not a regular file of its own (a special file or a hard link); not resuming it",
                hint="remove it and run again",
            )
        sink = os.fdopen(fd, "r+b")
        self.sink = sink
        if self.digest is not None:
            remaining = self.start
            while remaining > 0:
                block = sink.read(min(remaining, 1 << 20))
                if not block:
                    break
                self.digest.update(block)
                remaining -= len(block)
        sink.truncate(self.start)
        sink.seek(self.start)

    def write(self, chunks: list[bytes]) -> None:
        assert self.sink is not None
        try:
            for chunk in chunks:
                self.sink.write(self.terminal.feed(chunk).encode("utf-8") if self.terminal else chunk)
                if self.digest is not None:
                    self.digest.update(chunk)
            self.sink.flush()
        except OSError as error:
            raise output_error(error, self.where) from None

    def write_view(self, view: memoryview, count: int) -> None:
        """The first `count` bytes of a reused buffer, straight to the file descriptor (the direct path)."""
        assert self.sink is not None and self.terminal is None
        data = view[:count]
        try:
            fd = self.sink.fileno()
            while data:
                data = data[os.write(fd, data) :]
        except OSError as error:
            raise output_error(error, self.where) from None
        if self.digest is not None:
            self.digest.update(view[:count])

    def drain_pipe(self, pipe: int, count: int) -> None:
        """Move `count` bytes waiting in `pipe` into the file (splice(2); a read and a write where it cannot)."""
        assert self.sink is not None and self.terminal is None and self.digest is None
        try:
            fd = self.sink.fileno()
            while count:
                try:
                    moved = os.splice(pipe, fd, count, flags=os.SPLICE_F_MOVE)
                except OSError as error:
                    if error.errno != errno.EINVAL:  # EINVAL: this file system takes no splice
                        raise
                    data = os.read(pipe, count)
                    moved = len(data)
                    while data:
                        data = data[os.write(fd, data) :]
                count -= moved
        except OSError as error:
            raise output_error(error, self.where) from None

    def close(self) -> None:
        if self.sink is not None:
            sink, self.sink = self.sink, None
            try:
                if self.terminal is not None:
                    sink.write(self.terminal.close().encode("utf-8"))
                sink.close()
            except OSError as error:
                raise output_error(error, self.where) from None

    def finish(self, target: Path, modified: float | None) -> None:
        """The body is complete: into place under `target`'s name (in place for a special file named with -o).

        The target was checked before the first byte, but a transfer takes
        time: the rename replaces nothing unless the target, checked again,
        is still a regular file (or a symlink to nothing).  Refused, the
        whole body stays in `.part`.
        """
        try:
            if modified is not None and self.sink is not None and self.in_place is None:
                os.utime(self.sink.fileno(), (modified, modified))
            self.close()
            if self.in_place is None:
                into_place(os.fspath(self.partial), target, check_reserved=not self.user_named)
        except OSError as error:
            raise output_error(error, target) from None
        if self.recorded:
            from fetcher.disk.resume import forget

            forget(self.partial)

    def write_all(self, chunks: list[bytes], target: Path, modified: float | None, complete: bool) -> None:
        self.open(keep_record=not complete)
        try:
            self.write(chunks)
        except BaseException:
            self.quiet_close()
            raise
        if complete:
            self.finish(target, modified)
        else:
            self.close()

    def quiet_close(self) -> None:
        try:
            self.close()
        except OutputError:
            pass
