"""ARDP version 0: the packet codec and the client's delivery state machine, both pure.

Prospero runs over UDP with its own reliability layer (ARDP).  Nothing here
touches a socket or a clock: `Receiver` is told the time and the datagrams,
and answers with the datagrams to send and the reply bytes that became
contiguous.  `transport.py` moves the bytes.  The shapes and quirks follow
the notes checked against the Prospero 5 server: truncated headers with
defaults, the byte-swapped connection id of little-endian servers, "please
wait" control packets, and acks at the server's window boundary.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from fetcher.errors import ConnectError, LimitExceeded, ProtocolError, Timeout

#: Data octets per packet, both directions (ARDP_PTXT_LEN).
PACKET_DATA = 1250
#: The server's window when the client does not ask for another.
DEFAULT_WINDOW = 16
#: Sequence numbers are 16-bit, so no message has more packets than this.
MAX_PACKETS = 65535
#: Out-of-order reply bytes held at most; past it a packet is dropped (the server resends it).
MAX_BUFFERED_BYTES = 4 * 1024 * 1024

FLAG_ADDRESS = 0x01
FLAG_PRIORITY = 0x02
FLAG_PROTOCOL = 0x04
FLAG_WINDOW = 0x08
FLAG_SEQUENCED_CONTROL = 0x40
FLAG_ACK = 0x80

OPTION_CANCEL = 1  # client -> server; from the server it means "refused"
OPTION_REFUSED = 1
OPTION_RESET_RTHRU = 2
OPTION_BITMAP = 3
OPTION_REDIRECT = 4
OPTION_REDIRECT_ALL = 5
OPTION_QUEUE_REQUEST = 253
OPTION_QUEUE_STATUS = 254

# Header lengths a field can end at; anything else cuts a field in half.
_FIELD_ENDS = (1, 3, 5, 7, 9, 11, 12)


class PacketError(ProtocolError):
    """A datagram that is not an ARDP v0 packet (the receiver ignores it)."""


@dataclass(frozen=True)
class Packet:
    """One decoded datagram; absent header fields carry the defaults of the notes §1.2."""

    cid: int = 0
    seq: int = 1
    total: int = 1
    rthru: int = 0
    wait: int = 0
    flags: int = 0
    option: int = 0
    priority: int = 0
    protocol: int = 0
    window: int = 0
    option_data: bytes = b""
    payload: bytes = b""
    #: Octets of header actually present (0 for a header-less legacy packet).
    header_length: int = 0

    @property
    def has_wait(self) -> bool:
        """True when octets 9-10 were present, so `wait` is a statement, not a default."""
        return self.header_length >= 11

    @property
    def is_control(self) -> bool:
        return self.seq == 0 or bool(self.flags & FLAG_SEQUENCED_CONTROL)


def swap16(value: int) -> int:
    """The byte-swapped 16-bit value (the connection-id bug of little-endian servers)."""
    return ((value & 0xFF) << 8) | (value >> 8)


def encode(
    *,
    cid: int = 0,
    seq: int = 1,
    total: int = 1,
    rthru: int = 0,
    wait: int = 0,
    flags: int = 0,
    option: int = 0,
    priority: int | None = None,
    protocol: int | None = None,
    window: int | None = None,
    option_data: bytes = b"",
    payload: bytes = b"",
    min_length: int = 1,
) -> bytes:
    """An ARDP v0 datagram with the shortest header that states every non-default field.

    `min_length` forces a longer header, as senders do (clients always send 9
    octets; servers use 12 to rescind a wait).  Flag extras are derived from
    the values given, so flags and data cannot disagree.
    """
    extras = b""
    if priority is not None:
        flags |= FLAG_PRIORITY
        extras += struct.pack(">h", priority)
    if protocol is not None:
        flags |= FLAG_PROTOCOL
        extras += struct.pack(">H", protocol)
    if window is not None:
        flags |= FLAG_WINDOW
        extras += struct.pack(">H", window)
    extras += option_data
    if option or extras:
        needed = 13 + len(extras)
    elif flags:
        needed = 12
    elif wait:
        needed = 11
    elif rthru:
        needed = 9
    elif seq != 1 or total != 1:
        needed = 7
    elif cid:
        needed = 3
    else:
        needed = 1
    length = max(needed, min_length)
    if length > 63:
        raise ValueError("an ARDP v0 header holds at most 63 octets")
    fixed = struct.pack(">BHHHHHBB", length, cid, seq, total, rthru, wait, flags, option)
    return (fixed + extras)[:length].ljust(length, b"\x00") + payload


def decode(datagram: bytes) -> Packet:
    """Parse a datagram; raise `PacketError` for anything that is not ARDP v0."""
    if not datagram:
        raise PacketError("empty datagram")
    first = datagram[0]
    if first == 0x81:
        raise PacketError("ARDP version 1 packet (fetcher speaks version 0)")
    if first >= 0x40:
        # Pre-ARDP servers sent bare text; the notes say to take it as one whole packet.
        return Packet(payload=_strip_nul(datagram), header_length=0)
    length = first
    if length == 0:
        raise PacketError("ARDP header length 0")
    if length > len(datagram):
        raise PacketError(f"ARDP header says {length} octets but the datagram has {len(datagram)}")
    if length < 13 and length not in _FIELD_ENDS:
        raise PacketError(f"ARDP header length {length} cuts a field in half")
    head = datagram[:length].ljust(13, b"\x00")
    cid, seq, total, rthru, wait, flags, option = struct.unpack(">HHHHHBB", head[1:13])
    if length < 5:
        seq, total = 1, 1
    values: dict[str, int] = {}
    extra = datagram[13:length] if length > 13 else b""
    at = 0
    if length >= 12:
        if flags & FLAG_ADDRESS:
            if len(extra) < at + 2:
                raise PacketError("ARDP address information is truncated")
            at += 2 + extra[at + 1]
        for flag, name, fmt in ((FLAG_PRIORITY, "priority", ">h"), (FLAG_PROTOCOL, "protocol", ">H"),
                                (FLAG_WINDOW, "window", ">H")):  # fmt: skip
            if flags & flag:
                if len(extra) < at + 2:
                    raise PacketError(f"ARDP {name} field is truncated")
                (values[name],) = struct.unpack(fmt, extra[at : at + 2])
                at += 2
    if at > len(extra):
        raise PacketError("ARDP flag data runs past the header")
    return Packet(
        cid=cid,
        seq=seq,
        total=total,
        rthru=rthru,
        wait=wait,
        flags=flags,
        option=option,
        option_data=extra[at:],
        payload=_strip_nul(datagram[length:]),
        header_length=length,
        **values,
    )


def _strip_nul(payload: bytes) -> bytes:
    # 5.0-5.2 servers ended every packet with a NUL; Prospero text cannot carry one.
    return payload[:-1] if payload.endswith(b"\x00") else payload


def redirect_target(packet: Packet) -> tuple[str, int] | None:
    """The IPv4 address and port of a redirect (options 4 and 5), if this is one."""
    if packet.option not in (OPTION_REDIRECT, OPTION_REDIRECT_ALL):
        return None
    if len(packet.option_data) < 6:
        raise PacketError("ARDP redirect without address and port")
    data = packet.option_data
    return ".".join(str(octet) for octet in data[:4]), struct.unpack(">H", data[4:6])[0]


def split_message(message: bytes, size: int = PACKET_DATA) -> list[bytes]:
    """Cut a message at arbitrary octets into payloads of at most `size` (never zero payloads)."""
    if not message:
        return [b""]
    return [message[at : at + size] for at in range(0, len(message), size)]


def request_packets(cid: int, message: bytes, *, rthru: int = 0, window: int | None = None) -> list[bytes]:
    """The datagrams of a request message: 9-octet headers, total known up front."""
    chunks = split_message(message)
    if len(chunks) > MAX_PACKETS:
        raise ProtocolError("the Prospero request is too large for ARDP")
    total = len(chunks)
    return [
        encode(
            cid=cid,
            seq=seq,
            total=total,
            rthru=rthru,
            window=window if seq == 1 else None,
            payload=chunk,
            min_length=9,
        )
        for seq, chunk in enumerate(chunks, 1)
    ]


def ack_packet(cid: int, rthru: int) -> bytes:
    return encode(cid=cid, seq=0, total=0, rthru=rthru, min_length=9)


def cancel_packet(cid: int) -> bytes:
    return encode(cid=cid, seq=0, total=0, option=OPTION_CANCEL)


@dataclass
class Timers:
    """Retry policy: the first wait, how many retransmissions, and the longest single wait."""

    timeout: float = 4.0
    retries: int = 3
    #: No single wait is longer than this (the client's global --timeout);
    #: a server's "please wait" is honoured up to it, then the client polls again.
    ceiling: float = 30.0
    #: The whole time the exchange may take, every retransmission and "please
    #: wait" included (the client's --timeout); None = only the retries bound it.
    budget: float | None = None
    #: New reply data starts the budget again (a document streamed over
    #: PROSPERO-CONTENTS); off, the budget bounds the whole reply (a listing).
    renew: bool = False


@dataclass
class Receiver:
    """The client side of one ARDP transaction (request out, reply in), without I/O.

    Call `start(now)` for the first datagrams, then `receive(packet, now)` for
    every datagram from the server, `acks()` after draining the socket, and
    `expire(now)` when `deadline` passes.  `take()` hands out reply bytes as
    soon as they are contiguous, so a long reply streams.
    """

    cid: int
    message: bytes
    timers: Timers = field(default_factory=Timers)
    window: int | None = None
    #: Out-of-order packets kept beyond the contiguous run (memory bound).
    max_buffered: int = 1024
    #: Data packets one reply may have (`Limits.ardp_packets`), a larger datagram counting as
    #: the 1250-octet packets it would fill; past it, `LimitExceeded`.
    max_packets: int = MAX_PACKETS

    def __post_init__(self) -> None:
        self.request = split_message(self.message)
        self.total = 0
        self.rthru = 0  # highest contiguous reply packet received
        self.peer_rthru = 0  # highest request packet the server has
        self.complete = False
        self.packets_received = 0
        self.duplicates = 0
        self.retransmissions = 0
        self.waits = 0
        self._buffer: dict[int, bytes] = {}
        self._ready: list[bytes] = []
        self._ack_wanted = False
        self._acked = 0
        self._timeout = self.timers.timeout
        self._retries = self.timers.retries
        self._server_wait = 0.0
        self._buffered_bytes = 0
        self._units = 0
        #: Every datagram taken for this exchange (duplicates and control packets too).
        self.datagrams = 0
        self.deadline = 0.0
        self._budget_end: float | None = None

    # -- sending ---------------------------------------------------------

    def start(self, now: float) -> list[bytes]:
        self._progress(now)
        return request_packets(self.cid, self.message, window=self.window)

    def _progress(self, now: float) -> None:
        if self.timers.budget is not None:
            self._budget_end = now + self.timers.budget
        self._arm(now)

    def _arm(self, now: float) -> None:
        self.deadline = now + min(max(self._timeout, self._server_wait), self.timers.ceiling)
        if self._budget_end is not None:
            self.deadline = min(self.deadline, self._budget_end)

    def expire(self, now: float) -> list[bytes]:
        """The deadline passed: what to retransmit, or `Timeout` when the retries or the time are spent."""
        if self._budget_end is not None and now >= self._budget_end:
            waited = f", though it asked to wait {self._server_wait:g} s" if self._server_wait else ""
            said = (
                f"no answer from the Prospero server within {self.timers.budget:g} s"
                if not self.rthru
                else f"the Prospero server's reply was still incomplete after {self.timers.budget:g} s "
                f"({self.rthru} packets received)"
            )
            raise Timeout(
                f"{said} ({self.retransmissions} retransmissions{waited})",
                hint="check the host and port (Prospero is UDP 1525); a busy server may need a larger --timeout",
            )
        if self._retries <= 0:
            raise Timeout(
                f"no answer from the Prospero server after {self.timers.retries} retransmissions",
                hint="check the host and port (Prospero is UDP 1525); a busy server may need a larger --timeout",
            )
        self._retries -= 1
        self._timeout *= 2
        self.retransmissions += 1
        self._arm(now)
        if self.peer_rthru >= len(self.request):
            return [ack_packet(self.cid, self.rthru)]
        packets = request_packets(self.cid, self.message, rthru=self.rthru, window=self.window)
        return packets[self.peer_rthru :]

    def redirected(self, now: float) -> list[bytes]:
        """The server sent us elsewhere: what the new one lacks goes out at once, on fresh timers."""
        self._timeout = self.timers.timeout
        self._arm(now)
        if self.peer_rthru >= len(self.request):
            return [ack_packet(self.cid, self.rthru)]
        return request_packets(self.cid, self.message, rthru=self.rthru, window=self.window)[self.peer_rthru :]

    def acks(self) -> list[bytes]:
        """An ack if the server asked for one or a window boundary was reached (call after draining)."""
        boundary = self.window or DEFAULT_WINDOW
        at_boundary = self.rthru > self._acked and self.rthru % boundary == 0 and not self.complete
        if not (self._ack_wanted or at_boundary):
            return []
        self._ack_wanted = False
        self._acked = self.rthru
        return [ack_packet(self.cid, self.rthru)]

    # -- receiving -------------------------------------------------------

    def matches(self, packet: Packet) -> bool:
        """Ours: our id, its byte-swapped form (server bug), or 0 (v1-style replies)."""
        return packet.cid in (self.cid, swap16(self.cid), 0)

    def receive(self, packet: Packet, now: float) -> None:
        self.datagrams += 1
        if self.datagrams > 4 * self.max_packets + 64:
            # Duplicates and control packets cost memory and time too.
            raise LimitExceeded("ARDP datagrams (duplicates and control packets included) for one reply",
                                4 * self.max_packets + 64, "ardp_packets")  # fmt: skip
        if self.complete and packet.seq == 0:
            return
        if packet.option == OPTION_REFUSED:
            raise ConnectError(
                "the Prospero server refused the request (ARDP option 1)",
                hint="the server is overloaded or does not serve this client; try again later",
            )
        if packet.option == OPTION_RESET_RTHRU:
            self.peer_rthru = packet.rthru
        else:
            self.peer_rthru = max(self.peer_rthru, packet.rthru)
        if packet.has_wait and (packet.wait or self._server_wait):
            self._server_wait = float(packet.wait)
            if packet.wait:
                self.waits += 1
            self._timeout = self.timers.timeout
            self._retries = self.timers.retries
            self._arm(now)  # a wait resets the retries, never the --timeout budget
        if packet.flags & FLAG_ACK:
            self._ack_wanted = True
        if packet.is_control:
            return
        self._data(packet, now)

    def _data(self, packet: Packet, now: float) -> None:
        self.packets_received += 1
        seq = packet.seq
        if packet.total > self.max_packets or seq > self.max_packets:
            raise LimitExceeded("ARDP packets in one reply", self.max_packets, "ardp_packets")
        if packet.total:
            if self.total and packet.total != self.total:
                raise ProtocolError(f"ARDP reply changed its packet count from {self.total} to {packet.total}")
            self.total = packet.total
        if self.total and seq > self.total:
            raise ProtocolError(f"ARDP reply packet {seq} of only {self.total}")
        if seq <= self.rthru or seq in self._buffer:
            self.duplicates += 1
            return
        if len(self._buffer) >= self.max_buffered or self._buffered_bytes + len(packet.payload) > MAX_BUFFERED_BYTES:
            return  # dropped: it comes back when the server retransmits
        # A datagram larger than a packet (ARDP v0 carries 1250 octets; 65507 is possible) counts
        # as the packets it would have taken, so the cap bounds the bytes however the server cuts them.
        self._units += max(1, -(-len(packet.payload) // PACKET_DATA))
        if self._units > self.max_packets:
            raise LimitExceeded("ARDP packets (of 1250 octets) in one reply", self.max_packets, "ardp_packets")
        self._buffer[seq] = packet.payload
        self._buffered_bytes += len(packet.payload)
        progressed = False
        while self.rthru + 1 in self._buffer:
            self.rthru += 1
            payload = self._buffer.pop(self.rthru)
            self._buffered_bytes -= len(payload)
            self._ready.append(payload)
            progressed = True
        if progressed:
            self._timeout = self.timers.timeout
            self._retries = self.timers.retries
            if self.timers.renew:
                self._progress(now)
            else:
                self._arm(now)
        if self.total and self.rthru == self.total:
            self.complete = True

    def take(self) -> bytes:
        """Reply bytes that became contiguous since the last call."""
        data = b"".join(self._ready)
        self._ready.clear()
        return data
