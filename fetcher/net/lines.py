"""Line I/O on a stream: lines read under one deadline and a cap, and the one line writer that refuses CR, LF and NUL.

Every protocol sends its command lines through `send_line` (the guard's
injection rule, again, as defence in depth) and traces what it reads
with `trace_received`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from fetcher.errors import LimitExceeded, ProtocolError, UnsafeURL
from fetcher.net.stream import RECEIVE_SIZE, Stream
from fetcher.net.tracing import trace
from fetcher.text import escape

MAX_LINE = 64 * 1024


class LineStream(Stream):
    """Lines and exact counts read from the buffer; protocol lines sent and traced."""

    async def read_line(self, limit: int = MAX_LINE, *, limit_name: str | None = None) -> bytes:
        """One line including its LF (b"" at end of stream; a final unterminated line as is).

        With `limit_name` (a `Limits` field, e.g. "line_bytes") a line longer
        than `limit` raises LimitExceeded naming it, however it arrived.  The
        whole line must arrive within --timeout (`within`), not each read of it.
        """
        with self.within(what="a line"):
            return await self._read_line(limit, limit_name)

    async def _read_line(self, limit: int, limit_name: str | None) -> bytes:
        start = 0
        while True:
            newline = self._buffer.find(b"\n", start)
            if newline >= 0:
                if limit_name is not None and newline > limit + 1:  # CR LF not counted
                    raise LimitExceeded("bytes in one line", limit, limit_name)
                line = bytes(self._buffer[: newline + 1])
                del self._buffer[: newline + 1]
                return line
            if len(self._buffer) > limit:
                if limit_name is not None:
                    raise LimitExceeded("bytes in one line", limit, limit_name)
                raise ProtocolError(f"{self.host}:{self.port} sent a line longer than {limit} bytes")
            start = len(self._buffer)
            if not await self._fill("reading a line"):
                line = bytes(self._buffer)
                self._buffer.clear()
                return line

    async def read_exact(self, count: int) -> bytes:
        while len(self._buffer) < count:
            if not await self._fill("reading"):
                raise ProtocolError(
                    f"{self.host}:{self.port} closed the connection after {len(self._buffer)} of {count} bytes"
                )
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    async def iter_to_close(self, chunk_size: int = RECEIVE_SIZE) -> AsyncIterator[bytes]:
        """Every remaining byte until the server closes the stream."""
        while True:
            data = await self.receive_some(chunk_size)
            if not data:
                return
            yield data

    async def send_line(self, line: str | bytes, *, shown: str | None = None) -> None:
        """Send one protocol line plus CRLF; refuse CR, LF and NUL inside it.

        `shown` replaces the line in the trace (e.g. "PASS ****").
        """
        data = line.encode("utf-8", "surrogateescape") if isinstance(line, str) else line
        for forbidden in (b"\r", b"\n", b"\x00"):
            if forbidden in data:
                raise UnsafeURL(
                    f"refusing to send a line containing {forbidden!r}",
                    part="command",
                    rule="line-injection",
                    hint="a URL component held an encoded line break",
                )
        if trace.isEnabledFor(logging.DEBUG):
            trace.debug("> %s", shown if shown is not None else escape(data.decode("utf-8", "surrogateescape")))
        await self.send_all(data + b"\r\n")

    def trace_received(self, line: bytes | str) -> None:
        if trace.isEnabledFor(logging.DEBUG):
            text = line.decode("utf-8", "surrogateescape") if isinstance(line, bytes) else line
            trace.debug("< %s", escape(text.rstrip("\r\n")))
