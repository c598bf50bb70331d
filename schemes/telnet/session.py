"""The interactive TELNET session behind `fetch --interactive telnet://...`.

This is the one place where fetcher talks to the terminal directly: the
user asked for a session, so what the server sends (control characters
included) goes to the terminal as any telnet client would pass it, and what
the user types goes to the server.  The negotiation is the pure machine of
`protocol`; this module only moves bytes, in two tasks of one nursery:

    stdin  --TelnetProtocol.send-->     socket
    socket --TelnetProtocol.receive-->  stdout (and the replies back to the socket)

The session ends when the server closes, when the user types Ctrl-] (on a
terminal), or, once stdin has reached its end (a pipe), when the server has
been quiet for --timeout seconds.  On a terminal the line discipline is
switched to raw while the server echoes (character at a time, as telnet
does) and restored on every way out, Ctrl-C and errors included.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import signal
import sys
import termios
import tty
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from fetcher.errors import FetchError, Interrupted, ProtocolError, Timeout, UsageError
from fetcher.handler import Connection, InputReader, Session, TooSlow, aio, fail_after, open_relay, running_loop
from fetcher.schemes.telnet.protocol import NAWS, TelnetProtocol
from fetcher.text import escape
from fetcher.url import TelnetURL

#: Ctrl-], the key that ends a session on a terminal (telnet's escape character).
ESCAPE = 0x1D
RECEIVE_SIZE = 16384


@dataclass
class SessionResult:
    """How a session went: why it ended and how many bytes crossed the wire."""

    reason: str  # "closed by server", "escape", "input ended"
    received: int = 0
    sent: int = 0


class Terminal:
    """The line discipline of the input terminal: raw while the server echoes, else as found."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: list[Any] | None = None
        if os.isatty(fd):
            try:
                self.saved = termios.tcgetattr(fd)
            except termios.error:
                self.saved = None
        self.raw = False

    @property
    def is_tty(self) -> bool:
        return self.saved is not None

    def set_raw(self, raw: bool) -> None:
        if self.saved is None or raw == self.raw:
            return
        if raw:
            tty.setraw(self.fd, termios.TCSANOW)
        else:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
        self.raw = raw

    def restore(self) -> None:
        if self.saved is not None:
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
            self.raw = False


@contextlib.contextmanager
def open_terminal(fd: int) -> Iterator[Terminal]:
    terminal = Terminal(fd)
    try:
        yield terminal
    finally:
        terminal.restore()


@contextlib.contextmanager
def single_error() -> Iterator[None]:
    """Let the nursery's error out as itself (Ctrl-C first, then a FetchError), not as a group.

    The CLI maps exception classes to exit codes; a group would hide them.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves: list[BaseException] = []
        pending: list[BaseException] = [group]
        while pending:
            error = pending.pop()
            if isinstance(error, BaseExceptionGroup):
                pending.extend(error.exceptions)
            else:
                leaves.append(error)
        for kind in (KeyboardInterrupt, FetchError):
            for leaf in leaves:
                if isinstance(leaf, kind):
                    raise leaf from None
        raise


async def write_all(fd: int, data: bytes) -> None:
    """Write to the output fd, waiting (not spinning) if someone made it non-blocking."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            await aio.wait_writable(fd)
            continue
        except OSError as error:
            if error.errno == errno.EPIPE:
                raise ProtocolError("the output was closed during the telnet session") from None
            raise
        view = view[written:]


def window_size(fd: int) -> tuple[int, int] | None:
    if not os.isatty(fd):
        return None
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return None
    if size.columns <= 0 or size.lines <= 0:  # a pty nobody sized
        return None
    return size.columns, size.lines


def announce(url: TelnetURL, stream: TextIO, *, on_terminal: bool) -> None:
    """The advisory part of the URL, before connecting: who to log in as."""
    lines = [f"fetch: telnet session with {escape(url.host)}:{url.port}"]
    if url.user is not None:
        lines.append(f"fetch: suggested login: {escape(url.user)}")
    if url.password is not None:
        lines.append(f"fetch: suggested password: {escape(url.password)}")
    if on_terminal:
        lines.append("fetch: Ctrl-] ends the session")
    stream.write("\n".join(lines) + "\n")
    stream.flush()


async def run_interactive(
    url: TelnetURL,
    session: Session,
    *,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    stderr: TextIO | None = None,
) -> SessionResult:
    """Connect (through the guard) and run the session on the given descriptors."""
    require_trio()
    err = stderr if stderr is not None else sys.stderr
    on_terminal = os.isatty(stdin_fd)
    announce(url, err, on_terminal=on_terminal)
    size = window_size(stdout_fd)
    protocol = TelnetProtocol(
        terminal_type=os.environ.get("TERM") if os.isatty(stdout_fd) else None,
        window_size=size,
    )
    if stdout_fd == 1:
        sys.stdout.flush()
    connection = await session.connect(url.host, url.port)
    try:
        with open_terminal(stdin_fd) as terminal:
            keyboard = InputReader(stdin_fd)
            try:
                result = await relay(
                    connection,
                    protocol,
                    keyboard,
                    stdout_fd,
                    terminal=terminal,
                    linger=session.settings.timeout,
                    send_timeout=session.settings.timeout,
                    trace=session.trace.debug,
                )
            finally:
                await keyboard.aclose()
    finally:
        await connection.aclose()
    endings = {
        "closed by server": "the server closed the connection",
        "escape": "ended with Ctrl-]",
        "input ended": f"input ended and the server sent nothing for {session.settings.timeout:g} s",
    }
    err.write(f"fetch: telnet session with {escape(url.host)}:{url.port}: {endings[result.reason]}\n")
    err.flush()
    return result


