"""A scripted telnet server on trio (tests/test_telnet_session.py, examples/tour.py).

It negotiates like telnetd (DO TTYPE, WILL ECHO, ...), shows a login prompt,
answers the first line the client types with "hello <line>", and hangs up.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial

import trio

from fetcher.schemes.telnet.protocol import DO, ECHO, IAC, LINEMODE, NAWS, SB, SE, SGA, TTYPE, WILL

# DO TTYPE, WILL ECHO, WILL SGA, DO NAWS, DO LINEMODE, then SB TTYPE SEND.
OFFER = bytes((IAC, DO, TTYPE, IAC, WILL, ECHO, IAC, WILL, SGA, IAC, DO, NAWS, IAC, DO, LINEMODE))
ASK_TTYPE = bytes((IAC, SB, TTYPE, 1, IAC, SE))
BANNER = b"\r\nFake telnetd \xff\xff marker\r\x00\r\nlogin: "


@dataclass
class FakeTelnetd:
    """A scripted telnet server: negotiates, shows a login prompt, answers one line, hangs up.

    `mode` "login" closes after the answer; "silent" shows the prompt and
    then says nothing more; "interactive" waits for Ctrl-] on the client.
    """

    mode: str = "login"
    port: int = 0
    received: bytearray = field(default_factory=bytearray)
    connections: int = 0
    #: The greeting; the default holds an escaped IAC (0xff 0xff) that the client must undo.
    banner: bytes = BANNER

    async def handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        async with stream:
            await stream.send_all(OFFER + ASK_TTYPE)
            await stream.send_all(self.banner)
            if self.mode == "silent":
                await trio.sleep_forever()
            # Like telnetd, settle the options first: five answers, then a line.
            await self.read_until(stream, lambda: self.answers() >= 5 and self.line() is not None)
            name = self.line() or b""
            await stream.send_all(b"\r\nhello " + name + b"\r\n")
            if self.mode == "interactive":
                with contextlib.suppress(trio.BrokenResourceError):
                    while data := await stream.receive_some(1024):
                        self.received += data

    async def read_until(self, stream: trio.SocketStream, done: Callable[[], bool]) -> None:
        with trio.fail_after(10):
            while not done():
                data = await stream.receive_some(1024)
                if not data:
                    break
                self.received += data

    def answers(self) -> int:
        raw = bytes(self.received)
        return sum(raw.count(bytes((IAC, command))) for command in (WILL, DO, 252, 254))

    def line(self) -> bytes | None:
        """The first line the client typed (ended by CR LF or CR NUL), if complete."""
        text = self.text()
        for end in (b"\r\n", b"\r\x00"):
            if end in text:
                return text.split(end)[0]
        return None

    def text(self) -> bytes:
        """What the client typed, without its negotiation."""
        raw = bytes(self.received)
        for command in (WILL, DO, 252, 254):
            for option in range(256):
                raw = raw.replace(bytes((IAC, command, option)), b"")
        while (start := raw.find(bytes((IAC, SB)))) >= 0 and (end := raw.find(bytes((IAC, SE)), start)) >= 0:
            raw = raw[:start] + raw[end + 2 :]
        return raw


@contextlib.asynccontextmanager
async def open_fake_telnetd(mode: str = "login", banner: bytes = BANNER) -> AsyncIterator[FakeTelnetd]:
    server = FakeTelnetd(mode, banner=banner)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1"))
        server.port = listeners[0].socket.getsockname()[1]
        yield server
        nursery.cancel_scope.cancel()
