"""ARDP over a UDP socket polled through anyio: the part of Prospero that only moves bytes.

One transaction per socket (an ephemeral port), so stray replies to earlier
requests never mix in.  A server bound to both Prospero ports may answer
from 191 although we sent to 1525, so replies are matched by connection id
and the server's IP address, never by source port, and the socket stays
unconnected where the system can still report ICMP errors on it (Linux,
IP_RECVERR); elsewhere it is connected, which is what makes the kernel
report them.  Either way "port unreachable" is an answer: the request fails
at once instead of retrying for a minute.  The reply is handed out as it
becomes contiguous, and acks go out only as the caller pulls, which gives
the server natural flow control.

The socket is a plain non-blocking `socket.socket` waited on with
`anyio.wait_readable` / `anyio.wait_writable`: anyio's UDP socket classes
have no unconnected socket that also reads the IP_RECVERR error queue.
"""

from __future__ import annotations

import errno
import logging
import random
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel

from fetcher.errors import ConnectError
from fetcher.handler import Policy, check_port
from schemes.prospero import ardp
from schemes.prospero.reply import Reply, ReplyReader

trace = logging.getLogger("fetcher.trace")
MAX_DATAGRAM = 65535
#: Errors that answer a datagram: nobody listens there, or it cannot be reached.
_ANSWERS = {
    errno.ECONNREFUSED: "nothing listens on UDP port {port} of {host} (ICMP port unreachable)",
    errno.EHOSTUNREACH: "{host} is unreachable (ICMP host unreachable)",
    errno.ENETUNREACH: "the network of {host} is unreachable (ICMP network unreachable)",
}
# Linux's IP_RECVERR / IPV6_RECVERR (the socket module does not name them).
_RECVERR: dict[int, tuple[int, int]] = {
    socket.AF_INET: (socket.IPPROTO_IP, 11),
    socket.AF_INET6: (socket.IPPROTO_IPV6, 25),
}
_ERRQUEUE = getattr(socket, "MSG_ERRQUEUE", 0)


def _report_errors_unconnected(raw: socket.socket, family: int) -> bool:
    """Ask the kernel to report ICMP errors on an unconnected socket (Linux only)."""
    if not sys.platform.startswith("linux") or not _ERRQUEUE or family not in _RECVERR:
        return False
    try:
        raw.setsockopt(*_RECVERR[family], 1)
    except OSError:
        return False
    return True


def _queued_errors(raw: socket.socket) -> list[tuple[int, tuple[str, int]]]:
    """Drain the socket's error queue: (errno, destination of the datagram that failed) each."""
    found: list[tuple[int, tuple[str, int]]] = []
    for _ in range(256):
        try:
            _, ancillary, _, destination = raw.recvmsg(1, 512, _ERRQUEUE)
        except OSError:
            break
        for _level, _kind, data in ancillary:
            if len(data) >= 4:
                found.append((int.from_bytes(data[:4], sys.byteorder), destination))
    return found


def new_cid() -> int:
    return random.randrange(1, 0x10000)


async def resolve(host: str, port: int) -> tuple[int, tuple[str, int] | tuple[str, int, int, int]]:
    """The address family and socket address to send to."""
    try:
        infos = list(await anyio.getaddrinfo(host, port, type=socket.SOCK_DGRAM))
    except OSError as error:
        raise ConnectError(
            f"cannot resolve {host}: {error.strerror or error}", hint="check the host name in the URL"
        ) from None
    if not infos:
        raise ConnectError(f"cannot resolve {host}: no address", hint="check the host name in the URL")
    # Prospero servers are IPv4 hosts; a name with both kinds of address
    # ("localhost") must not send us to a ::1 nobody listens on over UDP.
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, _, _, _, address = infos[0]
    return family, address  # type: ignore[return-value]