def require_trio() -> None:
    """The interactive session (raw terminal, FdStream, SIGWINCH) runs on trio only.

    It is a command-line feature (the CLI always runs on trio); a library
    caller on asyncio gets a clear usage error instead of a crash.
    """
    if running_loop() != "trio":
        raise UsageError(
            "an interactive telnet session needs trio (it was called under another event loop)",
            hint="run it with the fetch command, or under trio.run(...)",
        )


async def relay(
    connection: Connection,
    protocol: TelnetProtocol,
    keyboard: InputReader,
    stdout_fd: int,
    *,
    terminal: Terminal | None = None,
    linger: float = 30.0,
    send_timeout: float = 30.0,
    trace: Callable[..., object] | None = None,
) -> SessionResult:
    """Copy both ways until one side ends; see the module docstring for when."""
    require_trio()
    log: Callable[..., object] = trace if trace is not None else (lambda *args: None)
    result = SessionResult(reason="closed by server")
    stream = await open_relay(connection)  # the session reads and writes as bytes come, past the line reader
    send_lock = aio.Lock()
    # No idle limit on reading while the user may still type; after the input
    # ended, `linger` seconds of silence from the server end the session.
    reading = aio.cancel_scope()

    async def send(data: bytes, what: str) -> None:
        if not data:
            return
        async with send_lock:
            try:
                with fail_after(send_timeout):
                    await stream.send(data)
            except TooSlow:
                raise Timeout(
                    f"{connection.host}:{connection.port} accepted nothing for {send_timeout:g} s",
                    hint="the server stopped reading; raise --timeout if it is slow",
                ) from None
            except OSError as error:
                raise ProtocolError(
                    f"the telnet connection to {connection.host}:{connection.port} broke while sending: "
                    f"{error.__cause__ or error}"
                ) from None
        result.sent += len(data)
        if what == "data":
            log("> (%d bytes typed)", len(data))

    def trace_notes() -> None:
        for note in protocol.take_notes():
            log("%s", note)

    async def from_server(cancel: aio.Scope) -> None:
        with reading:
            while True:
                try:
                    data = await stream.receive(RECEIVE_SIZE)
                except OSError as error:
                    # A reset at the end of a session is how some servers hang up.
                    log("* connection ended: %s", error.__cause__ or error)
                    break
                if not data:
                    break
                result.received += len(data)
                if reading.deadline != math.inf:
                    reading.deadline = aio.current_time() + linger
                shown, reply = protocol.receive(data)
                trace_notes()
                await send(reply, "negotiation")
                if terminal is not None:
                    terminal.set_raw(protocol.remote_echo)
                if shown:
                    await write_all(stdout_fd, shown)
        if reading.cancelled_caught:
            result.reason = "input ended"
        cancel.cancel()

    async def from_keyboard(cancel: aio.Scope) -> None:
        escape_key = terminal is not None and terminal.is_tty
        while True:
            keys = await keyboard.receive()
            if not keys:
                reading.deadline = aio.current_time() + linger
                return
            if escape_key and ESCAPE in keys:
                await send(protocol.send(keys[: keys.index(ESCAPE)]), "data")
                result.reason = "escape"
                cancel.cancel()
                return
            await send(protocol.send(keys), "data")

    async def on_signal() -> None:
        # A terminal left raw is unusable: end the session (and restore it) on
        # SIGTERM and SIGHUP too, not only on Ctrl-C.
        try:
            with aio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
                async for number in signals:
                    raise Interrupted(f"telnet session ended by {signal.Signals(number).name}")
        except RuntimeError:  # not the main thread: the process owner handles signals
            return

    async def on_resize() -> None:
        try:
            with aio.open_signal_receiver(signal.SIGWINCH) as signals:
                async for _ in signals:
                    size = window_size(stdout_fd)
                    if size is not None:
                        await send(protocol.resize(*size), "negotiation")
                        trace_notes()
        except RuntimeError:  # not the main thread: no signals
            return

    with single_error():
        async with aio.open_nursery() as nursery:
            nursery.start_soon(from_server, nursery.cancel_scope)
            nursery.start_soon(from_keyboard, nursery.cancel_scope)
            if terminal is not None and terminal.is_tty:
                nursery.start_soon(on_signal)
            if NAWS in protocol.local_options:
                nursery.start_soon(on_resize)
    return result
