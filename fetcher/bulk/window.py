"""A window over `fetch_all`'s input: at most so many URLs taken on and not finished.

A caller with a list of millions (the command's -i, a recursion that keeps
finding links) cannot hand `fetch_all` an iterator that blocks: it must
still be able to stop the run (drain the channel) and to add URLs it finds
meanwhile.  It puts URLs into a `Window` instead, whose `receive` end
`fetch_all` reads; the window counts what is pending, lets a producer wait
until half of it is free again (`wait_for_room`), and closes the channel,
which ends the `fetch_all` block, once nothing is pending and the producer
said it has no more (`end_of_input`).  Memory stays bounded by the window,
not by the input.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from fetcher.net import aio


class Window:
    """The channel `fetch_all` reads, with the count of URLs pending (see the module docstring)."""

    def __init__(self, size: int) -> None:
        self.size = size
        #: URLs put in and not finished yet.
        self.pending = 0
        #: The producer may still put URLs in (the channel stays open while nothing is pending).
        self.feeding = False
        self._send, self.receive = aio.memory_channel(math.inf)
        self._room: aio.Event | None = None

    @property
    def full(self) -> bool:
        return self.pending >= self.size

    @property
    def over(self) -> bool:
        """Nothing pending and nothing more to come: the run is over."""
        return self.pending == 0 and not self.feeding

    def put(self, item: Any) -> None:
        """Hand one URL (or a `(url, notes)` item) to `fetch_all`."""
        self.pending += 1
        self._send.send_nowait(item)

    def finished(self) -> None:
        """One URL put in has its outcome: room again past half the window; the end once all are in."""
        self.pending -= 1
        if self._room is not None and self.pending <= self.size // 2:
            self._room.set()
            self._room = None
        if self.over:
            self._send.close()

    async def wait_for_room(self, stopped: Callable[[], bool] = lambda: False) -> None:
        """Until the window has room again (half of it free), unless `stopped()` says the run stops."""
        while self.pending >= self.size and not stopped():
            self._room = self._room or aio.event()
            await self._room.wait()

    def end_of_input(self) -> None:
        """The producer has no more URLs: a run with nothing pending ends."""
        self.feeding = False
        if self.pending == 0:
            self._send.close()

    def stop(self) -> None:
        """Start nothing more: the channel is closed and emptied (what was taken out runs on)."""
        self._send.close()
        while True:
            try:
                self.receive.receive_nowait()
            except aio.would_block() + aio.channel_ended():
                break
