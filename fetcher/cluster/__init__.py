"""Bulk runs on a Dask cluster: every core of this machine, or many machines.

`bulk.py` stays the one place that knows jobs, retries and the manifest.
This module is only an executor with the shape of `Client.fetch_all`: it
cuts the URLs into host shards, ships each shard as a batch to a Dask
worker, where the same `fetch_all` code runs in the worker's own trio loop
with the same `Settings`, and brings the outcomes back.

- Sharding: the key is the one `--per-host` counts by, (host, port).  A key
  is leased to at most one batch at a time, and its next batch is sent only
  once the previous one has come back, so one host's URLs never run on two
  workers at once and `--per-host` holds across the whole cluster.
- Retries: a URL's transient errors are retried inside its batch, as in a
  local run.  A worker that dies mid-batch is handled by Dask, which runs
  the task again on another worker; each batch keeps a journal of the files
  it completed (beside the output, removed at the end of the run), so the
  rerun returns those from the journal and fetches only the rest.
- One outcome per URL: the driver keeps the URLs it is waiting for and drops
  any second outcome for one of them.

Dask is imported by this module only, and this module only with `--cluster`
or `fetcher.cluster.fetch_all`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import logging
import math
import os
import pickle
import signal
import sys
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import trio

from .. import aio
from ..batch import Outcomes, _as_async, _at_hand, host_key, outcomes_while
from ..client import Outcome
from ..errors import FetchError, UsageError
from ..settings import Settings
from ..sink import Download
from ..text import mask_secrets
from ..url import URL, parse_url
from .archive import WarcTask, warc_task, write_index
from .output import filesystem, is_url, remove_tree
from .worker import BatchTask, Shipped, _pack_error, _unpack_error, run_batch_packed

#: URLs of one host in its first batch (later ones grow: see `_Shards`).
HOST_CHUNK = 50

#: The driver takes in this many URLs (when they come at once, as from -i) before it cuts batches ...
FEED_BATCH = 1000
#: ... or waits at most this long (seconds) for more.
TRICKLE = 0.05
#: The feed lets the batches' comings and goings in after this many URLs.
YIELD_EVERY = 200

_HINT = "give --cluster local, local:N or tcp://HOST:PORT (a running dask scheduler)"


@dataclass
class ClusterOutcome(Outcome):
    """An `Outcome` that also says where and when it ran (wall-clock seconds)."""

    worker: str = ""
    started: float = 0.0
    ended: float = 0.0


def parse_target(text: str) -> tuple[str, int | str]:
    """`local` / `local:N` -> ("local", N); `tcp://HOST:PORT` (or any scheduler address) -> ("address", text)."""
    if text == "local" or text.startswith("local:"):
        count = text.partition(":")[2]
        if not count:
            return "local", os.cpu_count() or 1
        if not count.isdigit() or int(count) < 1:
            raise UsageError(f"--cluster {text}: the worker count must be a whole number of at least 1", hint=_HINT)
        return "local", int(count)
    if "://" in text and text.split("://", 1)[1]:
        return "address", text
    raise UsageError(f"--cluster {text}: not a cluster", hint=_HINT)


#: dask's setting for how a local cluster starts its worker processes.
_START_METHOD = "distributed.worker.multiprocessing-method"
_START_METHOD_ENV = "DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD"


#: A local cluster's background work, slowed or off: dask's defaults (a
#: profiler sampling every 10 ms, an event-loop tick every 20 ms, system and
#: memory monitors) cost 56 ms of CPU per second of an idle 2-worker cluster
#: on this machine; these, 6 ms.  Nothing here changes what a batch does.
_QUIET_LOCAL = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
}


def _import_dask(lean: bool = False) -> Any:
    """dask.distributed (imported on first use); `lean`: without numpy, when nothing has imported it yet.

    distributed uses numpy, when it can import it, only to allocate the
    buffers of large messages; this module's messages are small.  Importing
    numpy (and starting OpenBLAS) is about a quarter of importing
    distributed: 0.14 s of CPU of the 0.4 s measured on this machine.  The
    CLI asks for `lean` (its process handles no arrays); a program using
    the library keeps whatever it imports.
    """
    try:
        import dask

        if "distributed" not in sys.modules and _START_METHOD_ENV not in os.environ:
            # A local cluster's workers are forked from this process, not spawned:
            # a spawned worker starts a fresh interpreter and imports dask and
            # fetcher again (measured: 5-6 s to start and stop a 2-worker
            # cluster on a loaded 2-core machine, 1.8 s forked).  The fork
            # happens before any transfer starts, and a forked worker leaves
            # through os._exit, so it never flushes this process's buffers
            # (the manifest).  DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD
            # set in the environment wins.
            dask.config.set({_START_METHOD: "fork"})
        if lean and "numpy" not in sys.modules and "distributed" not in sys.modules:
            sys.modules["numpy"] = None  # type: ignore[assignment]  # `import numpy` raises ImportError
            try:
                import distributed
            except ImportError:
                pass  # a distributed that needs numpy after all: imported again below, with it
            finally:
                if "numpy" in sys.modules and sys.modules["numpy"] is None:
                    del sys.modules["numpy"]
        import distributed
    except ImportError:
        raise UsageError(
            "--cluster needs dask.distributed, which is not installed",
            hint="pip install 'fetcher-rfc1738[cluster]'",
        ) from None
    return distributed


def connect(target: str | Any) -> tuple[Any, Callable[[bool], None]]:
    """A Dask client for `target` (`local[:N]`, a scheduler address, or a `distributed.Client`) and its closer.

    Blocking (starting a local cluster takes seconds): call it in a thread.
    A client passed in is the caller's and is not closed.  The closer's
    argument says batches are still running (the run was interrupted): a
    local cluster's workers are then killed at once, not asked to finish.
    """
    distributed = _import_dask()
    if isinstance(target, distributed.Client):
        return target, lambda busy: None
    kind, value = parse_target(str(target))
    if kind == "local":
        # The workers are this run's: their notes on being stopped (Ctrl-C) are not the user's business.
        logging.getLogger("distributed").setLevel(logging.ERROR)
        import dask

        from .plugin import RunnerPlugin

        # The workers are forked from this process: the objects they inherit go to the
        # permanent generation first, so that the workers' collections leave the pages
        # they share with this process alone (a copy-on-write fault for each page written).
        # Measured on the 10,000-URL bench: 6.5k fewer page faults, about 0.5 s less CPU.
        # What dask reports of this installation (package versions, read from their
        # metadata; the processor, from `uname -p`) is known before the fork: every
        # worker would look it up again to introduce itself (20 ms of CPU for two).
        distributed.versions.get_versions()
        gc.collect()
        gc.freeze()
        try:
            with dask.config.set(_QUIET_LOCAL):
                cluster = distributed.LocalCluster(
                    # dask serves status pages even without a dashboard; on a port of its own,
                    # on loopback: None means 8787, and a warning on stderr when that is taken.
                    n_workers=int(value),
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address="127.0.0.1:0",
                    memory_limit=0,  # fetcher streams: no memory manager polling every 100 ms
                    # Each worker starts with the plugin: no round trip to every worker to
                    # register it before the first batch (measured: 70 ms of a 0.45 s run).
                    plugins=(RunnerPlugin(),),
                )
        finally:
            gc.unfreeze()
        # Batches' outcomes come straight from the worker that ran them, not through
        # the scheduler (which, in this process, would read and send every one again):
        # measured on the 10,000-URL bench, 0.17 s less CPU in this process.
        client = distributed.Client(cluster, direct_to_workers=True)
        _LOCAL[client] = int(value)

        def close_local(busy: bool) -> None:
            if busy:
                # A batch reading a never-ending file does not stop for a cancel;
                # dask would wait 4 s per worker before it kills it.
                for pid in client.run(os.getpid, wait=True, on_error="return").values():
                    if isinstance(pid, int):
                        with contextlib.suppress(OSError):
                            os.kill(pid, signal.SIGKILL)
            client.close()
            cluster.close()

        return client, close_local
    try:
        client = distributed.Client(str(value), timeout="10s")
    except OSError as error:
        raise UsageError(f"--cluster {value}: cannot reach the dask scheduler: {error}", hint=_HINT) from None
    return client, lambda busy: client.close()


class _ForkGate(trio.abc.Instrument):  # type: ignore[misc]
    """Forks from other threads (a local cluster's workers) wait until the trio thread waits for I/O.

    A local cluster forks its workers from this process, in dask's event-loop
    thread, while the run's trio loop goes on reading and naming URLs (and,
    should a worker die, the nanny forks its successor mid-run).  A child
    inherits whatever locks the trio thread holds at that instant, among
    them a module's import lock if it was importing: the child would hang on
    it.  Between its steps, waiting for I/O, the trio thread holds none; a
    fork waits for such a moment (at most one step of a task) and the trio
    thread does not start the next step until the fork is done.
    """

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.state = threading.Condition()
        self.stepping = True  # made in the trio thread, in a step of a task
        self.forking = 0

    def before_io_wait(self, timeout: float) -> None:
        with self.state:
            self.stepping = False
            self.state.notify_all()

    def after_io_wait(self, timeout: float) -> None:
        with self.state:
            while self.forking:
                self.state.wait()
            self.stepping = True

    def before_fork(self) -> None:
        if threading.get_ident() == self.thread:
            return
        with self.state:
            self.forking += 1
            while self.stepping:
                self.state.wait()

    def after_fork(self) -> None:
        if threading.get_ident() == self.thread:
            return
        with self.state:
            self.forking -= 1
            self.state.notify_all()


#: The gates of the runs going on in this process (each registered by its run's trio loop).
_GATES: weakref.WeakSet[_ForkGate] = weakref.WeakSet()


def _before_fork() -> None:
    for gate in list(_GATES):
        gate.before_fork()


def _after_fork_in_parent() -> None:
    for gate in list(_GATES):
        gate.after_fork()


# A child (a worker) starts with no run of its own: it keeps none of this process's gates.
os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_GATES.clear)


#: The Clients of the local clusters `connect` started, and their worker counts.
_LOCAL: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def exit_now(code: int) -> None:
    """End the CLI's process with `code` once a cluster run is over, without the interpreter's teardown.

    With dask and its dependencies loaded, the teardown (module by module,
    then every object) took 0.1 s of each run here; the cluster is closed by
    then and the manifest written.  Returns (the ordinary exit follows) if
    the output cannot be flushed, so that the usual report of that happens.
    """
    try:
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        return
    os._exit(code)


def worker_settings(settings: Settings) -> Settings:
    """The settings a worker gets: everything but the terminal prompt (a worker has no terminal)."""
    shipped = dataclasses.replace(settings, prompt=None)
    try:
        pickle.dumps(shipped)
    except Exception as error:
        raise UsageError(
            f"--cluster: these settings cannot be sent to workers ({error})",
            hint="Settings.extra must hold plain values for a cluster run",
        ) from None
    return shipped


@dataclass
class _Item:
    index: int
    text: str
    url: URL
    path: Path | None


def _shipped_path(path: Path | None, output: str | None) -> str | None:
    """A target as a worker gets it: absolute (a shared directory), or relative to the fsspec `output`."""
    if path is None:
        return None
    if output is None:
        return str(path.absolute())
    if path.is_absolute() or ".." in path.parts:
        raise UsageError(f"{path}: with an fsspec output, destination must give paths relative to it")
    return path.as_posix()


def _unpack(result: Any, item: _Item) -> Any:
    """A result back from a worker (`worker._pack`), with the driver's URL."""
    if result is None:
        return None
    if isinstance(result, tuple):
        path, size, sha256, content_type, resumed_from, filename, etag = result
        # The caller's name for the file, not the absolute one the worker was given.
        return Download(
            url=item.url, path=item.path if item.path is not None else Path(path), bytes=size, sha256=sha256,
            content_type=content_type, resumed_from=resumed_from, filename=filename, etag=etag,
        )  # fmt: skip
    return dataclasses.replace(result, url=item.url)


