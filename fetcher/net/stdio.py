"""The local end of an interactive session: the input descriptor (terminal, pipe, socket, file) read as bytes come.

The telnet session (`fetch --interactive`) copies what the user types to
the server; this is where those bytes are read without blocking the loop.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from typing import TYPE_CHECKING

from fetcher.net import aio

if TYPE_CHECKING:
    import trio


class InputReader:
    """Asynchronous reads of the input fd.

    A pipe, a socket or a terminal is polled with trio's FdStream on a file
    description of its own (the terminal's device reopened, or the pipe via
    /proc/self/fd), so that O_NONBLOCK, which FdStream sets, does not leak
    onto the stdout or stderr that often share stdin's description; where no
    fresh one can be opened, a dup is used and its flags are put back
    afterwards.  A regular file or /dev/null cannot be polled; it is read in
    a worker thread.  On trio only (the interactive session's loop).
    """

    def __init__(self, fd: int) -> None:
        import trio

        self.fd = fd
        self._stream: trio.lowlevel.FdStream | None = None
        self._restore_flags: tuple[int, int] | None = None
        mode = os.fstat(fd).st_mode
        if os.isatty(fd) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            own = self._reopen(fd)
            if own is None:
                own = os.dup(fd)
                self._restore_flags = (fd, fcntl.fcntl(fd, fcntl.F_GETFL))
            self._stream = trio.lowlevel.FdStream(own)

    @staticmethod
    def _reopen(fd: int) -> int | None:
        candidates = []
        if os.isatty(fd):
            with contextlib.suppress(OSError):
                candidates.append(os.ttyname(fd))
        candidates.append(f"/proc/self/fd/{fd}")
        for path in candidates:
            try:
                return os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC)
            except OSError:
                continue
        return None

    @property
    def threaded(self) -> bool:
        return self._stream is None

    async def receive(self) -> bytes:
        if self._stream is not None:
            return bytes(await self._stream.receive_some(4096))
        return await aio.run_sync(os.read, self.fd, 4096, abandon_on_cancel=True)

    async def aclose(self) -> None:
        if self._stream is not None:
            await self._stream.aclose()
        if self._restore_flags is not None:
            fd, flags = self._restore_flags
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETFL, flags)
