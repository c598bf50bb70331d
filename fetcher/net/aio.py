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
wraps a `trio.CancelScope`).  The bulk path's primitives (nurseries,
semaphores, events, memory channels) come from here too, trio's own on trio:
anyio's task groups and memory streams import anyio's core and its trio
backend, 11-12 ms of a bulk run's start-up.  Code that needs anyio's own
classes (sockets, TLS streams) keeps using anyio.

This is the one place that chooses the event loop: `run` starts the loop
fetcher runs itself (trio's: the command, the blocking calls, a cluster
worker), and every call below takes the running one's.  Nothing outside
`fetcher.net` imports trio, anyio or sniffio.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar, cast

import sniffio

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
T_contra = TypeVar("T_contra", contravariant=True)


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


def run(function: Callable[..., Awaitable[T]], *args: object) -> T:
    """`function(*args)` in a new event loop in this thread, to its end: its result, or what it raised.

    The loop is trio's: fetcher's own runs (the command, the blocking
    calls of `fetcher.sync`, a cluster worker) are on trio; a library
    caller on asyncio awaits fetcher in its own loop instead.
    """
    import trio

    return trio.run(function, *args)


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


async def run_sync(
    function: Callable[..., T], *args: object, abandon_on_cancel: bool = False, limiter: Limiter | None = None
) -> T:
    """`function(*args)` in a worker thread (not abandoned when cancelled unless asked, as anyio's default).

    `limiter` (`capacity_limiter`) bounds how many such threads run at once;
    by default the library's own limit applies.
    """
    if on_trio():
        import trio

        return await trio.to_thread.run_sync(
            function, *args, abandon_on_cancel=abandon_on_cancel, limiter=limiter  # type: ignore[arg-type]
        )
    import anyio.to_thread

    return await anyio.to_thread.run_sync(
        function, *args, abandon_on_cancel=abandon_on_cancel, limiter=limiter  # type: ignore[arg-type]
    )


class Limiter(Protocol):
    """A capacity limiter (trio's or anyio's): how many worker threads may run at once."""

    @property
    def total_tokens(self) -> float: ...


def capacity_limiter(total: int) -> Limiter:
    if on_trio():
        import trio

        return cast(Limiter, trio.CapacityLimiter(total))
    import anyio

    return cast(Limiter, anyio.CapacityLimiter(total))


async def wait_readable(sock: socket.socket) -> None:
    if on_trio():
        import trio

        await trio.lowlevel.wait_readable(sock)
        return
    import anyio

    await anyio.wait_readable(sock)


async def wait_writable(target: socket.socket | int) -> None:
    """Wait until a socket or a file descriptor (a pipe, a terminal) takes bytes without blocking."""
    if on_trio():
        import trio

        await trio.lowlevel.wait_writable(target)
        return
    import anyio

    await anyio.wait_writable(target)


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


# -- the bulk path's primitives: trio's own on trio, anyio's on asyncio -----------------------


class Semaphore(Protocol):
    """What fetcher uses of a semaphore (trio's and anyio's both have it)."""

    @property
    def value(self) -> int: ...

    async def acquire(self) -> None: ...

    def acquire_nowait(self) -> None: ...

    def release(self) -> None: ...

    def statistics(self) -> Any: ...

    async def __aenter__(self) -> object: ...

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...


class Event(Protocol):
    def set(self) -> object: ...

    def is_set(self) -> bool: ...

    async def wait(self) -> object: ...


class Nursery(Protocol):
    """What fetcher uses of a nursery or task group."""

    @property
    def cancel_scope(self) -> Scope: ...

    def start_soon(self, function: Callable[..., Any], *args: object, name: object = None) -> None: ...


class SendChannel(Protocol, Generic[T_contra]):
    async def send(self, value: T_contra, /) -> None: ...

    def send_nowait(self, value: T_contra, /) -> None: ...

    def clone(self) -> SendChannel[T_contra]: ...

    def close(self) -> None: ...

    async def aclose(self) -> None: ...

    def __enter__(self) -> object: ...

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...

    async def __aenter__(self) -> object: ...

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...


