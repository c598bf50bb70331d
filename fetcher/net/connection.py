"""Guarded connections: the only place that opens sockets.

`open_connection` re-checks the port policy for every connection (derived
ones too: FTP data ports, redirects, resolutions), bounds every wait by a
timeout, and wraps the stream in a `Connection` with a line reader and the
one line-writer that refuses CR, LF and NUL.  Protocol lines go to the trace
logger `fetcher.trace` ("> " sent, "< " received).
"""

from __future__ import annotations

import errno
import logging
import math
import os
import socket
import ssl
import sys
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from fetcher.errors import ConnectError, LimitExceeded, ProtocolError, Timeout, UnsafeURL
from fetcher.guard import DEFAULT_POLICY, Policy, check_port
from fetcher.net import aio
from fetcher.text import escape

if TYPE_CHECKING:
    import anyio.abc

# anyio itself is imported where a socket is used (`import anyio` in the functions
# below): a fetch that opens none (a file: URL) does not load it (issue 17).

trace = logging.getLogger("fetcher.trace")


class TooSlow(Exception):
    """A deadline set by `fail_at` / `fail_after` passed (trio's TooSlowError, on any backend).

    Its own class, not the built-in TimeoutError that anyio.fail_after raises:
    TimeoutError is an OSError, which the handlers below also catch for a
    broken socket, and the two must stay apart.
    """


class fail_at:
    """`with fail_at(deadline):` cancels the block at `deadline` (anyio.current_time clock) and raises TooSlow.

    A class rather than a @contextmanager generator: every read and send of
    every connection enters one, so its cost is per read.
    """

    __slots__ = ("scope",)

    def __init__(self, deadline: float) -> None:
        self.scope = aio.cancel_scope(deadline=deadline)

    def __enter__(self) -> aio.Scope:
        return self.scope.__enter__()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> bool:
        suppressed = bool(self.scope.__exit__(kind, error, tb))
        if self.scope.cancelled_caught:
            raise TooSlow
        return suppressed


def fail_after(seconds: float) -> Any:
    """`fail_at` counted from now."""
    return fail_at(aio.current_time() + seconds)


def move_on_at(deadline: float) -> aio.Scope:
    """A cancel scope that ends the block silently at `deadline`."""
    return aio.cancel_scope(deadline=deadline)


