"""Plain non-blocking TCP sockets on trio: connecting to an IP address, a readiness poll, closing.

What anyio's socket streams would do, without their task groups and
resolver calls, for the paths every URL takes (issue 17): FTP data ports
and every URL naming an address are dialled here (`fetcher.net.connect`),
and a plain connection on trio reads, sends and closes its socket itself
(`fetcher.net.stream`).
"""

from __future__ import annotations

import errno
import os
import socket

from fetcher.net.deadlines import fail_at


def literal_family(host: str) -> socket.AddressFamily | None:
    """AF_INET or AF_INET6 when `host` is a plain IP address (nothing to resolve), else None.

    An IPv6 address with a zone (fe80::1%eth0) is left to anyio, which resolves the zone.
    """
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return family
    return None


async def connect_literal(family: socket.AddressFamily, host: str, port: int, deadline: float) -> socket.socket:
    """A connected non-blocking TCP socket to an IP address, on trio (TooSlow past `deadline`).

    What `anyio.connect_tcp` does for an address it need not resolve, without
    its happy-eyeballs task group and its resolver call: FTP data ports (the
    control connection's peer address) and every URL naming an address.
    On loopback and fast links the handshake is often over before the
    socket is asked, so the wait for writability, and the cancel scope that
    bounds it (4 µs of a Gopher item's 200), are skipped then.
    """
    import trio

    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await trio.lowlevel.checkpoint_if_cancelled()
        code = sock.connect_ex((host, port))
        if code == errno.EINPROGRESS:
            if _connected(sock):  # the handshake ended within the call: no error to ask for
                code = 0
            else:  # an error already, or the wait for the handshake and then its outcome
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if code == 0:
                    with fail_at(deadline):
                        await trio.lowlevel.wait_writable(sock)
                    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, os.strerror(code))
    except BaseException:
        close_socket(sock)
        raise
    return sock


def _connected(sock: socket.socket) -> bool:
    try:
        sock.getpeername()
    except OSError:
        return False
    return True


def readable(sock: socket.socket) -> bool:
    """Whether a read of `sock` would not block now (data, the end of the stream, or an error)."""
    import select

    if sock.fileno() < 0:
        return True
    if not hasattr(select, "poll"):  # pragma: no cover - Windows
        return bool(select.select([sock], [], [], 0)[0])
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))


def close_socket(sock: socket.socket) -> None:
    """Close a socket trio may have waited on (trio's own socket close does the same)."""
    import trio

    if sock.fileno() != -1:
        trio.lowlevel.notify_closing(sock)
        sock.close()
