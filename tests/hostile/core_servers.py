"""Hostile TCP servers for the core tests: slow drips, stalls, and a record of
every connection (opened, what arrived, whether the client closed it).

A `Script` gets a `Peer`: it reads the request it needs (`read_until`), then
sends, drips or stalls.  While the script runs, the server watches for the
client hanging up and records it, so tests can assert that an abandoned
retrieval really closed its socket.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

from tests.servers.ftp_fake import FakeFtpServer, _close, _Session


@dataclass
class Connection:
    received: bytearray = field(default_factory=bytearray)
    #: Set when the client closed (EOF) or reset the connection.
    closed_by_client: bool = False
    ended: trio.Event = field(default_factory=trio.Event)


class Peer:
    def __init__(self, stream: trio.SocketStream, record: Connection) -> None:
        self.stream = stream
        self.record = record
        self._buffer = bytearray()
        self._gone = trio.Event()

    async def read_until(self, terminator: bytes) -> bytes:
        while terminator not in self._buffer:
            data = await self.stream.receive_some(65536)
            if not data:
                self.record.closed_by_client = True
                raise trio.BrokenResourceError("client closed")
            self._buffer += data
            self.record.received += data
        head, _, rest = bytes(self._buffer).partition(terminator)
        self._buffer = bytearray(rest)
        return head + terminator

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def drip(self, data: bytes, interval: float) -> None:
        """One byte per `interval` seconds."""
        for index in range(len(data)):
            await self.stream.send_all(data[index : index + 1])
            await trio.sleep(interval)

    async def drip_forever(self, byte: bytes = b"x", interval: float = 0.3) -> None:
        while True:
            await self.stream.send_all(byte)
            await trio.sleep(interval)

    async def wait_for_close(self) -> None:
        """Hold the connection open until the client goes away."""
        while True:
            data = await self.stream.receive_some(65536)
            if not data:
                self.record.closed_by_client = True
                return
            self.record.received += data


Script = Callable[[Peer], Awaitable[None]]


class HostileServer:
    """`async with hostile(script) as server:`; `server.port`, `server.connections`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections: list[Connection] = []
        self.port = 0

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started()
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, stream: trio.SocketStream) -> None:
        record = Connection()
        self.connections.append(record)
        peer = Peer(stream, record)
        try:
            await self.script(peer)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            record.closed_by_client = True
        finally:
            record.ended.set()
            with trio.move_on_after(1):
                await stream.aclose()

    async def all_closed(self, timeout: float = 5.0) -> bool:
        """True once every connection so far was closed by the client."""
        with trio.move_on_after(timeout):
            for record in list(self.connections):
                await record.ended.wait()
            return all(record.closed_by_client for record in self.connections)
        return False


@asynccontextmanager
async def hostile(script: Script) -> AsyncIterator[HostileServer]:
    server = HostileServer(script)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        yield server
        nursery.cancel_scope.cancel()


# -- scripts ----------------------------------------------------------------------


def http_drip(interval: float = 0.3, length: int = 1000) -> Script:
    """A valid HTTP head promising `length` bytes, then the body one byte per interval."""

    async def script(peer: Peer) -> None:
        await peer.read_until(b"\r\n\r\n")
        await peer.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % length)
        await peer.drip(b"x" * length, interval)

    return script


def http_pieces(pieces: int, size: int, interval: float) -> Script:
    """A fast server: the body in `pieces` bursts of `size` bytes, `interval` apart."""

    async def script(peer: Peer) -> None:
        await peer.read_until(b"\r\n\r\n")
        await peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (pieces * size))
        for _ in range(pieces):
            await peer.send(b"p" * size)
            await trio.sleep(interval)

    return script


def http_head_drip(interval: float = 0.3) -> Script:
    """The status line itself, one byte per interval, never finished."""

    async def script(peer: Peer) -> None:
        await peer.read_until(b"\r\n\r\n")
        await peer.drip(b"HTTP/1.1 200 OK" + b"K" * 10_000, interval)

    return script


def http_held(body: bytes = b"held\n") -> Script:
    """Sends the head and part of a body, then holds the connection until the client leaves."""

    async def script(peer: Peer) -> None:
        await peer.read_until(b"\r\n\r\n")
        await peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (len(body) + 100) + body)
        await peer.wait_for_close()

    return script


def ftp_banner_drip(interval: float = 0.3) -> Script:
    """An FTP greeting that arrives one byte per interval and never ends its line."""

    async def script(peer: Peer) -> None:
        await peer.drip(b"220 " + b"w" * 10_000, interval)

    return script


def ftp_banner_lines(interval: float = 0.3) -> Script:
    """A multi-line FTP greeting: every line complete and prompt, the reply never ending."""

    async def script(peer: Peer) -> None:
        number = 0
        while True:
            number += 1
            await peer.send(b"220-welcome, line %d\r\n" % number)
            await trio.sleep(interval)

    return script


def gopher_drip(interval: float = 0.3) -> Script:
    """A Gopher text document, one byte per interval, never ending."""

    async def script(peer: Peer) -> None:
        await peer.read_until(b"\n")
        await peer.drip_forever(b"g", interval)

    return script


# -- an FTP server whose data connection drips ------------------------------------


class DripFtpServer(FakeFtpServer):
    """The in-repo fake FTP server, except that RETR sends one byte per `interval`."""

    def __init__(self, files: dict[str, bytes], interval: float = 0.3) -> None:
        super().__init__(files)
        self.interval = interval



class _DripSession(_Session):
    server: DripFtpServer

    async def do_RETR(self, argument: str) -> None:
        data = self.server.files.get(self.resolve(argument), b"")
        stream = await self._accept()
        if stream is None:
            return
        await self.send(b"150 Opening BINARY mode data connection (%d bytes)." % len(data))
        try:
            for index in range(len(data)):
                await stream.send_all(data[index : index + 1])
                await trio.sleep(self.server.interval)
        finally:
            await _close(stream)
        await self.send(b"226 Transfer complete.")


DripFtpServer.session_class = _DripSession
