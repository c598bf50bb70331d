"""The UDP endpoint: one datagram socket to one peer, opened and re-aimed only where the guard allows.

`open_udp` re-checks the port policy before the socket exists, as
`open_connection` does for TCP, and `Endpoint.retarget` checks it again
for every new peer (a server's redirect).  One socket per exchange (an
ephemeral port), so stray replies to earlier requests never mix in.

ICMP errors are answers: "port unreachable" means nobody listens, and the
caller can fail at once instead of retrying.  The socket stays unconnected
where the system can still report them on it (Linux, IP_RECVERR: a server
may answer from another port than the one we sent to); elsewhere it is
connected, which is what makes the kernel report them.

The socket is a plain non-blocking `socket.socket` waited on through
`fetcher.net.aio`: anyio's UDP socket classes have no unconnected socket
that also reads the IP_RECVERR error queue.
"""

from __future__ import annotations

import errno
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fetcher.errors import ConnectError
from fetcher.guard import Policy, check_port
from fetcher.net import aio

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

Address = tuple[str, int] | tuple[str, int, int, int]


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


async def resolve(host: str, port: int) -> tuple[int, Address]:
    """The address family and socket address to send to."""
    import anyio

    try:
        infos = list(await anyio.getaddrinfo(host, port, type=socket.SOCK_DGRAM))
    except OSError as error:
        raise ConnectError(
            f"cannot resolve {host}: {error.strerror or error}", hint="check the host name in the URL"
        ) from None
    if not infos:
        raise ConnectError(f"cannot resolve {host}: no address", hint="check the host name in the URL")
    # The datagram services (Prospero) are IPv4 hosts; a name with both kinds of
    # address ("localhost") must not send us to a ::1 nobody listens on over UDP.
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, _, _, _, address = infos[0]
    return family, address  # type: ignore[return-value]


class Endpoint:
    """A non-blocking UDP socket and the peer it sends to (`address`)."""

    def __init__(
        self, raw: socket.socket, address: Address, *, scheme: str, policy: Policy, default_port: int, connected: bool
    ) -> None:
        self._raw = raw
        self.address = address
        self._scheme = scheme
        self._policy = policy
        self._default_port = default_port
        #: True when the socket is connected to `address` (no IP_RECVERR here).
        self.connected = connected

    def send_nowait(self, datagram: bytes) -> None:
        """Send one datagram to the peer now; OSError (BlockingIOError included) when it cannot."""
        if self.connected:
            self._raw.send(datagram)
        else:
            self._raw.sendto(datagram, self.address)

    async def send(self, datagram: bytes) -> None:
        """Send one datagram to the peer, waiting while the socket is full; OSError when it cannot."""
        while True:
            try:
                self.send_nowait(datagram)
                break
            except (BlockingIOError, InterruptedError):
                await aio.wait_writable(self._raw)
        await aio.checkpoint()

    async def receive(self) -> tuple[bytes, Address]:
        """The next datagram and where it came from (from anyone: the caller matches them); OSError as it comes."""
        while True:
            await aio.wait_readable(self._raw)
            try:
                return self._raw.recvfrom(MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                continue

    def receive_nowait(self) -> tuple[bytes, Address] | None:
        """The next datagram already queued and where it came from, or None; OSError as it comes."""
        try:
            return self._raw.recvfrom(MAX_DATAGRAM)
        except (BlockingIOError, InterruptedError):
            return None

    def unreachable(self, error: OSError) -> str | None:
        """What `error` (a socket error) says about the peer when it answers our datagrams, else None.

        On an unconnected socket the error queue says which destination failed:
        only errors about the current peer count.
        """
        errors = [] if self.connected else _queued_errors(self._raw)
        here = (self.address[0], self.address[1])
        if errors:
            codes = [code for code, destination in errors if (destination[0], destination[1]) == here]
        else:
            codes = [error.errno] if error.errno is not None else []
        for code in codes:
            if code in _ANSWERS:
                return _ANSWERS[code].format(host=self.address[0], port=self.address[1])
        return None

    def retarget(self, address: tuple[str, int], *, what: str = "redirect port") -> None:
        """Send to `address` from now on (a redirect): a new target, so the guard's port policy applies."""
        check_port(self._scheme, address[1], self._policy, default_port=self._default_port, what=what)
        self.address = address
        if self.connected:
            self._raw.connect(address)


@asynccontextmanager
async def open_udp(
    host: str, port: int, *, scheme: str, policy: Policy, default_port: int, connect: bool = False
) -> AsyncIterator[Endpoint]:
    """A UDP endpoint aimed at host:port, once the guard allowed the port; closed when the block ends.

    `connect` forces the connected socket other systems get (for tests).
    """
    check_port(scheme, port, policy, default_port=default_port)
    family, address = await resolve(host, port)
    raw = socket.socket(family, socket.SOCK_DGRAM)
    try:
        raw.setblocking(False)
        connected = connect or not _report_errors_unconnected(raw, family)
        if connected:
            raw.connect(address)
        yield Endpoint(raw, address, scheme=scheme, policy=policy, default_port=default_port, connected=connected)
    finally:
        raw.close()
