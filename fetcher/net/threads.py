"""The event loop and other threads: which loop runs here, calls into a loop from another thread, I/O-wait hooks.

The loops fetcher starts itself (`aio.run`) are trio's; the blocking calls
of `fetcher.sync` and the cluster (its driver's Dask callbacks, a worker's
long-lived loop thread) reach them from other threads through a `Token`.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

if TYPE_CHECKING:
    import trio

T = TypeVar("T")


def running_loop() -> str | None:
    """The name of the event loop running in this thread ("trio", "asyncio"), or None."""
    import trio

    if trio.lowlevel.in_trio_run():
        return "trio"
    asyncio = sys.modules.get("asyncio")  # never imported: no asyncio loop can be running
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        return "asyncio"
    return None


class Token:
    """The trio loop running in this thread, as other threads reach it (made in the loop, used anywhere)."""

    __slots__ = ("_token",)

    def __init__(self) -> None:
        import trio

        self._token: trio.lowlevel.TrioToken = trio.lowlevel.current_trio_token()

    def call_soon(self, function: Callable[..., object], *args: object) -> bool:
        """Have the loop call `function(*args)` soon (thread-safe; from inside another run too).

        False when the loop has finished: nothing was scheduled.
        """
        import trio

        try:
            self._token.run_sync_soon(function, *args)
        except trio.RunFinishedError:
            return False
        return True

    def run(self, function: Callable[..., Awaitable[T]], *args: object) -> T:
        """`await function(*args)` in the loop, from another thread, which waits for the result."""
        import trio

        return trio.from_thread.run(function, *args, trio_token=self._token)


class IOWaits(Protocol):
    """Hooks the running loop calls around each of its waits for I/O (a trio instrument's two)."""

    def before_io_wait(self, timeout: float) -> None: ...

    def after_io_wait(self, timeout: float) -> None: ...


def watch_io_waits(hooks: IOWaits) -> None:
    """Call `hooks` around every wait for I/O of the trio loop running in this thread, until `unwatch_io_waits`."""
    import trio

    trio.lowlevel.add_instrument(cast("trio.abc.Instrument", hooks))


def unwatch_io_waits(hooks: IOWaits) -> None:
    import trio

    trio.lowlevel.remove_instrument(cast(Any, hooks))
