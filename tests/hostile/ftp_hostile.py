"""A hostile FTP server on trio (127.0.0.1, ephemeral ports) for tests/hostile and bench/hostile_rss.py.

It speaks enough RFC 959 for fetcher to log in, walk directories, list and
retrieve, records every command line of every session, and attacks by
class, not by example:

- bloat: an NLST that streams names until the client hangs up (any size,
  any name length), a multi-line reply that never ends, a reply line that
  never ends;
- text: control characters (terminal escapes, BEL, lone CR, C1, invalid
  UTF-8) in the banner, in multi-line bodies and in the 226 text, and in
  the names of a listing;
- fields fetcher acts on: a PASV/EPSV reply with impossible numbers, a
  SIZE/MDTM/257 with control characters or garbage;
- real-server quirks: 450/550 "No files found" to NLST of an empty directory;
- LIST and MLSD (off by default: 502, as a server that knows NLST only):
  the directory with facts, or a flood of fact lines.
"""

from __future__ import annotations

import posixpath
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

#: Decorations real banners carry (colours, a window title, a bell) and worse.
DECORATED = b"\x1b[1;32mWelcome\x1b[0m \x1b]0;title\x07 bell\x07 cr\r c1\xc2\x9b bad\xff"


@dataclass
class Hostile:
    """What the server does; the defaults make a well-behaved server."""

    #: The greeting, one element per line (CRLF added).
    greeting: list[bytes] = field(default_factory=lambda: [b"220 hostile FTP server ready"])
    #: Replies to a verb instead of the normal one (lines without CRLF).
    replies: dict[str, list[bytes]] = field(default_factory=dict)
    #: NLST of any directory streams this many bytes of names (then closes); -1 = until the client hangs up.
    nlst_flood: int = 0
    #: Length of each flooded name (plus CRLF).
    flood_name: int = 6
    #: Fill flooded names with this byte (then a number) instead of digits alone.
    flood_fill: bytes = b""
    #: The reply to this verb is a multi-line reply that never ends ("" = the greeting).
    endless_reply: str | None = None
    #: The reply to this verb is an endless series of 1xx marks ("" = the greeting).
    endless_marks: str | None = None
    #: The reply to this verb is one line that never ends.
    endless_line: str | None = None
    #: The text of the 226 that ends a transfer.
    complete: bytes = b"226 Transfer complete."
    #: The reply to NLST of an existing empty directory (None: 150, no names, 226).
    empty_reply: bytes | None = None
    #: Extra names listed in every directory (server text: anything).
    odd_names: list[bytes] = field(default_factory=list)
    #: The reply to FEAT, one element per line (None: 502, so no MLSD).
    feat: list[bytes] | None = None
    #: LIST and MLSD: None = 502 (not implemented); "flood" = stream lines of facts
    #: like nlst_flood (its size and name length); "list" = answer with the directory.
    facts: str | None = None


class HostileFtpServer:
    def __init__(self, files: dict[str, bytes] | None = None, hostile: Hostile | None = None,
                 directories: tuple[str, ...] = ()) -> None:  # fmt: skip
        self.files = dict(files or {})
        self.directories = {"/", *directories}
        for path in [*self.files, *directories]:
            parent = posixpath.dirname(path)
            while parent not in self.directories:
                self.directories.add(parent)
                parent = posixpath.dirname(parent)
        self.hostile = hostile or Hostile()
        #: Every command line of every session, in order.
        self.sessions: list[list[str]] = []
        #: Bytes sent on data connections (the flood counts what got out).
        self.data_sent = 0
        self.port = 0

    @property
    def url(self) -> str:
        return f"ftp://127.0.0.1:{self.port}"

    @property
    def commands(self) -> list[str]:
        """Every session's commands in one list (verbs and arguments as received)."""
        return [line for session in self.sessions for line in session]

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            task_status.started()
            await trio.serve_listeners(self._session, listeners, handler_nursery=nursery)

    async def _session(self, stream: trio.SocketStream) -> None:
        session = _Session(self, stream)
        self.sessions.append(session.commands)
        try:
            await session.run()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            if session.listener is not None:
                await session.listener.aclose()
            await stream.aclose()


