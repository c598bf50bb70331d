"""A Prospero v5 test server over ARDP, written with trio and fetcher's own codec.

It behaves like the 5.3 server of the notes (§6): 3-octet headers for
single-packet replies, 7-octet headers on first transmission, a please-ack
flag at the window edge, done-queue retransmissions with the byte-swapped
connection id, FAILURE NOT-A-DIRECTORY / NOT-FOUND, the ACCESS-METHOD quirk.
`Faults` simulates a bad network or server: every Nth datagram dropped,
random loss both ways, duplicates, reversed windows, a long "please wait",
silence.  `ftp_server` runs pyftpdlib in a thread for AFTP access methods.
"""

from __future__ import annotations

import random
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import trio

from fetcher.schemes.prospero import ardp, protocol
from tests.servers.common import pyftpdlib_server

q = protocol.quote


@dataclass
class Link:
    """One directory entry; `methods` are the ACCESS-METHOD tuples of EXTERNAL links."""

    name: str
    target: str  # FILE, DIRECTORY, EXTERNAL, SYMBOLIC ...
    host: str
    hsoname: str
    methods: list[list[str]] = field(default_factory=list)
    flavour: str = "L"
    #: Sent (with modes, owner, group and time) only when LIST asks for ATTRIBUTES.
    size: int | None = None


@dataclass
class Directory:
    links: list[Link]
    authorized: bool = True


@dataclass
class Object:
    """A file: its access methods, optionally its bytes (PROSPERO-CONTENTS)."""

    methods: list[list[str]]
    contents: bytes | None = None
    #: The 5.3 server's quirk: ACCESS-METHOD alone says NOT-FOUND; #ALL works.
    quirk: bool = False
    authorized: bool = True


@dataclass
class Forward:
    host: str
    hsoname: str


Node = Directory | Object | Forward


@dataclass
class Faults:
    drop_every: int = 0  # drop every Nth datagram the server sends
    loss: float = 0.0  # random loss, both directions
    seed: int = 0
    duplicate: bool = False  # send every data packet twice
    reverse: bool = False  # send each window in reverse order
    wait: float = 0.0  # send a "please wait" of `wait_seconds`, answer after `wait` s
    wait_seconds: int = 0
    silent: bool = False  # never answer at all
    swap_cid: bool = True  # done-queue packets carry the byte-swapped cid (5.3 on little-endian)
    window: int = ardp.DEFAULT_WINDOW


@dataclass
class Done:
    payloads: list[bytes]
    address: tuple[str, int]
    cid: int
    window: int
    acked: int = 0
    ready: bool = True  # False while a "please wait" is in force


