"""Lanes: the bulk path where one worker serves many URLs of one origin over one connection.

`fetch_all` gives every URL its own task (batch.py).  For a plain document
on a protocol that can carry many requests on one connection (HTTP/1.1
keep-alive with pipelining), that task, its deadlines and its per-read
awaits cost far more than the bytes: 2,000 small files spent about 0.35 ms
of CPU per URL there.  A handler that offers a lane (`lane_key`, `run_lane`)
gets those URLs grouped by its key instead; up to `--per-host` workers per
key, each holding one job slot and one per-host slot for its whole life,
take URLs in batches and answer each with an `Outcome` exactly as the task
path would.  Whatever a worker cannot do on its lane (a redirect, a reply it
does not read itself, a failed attempt to retry) it runs through the task
path's own code (`general`), inline, under the slots it already holds, so
every rule (guard, credentials, retries, resume, limits) is the same code.

The handler decides what may take its lane (see schemes/http/lane.py):
anything that needs credentials, a proxy, an archive tap, a trace, a
resume or a condition stays on the task path.  What a lane is given and
may call is the handler contract's (fetcher/handler/lanes.py: `LaneItem`,
`LaneWork`, `admits`, `deliver`); this module is the scheduler behind it,
and `LaneWorker` is its `LaneWork`.
A URL that comes with request notes (fetcher.handler.notes: -N's
conditions, FTP confinement) never reaches a lane (batch.py): the task
path's session carries them to the handler.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, cast

from fetcher.bulk.outcomes import Fetched, Outcome
from fetcher.disk.place import Directories
from fetcher.disk.writer import BodyWriter
from fetcher.errors import FetchError
from fetcher.handler.lanes import LaneHandler, LaneItem
from fetcher.net import aio
from fetcher.registry import get_handler
from fetcher.url import URL

if TYPE_CHECKING:
    from fetcher.client import Client
    from fetcher.disk.writer import Download
    from fetcher.resource import Resource

#: Queued lane URLs (all keys together) before the feeder waits: bounds memory
#: on a streamed list of millions while keeping every worker's pipe full.
QUEUE_CAP = 1024
#: Queued URLs of one key that wake an idle worker at once; fewer wait for
#: `flush` (the feeder has nothing more at hand), so requests go out in batches.
WAKE_AT = 16


class LaneWorker:
    """One worker's view of its lane (the contract's `LaneWork`): take URLs, report outcomes, hand URLs on."""

    def __init__(self, lanes: Lanes, key: Hashable, results: aio.SendChannel[Outcome]) -> None:
        self.lanes = lanes
        self.key = key
        self.client = lanes.client
        self.destination = lanes.destination
        self.on_chunk = lanes.on_chunk
        #: Whether documents get their SHA-256 (`Client.fetch_all`'s `digest`).
        self.digest = lanes.digest
        self.directories = lanes.directories
        self._results = results
        self.retired = False
        #: The per-host slot this worker holds (set when it starts).
        self.host: aio.Semaphore | None = None

    def take(self, count: int) -> list[LaneItem]:
        """Up to `count` queued URLs, without waiting (an empty list when none are queued)."""
        queue = self.lanes.queues.get(self.key)
        if not queue or self.retired:
            return []
        taken = [queue.popleft() for _ in range(min(count, len(queue)))]
        self.lanes.dequeued(len(taken))
        now = time.monotonic()
        for item in taken:
            item.started = now
        return taken

    async def wait(self, count: int) -> list[LaneItem]:
        """Up to `count` URLs, waiting for the feeder while it may send more for this key.

        An empty list retires the worker (it takes no more): the input ended,
        or the feeder needs this worker's job slot for another URL.
        """
        while not self.retired:
            if taken := self.take(count):
                return taken
            if self.lanes.input_done:
                break
            if not await self.lanes.idle(self.key, self.host):
                # Dismissed; but URLs queued since (after the dismissal, before this worker ran
                # again) would have no worker: the key gets a new one only with its next URL.
                if taken := self.take(count):
                    return taken
                break
        self._retire()
        return []

    def _retire(self) -> None:
        if not self.retired:
            self.retired = True
            self.lanes.workers[self.key] -= 1

    def writer(self, item: LaneItem, content_type: str | None) -> BodyWriter:
        """A `BodyWriter` for `item`'s document, named now if it was not yet, under this run's rules."""
        return BodyWriter(item.url, self.path(item), content_type, digest=self.digest,
                          directories=self.directories)  # fmt: skip

    def path(self, item: LaneItem) -> Path:
        """`destination(url)` for this item, asked once."""
        if item.path is None:
            item.path = self.destination(item.url)
        return item.path

    @property
    def disabled(self) -> bool:
        return self.key in self.lanes.disabled

    def disable(self) -> None:
        """This origin showed something the lane does not handle: its URLs take the task path from now on."""
        self.lanes.disabled.add(self.key)

    async def open(self, url: URL) -> Resource:
        """Open `url` as the task path does (`Client._open`: guard, handler), without its retries or resume."""
        return await self.client._open(self.client._session(url))

    async def done(self, item: LaneItem, result: Fetched | Download) -> None:
        await self._emit(Outcome(url=item.text, result=result, seconds=time.monotonic() - item.started))

    async def kept(self, item: LaneItem, resource: Resource) -> None:
        """A listing or advisory: its facts, no body (as `Client.retrieve` returns it)."""
        await self.done(item, Fetched.without_body(resource))

    async def failed(self, item: LaneItem, error: FetchError) -> None:
        """The lane's attempt failed: a transient error is retried on the task path, as there."""
        if error.transient and self.lanes.retries > 0:
            await self.general(item, first_error=error)
            return
        try:
            self.path(item)  # named, as the task path names it before asking (manifest `target`)
        except FetchError:
            pass
        await self._emit(Outcome(url=item.text, error=error, seconds=time.monotonic() - item.started))

    async def general(
        self, item: LaneItem, *, first_error: FetchError | None = None, redirect: URL | None = None
    ) -> None:
        """Retrieve `item` on the task path (retries, resume and all), inline.

        `first_error`: the lane's attempt failed so; `redirect`: it was answered
        with a redirect to there, which the task path follows.
        """
        outcome = Outcome(url=item.text)
        started = item.started or time.monotonic()
        try:
            outcome.result = await self.lanes.general(item.url, outcome, first_error, redirect)
        except FetchError as error:
            outcome.error = error
        outcome.seconds = time.monotonic() - started
        await self._emit(outcome)

    async def _emit(self, outcome: Outcome) -> None:
        try:
            self._results.send_nowait(outcome)
        except aio.would_block():
            await self._results.send(outcome)


