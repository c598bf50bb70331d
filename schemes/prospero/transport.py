"""ARDP over a UDP endpoint of the network layer: the part of Prospero that only moves bytes.

One transaction per endpoint (an ephemeral port), so stray replies to
earlier requests never mix in.  A server bound to both Prospero ports may
answer from 191 although we sent to 1525, so replies are matched by
connection id and the server's IP address, never by source port (the
endpoint stays unconnected where the system can still report ICMP errors:
`fetcher.net.udp`).  "Port unreachable" is an answer: the request fails at
once instead of retrying for a minute.  The reply is handed out as it
becomes contiguous, and acks go out only as the caller pulls, which gives
the server natural flow control.
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fetcher.errors import ConnectError
from fetcher.handler import Address, Endpoint, Policy, aio, move_on_at, open_udp
from fetcher.schemes.prospero import ardp
from fetcher.schemes.prospero.reply import Reply, ReplyReader

trace = logging.getLogger("fetcher.trace")


def new_cid() -> int:
    return random.randrange(1, 0x10000)


class Exchange:
    """One request/reply over ARDP; iterate for the reply bytes."""

    def __init__(self, endpoint: Endpoint, receiver: ardp.Receiver) -> None:
        self._endpoint = endpoint
        self.receiver = receiver
        self._cancelled = False
        self._outbox: list[bytes] = []

    @property
    def address(self) -> Address:
        """Where the requests go (the server's address, or where it redirected us)."""
        return self._endpoint.address

    def _answered(self, error: OSError) -> None:
        """An error the socket reported: raise `ConnectError` if it answers our datagrams, else ignore it."""
        answer = self._endpoint.unreachable(error)
        if answer is not None:
            raise ConnectError(
                answer, hint="check the host and port (Prospero is UDP 1525) and that the server runs"
            )
        trace.debug("< ARDP ignored a socket error: %s", error.strerror or error)

    async def _send(self, datagrams: list[bytes]) -> None:
        for datagram in datagrams:
            try:
                await self._endpoint.send(datagram)
            except OSError as error:
                self._answered(error)  # an earlier datagram's ICMP error surfaces here too
                raise ConnectError(
                    f"cannot send to {self.address[0]}:{self.address[1]}: {error.strerror or error}",
                    hint="check the host and that the network is up",
                ) from None

    async def start(self) -> None:
        packets = self.receiver.start(aio.current_time())
        trace.debug(
            "> ARDP cid %04x: %d request packet(s), %d octets", self.receiver.cid, len(packets),
            len(self.receiver.message),
        )  # fmt: skip
        await self._send(packets)

    def _accept(self, datagram: bytes, source: Address) -> None:
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
            self._endpoint.retarget(target, what="redirect port")
            trace.debug("< ARDP redirect to %s:%d", *target)
            self._outbox += self.receiver.redirected(aio.current_time())
        if packet.wait and packet.has_wait:
            trace.debug("< ARDP please wait %d s", packet.wait)
        self.receiver.receive(packet, aio.current_time())

    def _drain(self) -> None:
        while True:
            try:
                queued = self._endpoint.receive_nowait()
            except OSError as error:
                self._answered(error)
                continue
            if queued is None:
                return
            self._accept(*queued)

    async def _step(self) -> None:
        """Wait for one datagram (or the deadline) and process everything queued behind it."""
        receiver = self.receiver
        with move_on_at(receiver.deadline):
            try:
                datagram, source = await self._endpoint.receive()
            except OSError as error:
                self._answered(error)  # ICMP port unreachable: nobody listens, so fail now
                return
            self._accept(datagram, source)
            self._drain()
            outbox, self._outbox = self._outbox, []
            await self._send(outbox + receiver.acks())
            return
        resend = receiver.expire(aio.current_time())
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
                self._endpoint.send_nowait(ardp.cancel_packet(self.receiver.cid))
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

    The caller must have run the guard on (scheme, port) already; the network
    layer repeats the check (`open_udp`) so no datagram ever leaves for a
    refused port.  `connect` forces the connected socket other systems get
    (for tests).
    """
    async with open_udp(host, port, scheme="prospero", policy=policy, default_port=1525, connect=connect) as endpoint:
        receiver = ardp.Receiver(new_cid(), message, timers, window, max_packets=max_packets)
        exchange = Exchange(endpoint, receiver)
        try:
            await exchange.start()
            yield exchange
        except BaseException:
            exchange.cancel()
            raise


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