class _Session:
    def __init__(self, server: HostileFtpServer, stream: trio.SocketStream) -> None:
        self.server = server
        self.hostile = server.hostile
        self.stream = stream
        self.buffer = bytearray()
        self.commands: list[str] = []
        self.cwd = "/"
        self.listener: trio.SocketListener | None = None

    async def send(self, *lines: bytes) -> None:
        await self.stream.send_all(b"".join(line + b"\r\n" for line in lines))

    async def endless(self, code: bytes, *, one_line: bool = False, marks: bool = False) -> None:
        if marks:
            block = b"120 wait a moment\r\n" * 2000
        elif one_line:
            await self.stream.send_all(code + b" ")
            block = b"x" * 65536
        else:
            block = b"".join(code + b"-line %d of a reply that never ends\r\n" % n for n in range(2000))
        while True:
            await self.stream.send_all(block)

    async def read_line(self) -> bytes | None:
        while b"\n" not in self.buffer:
            data = await self.stream.receive_some(4096)
            if not data:
                return None
            self.buffer += data
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer = bytearray(rest)
        return line.rstrip(b"\r")

    async def run(self) -> None:
        if self.hostile.endless_reply == "":
            await self.endless(b"220")
        if self.hostile.endless_line == "":
            await self.endless(b"220", one_line=True)
        if self.hostile.endless_marks == "":
            await self.endless(b"120", marks=True)
        await self.send(*self.hostile.greeting)
        while True:
            raw = await self.read_line()
            if raw is None:
                return
            line = raw.decode("utf-8", "surrogateescape")
            self.commands.append(line)
            verb, _, argument = line.partition(" ")
            verb = verb.upper()
            if verb == self.hostile.endless_reply:
                await self.endless(b"200")
            if verb == self.hostile.endless_line:
                await self.endless(b"200", one_line=True)
            if verb == self.hostile.endless_marks:
                await self.endless(b"150", marks=True)
            if verb in self.hostile.replies:
                await self.send(*self.hostile.replies[verb])
                continue
            handler = getattr(self, "do_" + verb, None)
            if handler is None:
                await self.send(b"502 Command not implemented.")
            elif await handler(argument) is False:
                return

    def resolve(self, argument: str) -> str:
        return posixpath.normpath(posixpath.join(self.cwd, argument)) if argument else self.cwd

    async def do_USER(self, argument: str) -> None:
        await self.send(b"331 Any password will do.")

    async def do_PASS(self, argument: str) -> None:
        await self.send(b"230 Logged in.")

    async def do_PWD(self, argument: str) -> None:
        await self.send(b'257 "' + self.cwd.encode() + b'" is the current directory')

    async def do_CWD(self, argument: str) -> None:
        target = self.resolve(argument)
        if target not in self.server.directories:
            await self.send(b"550 No such directory.")
            return
        self.cwd = target
        await self.send(b"250 Directory changed.")

    async def do_TYPE(self, argument: str) -> None:
        await self.send(b"200 Type set.")

    async def do_SIZE(self, argument: str) -> None:
        data = self.server.files.get(self.resolve(argument))
        await self.send(b"213 %d" % len(data) if data is not None else b"550 No such file.")

    async def do_MDTM(self, argument: str) -> None:
        found = self.resolve(argument) in self.server.files
        await self.send(b"213 20261121103000" if found else b"550 No such file.")

    async def do_QUIT(self, argument: str) -> bool:
        await self.send(b"221 Bye.")
        return False

    async def _listen(self) -> int:
        if self.listener is not None:
            await self.listener.aclose()
        self.listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        return int(self.listener.socket.getsockname()[1])

    async def do_EPSV(self, argument: str) -> None:
        await self.send(b"229 Entering Extended Passive Mode (|||%d|)" % await self._listen())

    async def do_PASV(self, argument: str) -> None:
        port = await self._listen()
        await self.send(b"227 Entering Passive Mode (127,0,0,1,%d,%d)." % (port // 256, port % 256))

    async def _accept(self) -> trio.SocketStream | None:
        if self.listener is None:
            await self.send(b"425 Use PASV or EPSV first.")
            return None
        with trio.move_on_after(5):
            stream = await self.listener.accept()
            await self.listener.aclose()
            self.listener = None
            return stream
        await self.send(b"425 No data connection.")
        return None

    async def _drop_listener(self) -> None:
        if self.listener is not None:
            await self.listener.aclose()
            self.listener = None

    async def _send_data(self, payload: bytes) -> None:
        stream = await self._accept()
        if stream is None:
            return
        await self.send(b"150 Opening data connection.")
        async with stream:
            await stream.send_all(payload)
            self.server.data_sent += len(payload)
        await self.send(self.hostile.complete)

    async def do_RETR(self, argument: str) -> None:
        data = self.server.files.get(self.resolve(argument))
        if data is None:
            await self._drop_listener()
            await self.send(b"550 No such file.")
            return
        await self._send_data(data)

    async def do_NLST(self, argument: str) -> None:
        target = self.resolve(argument)
        if target not in self.server.directories:
            await self._drop_listener()
            await self.send(b"550 No such file or directory.")
            return
        if self.hostile.nlst_flood:
            await self._flood()
            return
        inside = target.rstrip("/") + "/"
        names = sorted({path[len(inside) :].split("/")[0] for path in (*self.server.files, *self.server.directories)
                        if path.startswith(inside) and path != target})  # fmt: skip
        if not names and self.hostile.empty_reply is not None:
            await self._drop_listener()
            await self.send(self.hostile.empty_reply)
            return
        listing = [name.encode() for name in names] + self.hostile.odd_names
        await self._send_data(b"".join(name + b"\r\n" for name in listing))

    def _flood_name(self, number: int, width: int) -> bytes:
        if not self.hostile.flood_fill:
            return b"%0*d" % (width, number % 10**width)
        tail = b"%d" % number
        return self.hostile.flood_fill * max(0, width - len(tail)) + tail

    async def do_FEAT(self, argument: str) -> None:
        await self.send(*(self.hostile.feat or [b"502 FEAT not implemented."]))

    async def do_LIST(self, argument: str) -> None:
        await self._facts(b"-rw-r--r--    1 1000     1000           42 Nov 21 10:30 %s")

    async def do_MLSD(self, argument: str) -> None:
        await self._facts(b"type=file;size=42;modify=20261121103000; %s")

    async def _facts(self, shape: bytes) -> None:
        """LIST/MLSD of the current directory in `shape` (one name each), or a flood of such lines."""
        if self.hostile.facts is None:
            await self._drop_listener()
            await self.send(b"502 Command not implemented.")
            return
        if self.hostile.facts == "flood":
            await self._flood(shape)
            return
        inside = self.cwd.rstrip("/") + "/"
        names = sorted({path[len(inside) :].split("/")[0] for path in (*self.server.files, *self.server.directories)
                        if path.startswith(inside) and path != self.cwd})  # fmt: skip
        await self._send_data(b"".join(shape % name.encode() + b"\r\n" for name in names))

    async def _flood(self, shape: bytes = b"%s") -> None:
        stream = await self._accept()
        if stream is None:
            return
        await self.send(b"150 Here comes a very long listing.")
        width = self.hostile.flood_name
        per_block = max(1, 65536 // (width + len(shape)))
        number = 0
        try:
            async with stream:
                while self.hostile.nlst_flood < 0 or self.server.data_sent < self.hostile.nlst_flood:
                    block = b"".join(shape % self._flood_name(number + n, width) + b"\r\n" for n in range(per_block))
                    number += per_block
                    if self.hostile.nlst_flood > 0:
                        block = block[: self.hostile.nlst_flood - self.server.data_sent]
                    await stream.send_all(block)
                    self.server.data_sent += len(block)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await self.send(b"426 Connection closed; listing aborted.")
            return
        await self.send(self.hostile.complete)


@asynccontextmanager
async def serving(server: HostileFtpServer) -> AsyncIterator[HostileFtpServer]:
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        yield server
        nursery.cancel_scope.cancel()
