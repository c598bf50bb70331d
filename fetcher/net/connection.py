"""`Connection`: what a protocol handler holds, one guarded connection (`fetcher.net.connect` opens it).

A `Stream` with line I/O (`fetcher.net.lines`) and zero-copy reads
(`fetcher.net.zerocopy`), plus what is done to the connection as a whole:
TLS started on it (implicit TLS, AUTH TLS, STARTTLS) and the check that
nothing arrived on it before a pool lends it again.
"""

from __future__ import annotations

import ssl

from fetcher.errors import ProtocolError
from fetcher.net import aio, tls
from fetcher.net.deadlines import TooSlow
from fetcher.net.lines import LineStream
from fetcher.net.sockets import readable
from fetcher.net.zerocopy import ZeroCopyStream


class Connection(LineStream, ZeroCopyStream):
    """A byte stream with a read buffer, per-operation timeouts, line I/O and a trace."""

    @property
    def tls_session(self) -> ssl.SSLSession | None:
        """The TLS session of this connection (to resume on another), or None."""
        if not self.is_tls:
            return None
        assert self.stream is not None  # a TLS stream
        return tls.session(self.stream)

    async def start_tls(self, context: ssl.SSLContext, server_hostname: str, *, until: float | None = None) -> None:
        """Wrap the stream in TLS (implicit TLS, or after AUTH TLS / STARTTLS).

        The handshake ends by `until` when given (what is left of the connect
        budget: `open_connection`), and within --timeout in any case.
        """
        if self._buffer:
            raise ProtocolError("the server sent data before the TLS handshake")
        self._raw = None  # from here on the bytes on the socket are TLS records
        stream = await self.byte_stream()
        deadline = aio.current_time() + self.timeout
        try:
            self.stream = await tls.handshake(
                stream,
                context,
                server_hostname,
                deadline=deadline if until is None else min(until, deadline),
                where=f"{self.host}:{self.port}",
            )
        except TooSlow:
            raise self._timed_out("doing the TLS handshake") from None

    def unsolicited(self) -> bool:
        """True when bytes, or the end of the stream, wait on this connection while nothing was asked of it.

        A pooled connection is checked so before it carries another request
        (as curl, urllib3 and httpcore do): whatever arrived meanwhile (a
        reply nobody asked for, a server's goodbye, a close) would otherwise
        be read as the answer to that request.  No wait: a readiness poll.
        """
        if self.closed or self._eof or self._buffer:
            return True
        sock, stream = self._plain, self.stream
        if stream is not None:
            import anyio.abc

            if self.is_tls and tls.pending(stream):
                return True
            sock = sock or stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
        try:
            return sock is None or readable(sock)
        except (OSError, ValueError):  # the socket was closed under us: not fit for reuse
            return True
