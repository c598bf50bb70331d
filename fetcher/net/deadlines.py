"""Deadlines as cancel scopes, on either backend: `fail_at` / `fail_after` raise `TooSlow`,
`move_on_at` / `move_on_after` end the block quietly.

Every read and send of every connection enters one (`fetcher.net.stream`),
and so do the UDP exchanges and the interactive session.
"""

from __future__ import annotations

from typing import Any

from fetcher.net import aio


class TooSlow(Exception):
    """A deadline set by `fail_at` / `fail_after` passed (trio's TooSlowError, on any backend).

    Its own class, not the built-in TimeoutError that anyio.fail_after raises:
    TimeoutError is an OSError, which the handlers below also catch for a
    broken socket, and the two must stay apart.
    """


class fail_at:
    """`with fail_at(deadline):` cancels the block at `deadline` (anyio.current_time clock) and raises TooSlow.

    A class rather than a @contextmanager generator: every read and send of
    every connection enters one, so its cost is per read.
    """

    __slots__ = ("scope",)

    def __init__(self, deadline: float) -> None:
        self.scope = aio.cancel_scope(deadline=deadline)

    def __enter__(self) -> aio.Scope:
        return self.scope.__enter__()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: Any) -> bool:
        suppressed = bool(self.scope.__exit__(kind, error, tb))
        if self.scope.cancelled_caught:
            raise TooSlow
        return suppressed


def fail_after(seconds: float) -> Any:
    """`fail_at` counted from now."""
    return fail_at(aio.current_time() + seconds)


def move_on_at(deadline: float) -> aio.Scope:
    """A cancel scope that ends the block silently at `deadline`."""
    return aio.cancel_scope(deadline=deadline)


def move_on_after(seconds: float) -> aio.Scope:
    """`move_on_at` counted from now."""
    return aio.cancel_scope(deadline=aio.current_time() + seconds)
