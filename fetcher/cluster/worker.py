"""The worker side of `fetcher.cluster`: one batch, run in the worker process's own trio loop.

Each worker process keeps one trio loop (a thread of its own: `Runner`)
and one `Client` per run and settings, reused by every batch of the run
that lands there: connections and FTP logins outlive a batch, as they do
between the URLs of a local run.  A Client is closed once idle for its
`idle_timeout`, and all of them when the worker closes.

Each batch keeps a journal (`fetcher.cluster.output.Journal`: the files it
completed) in a directory the driver names beside the output; when Dask
runs a batch again because its worker died, the files in the journal are
returned as they are instead of being fetched a second time.  With an
fsspec output, files are staged locally and streamed up when complete
(`fetcher.cluster.output`); with --warc-file, each run of a batch writes
its own WARC files (`fetcher.cluster.archive`).
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import tempfile
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from fetcher.client import Client, Outcome
from fetcher.cluster.output import Journal, filesystem, journaled_download, parallel_uploads, upload
from fetcher.disk.writer import Download
from fetcher.errors import FetchError, OutputError
from fetcher.handler.notes import Request, RequestNotes
from fetcher.net import aio
from fetcher.net.threads import Token
from fetcher.settings import Settings
from fetcher.url import URL, parse_url


@dataclass
class BatchTask:
    """One shard sent to a worker: URLs (bound origin first), their target paths, how to fetch.

    A target path is absolute (a directory every worker reaches), or, with
    `output` (an fsspec URL), relative to it.
    """

    batch_id: str
    items: list[tuple[str, str | None]]
    settings: Settings
    jobs: int
    per_host: int
    resume: bool
    retries: int | None
    journal: str | None
    output: str | None = None
    warc: Any = None  # fetcher.cluster.archive.WarcTask when the run archives
    #: The run's id: a worker's batches of one run (with equal settings) share one Client.
    run_id: str = ""
    #: The request notes some of these URLs came with (their text -> If-Modified-Since time, ETag, FTP confinement).
    notes: dict[str, RequestNotes] | None = None


class Shipped(NamedTuple):
    """One outcome on its way back from a worker (errors travel as their parts: see `_pack_error`).

    A tuple, as are saved files (`_pack`): a batch's outcomes pickle and
    unpickle at a small part of the cost of dataclasses.
    """

    url: str
    result: Any
    error: tuple[type[FetchError], tuple[Any, ...], dict[str, Any]] | None
    attempts: int
    seconds: float
    worker: str
    ended: float


def _pack_error(error: FetchError) -> tuple[type[FetchError], tuple[Any, ...], dict[str, Any]]:
    # FetchError subclasses take keyword-only arguments, which plain
    # exception pickling cannot call them with; ship class, args and fields.
    return type(error), error.args, dict(vars(error))


def _unpack_error(packed: tuple[type[FetchError], tuple[Any, ...], dict[str, Any]]) -> FetchError:
    kind, args, fields = packed
    error = kind.__new__(kind)
    error.args = args
    vars(error).update(fields)
    return error


#: A saved file as it travels: path, bytes, sha256, content_type, resumed_from, filename, etag.
PackedDownload = tuple[str, int, str | None, str | None, int, str | None, str | None]


def _pack(result: Any) -> Any:
    """A result as it travels: a saved file as a `PackedDownload`, anything else without its URL.

    URL objects refuse the attribute setting unpickling does: results travel
    without theirs, and the driver puts its own URL back (`fetcher.cluster.records.unpack`).
    """
    if result is None:
        return None
    if type(result) is Download:
        return (str(result.path), result.bytes, result.sha256, result.content_type, result.resumed_from,
                result.filename, result.etag)  # fmt: skip
    return dataclasses.replace(result, url=None)


def run_batch(task: BatchTask) -> list[Shipped]:
    """Run one batch (what a Dask worker executes): in this process's `Runner`, on the run's kept Client.

    A batch that archives runs in a fresh trio loop with a fresh Client:
    its WARC files hold every connection it used, logins included.
    """
    if task.warc is None:
        return runner().run(task)
    from fetcher.cluster.archive import BatchArchive

    with BatchArchive(task.warc, task.batch_id) as archive:
        return aio.run(_run_batch, task, archive, None)


def run_batch_packed(task: BatchTask) -> bytes:
    """`run_batch` as the driver submits it: the batch's outcomes pickled in one piece.

    dask serializes a returned list item by item, each with a header of its
    own: measured on 1,600 outcomes, 9 us each on the worker and 2.5-3 us in
    the driver, against 1 and 0.6 us for the one piece (`fetcher.cluster`
    unpickles it).
    """
    return pickle.dumps(run_batch(task), protocol=pickle.HIGHEST_PROTOCOL)


@dataclass
class _Kept:
    run_id: str
    settings: Settings
    client: Client
    users: int = 0
    used: float = 0.0


class Runner:
    """This process's trio loop, in a daemon thread, and the Clients its batches share.

    Dask calls `run` in its own worker thread, which waits there while the
    batch runs in the loop (`Token.run`).  Batches of one run with
    equal settings share a Client; a Client unused for its `idle_timeout`
    is closed, and `close` (the worker's teardown) closes them all and
    ends the loop.
    """

    #: How often idle Clients are looked for (seconds).
    SWEEP = 1.0

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.kept: list[_Kept] = []
        self._token: Token | None = None
        self._stop: aio.Event | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._lock = threading.Lock()

    def _start(self) -> Token:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=aio.run, args=(self._main,), name="fetcher-runner",
                                                daemon=True)  # fmt: skip
                self._thread.start()
        self._started.wait()
        assert self._token is not None
        return self._token

    async def _main(self) -> None:
        self._token = Token()
        self._stop = aio.event()
        self._started.set()
        async with aio.open_nursery() as nursery:
            nursery.start_soon(self._sweep)
            await self._stop.wait()
            nursery.cancel_scope.cancel()
        for kept in self.kept:
            await kept.client.aclose()
        self.kept.clear()

    async def _sweep(self) -> None:
        while True:
            await aio.sleep(self.SWEEP)
            now = aio.current_time()
            for kept in list(self.kept):
                if not kept.users and now - kept.used > kept.settings.idle_timeout:
                    self.kept.remove(kept)
                    await kept.client.aclose()

    def run(self, task: BatchTask) -> list[Shipped]:
        """Run `task` in the loop; blocks the calling (Dask) thread until the batch is done."""
        return self._start().run(self._batch, task)

    async def _batch(self, task: BatchTask) -> list[Shipped]:
        kept = next((k for k in self.kept if k.run_id == task.run_id and k.settings == task.settings), None)
        if kept is None:
            kept = _Kept(task.run_id, task.settings, Client(task.settings))
            self.kept.append(kept)
        kept.users += 1
        try:
            return await _run_batch(task, None, kept.client)
        finally:
            kept.users -= 1
            kept.used = aio.current_time()

    def close(self) -> None:
        """Close every Client and end the loop (a worker's teardown; blocking)."""
        if self._thread is None or self._token is None or self._stop is None:
            return
        if not self._token.call_soon(self._stop.set):
            return
        self._thread.join(10)


_runner: Runner | None = None
_runner_lock = threading.Lock()


def runner() -> Runner:
    """This process's Runner (a process forked from one that had a Runner starts its own)."""
    global _runner
    with _runner_lock:
        if _runner is None or _runner.pid != os.getpid():
            _runner = Runner()
        return _runner


def close_runner() -> None:
    """Close this process's Runner, if it has one (its Clients log out: FTP QUIT); a next batch starts a new one."""
    global _runner
    with _runner_lock:
        closing, _runner = _runner, None
    if closing is not None and closing.pid == os.getpid():
        closing.close()


async def _run_batch(task: BatchTask, archive: Any, client: Client | None) -> list[Shipped]:
    worker = _worker_name()
    shipped: list[Shipped] = []
    journal = Journal(task.journal, task.batch_id) if task.journal else None
    done = journal.load() if journal is not None else {}
    fs, root = filesystem(task.output) if task.output else (None, "")
    staging = Path(tempfile.mkdtemp(prefix="fetch-stage-")) if fs is not None else None
    paths: dict[str, Path] = {}
    remote: dict[str, str] = {}
    todo: list[str] = []
    for text, path in task.items:
        entry = done.get(text)
        if entry is not None and (fs is not None or Path(entry["path"]).is_file()):
            # Completed by an earlier run of this batch, on a worker that died.
            saved = journaled_download(entry, parse_url(text))
            shipped.append(Shipped(text, _pack(saved), None, entry["attempts"], entry["seconds"], worker, time.time()))
            continue
        todo.append(text)
        if path is None:
            continue
        key = str(parse_url(text))
        if staging is not None:
            paths[key] = staging / path
            remote[text] = f"{root}/{path}"
        else:
            paths[key] = Path(path)
    if archive is not None:
        # What an earlier run of this batch archived, less the URLs fetched again now.
        await aio.run_sync(archive.salvage, todo)
    if not todo:
        return shipped

    def destination(url: URL) -> Path:
        path = paths[str(url)]
        if staging is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def journal_entry(outcome: Outcome, result: Download) -> dict[str, Any]:
        return {
            "url": outcome.url, "path": str(result.path), "bytes": result.bytes, "sha256": result.sha256,
            "content_type": result.content_type, "resumed_from": result.resumed_from,
            "filename": result.filename, "etag": result.etag,
            "attempts": outcome.attempts, "seconds": outcome.seconds,
        }  # fmt: skip

    def keep(outcome: Outcome, result: Any, error: FetchError | None, *, journaled: bool = False) -> None:
        if journal is not None and isinstance(result, Download) and error is None and not journaled:
            journal.add(journal_entry(outcome, result))
        packed = _pack_error(error) if error is not None else None
        shipped.append(Shipped(outcome.url, _pack(result), packed, outcome.attempts, outcome.seconds, worker,
                               time.time()))  # fmt: skip

    def put(outcome: Outcome, staged: Download, target: str) -> Download:
        # In a worker thread: the upload, then its journal entry (both on the output's storage).
        upload(fs, staged.path, target)
        done = dataclasses.replace(staged, path=Path(target))
        if journal is not None:
            journal.add(journal_entry(outcome, done))
        return done

    async def deliver(outcome: Outcome, limiter: aio.Limiter) -> None:
        # An fsspec output: the staged file goes up, then its staged copy goes.
        staged = outcome.result
        assert isinstance(staged, Download)
        target = remote[outcome.url]
        result: Download | None = None
        error: FetchError | None = None
        try:
            result = await aio.run_sync(put, outcome, staged, target, limiter=limiter)
        except Exception as failure:  # any file system's error: the URL fails, the batch goes on
            error = OutputError(f"cannot write {target}: {failure}", hint="check the output URL and its credentials")
        finally:
            staged.path.unlink(missing_ok=True)
        keep(outcome, result, error, journaled=True)

    try:
        with archive.recording() if archive is not None else nullcontext():
            at_once = parallel_uploads(fs, task.jobs) if fs is not None else 0
            await _fetch(task, client, todo, destination if paths else None, at_once, deliver, keep)
    finally:
        if journal is not None:
            journal.close()
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return shipped


async def _fetch(task: BatchTask, kept: Client | None, todo: list[str], destination: Any, uploads_at_once: int,
                 deliver: Any, keep: Any) -> None:  # fmt: skip
    """The batch through `Client.fetch_all` (on `kept`, else a Client of its own); uploads run beside.

    A URL that came with request notes goes in with them, as the driver's run would have put it.
    """
    staged = uploads_at_once > 0
    notes = task.notes or {}
    requests: list[Request] = [(text, notes[text]) if text in notes else text for text in todo]
    async with Client(task.settings) if kept is None else nullcontext(kept) as client, aio.open_nursery() as uploads:
        limiter = aio.capacity_limiter(max(1, uploads_at_once))
        async with client.fetch_all(
            requests, jobs=task.jobs, per_host=task.per_host, destination=destination, resume=task.resume,
            retries=task.retries,
        ) as outcomes:  # fmt: skip
            async for outcome in outcomes:
                if staged and isinstance(outcome.result, Download):
                    uploads.start_soon(deliver, outcome, limiter)
                else:
                    keep(outcome, outcome.result, outcome.error)


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"