class Lanes:
    """The lane queues and workers of one `fetch_all` block."""

    def __init__(
        self,
        client: Client,
        *,
        job_limit: aio.Semaphore,
        host_limit: Callable[[URL], aio.Semaphore],
        per_host: int,
        destination: Callable[[URL], Path],
        resume: bool,
        retries: int,
        on_chunk: Callable[[URL, int], None] | None,
        general: Callable[[URL, Outcome, FetchError | None, URL | None], Awaitable[Fetched | Download]],
        digest: bool = True,
    ) -> None:
        self.client = client
        self.digest = digest
        self.job_limit = job_limit
        self.host_limit = host_limit
        self.per_host = per_host
        self.destination = destination
        self.resume = resume
        self.retries = retries
        self.on_chunk = on_chunk
        self.general = general
        self.queues: dict[Hashable, deque[LaneItem]] = {}
        self.workers: dict[Hashable, int] = {}
        self.disabled: set[Hashable] = set()
        self._queued = 0
        self._space: aio.Event | None = None
        #: Workers waiting for URLs: key -> [(event, verdict, host slot held)]; the verdict says stay (True) or retire.
        self._idle: dict[Hashable, list[tuple[aio.Event, list[bool], aio.Semaphore | None]]] = {}
        self.input_done = False
        #: Where small bodies are written (closed by `close` when the block ends).
        self.directories = Directories() if Directories.available else None

    def close(self) -> None:
        """The block ended: the directories it wrote into are closed."""
        if self.directories is not None:
            self.directories.close()

    async def idle(self, key: Hashable, host: aio.Semaphore | None = None) -> bool:
        """Wait for URLs of `key`; False when the worker should retire instead.

        `host` is the per-host slot the worker holds.  An idle worker gives
        its slots up at once when someone waits for them: the feeder for a
        job slot (another key's worker, a task-path URL; with -j 1 the run
        would wait for ever), or a task of the same host for its host slot
        (say a directory to list, which the lane's next URLs come from).
        """
        if self.job_limit.statistics().tasks_waiting or (host is not None and host.statistics().tasks_waiting):
            return False
        event, verdict = aio.event(), [False]
        self._idle.setdefault(key, []).append((event, verdict, host))
        await event.wait()
        return verdict[0]

    def release_idle_host(self, host: aio.Semaphore) -> None:
        """Idle workers holding `host` retire: a task on the task path needs that per-host slot."""
        for waiting in self._idle.values():
            for entry in [entry for entry in waiting if entry[2] is host]:
                waiting.remove(entry)
                entry[1][0] = False
                entry[0].set()

    def _wake(self, key: Hashable, stay: bool) -> None:
        waiting = self._idle.get(key)
        if waiting:
            event, verdict, _ = waiting.pop()
            verdict[0] = stay
            event.set()

    def flush(self) -> None:
        """The feeder is about to wait for input: idle workers of keys with queued URLs start on them."""
        for key, waiting in self._idle.items():
            queue = self.queues.get(key)
            while waiting and queue:
                self._wake(key, True)
                if len(queue) <= WAKE_AT:
                    break

    def release_idle(self) -> None:
        """Idle workers give up their job slots (the feeder needs one, or the input ended)."""
        for waiting in self._idle.values():
            for event, verdict, _ in waiting:
                verdict[0] = False
                event.set()
            waiting.clear()

    def abandon(self) -> None:
        """Drop every queued URL (`Outcomes.stop_starting`); workers finish what they sent."""
        for queue in self.queues.values():
            queue.clear()
        self._queued = 0
        self.end_of_input()
        if self._space is not None:
            self._space.set()

    def end_of_input(self) -> None:
        self.input_done = True
        self.release_idle()

    def key_for(self, url: URL) -> tuple[Hashable, LaneHandler] | None:
        """The lane `url` may take, with its handler, or None for the task path."""
        try:
            handler = get_handler(url.scheme)
        except FetchError:
            return None
        lane_key = getattr(handler, "lane_key", None)
        if lane_key is None:
            return None
        key = lane_key(url, self.client, resume=self.resume)
        if key is None or key in self.disabled:
            return None
        return key, cast("LaneHandler", handler)

    async def add(
        self,
        key: Hashable,
        handler: LaneHandler,
        item: LaneItem,
        nursery: aio.Nursery,
        results: aio.SendChannel[Outcome],
    ) -> None:
        """Queue `item`; start a worker for its key if the key has fewer than `per_host`."""
        while self._queued >= QUEUE_CAP:
            self.flush()
            self._space = self._space or aio.event()
            await self._space.wait()
        try:
            # Named now, in input order, as the task path names a URL when its task starts:
            # names that must be told apart (two hosts' index.html) do not depend on timing.
            item.path = self.destination(item.url)
        except FetchError:
            pass  # named (and the error met again) when it is retrieved
        queue = self.queues.get(key)
        if queue is None:
            queue = self.queues[key] = deque()
        queue.append(item)
        self._queued += 1
        if len(queue) >= WAKE_AT:
            self._wake(key, True)
        workers = self.workers.get(key, 0)
        # Another worker for a key that has some only when a job slot is free or its queue backs
        # up: taking idle workers' slots for every URL of a mixed list retired and restarted
        # workers (and their connections) every few URLs.
        if workers < self.per_host and (not workers or self.job_limit.value > 0 or len(queue) >= WAKE_AT):
            self.workers[key] = workers + 1
            await self.acquire_job()
            nursery.start_soon(self._worker, key, handler, item.url, results.clone())

    async def acquire_job(self) -> None:
        """A job slot, asking idle workers to give theirs up when none is free."""
        if self.job_limit.value == 0:
            self.flush()
            self.release_idle()
        await self.job_limit.acquire()

    def dequeued(self, count: int) -> None:
        self._queued -= count
        if self._space is not None and self._queued < QUEUE_CAP // 2:
            self._space.set()
            self._space = None

    async def _worker(self, key: Hashable, handler: LaneHandler, url: URL, results: aio.SendChannel[Outcome]) -> None:
        work = LaneWorker(self, key, results)
        try:
            work.host = self.host_limit(url)
            if work.host.value == 0:
                self.release_idle_host(work.host)  # idle workers of another key on this host
            async with results, work.host:
                await handler.run_lane(work)  # returns once `wait` retired the worker
        finally:
            work._retire()
            self.job_limit.release()