class _Shards:
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
        self.waiting: dict[tuple[str, object], deque[_Item]] = {}
        self.leased: set[tuple[str, object]] = set()
        #: Keys with URLs waiting and no batch in flight, longest waiting first: hosts take turns.
        self.ready: dict[tuple[str, object], None] = {}
        self.sent: dict[tuple[str, object], int] = {}

    def add(self, item: _Item) -> None:
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

    def take(self, count: int) -> list[_Item]:
        """The next batch: URLs of the `count` keys that have waited longest."""
        taken: list[_Item] = []
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


def fetch_all(
    urls: Iterable[URL | str] | AsyncIterable[URL | str],
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
    state: Any = None,
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

    `state` is the driving `Client` of a recursive run (`fetch -r`), whose
    per-URL notes (`conditions` and `etags`: -N asks the server whether a
    saved copy changed; `confine`: the directory an FTP name must stay in)
    travel with the batches of their URLs, so workers honour them as a
    local run does.

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
    options = _Options(jobs, per_host, destination, resume, retries, on_chunk, host_chunk, output, archive, run_id,
                       state)  # fmt: skip
    return _run(urls, cluster, settings or Settings(), options)


@dataclass
class _Options:
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
    state: Any = None


def _notes(state: Any, items: list[_Item]) -> dict[str, tuple[float | None, str | None, str | None]] | None:
    """The driving Client's notes on these URLs (see `fetch_all`'s `state`): key -> (condition, etag, confine)."""
    if state is None or not (state.conditions or state.etags or state.confine):
        return None
    notes = {}
    for item in items:
        key = str(item.url)
        note = (state.conditions.get(key), state.etags.get(key), state.confine.get(key))
        if note != (None, None, None):
            notes[key] = note
    return notes or None


def _prepare(dask: Any) -> int:
    """How many batches the workers run at once; each worker closes its kept Clients when it closes.

    A local cluster's workers started with the plugin (`connect`) and have one thread each.
    """
    if dask in _LOCAL:
        return _LOCAL[dask]
    from .plugin import RunnerPlugin

    dask.register_plugin(RunnerPlugin())
    info = dask.scheduler_info()
    return max(1, sum(int(w.get("nthreads", 1)) for w in info.get("workers", {}).values()))


@asynccontextmanager
async def _run(
    urls: Iterable[URL | str] | AsyncIterable[URL | str], cluster: str | Any, settings: Settings, options: _Options
) -> AsyncIterator[Outcomes]:
    jobs, per_host, destination = options.jobs, options.per_host, options.destination
    resume, retries, on_chunk, output = options.resume, options.retries, options.on_chunk, options.output
    shipped_settings = worker_settings(settings)
    #: The Dask client and its closer, once the cluster is up (the URLs are read and named meanwhile).
    dask: Any = None
    close: Callable[[bool], None] | None = None
    slots = 0
    run_id = options.run_id
    journal_root: str | None = f"{output.rstrip('/')}/.fetch-cluster-{run_id}" if output is not None else None
    # anyio's stream, as batch.Outcomes reads it (EndOfStream ends the loop).
    send, receive = anyio.create_memory_object_stream[Outcome](math.inf)
    done_send, done_receive = trio.open_memory_channel[tuple[list[_Item], Any]](math.inf)
    token = trio.lowlevel.current_trio_token()
    shards = _Shards(options.host_chunk)
    inflight: dict[Any, list[_Item]] = {}
    #: Batches not yet over on their worker (their hosts leased); `inflight` also holds those whose outcomes are coming.
    running: set[Any] = set()
    waiting: dict[int, _Item] = {}
    bound: list[tuple[str, str, int | None]] = []
    fed = trio.Event()
    wake = trio.Event()
    stopped: list[Outcome] | None = None
    gate = _ForkGate()
    trio.lowlevel.add_instrument(gate)
    _GATES.add(gate)
    try:
        job_count = jobs or settings.jobs
        # A batch takes hosts enough to keep its -j transfers busy (-j / --per-host),
        # and up to -j hosts when there are more ready than idle workers: the
        # hosts ready are spread over the idle workers, so that every server
        # is busy at once, as in a local run, not one host per worker in turn.
        hosts_per_batch = max(1, math.ceil(job_count / (per_host or settings.per_host)))

        def finished(future: Any, items: list[_Item]) -> None:
            # Dask calls this in a thread of its own once the batch is over on its worker:
            # its hosts are free again at once (their next batches leave while this one's
            # outcomes travel back), then the outcomes go to the trio loop.
            try:
                token.run_sync_soon(release, future, items)
                value: Any = pickle.loads(future.result())  # (in this thread, not in the trio loop)
            except trio.RunFinishedError:
                return
            except BaseException as error:
                value = error
            try:
                token.run_sync_soon(hand_over, (items, value))
            except trio.RunFinishedError:
                pass

        def release(future: Any, items: list[_Item]) -> None:
            # In the trio loop: the batch ran to its end (or failed); nothing of its hosts runs any more.
            if future in running:
                running.discard(future)
                shards.release({host_key(i.url) for i in items})
                pump()

        def hand_over(done: tuple[list[_Item], Any]) -> None:
            # In the trio loop; the run may be over (Ctrl-C) with batches still coming back.
            try:
                done_send.send_nowait(done)
            except trio.ClosedResourceError:
                pass

        def pump() -> None:
            nonlocal journal_root
            while dask is not None and len(running) < slots:
                if not shards.ready:
                    return
                idle = slots - len(running)
                share = max(hosts_per_batch, min(job_count, math.ceil(len(shards.ready) / idle)))
                items = shards.take(share)
                if bound:
                    items.sort(key=lambda item: item.url.origin != bound[0])
                batch_settings = shipped_settings
                if bound and not settings.location_trusted and items[0].url.origin != bound[0]:
                    batch_settings = dataclasses.replace(shipped_settings, user=None, password=None)
                if journal_root is None and any(item.path is not None for item in items):
                    first = next(item.path for item in items if item.path is not None)
                    assert first is not None
                    journal = first.absolute().parent / f".fetch-cluster-{run_id}"
                    journal.mkdir(parents=True, exist_ok=True)
                    journal_root = str(journal)
                task = BatchTask(
                    batch_id=_batch_id(run_id, items), items=[(item.text, _shipped_path(item.path, output))
                                                                  for item in items],
                    settings=batch_settings, jobs=job_count, per_host=per_host or settings.per_host,
                    resume=resume, retries=retries, journal=journal_root, output=output, warc=options.archive,
                    run_id=run_id, notes=_notes(options.state, items),
                )  # fmt: skip
                future = dask.submit(run_batch_packed, task, pure=False, key=f"fetch-batch-{task.batch_id}")
                inflight[future] = items
                running.add(future)
                future.add_done_callback(lambda f, items=items: finished(f, items))
                wake.set()

        def idle() -> None:
            # Every URL at hand is in: with no batch running, none of them waits for trickle().
            if not running:
                pump()

        async def feed() -> None:
            index = 0
            given = _at_hand(urls, idle) if aio.is_receive_channel(urls) else _as_async(urls)
            async for value in given:
                text = str(value)
                index += 1
                try:
                    url = value if isinstance(value, URL) else parse_url(value)
                    if not bound:
                        bound.append(url.origin)
                    path = destination(url) if destination is not None else None
                except FetchError as error:
                    await send.send(Outcome(url=text, error=error, attempts=1))  # as Client.fetch_all counts it
                    continue
                item = _Item(index, text, url, path)
                waiting[index] = item
                shards.add(item)
                if index % FEED_BATCH == 0:
                    pump()
                if index % YIELD_EVERY == 0:
                    # A window of -i comes at once: named in one go, it would keep the batches
                    # that come back from freeing their hosts, and a fork of a worker waiting
                    # (_ForkGate), until its end.
                    await trio.lowlevel.checkpoint()
            fed.set()
            pump()
            wake.set()

        async def trickle() -> None:
            # URLs that arrive slowly (found by -r) go out without waiting for FEED_BATCH more.
            while not fed.is_set():
                await trio.sleep(TRICKLE)
                pump()

        def deliver(items: list[_Item], value: Any) -> None:
            by_text: dict[str, deque[_Item]] = {}
            for item in items:
                by_text.setdefault(item.text, deque()).append(item)
            if isinstance(value, BaseException):
                lost = FetchError(
                    f"cluster: the batch was lost ({type(value).__name__}: {value})",
                    hint="see the dask worker logs; rerun with --skip-done MANIFEST to retry what failed",
                )
                value = [Shipped(i.text, None, _pack_error(lost), 0, 0.0, "", time.time()) for i in items]
            for one in value:
                queue = by_text.get(one.url)
                if not queue:
                    continue
                item = queue.popleft()
                if waiting.pop(item.index, None) is None:
                    continue  # a second outcome for this URL: the first one counts
                result = _unpack(one.result, item)
                if isinstance(result, Download) and on_chunk is not None:
                    on_chunk(item.url, result.bytes - result.resumed_from)
                outcome = ClusterOutcome(
                    url=item.text, result=result, error=_unpack_error(one.error) if one.error else None,
                    attempts=one.attempts, seconds=one.seconds, worker=one.worker,
                    started=one.ended - one.seconds, ended=one.ended,
                )  # fmt: skip
                send.send_nowait(outcome)

        async def collect() -> None:
            nonlocal wake
            async with send:
                while True:
                    if fed.is_set() and not inflight and not shards:
                        return
                    if not inflight:
                        await wake.wait()
                        wake = trio.Event()
                        continue
                    items, value = await done_receive.receive()
                    for future in [f for f, its in inflight.items() if its is items]:
                        del inflight[future]
                        release(future, items)  # (done already, unless the outcomes came first)
                    deliver(items, value)
                    pump()

        def start(nursery: aio.Nursery) -> None:
            nursery.start_soon(feed)
            nursery.start_soon(trickle)
            nursery.start_soon(collect)

        async with outcomes_while(receive, start) as outcomes:
            stopped = outcomes.saved_when_stopped
            # The cluster starts while feed() reads and names the URLs into shards; the
            # batches leave once it is up.  A failure to start ends the run from here,
            # as itself (outcomes_while re-raises it).
            dask, close = await trio.to_thread.run_sync(connect, cluster)
            slots = await trio.to_thread.run_sync(_prepare, dask)
            pump()
            wake.set()
            yield outcomes
    finally:
        done_send.close()
        with trio.CancelScope(shield=True):
            busy = bool(inflight)
            if busy:
                await trio.to_thread.run_sync(dask.cancel, list(inflight))
            if close is not None:
                await trio.to_thread.run_sync(close, busy)
            if busy and journal_root is not None and stopped is not None:
                # The workers are stopped: what their journals list is complete and stays, as in a local run.
                batches = [items for items in inflight.values() if items]
                stopped += await trio.to_thread.run_sync(_journaled, journal_root, run_id, batches, waiting,
                                                         output is None)  # fmt: skip
            _GATES.discard(gate)
            trio.lowlevel.remove_instrument(gate)
            if journal_root is not None:
                await trio.to_thread.run_sync(remove_tree, journal_root)
            if options.archive is not None:
                if options.archive.cdx:  # what was archived is indexed, an interrupted run's too
                    await trio.to_thread.run_sync(write_index, options.archive)
                await trio.to_thread.run_sync(remove_tree, options.archive.staging)


def _batch_id(run_id: str, items: list[_Item]) -> str:
    """A batch's name (its journal's, its WARC files'): the run, and the input number of its first URL."""
    return f"{run_id}-{items[0].index}"


def _journaled(journal_root: str, run_id: str, batches: list[list[_Item]], waiting: dict[int, _Item],
               local: bool) -> list[Outcome]:  # fmt: skip
    """The files batches cut short (Ctrl-C) had completed, as their journals list them: saved outcomes."""
    from .output import Journal, journaled_download

    saved: list[Outcome] = []
    for items in batches:
        done = Journal(journal_root, _batch_id(run_id, items)).load()
        for item in items:
            entry = done.get(item.text)
            if entry is None or waiting.pop(item.index, None) is None:
                continue
            if local and not Path(entry["path"]).is_file():
                continue  # removed meanwhile: recorded as interrupted
            result = journaled_download(entry, item.url, item.path)
            saved.append(ClusterOutcome(url=item.text, result=result, attempts=entry["attempts"],
                                        seconds=entry["seconds"]))  # fmt: skip
    return saved


def executor(args: Any, settings: Settings, client: Any = None) -> Callable[..., Any]:
    """What `fetch --cluster` puts in place of `Client.fetch_all` (same arguments, same outcomes).

    `client` is the run's own Client: its per-URL notes (-N, FTP confinement) go to the workers.
    """
    parse_target(args.cluster)
    output = args.directory if is_url(args.directory) else None
    if output is not None:
        filesystem(output)
        for given, what in ((args.recursive, "-r"), (getattr(args, "no_clobber", False), "--no-clobber"),
                            (args.resume, "-C/--continue")):  # fmt: skip
            if given:
                raise UsageError(
                    f"{what} with an fsspec output URL (-d {mask_secrets(output)}) is not implemented",
                    hint="give a directory every worker reaches under the same path (local, NFS, a mounted bucket)",
                )
    if args.warc_file is not None:
        if args.warc_dedup:
            raise UsageError(
                "--warc-dedup with --cluster is not implemented (a revisit record needs every payload "
                "digest archived so far, and each batch archives on its own worker)",
                hint="archive without --warc-dedup, or run without --cluster",
            )
        try:
            import warcio  # noqa: F401  (the workers need it too: the same environment everywhere)
        except ImportError:
            raise UsageError("--warc-file needs warcio", hint="pip install 'fetcher-rfc1738[warc]'") from None
    # dask imports numpy, whose OpenBLAS starts a thread per core that spins for work this
    # process never gives it (about 0.1 s of CPU per run, seen in `perf`): one BLAS thread.
    # The CLI's process only: a program using the library keeps its own choice.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    _import_dask(lean=True)

    def run(urls: Any, destination: Callable[[URL], Path] | None = None, **options: Any) -> Any:
        if output is not None and destination is not None:
            root = Path(args.directory)
            named = destination

            def destination(url: URL) -> Path:
                return named(url).relative_to(root)

        return fetch_all(
            urls, args.cluster, settings, destination=destination, output=output, warc_file=args.warc_file,
            warc_max_size=args.warc_max_size, warc_cdx=args.warc_cdx, command_line=list(args.argv or []),
            state=client, **options,
        )  # fmt: skip

    return run
