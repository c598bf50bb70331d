"""What every in-repo trio test server shares: running on a free loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Protocol, TypeVar

import trio


class TCPServer(Protocol):
    port: int

    # A method, not a Callable attribute: an attribute member would have to accept
    # exactly trio.SocketStream, and the servers take any trio.abc.Stream.
    def handle(self, stream: trio.SocketStream, /) -> Awaitable[None]: ...


ServerT = TypeVar("ServerT", bound=TCPServer)


@asynccontextmanager
async def serving(server: ServerT) -> AsyncIterator[ServerT]:
    """Run `server` on 127.0.0.1 and a free port (server.port) for the duration of the block."""
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1"))
        server.port = listeners[0].socket.getsockname()[1]
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


def pyftpdlib_server(handler: type) -> Any:
    """A pyftpdlib FTPServer on 127.0.0.1 with an IOLoop of its own and its bound address fixed.

    Its own IOLoop: the default is process-wide, and close_all() on it would
    close every other instance's sockets.  The fixed address: serve_forever
    starts by logging `address`, read from the socket; a test that stopped
    the server before its thread got there had closed that socket, and the
    thread died on getsockname().
    """
    from pyftpdlib.ioloop import IOLoop
    from pyftpdlib.servers import FTPServer

    class Server(FTPServer):  # type: ignore[misc]
        @property
        def address(self) -> tuple[str, int]:
            return bound

    server = Server(("127.0.0.1", 0), handler, ioloop=IOLoop())
    bound: tuple[str, int] = server.socket.getsockname()[:2]
    return server