class Exchange:
    """One request/reply over ARDP; iterate for the reply bytes."""

    def __init__(
        self,
        raw: socket.socket,
        address: tuple[str, int] | tuple[str, int, int, int],
        receiver: ardp.Receiver,
        policy: Policy,
        *,
        connected: bool = False,
    ) -> None:
        self._raw = raw
        self.address = address
        self.receiver = receiver
        self._policy = policy
        self._cancelled = False
        self._outbox: list[bytes] = []
        #: True when the socket is connected to `address` (no IP_RECVERR here).
        self.connected = connected

    def _answered(self, error: OSError) -> None:
        """An error the socket reported: raise `ConnectError` if it answers our datagrams, else ignore it."""
        errors = [] if self.connected else _queued_errors(self._raw)
        here = (self.address[0], self.address[1])
        if errors:
            codes = [code for code, destination in errors if (destination[0], destination[1]) == here]
        else:
            codes = [error.errno] if error.errno is not None else []
        for code in codes:
            if code in _ANSWERS:
                host, port = self.address[0], self.address[1]
                raise ConnectError(
                    _ANSWERS[code].format(host=host, port=port),
                    hint="check the host and port (Prospero is UDP 1525) and that the server runs",
                )
        trace.debug("< ARDP ignored a socket error: %s", error.strerror or error)

    async def _send(self, datagrams: list[bytes]) -> None:
        for datagram in datagrams:
            try:
                while True:
                    try:
                        if self.connected:
                            self._raw.send(datagram)
                        else:
                            self._raw.sendto(datagram, self.address)
                        break
                    except (BlockingIOError, InterruptedError):
                        await anyio.wait_writable(self._raw)
                await anyio.lowlevel.checkpoint()
            except OSError as error:
                self._answered(error)  # an earlier datagram's ICMP error surfaces here too
                raise ConnectError(
                    f"cannot send to {self.address[0]}:{self.address[1]}: {error.strerror or error}",
                    hint="check the host and that the network is up",
                ) from None

    async def start(self) -> None:
        packets = self.receiver.start(anyio.current_time())
        trace.debug(
            "> ARDP cid %04x: %d request packet(s), %d octets", self.receiver.cid, len(packets),
            len(self.receiver.message),
        )  # fmt: skip
        await self._send(packets)

    def _accept(self, datagram: bytes, source: tuple[str, int] | tuple[str, int, int, int]) -> None:
        if source[0] != self.address[0]:
            return
        try:
            packet = ardp.decode(datagram)
        except ardp.PacketError as error:
            trace.debug("< ARDP ignored a datagram: %s", error)
            return
        if not self.receiver.matches(packet):
            return
        target = ardp.redirect_target(packet)
        if target is not None:
            # A redirect is a new target: the guard's port policy applies as to any other.
            check_port("prospero", target[1], self._policy, default_port=1525, what="redirect port")
            trace.debug("< ARDP redirect to %s:%d", *target)
            self.address = target
            if self.connected:
                self._raw.connect(target)
            self._outbox += self.receiver.redirected(anyio.current_time())
        if packet.wait and packet.has_wait:
            trace.debug("< ARDP please wait %d s", packet.wait)
        self.receiver.receive(packet, anyio.current_time())

    def _drain(self) -> None:
        while True:
            try:
                datagram, source = self._raw.recvfrom(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                self._answered(error)
                continue
            self._accept(datagram, source)

    async def _step(self) -> None:
        """Wait for one datagram (or the deadline) and process everything queued behind it."""
        receiver = self.receiver
        with anyio.CancelScope(deadline=receiver.deadline):
            try:
                while True:
                    await anyio.wait_readable(self._raw)
                    try:
                        datagram, source = self._raw.recvfrom(MAX_DATAGRAM)
                        break
                    except (BlockingIOError, InterruptedError):
                        continue
            except OSError as error:
                self._answered(error)  # ICMP port unreachable: nobody listens, so fail now
                return
            self._accept(datagram, source)
            self._drain()
            outbox, self._outbox = self._outbox, []
            await self._send(outbox + receiver.acks())
            return
        resend = receiver.expire(anyio.current_time())
        trace.debug("> ARDP cid %04x: no answer, retransmission %d", receiver.cid, receiver.retransmissions)
        await self._send(resend)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        receiver = self.receiver
        while True:
            data = receiver.take()
            if data:
                yield data
                continue
            if receiver.complete:
                await self._send(receiver.acks())
                return
            await self._step()

    def cancel(self) -> None:
        """Tell the server we gave up (option 1), so it drops the queued request."""
        if not self.receiver.complete and not self._cancelled:
            self._cancelled = True
            try:
                if self.connected:
                    self._raw.send(ardp.cancel_packet(self.receiver.cid))
                else:
                    self._raw.sendto(ardp.cancel_packet(self.receiver.cid), self.address)
            except OSError:
                pass


@asynccontextmanager
async def open_exchange(
    host: str,
    port: int,
    message: bytes,
    *,
    timers: ardp.Timers,
    policy: Policy,
    window: int | None = None,
    max_packets: int = ardp.MAX_PACKETS,
    connect: bool = False,
) -> AsyncIterator[Exchange]:
    """Send `message` to a Prospero server; the exchange yields the reply as it arrives.

    The caller must have run the guard on (scheme, port) already; the check is
    repeated here so no datagram ever leaves for a refused port.  `connect`
    forces the connected socket other systems get (for tests).
    """
    check_port("prospero", port, policy, default_port=1525)
    family, address = await resolve(host, port)
    raw = socket.socket(family, socket.SOCK_DGRAM)
    raw.setblocking(False)
    connected = connect or not _report_errors_unconnected(raw, family)
    if connected:
        raw.connect(address)
    receiver = ardp.Receiver(new_cid(), message, timers, window, max_packets=max_packets)
    exchange = Exchange(raw, address, receiver, policy, connected=connected)
    try:
        await exchange.start()
        yield exchange
    except BaseException:
        exchange.cancel()
        raise
    finally:
        raw.close()


async def request(
    host: str,
    port: int,
    message: bytes,
    *,
    timers: ardp.Timers,
    policy: Policy,
    reader: ReplyReader,
    max_packets: int = ardp.MAX_PACKETS,
) -> Reply:
    """A whole reply (listings, object info), read into `reader` as it arrives, under its caps."""
    async with open_exchange(host, port, message, timers=timers, policy=policy, max_packets=max_packets) as exchange:
        async for chunk in exchange:
            reader.feed(chunk)
        receiver = exchange.receiver
        trace.debug(
            "< ARDP cid %04x: %d packet(s), %d duplicate(s), %d retransmission(s), %d octets",
            receiver.cid, receiver.rthru, receiver.duplicates, receiver.retransmissions, reader.size,
        )  # fmt: skip
    return reader.finish()
