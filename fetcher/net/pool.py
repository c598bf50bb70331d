"""Idle connections kept for reuse, per key, with expiry (httpcore's split:
the pool knows nothing about the protocol spoken on what it holds)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from fetcher.net import aio


class Poolable(Protocol):
    async def aclose(self) -> None: ...


def _unfit(connection: Poolable) -> bool:
    """Whether `connection` says something arrived on it while it was idle (its `unsolicited()`).

    Such a connection is closed, never lent: the bytes would be read as the
    reply to the next request sent on it.  A connection without that check
    (a protocol whose idle connections may speak first) is lent as it is.
    """
    check = getattr(connection, "unsolicited", None)
    return check is not None and bool(check())


class Pool:
    """`take(key)` an idle connection or None; `give(key, conn)` it back when done."""

    def __init__(self, idle_timeout: float = 30.0, max_idle_per_key: int = 8) -> None:
        self.idle_timeout = idle_timeout
        self.max_idle_per_key = max_idle_per_key
        self._idle: dict[Hashable, list[tuple[float, Poolable]]] = {}
        self.closed = False

    async def take(self, key: Hashable) -> Poolable | None:
        stack = self._idle.get(key)
        now = aio.current_time()
        while stack:
            expires, connection = stack.pop()
            if expires > now and not _unfit(connection):
                return connection
            await connection.aclose()
        return None

    async def give(self, key: Hashable, connection: Poolable) -> None:
        stack = self._idle.setdefault(key, [])
        if self.closed or len(stack) >= self.max_idle_per_key:
            await connection.aclose()
            return
        stack.append((aio.current_time() + self.idle_timeout, connection))

    def idle_count(self, key: Hashable | None = None) -> int:
        if key is not None:
            return len(self._idle.get(key, ()))
        return sum(len(stack) for stack in self._idle.values())

    async def aclose(self) -> None:
        self.closed = True
        idle, self._idle = self._idle, {}
        for stack in idle.values():
            for _, connection in stack:
                await connection.aclose()
