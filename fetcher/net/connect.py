"""Opening a guarded connection: the port policy, the dial, TLS within the connect budget.

`open_connection` re-checks the port policy for every connection (derived
ones too: FTP data ports, redirects, resolutions), bounds the connect and
the TLS handshake by --connect-timeout (and --max-time), and hands back a
`Connection`; `dial` is the one place that dials.
"""

from __future__ import annotations

import math
import socket
import ssl
from typing import TYPE_CHECKING

from fetcher.errors import ConnectError, Timeout
from fetcher.guard import DEFAULT_POLICY, Policy, check_port
from fetcher.net import aio
from fetcher.net.budget import current_budget
from fetcher.net.connection import Connection
from fetcher.net.deadlines import TooSlow, fail_at
from fetcher.net.sockets import connect_literal, literal_family
from fetcher.net.tracing import trace

if TYPE_CHECKING:
    import anyio.abc

# anyio itself is imported where a socket is used (`import anyio` in the functions
# below): a fetch that opens none (a file: URL) does not load it (issue 17).


async def open_connection(
    host: str,
    port: int,
    *,
    scheme: str,
    policy: Policy = DEFAULT_POLICY,
    default_port: int | None = None,
    timeout: float = 30.0,
    connect_timeout: float = 15.0,
    tls: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
    what: str = "port",
) -> Connection:
    """Connect to host:port after the guard allowed it; optionally start TLS."""
    check_port(scheme, port, policy, default_port=default_port, what=what)
    budget = current_budget.get()
    until = aio.current_time() + connect_timeout
    try:
        stream, sock = await dial(host, port, deadline=min(until, budget.deadline) if budget is not None else until)
    except TooSlow:
        if budget is not None and budget.deadline < until:
            raise budget.expired() from None
        raise Timeout(
            f"connecting to {host}:{port} took longer than {connect_timeout:g} s",
            hint="raise --timeout or check that the server is up",
        ) from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise ConnectError(
            f"cannot connect to {host}:{port}: {reason}",
            hint="check the host name and port, and that the server is running",
        ) from None
    connection = Connection(stream, host, port, timeout=timeout, sock=sock)
    if sock is None and stream is not None:
        import anyio.abc

        sock = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        except OSError:  # pragma: no cover - a platform without the option
            pass
        connection.use_raw_socket(sock)
    if tls is not None:
        # The handshake is part of connecting (as curl counts it): it gets what is left of
        # --connect-timeout (and of --max-time), not a fresh --timeout of its own.
        handshake_until = min(until, budget.deadline) if budget is not None else until
        bounded = handshake_until <= aio.current_time() + timeout  # else --timeout ends it first
        try:
            await connection.start_tls(tls, server_hostname or host, until=handshake_until)
        except Timeout:
            await connection.aclose()
            if not bounded:
                raise
            if budget is not None and budget.deadline < until:
                raise budget.expired() from None
            raise Timeout(
                f"connecting to {host}:{port} took longer than {connect_timeout:g} s: "
                "the TLS handshake did not finish",
                hint="check that the port speaks TLS; raise --connect-timeout if the server is just slow",
            ) from None
        except BaseException:
            await connection.aclose()
            raise
    trace.debug("* connected to %s:%s%s", host, port, " (TLS)" if tls is not None else "")
    return connection


async def dial(
    host: str, port: int, *, deadline: float = math.inf
) -> tuple[anyio.abc.SocketStream | None, socket.socket | None]:
    """A TCP stream to host:port and its plain socket, either possibly None (the one place that dials).

    On trio an IP address is dialled directly (`connect_literal`); a name,
    or any host on asyncio, goes through `anyio.connect_tcp` (resolution,
    happy eyeballs).  The caller checked the port; a wait past `deadline`
    raises TooSlow.
    """
    family = literal_family(host) if aio.on_trio() else None
    if family is not None:
        # No anyio stream yet: reads, sends and the close use the socket on trio
        # itself, and anyio (12 ms of imports with its trio backend) is loaded only
        # if TLS or the telnet session asks for a stream (`Connection.byte_stream`).
        return None, await connect_literal(family, host, port, deadline)
    import anyio

    with fail_at(deadline):
        stream = await anyio.connect_tcp(host, port)
    return stream, None