class ReceiveChannel(Protocol, Generic[T_co]):
    async def receive(self) -> T_co: ...

    def receive_nowait(self) -> T_co: ...

    def close(self) -> None: ...

    def __enter__(self) -> object: ...

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool | None: ...

    def __aiter__(self) -> AsyncIterator[T_co]: ...


def semaphore(value: int) -> Semaphore:
    if on_trio():
        import trio

        return cast(Semaphore, trio.Semaphore(value))
    import anyio

    return cast(Semaphore, anyio.Semaphore(value))


def event() -> Event:
    if on_trio():
        import trio

        return trio.Event()
    import anyio

    return anyio.Event()


class Lock:
    """A lock for tasks of one event loop, made on first use by the library that runs it.

    It can be created where no loop runs yet (a recorder built before
    `trio.run`), and what it holds is trio's own lock on trio (no anyio
    import) and anyio's on asyncio.  Released, it may serve a later run on
    either library (it is made again for the other one).
    """

    __slots__ = ("_lock", "_trio")

    def __init__(self) -> None:
        self._lock: Any = None
        #: The lock is trio's (else anyio's).
        self._trio = False

    def _made(self) -> Any:
        on = on_trio()
        if self._lock is None or (self._trio != on and not self._lock.locked()):
            if on:
                import trio

                self._lock = trio.Lock()
            else:
                import anyio

                self._lock = anyio.Lock()
            self._trio = on
        return self._lock

    def locked(self) -> bool:
        return self._lock is not None and bool(self._lock.locked())

    async def acquire(self) -> None:
        await self._made().acquire()

    def release(self) -> None:
        self._made().release()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def open_nursery() -> AbstractAsyncContextManager[Nursery]:
    """A nursery (trio) or task group (anyio): `async with aio.open_nursery() as nursery:`."""
    if on_trio():
        import trio

        return cast("AbstractAsyncContextManager[Nursery]", trio.open_nursery())
    import anyio

    return cast("AbstractAsyncContextManager[Nursery]", anyio.create_task_group())


def memory_channel(size: float) -> tuple[SendChannel[Any], ReceiveChannel[Any]]:
    """A memory channel holding up to `size` items (math.inf: unbounded), as (send, receive) ends."""
    if on_trio():
        import trio

        ends: tuple[object, object] = trio.open_memory_channel[Any](size)
    else:
        from anyio import create_memory_object_stream

        ends = create_memory_object_stream[Any](size)
    return cast(SendChannel[Any], ends[0]), cast(ReceiveChannel[Any], ends[1])


def open_signal_receiver(*signals: signal.Signals) -> AbstractContextManager[AsyncIterator[int]]:
    if on_trio():
        import trio

        return trio.open_signal_receiver(*signals)
    import anyio

    return cast("AbstractContextManager[AsyncIterator[int]]", anyio.open_signal_receiver(*signals))


# A channel of either library raises its own library's exceptions, and a
# library not yet imported has made no channel: each tuple names the loaded ones.
def would_block() -> tuple[type[BaseException], ...]:
    """What `send_nowait`/`receive_nowait` raise when they would have to wait."""
    return _loaded("WouldBlock", "WouldBlock")


def channel_ended() -> tuple[type[BaseException], ...]:
    """What `receive` raises once nothing more can come: every sender closed, or this end closed."""
    return _loaded("EndOfChannel", "EndOfStream") + _loaded("ClosedResourceError", "ClosedResourceError")


def channel_closed() -> tuple[type[BaseException], ...]:
    """What a send raises on a channel end closed here (`close`): the run that read it is over."""
    return _loaded("ClosedResourceError", "ClosedResourceError")


def is_receive_channel(value: object) -> bool:
    trio = sys.modules.get("trio")
    if trio is not None and isinstance(value, trio.MemoryReceiveChannel):
        return True
    memory = sys.modules.get("anyio.streams.memory")
    return memory is not None and isinstance(value, memory.MemoryObjectReceiveStream)


def _loaded(trio_name: str, anyio_name: str) -> tuple[type[BaseException], ...]:
    found = []
    if (trio := sys.modules.get("trio")) is not None:
        found.append(getattr(trio, trio_name))
    if (anyio := sys.modules.get("anyio")) is not None:
        found.append(getattr(anyio, anyio_name))
    return tuple(found)
