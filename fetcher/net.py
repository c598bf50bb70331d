"""Guarded connections: the only place that opens sockets.

`open_connection` re-checks the port policy for every connection (derived
ones too: FTP data ports, redirects, resolutions), bounds every wait by a
timeout, and wraps the stream in a `Connection` with a line reader and the
one line-writer that refuses CR, LF and NUL.  Protocol lines go to the trace
logger `fetcher.trace` ("> " sent, "< " received).
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import AsyncIterator

import trio

from .errors import ConnectError, LimitExceeded, ProtocolError, Timeout, UnsafeURL
from .guard import DEFAULT_POLICY, Policy, check_port
from .text import escape

trace = logging.getLogger("fetcher.trace")


class _Redact(logging.Filter):
    """Mask `scheme://user:password@` in every trace and log line (defence in depth:
    callers already log `url.redacted()`, but a server's Location or a line a
    handler echoes may carry someone's password)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from .url import redact

        message = record.getMessage()
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


for _name in ("fetcher", "fetcher.trace"):
    logging.getLogger(_name).addFilter(_Redact())

RECEIVE_SIZE = 256 * 1024
MAX_LINE = 64 * 1024


class TLSError(ConnectError):
    """The TLS handshake failed (certificate, host name, protocol)."""

    transient = False


async def open_connection(
    host: str,
    port: int,
    *,
    scheme: str,
    policy: Policy = DEFAULT_POLICY,
    default_port: int | None = None,
    timeout: float = 30.0,
    connect_timeout: float = 15.0,
    tls: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
    what: str = "port",
) -> Connection:
    """Connect to host:port after the guard allowed it; optionally start TLS."""
    check_port(scheme, port, policy, default_port=default_port, what=what)
    try:
        with trio.fail_after(connect_timeout):
            stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
    except trio.TooSlowError:
        raise Timeout(
            f"connecting to {host}:{port} took longer than {connect_timeout:g} s",
            hint="raise --timeout or check that the server is up",
        ) from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise ConnectError(
            f"cannot connect to {host}:{port}: {reason}",
            hint="check the host name and port, and that the server is running",
        ) from None
    connection = Connection(stream, host, port, timeout=timeout)
    sock = getattr(stream, "socket", None)
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        except OSError:  # pragma: no cover - a platform without the option
            pass
    if tls is not None:
        await connection.start_tls(tls, server_hostname or host)
    trace.debug("* connected to %s:%s%s", host, port, " (TLS)" if tls is not None else "")
    return connection


class Connection:
    """A byte stream with a read buffer, per-operation timeouts and a trace."""

    def __init__(self, stream: trio.abc.Stream, host: str, port: int, *, timeout: float = 30.0) -> None:
        self.stream = stream
        self.host = host
        self.port = port
        self.timeout = timeout
        self._buffer = bytearray()
        self._eof = False
        self.closed = False

    def __repr__(self) -> str:
        return f"<Connection {self.host}:{self.port}>"

    @property
    def is_tls(self) -> bool:
        return isinstance(self.stream, trio.SSLStream)

    def _timed_out(self, doing: str) -> Timeout:
        return Timeout(
            f"{self.host}:{self.port} sent nothing for {self.timeout:g} s while {doing}",
            hint="raise --timeout if the server is slow",
        )

    async def start_tls(self, context: ssl.SSLContext, server_hostname: str) -> None:
        """Wrap the stream in TLS (implicit TLS, or after AUTH TLS / STARTTLS)."""
        if self._buffer:
            raise ProtocolError("the server sent data before the TLS handshake")
        tls_stream = trio.SSLStream(self.stream, context, server_hostname=server_hostname, https_compatible=True)
        try:
            with trio.fail_after(self.timeout):
                await tls_stream.do_handshake()
        except trio.TooSlowError:
            raise self._timed_out("starting TLS") from None
        except (trio.BrokenResourceError, ssl.SSLError) as error:
            cause = error.__cause__ if isinstance(error, trio.BrokenResourceError) else error
            raise TLSError(
                f"TLS with {self.host}:{self.port} failed: {cause}",
                hint="check the certificate; --cacert FILE trusts a private CA, --insecure skips checks",
            ) from None
        self.stream = tls_stream

    async def _receive(self, max_bytes: int, doing: str) -> bytes:
        """One read from the stream under the timeout; b"" (and EOF noted) at end of stream."""
        try:
            with trio.fail_after(self.timeout):
                data = bytes(await self.stream.receive_some(max_bytes))
        except trio.TooSlowError:
            raise self._timed_out(doing) from None
        except (trio.BrokenResourceError, OSError) as error:
            raise ProtocolError(
                f"connection to {self.host}:{self.port} broke: {error.__cause__ or error}",
                hint="the server reset the connection; try again",
            ) from None
        if not data:
            self._eof = True
        return data

    async def receive_some(self, max_bytes: int = RECEIVE_SIZE) -> bytes:
        """Up to max_bytes; b"" at end of stream."""
        if self._buffer:
            data = bytes(self._buffer[:max_bytes])
            del self._buffer[:max_bytes]
            return data
        if self._eof:
            return b""
        return await self._receive(max_bytes, "receiving")

    async def _fill(self, doing: str) -> bool:
        if self._eof:
            return False
        data = await self._receive(RECEIVE_SIZE, doing)
        self._buffer += data
        return bool(data)

    async def read_line(self, limit: int = MAX_LINE, *, limit_name: str | None = None) -> bytes:
        """One line including its LF (b"" at end of stream; a final unterminated line as is).

        With `limit_name` (a `Limits` field, e.g. "line_bytes") a line longer
        than `limit` raises LimitExceeded naming it, however it arrived.
        """
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

    async def send_all(self, data: bytes) -> None:
        try:
            with trio.fail_after(self.timeout):
                await self.stream.send_all(data)
        except trio.TooSlowError:
            raise self._timed_out("sending") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as error:
            raise ProtocolError(f"connection to {self.host}:{self.port} broke while sending: {error}") from None

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

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        with trio.CancelScope(shield=True):
            with trio.move_on_after(1):
                try:
                    await self.stream.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass

    async def send_eof(self) -> None:
        send_eof = getattr(self.stream, "send_eof", None)
        if send_eof is not None:
            try:
                await send_eof()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
