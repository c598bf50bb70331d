"""What every in-repo trio test server shares: running on a free loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Protocol, TypeVar

import trio


class TCPServer(Protocol):
    port: int
    handle: Callable[[trio.SocketStream], Awaitable[None]]


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