class ProsperoServer:
    def __init__(self, tree: dict[str, Node], faults: Faults | None = None, host_name: str = "LOCALHOST") -> None:
        self.tree = tree
        self.faults = faults or Faults()
        self.host_name = host_name
        self.port = 0
        self.requests: list[bytes] = []  # every complete request message, in order
        self.received = 0
        self.sent = 0
        self.sent_bytes = 0  # octets of the datagrams actually sent
        self.dropped = 0
        self.cancels = 0
        self._dropped: set[tuple[int, int]] = set()
        self._random = random.Random(self.faults.seed)
        self._partial: dict[tuple[tuple[str, int], int], dict[int, bytes]] = {}
        self._done: dict[tuple[tuple[str, int], int], Done] = {}
        self._sock: trio.socket.SocketType | None = None

    @property
    def host_field(self) -> str:
        return f"{self.host_name}({self.port})"

    # -- datagrams ----------------------------------------------------------------

    async def _send(self, datagram: bytes, address: tuple[str, int], ident: tuple[int, int] | None = None) -> None:
        """Send one datagram, unless a fault drops it.

        `drop_every` drops a given packet (`ident`) only once: a fixed period
        that divides the size of a retransmitted batch would otherwise drop
        the same packet forever, which no network does.
        """
        assert self._sock is not None
        self.sent += 1
        faults = self.faults
        periodic = bool(faults.drop_every) and self.sent % faults.drop_every == 0 and ident not in self._dropped
        if periodic or self._random.random() < faults.loss:
            self.dropped += 1
            if ident is not None:
                self._dropped.add(ident)
            return
        self.sent_bytes += len(datagram)
        await self._sock.sendto(datagram, address)

    async def _send_window(self, done: Done, first: int, *, fresh: bool, rescind: bool = False) -> None:
        """Packets first..first+window-1 (1-based); the last asks for an ack when more remain."""
        total = len(done.payloads)
        last = min(total, first + done.window - 1)
        batch: list[tuple[int, bytes]] = []
        for seq in range(first, last + 1):
            chunk = done.payloads[seq - 1]
            more = seq == last and seq < total
            if total == 1 and fresh and not rescind:
                datagram = ardp.encode(cid=done.cid, payload=chunk)
            elif rescind:
                ack = ardp.FLAG_ACK if (more or seq == total) else 0
                datagram = ardp.encode(
                    cid=done.cid, seq=seq, total=total, rthru=1, flags=ack, min_length=12, payload=chunk
                )
            elif fresh and not more:
                announced = total if seq == total else 0
                datagram = ardp.encode(cid=done.cid, seq=seq, total=announced, min_length=7, payload=chunk)
            else:
                cid = ardp.swap16(done.cid) if (self.faults.swap_cid and not fresh) else done.cid
                datagram = ardp.encode(
                    cid=cid, seq=seq, total=0 if fresh else total, rthru=1, flags=ardp.FLAG_ACK if more else 0,
                    min_length=9, payload=chunk,
                )  # fmt: skip
            batch.append((seq, datagram))
        if self.faults.reverse:
            batch.reverse()
        for seq, datagram in batch:
            await self._send(datagram, done.address, (done.cid, seq))
            if self.faults.duplicate:
                await self._send(datagram, done.address, (done.cid, seq))

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
        await sock.bind(("127.0.0.1", 0))
        self._sock = sock
        self.port = sock.getsockname()[1]
        with sock:
            async with trio.open_nursery() as nursery:
                task_status.started(self.port)
                while True:
                    datagram, address = await sock.recvfrom(65535)
                    self.received += 1
                    if self.faults.loss and self._random.random() < self.faults.loss:
                        continue
                    await self._incoming(datagram, address, nursery)

    async def _incoming(self, datagram: bytes, address: tuple[str, int], nursery: trio.Nursery) -> None:
        try:
            packet = ardp.decode(datagram)
        except ardp.PacketError:
            return
        key = (address, packet.cid)
        if packet.seq == 0 and packet.option == ardp.OPTION_CANCEL:
            self.cancels += 1
        if self.faults.silent:
            return
        if packet.seq == 0:
            if packet.option == ardp.OPTION_CANCEL:
                self._done.pop(key, None)
                self._partial.pop(key, None)
                return
            done = self._done.get(key)
            if done is not None and packet.rthru < len(done.payloads):
                done.acked = max(done.acked, packet.rthru)
                await self._send_window(done, done.acked + 1, fresh=False)
            return
        if key in self._done:  # a retransmitted request: the reply got lost
            done = self._done[key]
            if not done.ready:
                await self._send(self._wait_packet(done), address)
                return
            done.acked = max(done.acked, packet.rthru)
            if done.acked < len(done.payloads):
                await self._send_window(done, done.acked + 1, fresh=False)
            return
        parts = self._partial.setdefault(key, {})
        total = packet.total or 1
        if packet.seq in parts:
            await self._send(ardp.ack_packet(packet.cid, _contiguous(parts)), address)
            return
        parts[packet.seq] = packet.payload
        if len(parts) < total or _contiguous(parts) < total:
            return
        del self._partial[key]
        message = b"".join(parts[seq] for seq in range(1, total + 1))
        self.requests.append(message)
        reply = self.interpret(message)
        done = Done(ardp.split_message(reply), address, packet.cid, packet.window or self.faults.window)
        self._done[key] = done
        if len(self._done) > 20:
            self._done.pop(next(iter(self._done)))
        if self.faults.wait:
            done.ready = False
            nursery.start_soon(self._answer_later, done)
        else:
            await self._send_window(done, 1, fresh=True)

    def _wait_packet(self, done: Done) -> bytes:
        return ardp.encode(cid=done.cid, seq=0, total=0, wait=self.faults.wait_seconds, min_length=11)

    async def _answer_later(self, done: Done) -> None:
        await self._send(self._wait_packet(done), done.address)
        await trio.sleep(self.faults.wait)
        done.ready = True
        await self._send_window(done, 1, fresh=True, rescind=True)

    # -- the v5 interpreter --------------------------------------------------------------

    def interpret(self, message: bytes) -> bytes:
        out: list[bytes] = []
        directory: str | None = None
        for tokens in protocol.tokenize(message):
            words = [protocol.text(t) for t in tokens]
            command = words[0]
            if command == "VERSION":
                if len(words) == 1:
                    out.append(b"VERSION 5 fetcher-test-server\n")
                elif words[1] != "5":
                    return b"VERSION-NOT-SUPPORTED TRY 5-5"  # no trailing LF, like the real server
            elif command in ("AUTHENTICATE", "SELECT"):
                continue
            elif command == "DIRECTORY" and len(words) >= 3:
                node = self.tree.get(words[2])
                failure = self._failure(node, words[2], want_directory=True)
                if failure:
                    return b"".join(out) + failure
                directory = words[2]
            elif command == "LIST" and directory is not None:
                node = self.tree[directory]
                assert isinstance(node, Directory)
                attributes = len(words) > 1 and words[1].split("(")[0].split("+")[0] == "ATTRIBUTES"
                out.extend(self._links(node, attributes=attributes) or [b"NONE-FOUND\n"])
            elif command == "GET-OBJECT-INFO" and len(words) >= 4:
                node = self.tree.get(words[3])
                failure = self._failure(node, words[3], want_directory=False)
                if failure:
                    return b"".join(out) + failure
                assert isinstance(node, Object | Directory)
                out.extend(self._object_info(node, words[1].split("+")))
            else:
                return b"".join(out) + b"ERROR Unknown message: " + b" ".join(tokens) + b"\n"
        return b"".join(out)

    def _failure(self, node: Node | None, hsoname: str, *, want_directory: bool) -> bytes:
        if node is None:
            return b"FAILURE NOT-FOUND\n"
        if isinstance(node, Forward):
            return b"FORWARDED INTERNET-D " + q(node.host) + b" ASCII " + q(node.hsoname) + b" 0\n"
        if not node.authorized:
            return b"FAILURE NOT-AUTHORIZED\n"
        if want_directory and not isinstance(node, Directory):
            return b"FAILURE NOT-A-DIRECTORY\n"
        return b""

    def _links(self, node: Directory, *, attributes: bool) -> list[bytes]:
        """LINK lines; an EXTERNAL link's ACCESS-METHOD always follows (as on the real
        server), the intrinsic attributes only when asked for."""
        lines = []
        for link in node.links:
            lines.append(b"LINK  %s %s %s INTERNET-D %s ASCII %s 0\n" % (
                link.flavour.encode(), link.target.encode(), q(link.name), q(link.host), q(link.hsoname)))  # fmt: skip
            for method in link.methods:
                lines.append(b"ATTRIBUTE CACHED FIELD ACCESS-METHOD " + b" ".join(q(v) for v in method) + b"\n")
            if attributes:
                modes = "drwxr-xr-x" if "DIRECTORY" in link.target else "-rw-r--r--"
                if link.size is not None:
                    lines.append(b"ATTRIBUTE OBJECT INTRINSIC SIZE SEQUENCE " + q(f"{link.size} bytes") + b"\n")
                lines.append(b"ATTRIBUTE OBJECT INTRINSIC UNIX-MODES SEQUENCE " + modes.encode() + b"\n")
                lines.append(b"ATTRIBUTE OBJECT INTRINSIC LAST-MODIFIED SEQUENCE 19940517120000Z\n")
                lines.append(b"ATTRIBUTE OBJECT INTRINSIC NATIVE-OWNER SEQUENCE archive\n")
                lines.append(b"ATTRIBUTE OBJECT INTRINSIC NATIVE-GROUP SEQUENCE archive\n")
        return lines

    def _object_info(self, node: Object | Directory, wanted: list[str]) -> list[bytes]:
        if isinstance(node, Directory):
            return [b"ATTRIBUTE OBJECT INTRINSIC UNIX-MODES SEQUENCE drwxr-xr-x\n"]
        lines = []
        if wanted == ["ACCESS-METHOD"] and node.quirk:
            return [b"FAILURE NOT-FOUND\n"]
        if "ACCESS-METHOD" in wanted or "#ALL" in wanted:
            for method in node.methods:
                lines.append(b"ATTRIBUTE OBJECT INTRINSIC ACCESS-METHOD SEQUENCE " + b" ".join(q(v) for v in method))
                lines[-1] += b"\n"
        if "#ALL" in wanted and node.contents is not None:
            lines.append(b"ATTRIBUTE OBJECT INTRINSIC SIZE SEQUENCE " + q(f"{len(node.contents)} bytes") + b"\n")
        if "CONTENTS" in wanted:
            if node.contents is None:
                return [b"FAILURE NOT-FOUND ATTRIBUTE\n"]
            lines.append(b"ATTRIBUTE OBJECT INTRINSIC CONTENTS SEQUENCE DATA " + q(node.contents) + b"\n")
        return lines or [b"NONE-FOUND\n"]


def _contiguous(parts: dict[int, bytes]) -> int:
    seq = 0
    while seq + 1 in parts:
        seq += 1
    return seq


@asynccontextmanager
async def serve_prospero(tree: dict[str, Node], faults: Faults | None = None) -> AsyncIterator[ProsperoServer]:
    """Run a server on 127.0.0.1 (a free port) for the body of the `async with`."""
    server = ProsperoServer(tree, faults)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        yield server
        nursery.cancel_scope.cancel()


@contextmanager
def ftp_server(root: Path) -> Iterator[int]:
    """pyftpdlib, anonymous read-only on `root`, in a thread on 127.0.0.1; yields the port."""
    from pyftpdlib.authorizers import DummyAuthorizer
    from pyftpdlib.handlers import FTPHandler

    class Handler(FTPHandler):  # type: ignore[misc]
        pass

    authorizer = DummyAuthorizer()
    authorizer.add_anonymous(str(root), perm="elr")
    Handler.authorizer = authorizer
    Handler.banner = "prospero test ftp ready"
    server = pyftpdlib_server(Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"timeout": 0.2}, daemon=True)
    thread.start()
    try:
        yield server.socket.getsockname()[1]
    finally:
        server.close_all()
        thread.join(5)
