"""URLs cut into host shards: the key is the one `--per-host` counts by, (host, port).

A key is leased to at most one batch at a time, and its next batch is sent
only once the previous one has come back, so one host's URLs never run on
two workers at once and `--per-host` holds across the whole cluster.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from fetcher.bulk.batch import host_key
from fetcher.handler.notes import RequestNotes
from fetcher.url import URL

#: URLs of one host in its first batch (later ones grow: see `Shards`).
HOST_CHUNK = 50


@dataclass
class Item:
    """One URL of the run as the driver keeps it: its input number, its text, its value, its target and notes."""

    index: int
    text: str
    url: URL
    path: Path | None
    #: What the caller knows of it (fetcher.handler.notes), shipped with its batch.
    notes: RequestNotes | None = None


class Shards:
    """URLs waiting per (host, port) key, the keys leased to a batch in flight, and batch making.

    A key's batches grow: its first holds `chunk` URLs, each next one twice
    as many, up to `chunk * GROWTH`.  Small first batches spread a short
    job over the workers and show progress early; later, larger ones
    spread the per-batch cost (a Dask task and its round trip, during
    which the host waits) over more URLs.  A large batch risks little when a worker
    dies: its journal keeps what it completed.
    """

    GROWTH = 16

    def __init__(self, chunk: int) -> None:
        self.chunk = chunk
        self.waiting: dict[tuple[str, object], deque[Item]] = {}
        self.leased: set[tuple[str, object]] = set()
        #: Keys with URLs waiting and no batch in flight, longest waiting first: hosts take turns.
        self.ready: dict[tuple[str, object], None] = {}
        self.sent: dict[tuple[str, object], int] = {}

    def add(self, item: Item) -> None:
        key = host_key(item.url)
        self.waiting.setdefault(key, deque()).append(item)
        if key not in self.leased:
            self.ready[key] = None

    def release(self, keys: set[tuple[str, object]]) -> None:
        """A batch of these keys came back: each with URLs left queues up again, behind the others."""
        for key in keys:
            self.leased.discard(key)
            if key in self.waiting:
                self.ready[key] = None

    def take(self, count: int) -> list[Item]:
        """The next batch: URLs of the `count` keys that have waited longest."""
        taken: list[Item] = []
        for key in list(itertools.islice(self.ready, count)):
            del self.ready[key]
            queue = self.waiting[key]
            sent = self.sent.get(key, 0)
            self.sent[key] = sent + 1
            size = self.chunk * min(2**sent, self.GROWTH)
            for _ in range(min(size, len(queue))):
                taken.append(queue.popleft())
            if not queue:
                del self.waiting[key]
            self.leased.add(key)
        return taken

    def __bool__(self) -> bool:
        return any(self.waiting.values())
