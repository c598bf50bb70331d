"""Hostile Prospero servers (ARDP over UDP on loopback, trio).

Each `HostileProspero` answers the first packet of any request the way its
`kind` says:

- "endless": a listing that never ends: windows of 16 packets with no total
  (ARDP allows an unknown total), the next window each time the client
  acks, LINK lines forever (or `count` of them, with the total stated),
  `size` octets of them per datagram, `delay` seconds apart;
- "packets": a first packet announcing a reply of `total` packets;
- "escapes": a one-packet listing whose names, hosts and attributes carry
  terminal escape sequences;
- "redirect": an ARDP redirect (option 4) to 127.0.0.1:`redirect_port`;
- "silent": nothing at all.

`closed_udp_port()` gives a loopback UDP port where nothing listens.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio

from fetcher.schemes.prospero import ardp, protocol

ESCAPES = "\x1b[2J\x1b]0;owned\x07\x9b31m"
WINDOW = 16


def lines_per_packet(pad: int = 0, size: int = ardp.PACKET_DATA) -> int:
    """LINK lines per packet: each is 64 octets plus twice `pad`; a packet carries at most `size` octets."""
    return max(1, size // (64 + 2 * pad))


def listing_payload(seq: int, count: int = 0, pad: int = 0, size: int = ardp.PACKET_DATA) -> bytes:
    """The LINK lines of packet `seq` (no line is split across packets); `count` > 0 ends the listing there.

    `pad` lengthens the name and the hsoname of every link by that many octets; `size` is the
    packet's payload (1250 in ARDP v0, but a datagram can carry 65507).
    """
    per = lines_per_packet(pad, size)
    first = (seq - 1) * per
    last = first + per if not count else min(first + per, count)
    filler = b"n" * pad
    return b"".join(b"LINK L FILE f%09d%s INTERNET-D LOCALHOST ASCII /f%09d%s 0\n" % (n, filler, n, filler)
                    for n in range(first, last))  # fmt: skip


def escapes_listing() -> bytes:
    q = protocol.quote
    name, host = f"{ESCAPES}name", f"{ESCAPES}host"
    return (
        protocol.line("VERSION", "5")
        + protocol.line("LINK", "L", "FILE", q(name), "INTERNET-D", q(host), "ASCII", q(f"/{ESCAPES}"), "0")
        + protocol.line("ATTRIBUTE", "LINK", "FIELD", "SIZE", "SEQUENCE", q(f"12 {ESCAPES}"))
        + protocol.line("WARNING", q(f"{ESCAPES}warning"))
        + protocol.line(q(f"{ESCAPES}KEYWORD"), "x")
    )


@dataclass
class HostileProspero:
    kind: str
    total: int = 60_000
    count: int = 0
    pad: int = 0
    size: int = ardp.PACKET_DATA
    window: int = WINDOW
    #: Seconds between two datagrams of a window (a drip-feed server).
    delay: float = 0.0
    redirect_port: int = 25
    port: int = 0
    requests: int = 0
    datagrams: int = 0
    sent: int = 0

    def _packet(self, cid: int, seq: int, *, total: int = 0, ack: bool = False, payload: bytes = b"") -> bytes:
        return ardp.encode(cid=cid, seq=seq, total=total, flags=ardp.FLAG_ACK if ack else 0, payload=payload,
                           min_length=7)  # fmt: skip

    def answer(self, packet: ardp.Packet) -> list[bytes]:
        cid = packet.cid
        if not packet.is_control:
            self.requests += 1
        if self.kind == "silent":
            return []
        if self.kind == "endless":
            first = 1 if not packet.is_control else packet.rthru + 1
            total = -(-self.count // lines_per_packet(self.pad, self.size)) if self.count else 0
            last = first + self.window - 1 if not total else min(first + self.window - 1, total)
            payloads = [listing_payload(seq, self.count, self.pad, self.size) for seq in range(first, last + 1)]
            return [self._packet(cid, seq, total=total, ack=seq == last, payload=payload)
                    for seq, payload in enumerate(payloads, first)]  # fmt: skip
        if packet.is_control:
            return []
        if self.kind == "packets":
            return [self._packet(cid, 1, total=self.total, payload=listing_payload(1))]
        if self.kind == "escapes":
            return [ardp.encode(cid=cid, payload=escapes_listing())]
        if self.kind == "redirect":
            target = bytes([127, 0, 0, 1]) + struct.pack(">H", self.redirect_port)
            return [ardp.encode(cid=cid, seq=0, total=0, option=ardp.OPTION_REDIRECT, option_data=target)]
        raise ValueError(f"unknown kind {self.kind!r}")

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with sock:
            await sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
            task_status.started(self.port)
            while True:
                datagram, address = await sock.recvfrom(65535)
                self.datagrams += 1
                try:
                    packet = ardp.decode(datagram)
                except ardp.PacketError:
                    continue
                for reply in self.answer(packet):
                    self.sent += 1
                    await sock.sendto(reply, address)
                    if self.delay:
                        await trio.sleep(self.delay)


@asynccontextmanager
async def serving(server: HostileProspero) -> AsyncIterator[HostileProspero]:
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


def closed_udp_port() -> int:
    """A loopback UDP port that was just free: nothing listens there now (the kernel answers ICMP)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
