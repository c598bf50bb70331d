"""The time rules of one retrieval: --max-time and the low-speed rule (`Budget`), current per task."""

from __future__ import annotations

import math
from contextvars import ContextVar

from fetcher.errors import Timeout
from fetcher.net import aio


class Budget:
    """The time rules of one retrieval (one URL): --max-time and the low-speed rule.

    The client makes one per URL and makes it current (a context variable,
    so each task of a bulk run has its own); every read of every
    `Connection` that retrieval uses, dialogue and body, control and data
    connections alike, waits no longer than the budget allows.  The
    low-speed rule counts only time spent waiting for the server, so a slow
    consumer of a streamed body is never blamed on the server.
    """

    def __init__(self, url: str, *, max_time: float | None, speed_limit: int, speed_time: float) -> None:
        self.url = url
        self.max_time = max_time
        #: aio.current_time() at which the whole URL must be done (inf: no bound).
        self.deadline = aio.current_time() + max_time if max_time else math.inf
        self.speed_limit = speed_limit
        self.speed_time = speed_time
        self._waited = 0.0
        self._window_bytes = 0

    def __repr__(self) -> str:
        return f"<Budget {self.url} max_time={self.max_time} speed={self.speed_limit}/{self.speed_time}>"

    def speed_deadline(self, now: float) -> float:
        """When the current read must end for the low-speed rule still to hold."""
        if self.speed_limit <= 0 or self._window_bytes >= self.speed_limit * self.speed_time:
            return math.inf
        return now + max(self.speed_time - self._waited, 0.0)

    def account(self, received: int, waited: float) -> None:
        """Count one read; raise when a full window passed below the limit."""
        if self.speed_limit <= 0:
            return
        self._waited += waited
        self._window_bytes += received
        if self._waited >= self.speed_time:
            if self._window_bytes < self.speed_limit * self.speed_time:
                raise self.too_slow()
            self._waited, self._window_bytes = 0.0, 0

    def expired(self) -> Timeout:
        return Timeout(
            f"{self.url} took longer than --max-time {self.max_time:g} s",
            hint="raise -m/--max-time if the server is just slow",
        )

    def too_slow(self) -> Timeout:
        return Timeout(
            f"{self.url} arrived slower than {self.speed_limit} bytes/s for {self.speed_time:g} s",
            hint="the low-speed rule (--speed-limit BYTES, --speed-time SECONDS; --speed-limit 0 turns it off)",
        )


#: The budget of the retrieval running in this task (None outside one).
current_budget: ContextVar[Budget | None] = ContextVar("fetcher_budget", default=None)
