"""The byte stream under every connection: a read buffer, per-operation timeouts, direct socket I/O.

A `Stream` reads and sends under --timeout, the deadline of `within()`,
the retrieval's --max-time and the low-speed rule (`fetcher.net.budget`).
On trio a plain TCP connection tries its non-blocking socket directly
before it waits (`use_raw_socket`); TLS and asyncio go through anyio's
stream.  `Connection` (`fetcher.net.connection`) adds line I/O, zero-copy
reads, TLS and the check before reuse.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

from fetcher.errors import ProtocolError, Timeout
from fetcher.net import aio, tls
from fetcher.net.budget import Budget, current_budget
from fetcher.net.deadlines import TooSlow, fail_at
from fetcher.net.sockets import close_socket

if TYPE_CHECKING:
    import anyio.abc

RECEIVE_SIZE = 256 * 1024
#: Direct socket operations in a row before one goes through the scheduler (`Stream.use_raw_socket`).
DIRECT_RUN = 16
#: Direct operations left before the next one goes through the scheduler: one
#: count for every connection, since trio runs one task at a time, a task that
#: does not yield uses it up however many connections it works (one URL after
#: another on new connections included), while each connection starts direct.
_direct_left = 0


async def _scheduling_point() -> None:
    """Let the other trio tasks run once (no cancellation point: the caller has not waited yet)."""
    import trio

    await trio.lowlevel.cancel_shielded_checkpoint()


class _Within:
    """`Stream.within()`: a class rather than a @contextmanager generator, entered for every reply line."""

    __slots__ = ("_connection", "_saved", "_span", "_what")

    def __init__(self, connection: Stream, span: float, what: str) -> None:
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


class Stream:
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
        return tls.is_tls(self.stream)

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

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.stream is None:  # only ever a plain socket: nothing else to close
            assert self._plain is not None
            close_socket(self._plain)
            return
        import anyio

        if self._raw is not None:
            # A plain TCP socket on trio: closing it cannot block, so no shielded,
            # bounded wait (two cancel scopes per connection) is needed.  The
            # stream's own close would do the same, plus a checkpoint.
            close_socket(self._raw)
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
