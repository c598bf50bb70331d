"""The driver: `fetch_all` on a cluster, the loop that feeds shards out and brings outcomes back.

One run is a `_ClusterRun`: `feed` reads and names the URLs into shards
while the cluster starts; `pump` sends a batch whenever a worker slot is
free and a host is ready; Dask's callback (`finished`) frees a batch's
hosts at once and hands its outcomes to the trio loop, where `collect`
delivers them.  `close` cancels what is still running, saves what the
journals of cut-short batches list, and removes the journals.
"""

from __future__ import annotations

import math
import pickle
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fetcher.bulk.batch import Outcomes, _as_async, _at_hand, host_key, outcomes_while
from fetcher.client import Outcome
from fetcher.cluster import scheduler
from fetcher.cluster.archive import WarcTask, warc_task, write_index
from fetcher.cluster.forkgate import GATES, ForkGate
from fetcher.cluster.output import filesystem, is_url, remove_tree
from fetcher.cluster.records import arrived, journaled
from fetcher.cluster.shards import HOST_CHUNK, Item, Shards
from fetcher.cluster.ship import Packer
from fetcher.cluster.worker import run_batch_packed
from fetcher.errors import FetchError, UsageError
from fetcher.handler.notes import Request, split_request
from fetcher.net import aio
from fetcher.net.threads import Token, unwatch_io_waits, watch_io_waits
from fetcher.settings import Settings
from fetcher.url import URL, parse_url

#: The driver takes in this many URLs (when they come at once, as from -i) before it cuts batches ...
FEED_BATCH = 1000
#: ... or waits at most this long (seconds) for more.
TRICKLE = 0.05
#: The feed lets the batches' comings and goings in after this many URLs.
YIELD_EVERY = 200


def fetch_all(
    urls: Iterable[Request] | AsyncIterable[Request],
    cluster: str | Any,
    settings: Settings | None = None,
    *,
    jobs: int | None = None,
    per_host: int | None = None,
    destination: Callable[[URL], Path] | None = None,
    resume: bool = False,
    retries: int | None = None,
    on_chunk: Callable[[URL, int], None] | None = None,
    host_chunk: int = HOST_CHUNK,
    output: str | None = None,
    warc_file: str | None = None,
    warc_max_size: int | None = None,
    warc_cdx: bool = False,
    command_line: list[str] | None = None,
) -> Any:
    """`Client.fetch_all` on a Dask cluster, as an async context manager::

        async with fetcher.cluster.fetch_all(urls, "local:4", settings) as results:
            async for outcome in results:   # ClusterOutcome: an Outcome plus worker, started, ended
                ...

    `cluster` is `"local"` / `"local:N"` (a local cluster of N worker
    processes, started and stopped here), a scheduler address such as
    `"tcp://sched:8786"`, or a `distributed.Client` (left open).  Each
    worker runs `Client(settings).fetch_all` on its shards; `jobs` is the
    concurrency of each worker.  With `destination`, the paths it returns
    must be reachable under the same name by every worker (a shared
    directory); `on_chunk` is called once per saved file with its size.
    A batch holds at most `host_chunk` URLs of each of its hosts.

    `output` is an fsspec URL (`"s3://bucket/prefix"`, `"file:///srv/out"`)
    for the files: `destination` then returns paths relative to it, and
    each file appears there only when complete (`fetcher.cluster.output`).
    `warc_file` (a path every worker reaches) archives every retrieval:
    each batch writes its own `NAME-RUN-BATCH-ATTEMPT.warc.gz`, rotated past
    `warc_max_size` bytes (`fetcher.cluster.archive`); with `warc_cdx`,
    NAME.cdxj indexes every record of the run, sorted.

    An item of `urls` may carry its request notes, `(url, RequestNotes)`
    (fetcher.handler.notes: -N asks the server whether a saved copy
    changed; an FTP name's confinement), as in `Client.fetch_all`: they
    travel with the batch of their URL, so workers honour them as a local
    run does.

    The outcomes are those of `Client.fetch_all`, one per URL, in the order
    they complete; a batch lost for good (Dask gave up on it) yields a
    `FetchError` outcome for each of its URLs.
    """
    if output is not None and not is_url(output):
        raise UsageError(f"output={output!r}: give an fsspec URL (for a directory, let destination name paths)")
    if output is not None:
        filesystem(output)  # a clear error now, before any worker starts
    if resume and output is not None:
        raise UsageError("-C/--continue with an fsspec output URL is not implemented (.part files stay on workers)")
    run_id = uuid.uuid4().hex[:12]
    archive = None
    if warc_file is not None:
        if is_url(warc_file):
            raise UsageError(f"--warc-file {warc_file}: an fsspec URL for WARC files is not implemented",
                             hint="give a path every worker reaches (local, NFS, a mounted bucket)")  # fmt: skip
        archive = warc_task(warc_file, run_id, warc_max_size, list(command_line or []), cdx=warc_cdx)
    options = DriverOptions(jobs, per_host, destination, resume, retries, on_chunk, host_chunk, output, archive, run_id)
    return _run(urls, cluster, settings or Settings(), options)


