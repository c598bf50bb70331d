"""The event-loop calls of the per-URL path, made on trio itself when trio runs.

fetcher runs on trio and on asyncio through anyio (issue 20).  On trio,
anyio's `CancelScope`, `checkpoint`, `current_time`, `sleep` and worker
threads are thin wrappers over trio's own; but the first anyio call of a
process imports anyio's trio backend (and through it anyio's streams,
sockets and abstract classes): about 12 ms on the 2-CPU build machine, an
eighth of `python -c 'import trio'`, paid by every `fetch` that opens no
socket (a `file:` URL, a `mailto:` advisory).  These functions call trio
directly when trio is the running library and anyio otherwise, so the
objects and the behaviour are the same on both (anyio's trio `CancelScope`
wraps a `trio.CancelScope`).  Code that needs anyio's own classes (sockets,
TLS streams, task groups, channels) keeps using anyio.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Callable
from types import TracebackType
from typing import Protocol, TypeVar

import sniffio

T = TypeVar("T")


class Scope(Protocol):
    """What fetcher uses of a cancel scope (anyio's and trio's both have it)."""

    deadline: float
    shield: bool

    @property
    def cancelled_caught(self) -> bool: ...

    def cancel(self) -> None: ...

    def __enter__(self) -> Scope: ...

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...


def on_trio() -> bool:
    """True in trio's thread while trio runs (trio sets sniffio's thread-local name)."""
    return sniffio.thread_local.name == "trio"


def cancel_scope(*, deadline: float = math.inf, shield: bool = False) -> Scope:
    if on_trio():
        import trio

        return trio.CancelScope(deadline=deadline, shield=shield)
    import anyio

    return anyio.CancelScope(deadline=deadline, shield=shield)


def current_time() -> float:
    if on_trio():
        import trio

        return trio.current_time()
    import anyio

    return anyio.current_time()


async def checkpoint() -> None:
    if on_trio():
        import trio

        await trio.lowlevel.checkpoint()
        return
    import anyio.lowlevel

    await anyio.lowlevel.checkpoint()


async def sleep(seconds: float) -> None:
    if on_trio():
        import trio

        await trio.sleep(seconds)
        return
    import anyio

    await anyio.sleep(seconds)


async def run_sync(function: Callable[..., T], *args: object) -> T:
    """`function(*args)` in a worker thread (not abandoned when cancelled, as anyio's default)."""
    if on_trio():
        import trio

        return await trio.to_thread.run_sync(function, *args)
    import anyio.to_thread

    return await anyio.to_thread.run_sync(function, *args)


async def wait_readable(sock: socket.socket) -> None:
    if on_trio():
        import trio

        await trio.lowlevel.wait_readable(sock)
        return
    import anyio

    await anyio.wait_readable(sock)


async def recv_into(sock: socket.socket, view: memoryview) -> int:
    """One read of a non-blocking socket into `view`: the count (0 at end of stream).

    A cancellation point before the read, never after it, so a cancelled
    read has taken nothing from the socket (trio's own recv keeps the same rule).
    """
    await checkpoint()
    while True:
        try:
            return sock.recv_into(view)
        except BlockingIOError:
            await wait_readable(sock)


async def splice_from(sock: socket.socket, pipe: int, count: int) -> int:
    """Move up to `count` bytes from a non-blocking socket into a pipe inside the kernel (Linux splice(2)).

    The count moved, 0 at end of stream; the same cancellation rule as `recv_into`.
    """
    await checkpoint()
    flags = os.SPLICE_F_MOVE | os.SPLICE_F_NONBLOCK
    while True:
        try:
            return os.splice(sock.fileno(), pipe, count, flags=flags)
        except BlockingIOError:
            await wait_readable(sock)
