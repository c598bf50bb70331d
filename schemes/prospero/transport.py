"""ARDP over a trio UDP socket: the part of Prospero that only moves bytes.

One transaction per socket (an ephemeral port), so stray replies to earlier
requests never mix in.  The socket is not connected: a server bound to both
Prospero ports may answer from 191 although we sent to 1525, so replies are
matched by connection id and the server's IP address, never by source port.
The reply is handed out as it becomes contiguous, and acks go out only as
the caller pulls, which gives the server natural flow control.
"""

from __future__ import annotations

import logging
import random
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from fetcher.errors import ConnectError, ProtocolError
from fetcher.guard import Policy, check_port

from . import ardp

trace = logging.getLogger("fetcher.trace")
MAX_DATAGRAM = 65535


def new_cid() -> int:
    return random.randrange(1, 0x10000)


async def resolve(host: str, port: int) -> tuple[int, tuple[str, int] | tuple[str, int, int, int]]:
    """The address family and socket address to send to."""
    try:
        infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
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
        sock: trio.socket.SocketType,
        raw: socket.socket,
        address: tuple[str, int] | tuple[str, int, int, int],
        receiver: ardp.Receiver,
        policy: Policy,
    ) -> None:
        self._sock = sock
        self._raw = raw
        self.address = address
        self.receiver = receiver
        self._policy = policy
        self._cancelled = False

    async def _send(self, datagrams: list[bytes]) -> None:
        for datagram in datagrams:
            try:
                await self._sock.sendto(datagram, self.address)
            except OSError as error:
                raise ConnectError(
                    f"cannot send to {self.address[0]}:{self.address[1]}: {error.strerror or error}",
                    hint="check the host and that the network is up",
                ) from None

    async def start(self) -> None:
        packets = self.receiver.start(trio.current_time())
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
            check_port("prospero", target[1], self._policy, default_port=1525, what="redirect port")
            trace.debug("< ARDP redirect to %s:%d", *target)
            self.address = target
        if packet.wait and packet.has_wait:
            trace.debug("< ARDP please wait %d s", packet.wait)
        self.receiver.receive(packet, trio.current_time())

    def _drain(self) -> None:
        while True:
            try:
                datagram, source = self._raw.recvfrom(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # an ICMP error for an earlier datagram; the timers cover it
            self._accept(datagram, source)

    async def _step(self) -> None:
        """Wait for one datagram (or the deadline) and process everything queued behind it."""
        receiver = self.receiver
        with trio.move_on_at(receiver.deadline):
            try:
                datagram, source = await self._sock.recvfrom(MAX_DATAGRAM)
            except ConnectionRefusedError:
                # ICMP port unreachable: nobody listens.  Keep to the timers (it may start).
                await trio.sleep_until(receiver.deadline)
                return
            self._accept(datagram, source)
            self._drain()
            await self._send(receiver.acks())
            return
        resend = receiver.expire(trio.current_time())
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
) -> AsyncIterator[Exchange]:
    """Send `message` to a Prospero server; the exchange yields the reply as it arrives.

    The caller must have run the guard on (scheme, port) already; the check is
    repeated here so no datagram ever leaves for a refused port.
    """
    check_port("prospero", port, policy, default_port=1525)
    family, address = await resolve(host, port)
    raw = socket.socket(family, socket.SOCK_DGRAM)
    raw.setblocking(False)
    sock = trio.socket.from_stdlib_socket(raw)
    exchange = Exchange(sock, raw, address, ardp.Receiver(new_cid(), message, timers, window), policy)
    try:
        await exchange.start()
        yield exchange
    except BaseException:
        exchange.cancel()
        raise
    finally:
        sock.close()


async def request(host: str, port: int, message: bytes, *, timers: ardp.Timers, policy: Policy, limit: int) -> bytes:
    """A whole reply in memory (listings, object info), refused past `limit` octets."""
    parts: list[bytes] = []
    size = 0
    async with open_exchange(host, port, message, timers=timers, policy=policy) as exchange:
        async for chunk in exchange:
            size += len(chunk)
            if size > limit:
                raise ProtocolError(
                    f"the Prospero reply is larger than {limit} bytes", hint="this directory is too large to list"
                )
            parts.append(chunk)
        receiver = exchange.receiver
        trace.debug(
            "< ARDP cid %04x: %d packet(s), %d duplicate(s), %d retransmission(s), %d octets",
            receiver.cid, receiver.rthru, receiver.duplicates, receiver.retransmissions, size,
        )  # fmt: skip
    return b"".join(parts)
