"""`--limit-rate RATE`: a token bucket that paces how fast document bodies are read.

One `RateLimiter` belongs to a `Client`, so the rate is the total across
every transfer of a run (a single download, a bulk run, a mirror); with
--cluster each worker process has its own.  Pacing happens in
`Resource.__aiter__`: each chunk read is handed on in slices of an eighth
of a second's worth, each after its wait, so the next read comes later,
the socket buffer fills, and TCP slows the server down.

Without a limit the transfer path pays one `is not None` test per chunk.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

#: curl's units: K, M and G are powers of 1024 (`--limit-rate 100K` = 102400 bytes/s).
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmg]?)(?:b?(?:/s)?)", re.IGNORECASE)


def parse_rate(text: str) -> int:
    """Bytes per second from curl's form: `100K`, `1M`, `1.5m`, `2G`, `50000` (K = 1024)."""
    match = _RATE.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a rate (bytes per second, e.g. 100K, 1M, 50000)")
    rate = int(float(match[1]) * _UNITS[match[2].lower()])
    if rate <= 0:
        raise ValueError(f"{text!r}: a rate must be at least 1 byte per second")
    return rate


class RateLimiter:
    """A token bucket of `rate` bytes per second, holding at most `burst` bytes.

    `delay(count)` takes `count` bytes out and says how long to wait before
    the next read so the average stays at `rate`; it may go into debt (a chunk
    larger than what is in the bucket), which the wait pays back.  Several
    transfers sharing one limiter share the rate: each one's debt delays the
    next taker too.  The clock is injectable, so the computed waits can be
    checked exactly.
    """

    def __init__(self, rate: int, *, burst: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        #: Bytes handed on at a time: an eighth of a second's worth (1 KiB to 1 MiB).
        self.slice = max(1024, min(rate // 8, 1 << 20))
        #: One slice by default: a short stall is made up for, a long idle is not banked, and
        #: the average over a whole transfer stays close to `rate` even for a short one.
        self.burst = burst if burst is not None else self.slice
        self._clock = clock
        self._tokens = float(self.burst)
        self._stamp: float | None = None

    def __repr__(self) -> str:
        return f"<RateLimiter {self.rate} B/s burst={self.burst}>"

    def delay(self, count: int) -> float:
        """Take `count` bytes; the seconds to wait before reading more (0.0 when within the rate)."""
        now = self._clock()
        if self._stamp is not None:
            self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        self._tokens -= count
        return -self._tokens / self.rate if self._tokens < 0 else 0.0