class _Redact(logging.Filter):
    """Mask `scheme://user:password@` in every trace and log line (defence in depth:
    callers already log `url.redacted()`, but a server's Location or a line a
    handler echoes may carry someone's password)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from fetcher.url import redact

        message = record.getMessage()
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


for _name in ("fetcher", "fetcher.trace"):
    logging.getLogger(_name).addFilter(_Redact())


class Budget:
    """The time rules of one retrieval (one URL): --max-time and the low-speed rule.

    The client makes one per URL and makes it current (a context variable,
    so each task of a bulk run has its own); every read of every
    `Connection` that retrieval uses, dialogue and body, control and data
    connections alike, waits no longer than the budget allows.  The
    low-speed rule counts only time spent waiting for the server, so a slow
    consumer of a streamed body is never blamed on the server.
    """

    def __init__(self, url: str, *, max_time: float | None, speed_limit: int, speed_time: float) -> None:
        self.url = url
        self.max_time = max_time
        #: aio.current_time() at which the whole URL must be done (inf: no bound).
        self.deadline = aio.current_time() + max_time if max_time else math.inf
        self.speed_limit = speed_limit
        self.speed_time = speed_time
        self._waited = 0.0
        self._window_bytes = 0

    def __repr__(self) -> str:
        return f"<Budget {self.url} max_time={self.max_time} speed={self.speed_limit}/{self.speed_time}>"

    def speed_deadline(self, now: float) -> float:
        """When the current read must end for the low-speed rule still to hold."""
        if self.speed_limit <= 0 or self._window_bytes >= self.speed_limit * self.speed_time:
            return math.inf
        return now + max(self.speed_time - self._waited, 0.0)

    def account(self, received: int, waited: float) -> None:
        """Count one read; raise when a full window passed below the limit."""
        if self.speed_limit <= 0:
            return
        self._waited += waited
        self._window_bytes += received
        if self._waited >= self.speed_time:
            if self._window_bytes < self.speed_limit * self.speed_time:
                raise self.too_slow()
            self._waited, self._window_bytes = 0.0, 0

    def expired(self) -> Timeout:
        return Timeout(
            f"{self.url} took longer than --max-time {self.max_time:g} s",
            hint="raise -m/--max-time if the server is just slow",
        )

    def too_slow(self) -> Timeout:
        return Timeout(
            f"{self.url} arrived slower than {self.speed_limit} bytes/s for {self.speed_time:g} s",
            hint="the low-speed rule (--speed-limit BYTES, --speed-time SECONDS; --speed-limit 0 turns it off)",
        )


#: The budget of the retrieval running in this task (None outside one).
current_budget: ContextVar[Budget | None] = ContextVar("fetcher_budget", default=None)


RECEIVE_SIZE = 256 * 1024
#: Direct socket operations in a row before one goes through the scheduler (`Connection.use_raw_socket`).
DIRECT_RUN = 16
#: Direct operations left before the next one goes through the scheduler: one
#: count for every connection, since trio runs one task at a time, a task that
#: does not yield uses it up however many connections it works (one URL after
#: another on new connections included), while each connection starts direct.
_direct_left = 0
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
    budget = current_budget.get()
    until = aio.current_time() + connect_timeout
    try:
        stream, sock = await dial(host, port, deadline=min(until, budget.deadline) if budget is not None else until)
    except TooSlow:
        if budget is not None and budget.deadline < until:
            raise budget.expired() from None
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
    connection = Connection(stream, host, port, timeout=timeout, sock=sock)
    if sock is None and stream is not None:
        import anyio.abc

        sock = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        except OSError:  # pragma: no cover - a platform without the option
            pass
        connection.use_raw_socket(sock)
    if tls is not None:
        # The handshake is part of connecting (as curl counts it): it gets what is left of
        # --connect-timeout (and of --max-time), not a fresh --timeout of its own.
        handshake_until = min(until, budget.deadline) if budget is not None else until
        bounded = handshake_until <= aio.current_time() + timeout  # else --timeout ends it first
        try:
            await connection.start_tls(tls, server_hostname or host, until=handshake_until)
        except Timeout:
            await connection.aclose()
            if not bounded:
                raise
            if budget is not None and budget.deadline < until:
                raise budget.expired() from None
            raise Timeout(
                f"connecting to {host}:{port} took longer than {connect_timeout:g} s: "
                "the TLS handshake did not finish",
                hint="check that the port speaks TLS; raise --connect-timeout if the server is just slow",
            ) from None
        except BaseException:
            await connection.aclose()
            raise
    trace.debug("* connected to %s:%s%s", host, port, " (TLS)" if tls is not None else "")
    return connection


async def dial(
    host: str, port: int, *, deadline: float = math.inf
) -> tuple[anyio.abc.SocketStream | None, socket.socket | None]:
    """A TCP stream to host:port and its plain socket, either possibly None (the one place that dials).

    On trio an IP address is dialled directly (`_connect_literal`); a name,
    or any host on asyncio, goes through `anyio.connect_tcp` (resolution,
    happy eyeballs).  The caller checked the port; a wait past `deadline`
    raises TooSlow.
    """
    family = _literal_family(host) if aio.on_trio() else None
    if family is not None:
        # No anyio stream yet: reads, sends and the close use the socket on trio
        # itself, and anyio (12 ms of imports with its trio backend) is loaded only
        # if TLS or the telnet session asks for a stream (`Connection.byte_stream`).
        return None, await _connect_literal(family, host, port, deadline)
    import anyio

    with fail_at(deadline):
        stream = await anyio.connect_tcp(host, port)
    return stream, None


def _literal_family(host: str) -> socket.AddressFamily | None:
    """AF_INET or AF_INET6 when `host` is a plain IP address (nothing to resolve), else None.

    An IPv6 address with a zone (fe80::1%eth0) is left to anyio, which resolves the zone.
    """
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return family
    return None


async def _connect_literal(family: socket.AddressFamily, host: str, port: int, deadline: float) -> socket.socket:
    """A connected non-blocking TCP socket to an IP address, on trio (TooSlow past `deadline`).

    What `anyio.connect_tcp` does for an address it need not resolve, without
    its happy-eyeballs task group and its resolver call: FTP data ports (the
    control connection's peer address) and every URL naming an address.
    On loopback and fast links the handshake is often over before the
    socket is asked, so the wait for writability, and the cancel scope that
    bounds it (4 µs of a Gopher item's 200), are skipped then.
    """
    import trio

    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await trio.lowlevel.checkpoint_if_cancelled()
        code = sock.connect_ex((host, port))
        if code == errno.EINPROGRESS:
            if _connected(sock):  # the handshake ended within the call: no error to ask for
                code = 0
            else:  # an error already, or the wait for the handshake and then its outcome
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code == 0:
                    with fail_at(deadline):
                        await trio.lowlevel.wait_writable(sock)
                    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, os.strerror(code))
    except BaseException:
        _close_socket(sock)
        raise
    return sock


async def _scheduling_point() -> None:
    """Let the other trio tasks run once (no cancellation point: the caller has not waited yet)."""
    import trio

    await trio.lowlevel.cancel_shielded_checkpoint()


def _connected(sock: socket.socket) -> bool:
    try:
        sock.getpeername()
    except OSError:
        return False
    return True


def _readable(sock: socket.socket) -> bool:
    """Whether a read of `sock` would not block now (data, the end of the stream, or an error)."""
    import select

    if sock.fileno() < 0:
        return True
    if not hasattr(select, "poll"):  # pragma: no cover - Windows
        return bool(select.select([sock], [], [], 0)[0])
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


def _close_socket(sock: socket.socket) -> None:
    """Close a socket trio may have waited on (trio's own socket close does the same)."""
    import trio

    if sock.fileno() != -1:
        trio.lowlevel.notify_closing(sock)
        sock.close()


class _Within:
    """`Connection.within()`: a class rather than a @contextmanager generator, entered for every reply line."""

    __slots__ = ("_connection", "_saved", "_span", "_what")

    def __init__(self, connection: Connection, span: float, what: str) -> None:
        self._connection = connection
        self._span = span
        self._what = what
        self._saved: tuple[float | None, int, tuple[str, float]] | None = None

    def __enter__(self) -> None:
        connection = self._connection
        end = aio.current_time() + self._span
        self._saved = connection._deadline, connection._deadline_mark, connection._deadline_what
        if connection._deadline is None or end < connection._deadline:
            connection._deadline, connection._deadline_what = end, (self._what, self._span)
            connection._deadline_mark = connection._received

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> None:
        assert self._saved is not None
        connection = self._connection
        connection._deadline, connection._deadline_mark, connection._deadline_what = self._saved


def _is_tls(stream: object) -> bool:
    # anyio's TLS module (5 ms of imports) is loaded by the first TLS handshake: before it, no stream is TLS.
    tls = sys.modules.get("anyio.streams.tls")
    return tls is not None and isinstance(stream, tls.TLSStream)


class Connection:
    """A byte stream with a read buffer, per-operation timeouts and a trace."""

    def __init__(
        self,
        stream: anyio.abc.ByteStream | None,
        host: str,
        port: int,
        *,
        timeout: float = 30.0,
        sock: socket.socket | None = None,
    ) -> None:
        #: anyio's stream, or None for a plain socket on trio until TLS or a caller asks (`byte_stream`).
        self.stream = stream
        #: The plain TCP socket (when dialled as one), for what the stream would otherwise answer.
        self._plain = sock
        if stream is None and sock is None:
            raise ValueError("a Connection needs a stream or a socket")
        self.host = host
        self.port = port
        self.timeout = timeout
        self._buffer = bytearray()
        self._eof = False
        self.closed = False
        #: Set inside `within()`: one deadline for every read of a whole line or
        #: reply, and how many bytes had arrived when it was set.
        self._deadline: float | None = None
        self._deadline_mark = 0
        #: What the deadline of `within()` is for, and its span (for the message when it passes).
        self._deadline_what: tuple[str, float] = ("", 0.0)
        self._received = 0
        self._socket: socket.socket | None = None
        self._splice_works = True
        #: The plain TCP socket under `stream` when reads and sends may try it
        #: directly first (trio only; see `use_raw_socket`), else None.
        self._raw: socket.socket | None = None

    def __repr__(self) -> str:
        return f"<Connection {self.host}:{self.port}>"

    @property
    def is_tls(self) -> bool:
        return _is_tls(self.stream)

    @property
    def tls_session(self) -> ssl.SSLSession | None:
        """The TLS session of this connection (to resume on another), or None."""
        if not self.is_tls:
            return None
        from anyio.streams.tls import TLSAttribute

        assert self.stream is not None  # a TLS stream
        ssl_object = self.stream.extra(TLSAttribute.ssl_object, None)
        return ssl_object.session if ssl_object is not None else None

    async def byte_stream(self) -> anyio.abc.ByteStream:
        """anyio's stream over this connection, made from the plain socket when first asked."""
        if self.stream is None:
            import anyio.abc

            assert self._plain is not None
            self.stream = await anyio.abc.SocketStream.from_socket(self._plain)
        return self.stream

    def peer_address(self) -> str | None:
        """The IP address this connection really reached (under TLS too), or None."""
        try:
            if self.stream is None:
                assert self._plain is not None
                address = self._plain.getpeername()
            else:
                import anyio.abc

                address = self.stream.extra(anyio.abc.SocketAttribute.remote_address, None)
        except OSError:
            return None
        return str(address[0]) if isinstance(address, tuple) else None

    def _timed_out(self, doing: str) -> Timeout:
        return Timeout(
            f"{self.host}:{self.port} sent nothing for {self.timeout:g} s while {doing}",
            hint="raise --timeout if the server is slow",
        )

    def use_raw_socket(self, sock: socket.socket) -> None:
        """Let reads and sends try the non-blocking socket directly before waiting.

        On loopback and fast links most reads find data already there and
        most sends fit the socket buffer; going through the stream then costs
        a cancel scope, a deadline and two trips through the scheduler for
        nothing.  The direct try is a plain non-blocking recv/send; only
        when it would block does the stream (with every timeout) take over.
        Every DIRECT_RUN direct operations (counted over all connections:
        `_direct_left`) one goes the long way, so a busy transfer still yields
        to other tasks and sees cancellation.  Only on trio: asyncio's
        transports read the socket themselves.
        """
        if aio.on_trio() and sock.gettimeout() == 0.0:
            self._raw = sock

    async def start_tls(self, context: ssl.SSLContext, server_hostname: str, *, until: float | None = None) -> None:
        """Wrap the stream in TLS (implicit TLS, or after AUTH TLS / STARTTLS).

        The handshake ends by `until` when given (what is left of the connect
        budget: `open_connection`), and within --timeout in any case.
        """
        import anyio

        if self._buffer:
            raise ProtocolError("the server sent data before the TLS handshake")
        self._raw = None  # from here on the bytes on the socket are TLS records
        # standard_compatible=False is trio's https_compatible=True: a server
        # closing without close_notify ends the stream instead of breaking it
        # (HTTP/1.0 bodies delimited by the close do that).
        from anyio.streams.tls import TLSStream

        stream = await self.byte_stream()
        deadline = aio.current_time() + self.timeout
        try:
            with fail_at(deadline if until is None else min(until, deadline)):
                tls_stream = await TLSStream.wrap(
                    stream, hostname=server_hostname, ssl_context=context, standard_compatible=False
                )
        except TooSlow:
            raise self._timed_out("doing the TLS handshake") from None
        except anyio.EndOfStream:
            raise TLSError(
                f"TLS with {self.host}:{self.port} failed: the server closed the connection during the handshake",
                hint="check that the port speaks TLS",
            ) from None
        except (anyio.BrokenResourceError, ssl.SSLError) as error:
            cause = error.__cause__ if isinstance(error, anyio.BrokenResourceError) else error
            raise TLSError(
                f"TLS with {self.host}:{self.port} failed: {cause}",
                hint="check the certificate; --cacert FILE trusts a private CA, --insecure skips checks",
            ) from None
        self.stream = tls_stream

    def within(self, seconds: float | None = None, *, what: str = "its reply") -> _Within:
        """Bound every read inside the block by one deadline: a whole line or reply,
        not each read (a server dripping a byte now and then cannot hold it open).
        Nested blocks keep the outer (earlier) deadline."""
        return _Within(self, self.timeout if seconds is None else seconds, what)

    async def _receive(self, max_bytes: int, doing: str) -> bytes:
        """One read from the stream under the timeouts; b"" (and EOF noted) at end of stream.

        The read ends at the earliest of: --timeout of silence, the deadline
        of `within()`, the retrieval's --max-time, and the point where the
        low-speed rule would fail.
        """
        global _direct_left
        budget = current_budget.get()
        raw = self._raw
        tried = False
        if raw is not None and _direct_left > 0:
            _direct_left -= 1
            direct = self._direct_read(raw, max_bytes, budget)
            if direct is not None:
                return direct
            # Nothing there yet.  The other tasks run once (a bulk run's other transfers),
            # then the socket is asked again: the reply has usually come meanwhile, and the
            # wait below (a cancel scope, an epoll registration, a wake-up) is not needed.
            await _scheduling_point()
            direct = self._direct_read(raw, max_bytes, budget)
            if direct is not None:
                return direct
            tried = True  # still nothing: wait for it below, under the timeouts
        _direct_left = DIRECT_RUN
        started = aio.current_time()
        until, why = self._read_until(budget, started)
        if raw is not None:
            received = await self._receive_raw(raw, max_bytes, until, tried)
            if received is None:
                raise self._read_too_slow(budget, why, doing)
            self._count(len(received), budget, started)
            return received
        import anyio

        stream = await self.byte_stream()
        try:
            with fail_at(until):
                data = bytes(await stream.receive(max_bytes))
        except anyio.EndOfStream:
            data = b""
        except TooSlow:
            raise self._read_too_slow(budget, why, doing) from None
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as error:
            raise self._broken(error) from None
        self._count(len(data), budget, started)
        return data

    def _direct_read(self, raw: socket.socket, max_bytes: int, budget: Budget | None) -> bytes | None:
        """What the socket has now, counted as `_count` counts it (no time spent waiting); None: nothing yet."""
        try:
            data = raw.recv(max_bytes)
        except BlockingIOError:
            return None
        except OSError as error:
            raise self._broken(error) from None
        count = len(data)
        self._received += count
        if budget is not None:
            budget.account(count, 0.0)
        if not count:
            self._eof = True
        return data

    async def _receive_raw(self, raw: socket.socket, max_bytes: int, until: float, tried: bool) -> bytes | None:
        """One read of the plain socket on trio, through the scheduler, by `until`; None when that passed.

        trio's own socket read, with one cancel scope for the deadline: a
        cancellation point before the read, never after it (a cancelled read
        has taken nothing); `tried`: a direct read just found nothing, so
        the first step is the wait.
        """
        import trio

        with trio.CancelScope(deadline=until):
            try:
                if not tried:
                    await trio.lowlevel.checkpoint_if_cancelled()
                    try:
                        data = raw.recv(max_bytes)
                    except BlockingIOError:
                        pass
                    else:
                        await trio.lowlevel.cancel_shielded_checkpoint()
                        return data
                while True:
                    await trio.lowlevel.wait_readable(raw)
                    try:
                        return raw.recv(max_bytes)
                    except BlockingIOError:
                        continue
            except (OSError, trio.ClosedResourceError) as error:
                raise self._broken(error) from None
        return None

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
        sock = self._plain_socket()
        budget = current_budget.get()
        started = aio.current_time()
        until, why = self._read_until(budget, started)
        try:
            with fail_at(until):
                count = await aio.recv_into(sock, view)
        except TooSlow:
            raise self._read_too_slow(budget, why, "receiving") from None
        except OSError as error:
            raise self._broken(error) from None
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
            sock = self._plain_socket()
            budget = current_budget.get()
            started = aio.current_time()
            until, why = self._read_until(budget, started)
            try:
                with fail_at(until):
                    moved = await aio.splice_from(sock, pipe, count)
            except TooSlow:
                raise self._read_too_slow(budget, why, "receiving") from None
            except OSError as error:
                if error.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise self._broken(error) from None
                self._splice_works = False  # a kernel or socket without splice: nothing was moved, read instead
            else:
                self._count(moved, budget, started)
                return moved
        # Buffered bytes, the end, or no splice: an ordinary read, written into the caller's empty pipe
        # (which takes `count` bytes: the caller asks no more than the pipe holds).
        data = await self.receive_some(count)
        written = os.write(pipe, data) if data else 0
        if written < len(data):  # pragma: no cover - a pipe smaller than its owner said
            self._buffer[:0] = data[written:]
        return written

    def _read_until(self, budget: Budget | None, started: float) -> tuple[float, str]:
        """When a read starting now must end, and why: silence, `within`, --max-time or the low-speed rule."""
        until, why = started + self.timeout, "silent"
        if self._deadline is not None and self._deadline < until:
            until, why = self._deadline, "deadline"
        if budget is not None:
            if budget.deadline < until:
                until, why = budget.deadline, "max_time"
            speed = budget.speed_deadline(started)
            if speed < until:
                until, why = speed, "speed"
        return until, why

    def _read_too_slow(self, budget: Budget | None, why: str, doing: str) -> Timeout:
        if budget is not None and why == "max_time":
            return budget.expired()
        if budget is not None and why == "speed":
            return budget.too_slow()
        if why == "deadline" and self._received > self._deadline_mark:
            return Timeout(
                f"{self.host}:{self.port} did not finish {self._deadline_what[0]} within {self._deadline_what[1]:g} s",
                hint="the server sends too slowly; raise --timeout if it is just slow",
            )
        return self._timed_out(doing)

    def _broken(self, error: BaseException) -> ProtocolError:
        return ProtocolError(
            f"connection to {self.host}:{self.port} broke: {error.__cause__ or error}",
            hint="the server reset the connection; try again",
        )

    def _count(self, received: int, budget: Budget | None, started: float) -> None:
        self._received += received
        if budget is not None:
            budget.account(received, aio.current_time() - started)
        if not received:
            self._eof = True

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

    async def send_all(self, data: bytes) -> None:
        global _direct_left
        raw = self._raw
        tried = False
        if raw is not None and _direct_left > 0:
            _direct_left -= 1
            try:
                sent = raw.send(data)
            except BlockingIOError:
                sent = 0
            except OSError as error:
                raise self._broken_sending(error) from None
            if sent == len(data):
                return
            data = data[sent:]
            tried = True
        _direct_left = DIRECT_RUN
        budget = current_budget.get()
        until = aio.current_time() + self.timeout
        deadline = min(until, budget.deadline) if budget is not None else until
        if raw is not None:
            if not await self._send_raw(raw, data, deadline, tried):
                if budget is not None and budget.deadline < until:
                    raise budget.expired()
                raise self._timed_out("sending")
            return
        import anyio

        stream = await self.byte_stream()
        try:
            with fail_at(deadline):
                await stream.send(data)
        except TooSlow:
            if budget is not None and budget.deadline < until:
                raise budget.expired() from None
            raise self._timed_out("sending") from None
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as error:
            raise self._broken_sending(error) from None

    async def _send_raw(self, raw: socket.socket, data: bytes, until: float, tried: bool) -> bool:
        """Send all of `data` on the plain socket on trio, through the scheduler, by `until`; False when that passed.

        As `_receive_raw`: a cancellation point only before anything was
        sent or while waiting for room; `tried`: a direct send just filled
        the socket buffer, so the first step is the wait.
        """
        import trio

        view = memoryview(data)
        with trio.CancelScope(deadline=until):
            try:
                waited = tried
                if tried:
                    await trio.lowlevel.wait_writable(raw)
                else:
                    await trio.lowlevel.checkpoint_if_cancelled()
                while view:
                    try:
                        view = view[raw.send(view) :]
                    except BlockingIOError:
                        await trio.lowlevel.wait_writable(raw)
                        waited = True
                if not waited:
                    await trio.lowlevel.cancel_shielded_checkpoint()
                return True
            except (OSError, trio.ClosedResourceError) as error:
                raise self._broken_sending(error) from None
        return False

    def _broken_sending(self, error: BaseException) -> ProtocolError:
        return ProtocolError(f"connection to {self.host}:{self.port} broke while sending: {error}")

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

            if self.is_tls:
                from anyio.streams.tls import TLSAttribute

                ssl_object = stream.extra(TLSAttribute.ssl_object, None)
                incoming = getattr(stream, "_read_bio", None)  # records taken off the socket, not yet decrypted
                if (ssl_object is not None and ssl_object.pending()) or (incoming is not None and incoming.pending):
                    return True
            sock = sock or stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
        try:
            return sock is None or _readable(sock)
        except (OSError, ValueError):  # the socket was closed under us: not fit for reuse
            return True

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.stream is None:  # only ever a plain socket: nothing else to close
            assert self._plain is not None
            _close_socket(self._plain)
            return
        import anyio

        if self._raw is not None:
            # A plain TCP socket on trio: closing it cannot block, so no shielded,
            # bounded wait (two cancel scopes per connection) is needed.  The
            # stream's own close would do the same, plus a checkpoint.
            _close_socket(self._raw)
            return
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(1):
                try:
                    await self.stream.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass

    async def send_eof(self) -> None:
        if self.is_tls:
            return  # TLS has no half-close
        if self.stream is None:
            assert self._plain is not None
            try:
                self._plain.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            return
        import anyio

        try:
            await self.stream.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, NotImplementedError, OSError):
            pass
