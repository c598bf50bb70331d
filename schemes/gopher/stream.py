"""A Gopher reply's bytes as they arrive: look-ahead for a header or an error, and a document's body to its end.

Only bytes move here; which reader the reply goes to (menu, text, Gopher+
block) is decided by `client`, and what the bytes mean by the pure modules.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from fetcher.errors import ProtocolError
from fetcher.handler import Connection
from fetcher.schemes.gopher.plus import SizedBody
from fetcher.schemes.gopher.text import DotTerminated
from fetcher.url import URL, GopherURL


class Decoder(Protocol):
    def feed(self, chunk: bytes) -> bytes: ...


class Raw:
    """Bytes to close, unchanged (binary items, `+-2`, --raw)."""

    done = False

    def feed(self, chunk: bytes) -> bytes:
        return chunk

    def close(self) -> bytes:
        return b""


class Source:
    """The reply's bytes with a little look-ahead (a header line, a possible error)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.buffer = b""
        self.eof = False

    async def fill(self) -> bool:
        if self.eof:
            return False
        data = await self.connection.receive_some()
        if not data:
            self.eof = True
            return False
        self.buffer += data
        return True

    async def peek_line(self, limit: int) -> bytes | None:
        """The first line if it ends within `limit` bytes (not consumed)."""
        while b"\n" not in self.buffer[:limit] and len(self.buffer) < limit and await self.fill():
            pass
        end = self.buffer.find(b"\n", 0, limit)
        return self.buffer[: end + 1] if end >= 0 else (self.buffer if self.eof else None)

    async def peek(self, count: int) -> bytes:
        while len(self.buffer) < count and await self.fill():
            pass
        return self.buffer[:count]

    def consume(self, count: int) -> None:
        self.buffer = self.buffer[count:]

    async def chunks(self) -> AsyncIterator[bytes]:
        if self.buffer:
            data, self.buffer = self.buffer, b""
            yield data
        while True:
            data = await self.connection.receive_some()
            if not data:
                self.eof = True
                return
            yield data


class Body:
    """A document's body to its end; a reset or a timeout raises, so no truncated file looks complete.

    Decoded chunk by chunk (`decoder`); `must_end`: the reply announced its
    end (a Gopher+ length or block), so a close before it is an error.  The
    connection is closed at the end, on an error and by `aclose`.  A plain
    iterator rather than an async generator: a bulk run reads thousands of
    small items, and trio registers and finalizes every generator.
    """

    def __init__(self, url: GopherURL, source: Source, decoder: Decoder, must_end: bool) -> None:
        self.url = url
        self.source = source
        self.decoder = decoder
        self.must_end = must_end
        self._finished = False

    def __aiter__(self) -> Body:
        return self

    async def __anext__(self) -> bytes:
        if self._finished:
            raise StopAsyncIteration
        source, decoder = self.source, self.decoder
        tail = b""
        try:
            while not finished(decoder):
                if source.buffer:
                    data, source.buffer = source.buffer, b""
                else:
                    data = await source.connection.receive_some()
                    if not data:  # the server closed: the end, unless the reply announced one
                        source.eof = True
                        tail = decoder.close() if hasattr(decoder, "close") else b""
                        if self.must_end:
                            raise ProtocolError(truncated(self.url, decoder), url=str(self.url))
                        break
                out = decoder.feed(data)
                if out:
                    return out
        except BaseException:
            await self.aclose()
            raise
        await self.aclose()
        if tail:
            return tail
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self._finished = True
        await self.source.connection.aclose()


def finished(decoder: object) -> bool:
    """The decoder saw the end the reply announced (a Gopher+ length, a final "." line)."""
    return bool(getattr(decoder, "done", False))


def truncated(url: URL, decoder: object) -> str:
    """What to say when the server closed before the end the reply announced."""
    if isinstance(decoder, SizedBody):
        return f"the server closed the connection {decoder.remaining} bytes before the announced end of {url}"
    return f"the server closed the connection before the end of the Gopher+ block ('.' line) of {url}"


def plus_decoder(length: int) -> Decoder:
    """The reader of a Gopher+ reply's data after a `+length` header.

    -1: text ending at a lone "." line; -2: bytes to the close; else exactly
    `length` bytes.
    """
    if length == -1:
        return DotTerminated("lone")
    if length == -2:
        return Raw()
    return SizedBody(length)
