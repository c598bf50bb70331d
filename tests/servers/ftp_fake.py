"""A small FTP server on trio for the fault tests of issue 3.

It speaks just enough RFC 959 for a retrieving client (USER, PASS, ACCT,
PWD, CWD, TYPE, SIZE, MDTM, EPSV, PASV, REST, RETR, NLST, LIST, MLSD, NOOP, QUIT, and
AUTH TLS / PBSZ / PROT or implicit TLS), records every command line of every
connection, and misbehaves on request: a 227 naming another address, a reset
in the middle of RETR, a 421 greeting, multi-line banners, replies with
escape sequences or garbage, stalls, hanging up while idle.
"""

from __future__ import annotations

import posixpath
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio


@dataclass
class Faults:
    #: The greeting, one element per line (CRLF added).
    greeting: list[bytes] = field(default_factory=lambda: [b"220 fake FTP server ready"])
    stall_after_greeting: bool = False
    epsv: bool = True
    #: The address a 227 reply names (the client must dial the control address anyway).
    pasv_address: str = "127.0.0.1"
    #: The reply to PWD (default: 257 "<home>" is the current directory).
    pwd_reply: bytes | None = None
    #: Ask for ACCT (332) after PASS; the account that is accepted.
    account: str | None = None
    #: RETR sends this many bytes, then resets the data connection and answers 426.
    reset_after: int | None = None
    #: How many RETRs reset_after cuts (None: all of them).
    reset_times: int | None = None
    #: Cut with a TCP reset (RST; the client may lose what it had not read yet)
    #: instead of a plain close (FIN; the client gets exactly reset_after bytes).
    reset_hard: bool = True
    #: RETR sends this many bytes, then closes the data connection and answers 226.
    truncate_after: int | None = None
    #: RETR sends this many bytes and then nothing, holding the connection open.
    stall_after: int | None = None
    #: Replace the reply to a verb (e.g. {"PWD": b"garbage"}); lines without CRLF.
    replies: dict[str, list[bytes]] = field(default_factory=dict)
    #: Hang up (without a reply) when a session's command number N (1-based) arrives.
    hang_up_at: int | None = None
    rest: bool = True
    #: LIST answers 150, sends nothing, 226 (the OpenBSD-derived ftpd in a chroot without /bin/ls);
    #: NLST, built into such servers, still names every file.
    empty_list: bool = False


class FakeFtpServer:
    #: What serves one control connection; a variant server overrides its session.
    session_class: type[_Session]

    def __init__(
        self,
        files: dict[str, bytes],
        *,
        users: dict[str, str] | None = None,
        home: str = "/",
        faults: Faults | None = None,
        tls: ssl.SSLContext | None = None,
        implicit_tls: bool = False,
        mdtm: bytes = b"20261121103000",
    ) -> None:
        self.files = {posixpath.normpath(path): data for path, data in files.items()}
        self.directories = {"/"}
        for path in self.files:
            parent = posixpath.dirname(path)
            while parent not in self.directories:
                self.directories.add(parent)
                parent = posixpath.dirname(parent)
        self.directories.add(home)
        #: user -> password; "anonymous" accepts any password.
        self.users = users if users is not None else {"anonymous": ""}
        self.home = home
        self.faults = faults or Faults()
        self.tls = tls
        self.implicit_tls = implicit_tls
        self.mdtm = mdtm
        self.sessions: list[list[str]] = []
        self.data_peers: list[str] = []
        #: For each TLS data connection: did the client resume the control connection's session?
        self.data_tls_resumed: list[bool] = []
        self.port = 0
        self.host = "127.0.0.1"

    @property
    def url(self) -> str:
        return f"{'ftps' if self.implicit_tls else 'ftp'}://127.0.0.1:{self.port}"

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            task_status.started()
            await trio.serve_listeners(self._session, listeners, handler_nursery=nursery)

    async def _session(self, stream: trio.abc.Stream) -> None:
        if self.implicit_tls:
            assert self.tls is not None
            stream = trio.SSLStream(stream, self.tls, server_side=True)
        session = self.session_class(self, stream)
        self.sessions.append(session.commands)
        try:
            await session.run()
        except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError):
            pass
        finally:
            await session.close()