@dataclass
class DriverOptions:
    """`fetch_all`'s arguments, checked, with the run's id and its WARC task."""

    jobs: int | None
    per_host: int | None
    destination: Callable[[URL], Path] | None
    resume: bool
    retries: int | None
    on_chunk: Callable[[URL, int], None] | None
    host_chunk: int
    output: str | None
    archive: WarcTask | None
    run_id: str


@asynccontextmanager
async def _run(
    urls: Iterable[Request] | AsyncIterable[Request], cluster: str | Any, settings: Settings, options: DriverOptions
) -> AsyncIterator[Outcomes]:
    run = _ClusterRun(urls, settings, options)
    run.open_gate()
    try:
        async with outcomes_while(run.receive, run.start) as outcomes:
            run.stopped = outcomes.saved_when_stopped
            # The cluster starts while feed() reads and names the URLs into shards; the
            # batches leave once it is up.  A failure to start ends the run from here,
            # as itself (outcomes_while re-raises it).
            await run.connect(cluster)
            yield outcomes
    finally:
        await run.close()


class _ClusterRun:
    """One cluster run's state in the driver's trio loop, and its steps."""

    def __init__(
        self, urls: Iterable[Request] | AsyncIterable[Request], settings: Settings, options: DriverOptions
    ) -> None:
        self.urls = urls
        self.options = options
        self.job_count = options.jobs or settings.jobs
        per_host = options.per_host or settings.per_host
        self.packer = Packer(settings, jobs=self.job_count, per_host=per_host, resume=options.resume,
                             retries=options.retries, output=options.output, archive=options.archive,
                             run_id=options.run_id)  # fmt: skip
        # A batch takes hosts enough to keep its -j transfers busy (-j / --per-host),
        # and up to -j hosts when there are more ready than idle workers: the
        # hosts ready are spread over the idle workers, so that every server
        # is busy at once, as in a local run, not one host per worker in turn.
        self.hosts_per_batch = max(1, math.ceil(self.job_count / per_host))
        #: The Dask client and its closer, once the cluster is up (the URLs are read and named meanwhile).
        self.dask: Any = None
        self.close_cluster: Callable[[bool], None] | None = None
        self.slots = 0
        # The channel batch.Outcomes reads (its end ends the loop).
        self.send, self.receive = aio.memory_channel(math.inf)
        self.done_send, self.done_receive = aio.memory_channel(math.inf)
        self.token = Token()
        self.shards = Shards(options.host_chunk)
        self.inflight: dict[Any, list[Item]] = {}
        #: Batches not yet over on their worker (their hosts leased); `inflight` also holds
        #: those whose outcomes are coming.
        self.running: set[Any] = set()
        self.waiting: dict[int, Item] = {}
        self.fed = aio.event()
        self.wake = aio.event()
        self.stopped: list[Outcome] | None = None
        self.gate = ForkGate()

    def open_gate(self) -> None:
        """Forks of a local cluster's workers wait for this trio thread's steps to end (`forkgate`)."""
        watch_io_waits(self.gate)
        GATES.add(self.gate)

    def start(self, nursery: aio.Nursery) -> None:
        nursery.start_soon(self.feed)
        nursery.start_soon(self.trickle)
        nursery.start_soon(self.collect)

    async def connect(self, cluster: str | Any) -> None:
        """Reach or start the cluster (in a thread: it takes seconds), then send the batches ready by then."""
        self.dask, self.close_cluster = await aio.run_sync(scheduler.connect, cluster)
        self.slots = await aio.run_sync(scheduler.slots, self.dask)
        self.pump()
        self.wake.set()

    def pump(self) -> None:
        """Send batches while a worker slot is free and hosts are ready."""
        while self.dask is not None and len(self.running) < self.slots:
            if not self.shards.ready:
                return
            idle = self.slots - len(self.running)
            share = max(self.hosts_per_batch, min(self.job_count, math.ceil(len(self.shards.ready) / idle)))
            self.ship(self.shards.take(share))

    def ship(self, items: list[Item]) -> None:
        task = self.packer.task(items)
        future = self.dask.submit(run_batch_packed, task, pure=False, key=f"fetch-batch-{task.batch_id}")
        self.inflight[future] = items
        self.running.add(future)
        future.add_done_callback(lambda f, items=items: self.finished(f, items))
        self.wake.set()

    def finished(self, future: Any, items: list[Item]) -> None:
        # Dask calls this in a thread of its own once the batch is over on its worker:
        # its hosts are free again at once (their next batches leave while this one's
        # outcomes travel back), then the outcomes go to the trio loop.
        if not self.token.call_soon(self.release, future, items):
            return  # the run is over
        try:
            value: Any = pickle.loads(future.result())  # (in this thread, not in the trio loop)
        except BaseException as error:
            value = error
        self.token.call_soon(self.hand_over, (items, value))

    def release(self, future: Any, items: list[Item]) -> None:
        # In the trio loop: the batch ran to its end (or failed); nothing of its hosts runs any more.
        if future in self.running:
            self.running.discard(future)
            self.shards.release({host_key(i.url) for i in items})
            self.pump()

    def hand_over(self, done: tuple[list[Item], Any]) -> None:
        # In the trio loop; the run may be over (Ctrl-C) with batches still coming back.
        try:
            self.done_send.send_nowait(done)
        except aio.channel_closed():
            pass

    def idle(self) -> None:
        # Every URL at hand is in: with no batch running, none of them waits for trickle().
        if not self.running:
            self.pump()

    async def feed(self) -> None:
        """Read and name the URLs into shards; one that does not parse or name gets its outcome at once."""
        index = 0
        urls = self.urls
        destination = self.options.destination
        given = _at_hand(urls, self.idle) if aio.is_receive_channel(urls) else _as_async(urls)
        async for request in given:
            value, notes = split_request(request)
            text = str(value)
            index += 1
            try:
                url = value if isinstance(value, URL) else parse_url(value)
                self.packer.bind(url.origin)
                path = destination(url) if destination is not None else None
            except FetchError as error:
                await self.send.send(Outcome(url=text, error=error, attempts=1))  # as Client.fetch_all counts it
                continue
            item = Item(index, text, url, path, notes)
            self.waiting[index] = item
            self.shards.add(item)
            if index % FEED_BATCH == 0:
                self.pump()
            if index % YIELD_EVERY == 0:
                # A window of -i comes at once: named in one go, it would keep the batches
                # that come back from freeing their hosts, and a fork of a worker waiting
                # (forkgate), until its end.
                await aio.checkpoint()
        self.fed.set()
        self.pump()
        self.wake.set()

    async def trickle(self) -> None:
        # URLs that arrive slowly (found by -r) go out without waiting for FEED_BATCH more.
        while not self.fed.is_set():
            await aio.sleep(TRICKLE)
            self.pump()

    async def collect(self) -> None:
        """Deliver the outcomes of the batches as they come back, until every URL fed has its own."""
        async with self.send:
            while True:
                if self.fed.is_set() and not self.inflight and not self.shards:
                    return
                if not self.inflight:
                    await self.wake.wait()
                    self.wake = aio.event()
                    continue
                items, value = await self.done_receive.receive()
                for future in [f for f, its in self.inflight.items() if its is items]:
                    del self.inflight[future]
                    self.release(future, items)  # (done already, unless the outcomes came first)
                for outcome in arrived(items, value, self.waiting, self.options.on_chunk):
                    self.send.send_nowait(outcome)
                self.pump()

    async def close(self) -> None:
        """Stop what still runs, keep what cut-short batches completed, and clear the run's traces."""
        self.done_send.close()
        with aio.cancel_scope(shield=True):
            busy = bool(self.inflight)
            if busy:
                await aio.run_sync(self.dask.cancel, list(self.inflight))
            if self.close_cluster is not None:
                await aio.run_sync(self.close_cluster, busy)
            journal_root = self.packer.journal_root
            if busy and journal_root is not None and self.stopped is not None:
                # The workers are stopped: what their journals list is complete and stays, as in a local run.
                batches = [items for items in self.inflight.values() if items]
                self.stopped += await aio.run_sync(journaled, journal_root, self.options.run_id, batches,
                                                   self.waiting, self.options.output is None)  # fmt: skip
            GATES.discard(self.gate)
            unwatch_io_waits(self.gate)
            if journal_root is not None:
                await aio.run_sync(remove_tree, journal_root)
            archive = self.options.archive
            if archive is not None:
                if archive.cdx:  # what was archived is indexed, an interrupted run's too
                    await aio.run_sync(write_index, archive)
                await aio.run_sync(remove_tree, archive.staging)
