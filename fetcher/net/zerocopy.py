"""Reads that make no bytes object: into a caller's buffer, or into a pipe inside the kernel (splice).

The disk layer's direct path (`fetcher.disk.direct`) moves a large body
with these; they keep every timeout and rule of `Stream` reads.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from fetcher.net import aio
from fetcher.net.budget import current_budget
from fetcher.net.deadlines import TooSlow, fail_at
from fetcher.net.stream import Stream


class ZeroCopyStream(Stream):
    """`receive_into` a buffer, `splice_into` a pipe."""

    async def receive_into(self, view: memoryview) -> int:
        """Like `receive_some`, into `view`: the count, 0 at end of stream (no bytes object per read).

        Under the same timeouts and rules as every read; only for a plain TCP
        stream (not `is_tls`), whose socket it reads directly.
        """
        if self._buffer:
            count = min(len(view), len(self._buffer))
            view[:count] = self._buffer[:count]
            del self._buffer[:count]
            return count
        if self._eof:
            return 0
        if self.is_tls or not aio.on_trio():  # TLS, or asyncio's transport reading the socket itself
            data = await self._receive(len(view), "receiving")
            view[: len(data)] = data
            return len(data)
        try:
            return await self._socket_read(aio.recv_into, view)
        except OSError as error:
            raise self._broken(error) from None

    async def _socket_read(self, read: Callable[..., Awaitable[int]], *args: Any) -> int:
        """`read(socket, *args)` on the plain socket under every timeout of a `Stream` read, its count counted.

        The one timed read of both ways in; an OSError is the caller's to judge
        (a broken connection, or a socket that cannot splice).
        """
        sock = self._plain_socket()
        budget = current_budget.get()
        started = aio.current_time()
        until, why = self._read_until(budget, started)
        try:
            with fail_at(until):
                count = await read(sock, *args)
        except TooSlow:
            raise self._read_too_slow(budget, why, "receiving") from None
        self._count(count, budget, started)
        return count

    def _plain_socket(self) -> socket.socket:
        """The TCP socket under a plain (not TLS) connection."""
        if self._socket is None:
            if self._plain is not None:
                self._socket = self._plain
            else:
                import anyio.abc

                assert self.stream is not None
                self._socket = self.stream.extra(anyio.abc.SocketAttribute.raw_socket)
        return self._socket

    @property
    def can_splice(self) -> bool:
        """True when `splice_into` moves bytes inside the kernel: Linux, a plain TCP stream, on trio."""
        return self._splice_works and hasattr(os, "splice") and not self.is_tls and aio.on_trio()

    async def splice_into(self, pipe: int, count: int) -> int:
        """Like `receive_into`, into a pipe with splice(2) (only when `can_splice`): the count, 0 at end of stream."""
        if not self._buffer and not self._eof and self._splice_works:
            try:
                return await self._socket_read(aio.splice_from, pipe, count)
            except OSError as error:
                if error.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise self._broken(error) from None
                self._splice_works = False  # a kernel or socket without splice: nothing was moved, read instead
        # Buffered bytes, the end, or no splice: an ordinary read, written into the caller's empty pipe
        # (which takes `count` bytes: the caller asks no more than the pipe holds).
        data = await self.receive_some(count)
        written = os.write(pipe, data) if data else 0
        if written < len(data):  # pragma: no cover - a pipe smaller than its owner said
            self._buffer[:0] = data[written:]
        return written