class _Session:
    def __init__(self, server: FakeFtpServer, stream: trio.abc.Stream) -> None:
        self.server = server
        self.faults = server.faults
        self.stream = stream
        self.buffer = bytearray()
        self.commands: list[str] = []
        self.cwd = server.home
        self.user: str | None = None
        self.logged_in = False
        self.type = "A"
        self.rest = 0
        self.protected = False
        self.listener: trio.SocketListener | None = None

    async def send(self, *lines: bytes) -> None:
        await self.stream.send_all(b"".join(line + b"\r\n" for line in lines))

    async def read_line(self) -> bytes | None:
        while b"\n" not in self.buffer:
            data = await self.stream.receive_some(4096)
            if not data:
                return None
            self.buffer += data
        line, _, rest = bytes(self.buffer).partition(b"\n")
        self.buffer = bytearray(rest)
        return line.rstrip(b"\r")

    async def close(self) -> None:
        if self.listener is not None:
            await self.listener.aclose()
        with trio.move_on_after(1):
            try:
                await self.stream.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError):
                pass

    async def run(self) -> None:
        await self.send(*self.faults.greeting)
        if not self.faults.greeting[-1].startswith(b"220") and not self.faults.greeting[-1].startswith(b"120"):
            return
        if self.faults.stall_after_greeting:
            await trio.sleep_forever()
        while True:
            raw = await self.read_line()
            if raw is None:
                return
            line = raw.decode("utf-8", "surrogateescape")
            self.commands.append(line)
            if self.faults.hang_up_at is not None and len(self.commands) >= self.faults.hang_up_at:
                return
            verb, _, argument = line.partition(" ")
            verb = verb.upper()
            if verb in self.faults.replies:
                await self.send(*self.faults.replies[verb])
                continue
            handler = getattr(self, "do_" + verb, None)
            if handler is None:
                await self.send(b"502 Command not implemented.")
                continue
            if verb not in ("USER", "PASS", "ACCT", "QUIT", "AUTH", "PBSZ", "PROT") and not self.logged_in:
                await self.send(b"530 Please login with USER and PASS.")
                continue
            if await handler(argument) is False:
                return

    # -- login and TLS -------------------------------------------------------

    async def do_AUTH(self, argument: str) -> None:
        if self.server.tls is None or argument.upper() != "TLS":
            await self.send(b"504 AUTH not supported.")
            return
        await self.send(b"234 AUTH TLS successful.")
        tls = trio.SSLStream(self.stream, self.server.tls, server_side=True)
        await tls.do_handshake()
        self.stream = tls

    async def do_PBSZ(self, argument: str) -> None:
        await self.send(b"200 PBSZ=0")

    async def do_PROT(self, argument: str) -> None:
        self.protected = argument.upper() == "P"
        await self.send(b"200 Protection set.")

    async def do_USER(self, argument: str) -> None:
        self.user = argument
        self.logged_in = False
        await self.send(b"331 Password required.")

    async def do_PASS(self, argument: str) -> None:
        expected = self.server.users.get(self.user or "")
        if expected is None or (self.user != "anonymous" and argument != expected):
            await self.send(b"530 Login incorrect.")
            return
        if self.faults.account is not None:
            await self.send(b"332 Account required.")
            return
        self.logged_in = True
        await self.send(b"230 Login successful.")

    async def do_ACCT(self, argument: str) -> None:
        if argument != self.faults.account:
            await self.send(b"530 Account refused.")
            return
        self.logged_in = True
        await self.send(b"230 Account accepted.")

    async def do_QUIT(self, argument: str) -> bool:
        await self.send(b"221 Goodbye.")
        return False

    async def do_NOOP(self, argument: str) -> None:
        await self.send(b"200 NOOP ok.")

    # -- navigation and metadata ---------------------------------------------

    def resolve(self, argument: str) -> str:
        return posixpath.normpath(posixpath.join(self.cwd, argument)) if argument else self.cwd

    async def do_PWD(self, argument: str) -> None:
        reply = self.faults.pwd_reply
        if reply is None:
            quoted = self.cwd.replace('"', '""').encode("utf-8", "surrogateescape")
            reply = b'257 "' + quoted + b'" is the current directory'
        await self.send(reply)

    async def do_CWD(self, argument: str) -> None:
        target = self.resolve(argument)
        if target not in self.server.directories:
            await self.send(b"550 Failed to change directory.")
            return
        self.cwd = target
        await self.send(b"250 Directory successfully changed.")

    async def do_TYPE(self, argument: str) -> None:
        self.type = argument.upper()
        await self.send(b"200 Switching to " + (b"Binary" if self.type == "I" else b"ASCII") + b" mode.")

    async def do_SIZE(self, argument: str) -> None:
        data = self.server.files.get(self.resolve(argument))
        if data is None:
            await self.send(b"550 Could not get file size.")
            return
        await self.send(b"213 %d" % len(data))

    async def do_MDTM(self, argument: str) -> None:
        if self.resolve(argument) not in self.server.files:
            await self.send(b"550 Could not get file modification time.")
            return
        await self.send(b"213 " + self.server.mdtm)

    async def do_REST(self, argument: str) -> None:
        if not self.faults.rest:
            await self.send(b"502 REST not implemented.")
            return
        self.rest = int(argument)
        await self.send(b"350 Restart position accepted (%d)." % self.rest)

    # -- data connections ------------------------------------------------------

    async def _listen(self) -> int:
        if self.listener is not None:
            await self.listener.aclose()
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.listener = listeners[0]
        return int(self.listener.socket.getsockname()[1])

    async def do_EPSV(self, argument: str) -> None:
        if not self.faults.epsv:
            await self.send(b"500 Unknown command.")
            return
        port = await self._listen()
        await self.send(b"229 Entering Extended Passive Mode (|||%d|)" % port)

    async def do_PASV(self, argument: str) -> None:
        port = await self._listen()
        numbers = self.faults.pasv_address.replace(".", ",").encode()
        await self.send(b"227 Entering Passive Mode (%s,%d,%d)." % (numbers, port // 256, port % 256))

    async def _accept(self) -> trio.abc.Stream | None:
        if self.listener is None:
            await self.send(b"425 Use PASV or EPSV first.")
            return None
        with trio.move_on_after(10):
            stream = await self.listener.accept()
            await self.listener.aclose()
            self.listener = None
            peer = stream.socket.getpeername()[0]
            self.server.data_peers.append(str(peer))
            return stream
        await self.send(b"425 Failed to establish connection.")
        return None

    async def _secure(self, stream: trio.abc.Stream) -> trio.abc.Stream:
        if not self.protected:
            return stream
        assert self.server.tls is not None
        tls = trio.SSLStream(stream, self.server.tls, server_side=True)
        await tls.do_handshake()
        self.server.data_tls_resumed.append(bool(tls.session_reused))
        return tls

    async def do_RETR(self, argument: str) -> None:
        data = self.server.files.get(self.resolve(argument))
        if data is None:
            if self.listener is not None:
                await self.listener.aclose()
                self.listener = None
            await self.send(b"550 Failed to open file.")
            return
        if self.type == "A":
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        start, self.rest = self.rest, 0
        stream = await self._accept()
        if stream is None:
            return
        await self.send(b"150 Opening %s mode data connection (%d bytes)." % (self.type.encode(), len(data)))
        stream = await self._secure(stream)
        data = data[start:]
        faults = self.faults
        if faults.reset_after is not None and faults.reset_times != 0:
            if faults.reset_times is not None:
                faults.reset_times -= 1
            await stream.send_all(data[: faults.reset_after])
            sock = getattr(stream, "socket", None)
            if sock is not None and faults.reset_hard:
                await trio.sleep(0.05)  # usually lets the client read first; tests allow for losses
                import socket
                import struct

                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await stream.aclose()
            await self.send(b"426 Connection closed; transfer aborted.")
            return
        if faults.stall_after is not None:
            await stream.send_all(data[: faults.stall_after])
            await trio.sleep_forever()
        if faults.truncate_after is not None:
            data = data[: faults.truncate_after]
        await stream.send_all(data)
        await _close(stream)
        await self.send(b"226 Transfer complete.")

    async def do_NLST(self, argument: str) -> None:
        target = self.resolve(argument)
        if target in self.server.files:
            names = [argument]
        elif target in self.server.directories:
            names = sorted(
                {
                    path[len(target) :].lstrip("/").split("/")[0]
                    for path in (*self.server.files, *self.server.directories)
                    if path.startswith(target.rstrip("/") + "/") and path != target
                }
            )
        else:
            if self.listener is not None:
                await self.listener.aclose()
                self.listener = None
            await self.send(b"550 No such file or directory.")
            return
        stream = await self._accept()
        if stream is None:
            return
        await self.send(b"150 Here comes the directory listing.")
        stream = await self._secure(stream)
        await stream.send_all(b"".join(name.encode("utf-8", "surrogateescape") + b"\r\n" for name in names))
        await _close(stream)
        await self.send(b"226 Directory send OK.")


    # -- listings with facts: LIST as vsftpd writes it, MLSD (only when a fault offers it in FEAT) --

    def _entries(self) -> list[tuple[str, int | None]]:
        """(name, size) in the current directory; size None for a directory."""
        prefix = self.cwd.rstrip("/") + "/"
        found: dict[str, int | None] = {}
        for path in (*self.server.files, *self.server.directories):
            if path.startswith(prefix) and path != self.cwd:
                name = path[len(prefix) :].split("/")[0]
                full = prefix + name
                found[name] = len(self.server.files[full]) if full in self.server.files else None
        return sorted(found.items())

    async def _send_listing(self, lines: list[bytes]) -> None:
        stream = await self._accept()
        if stream is None:
            return
        await self.send(b"150 Here comes the directory listing.")
        stream = await self._secure(stream)
        await stream.send_all(b"".join(line + b"\r\n" for line in lines))
        await _close(stream)
        await self.send(b"226 Directory send OK.")

    async def do_LIST(self, argument: str) -> None:
        if self.faults.empty_list:
            await self._send_listing([])
            return
        stamp = self.server.mdtm.decode()
        months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        date = f"{months[int(stamp[4:6]) - 1]} {stamp[6:8]}  {stamp[:4]}"
        lines = []
        for name, size in self._entries():
            mode, shown = ("drwxr-xr-x", 4096) if size is None else ("-rw-r--r--", size)
            lines.append(f"{mode}    1 0        0        {shown:>8} {date} {name}".encode("utf-8", "surrogateescape"))
        await self._send_listing(lines)

    async def do_MLSD(self, argument: str) -> None:
        stamp = self.server.mdtm.decode()
        lines = []
        for name, size in self._entries():
            facts = "type=dir;" if size is None else f"type=file;size={size};"
            lines.append(f"{facts}modify={stamp};perm=r; {name}".encode("utf-8", "surrogateescape"))
        await self._send_listing(lines)


async def _close(stream: trio.abc.Stream) -> None:
    try:
        await stream.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError, ssl.SSLError):
        pass


@asynccontextmanager
async def serving(server: FakeFtpServer) -> AsyncIterator[FakeFtpServer]:
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        yield server
        nursery.cancel_scope.cancel()


FakeFtpServer.session_class = _Session
