"""A connection's bytes as they come and go, past its line reader and its read timeouts (an interactive session).

The telnet session copies both ways as bytes arrive: no --timeout of
silence applies to a read here (the session waits on the user as long as
they type), and the caller's own scopes (`fetcher.net.deadlines`) bound
what must be bounded.  A broken stream is an OSError, as a socket's is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import anyio.abc

    from fetcher.net.stream import Stream


class StreamBroken(OSError):
    """The stream broke or was closed under us; the message says why (the socket's own error when there is one)."""


class Relay:
    """Reads and sends on a connection's byte stream as they come."""

    __slots__ = ("_stream",)

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self._stream = stream

    async def receive(self, max_bytes: int) -> bytes:
        """Whatever arrives next, up to `max_bytes`; b"" at the end of the stream."""
        import anyio

        try:
            return bytes(await self._stream.receive(max_bytes))
        except anyio.EndOfStream:
            return b""
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
            raise StreamBroken(str(error.__cause__ or error)) from None

    async def send(self, data: bytes) -> None:
        import anyio

        try:
            await self._stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as error:
            raise StreamBroken(str(error.__cause__ or error)) from None


async def open_relay(connection: Stream) -> Relay:
    """The relay over `connection`'s stream (made from its plain socket when it has none yet)."""
    return Relay(await connection.byte_stream())
