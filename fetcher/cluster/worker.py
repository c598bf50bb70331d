"""The worker side of `fetcher.cluster`: one batch, run in a fresh trio loop on a Dask worker.

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
import shutil
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from ..client import Client, Outcome
from ..errors import FetchError, OutputError
from ..settings import Settings
from ..sink import Download
from ..url import URL, parse_url
from .output import Journal, filesystem, parallel_uploads, upload


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


@dataclass
class Shipped:
    """One outcome on its way back from a worker (errors travel as their parts: see `_pack_error`)."""

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


def _pack(result: Any) -> Any:
    # URL objects refuse the attribute setting unpickling does: results travel
    # without theirs, and the driver puts its own URL back (`_unpack`).
    return dataclasses.replace(result, url=None) if result is not None else None


def run_batch(task: BatchTask) -> list[Shipped]:
    """Run one batch in a fresh trio loop (what a Dask worker executes)."""
    if task.warc is None:
        return trio.run(_run_batch, task, None)
    from .archive import BatchArchive

    with BatchArchive(task.warc, task.batch_id) as archive:
        return trio.run(_run_batch, task, archive)


async def _run_batch(task: BatchTask, archive: Any) -> list[Shipped]:
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
            saved = Download(
                url=parse_url(text), path=Path(entry["path"]), bytes=entry["bytes"], sha256=entry["sha256"],
                content_type=entry["content_type"], resumed_from=entry["resumed_from"],
            )  # fmt: skip
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
        await trio.to_thread.run_sync(archive.salvage, todo)
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

    async def deliver(outcome: Outcome, limiter: trio.CapacityLimiter) -> None:
        # An fsspec output: the staged file goes up, then its staged copy goes.
        staged = outcome.result
        assert isinstance(staged, Download)
        target = remote[outcome.url]
        result: Download | None = None
        error: FetchError | None = None
        try:
            result = await trio.to_thread.run_sync(put, outcome, staged, target, limiter=limiter)
        except Exception as failure:  # any file system's error: the URL fails, the batch goes on
            error = OutputError(f"cannot write {target}: {failure}", hint="check the output URL and its credentials")
        finally:
            staged.path.unlink(missing_ok=True)
        keep(outcome, result, error, journaled=True)

    try:
        with archive.recording() if archive is not None else nullcontext():
            at_once = parallel_uploads(fs, task.jobs) if fs is not None else 0
            await _fetch(task, todo, destination if paths else None, at_once, deliver, keep)
    finally:
        if journal is not None:
            journal.close()
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return shipped


async def _fetch(task: BatchTask, todo: list[str], destination: Any, uploads_at_once: int, deliver: Any,
                 keep: Any) -> None:  # fmt: skip
    """The batch through `Client.fetch_all`; with an fsspec output (`uploads_at_once` > 0), uploads run beside."""
    staged = uploads_at_once > 0
    async with Client(task.settings) as client, trio.open_nursery() as uploads:
        limiter = trio.CapacityLimiter(max(1, uploads_at_once))
        async with client.fetch_all(
            todo, jobs=task.jobs, per_host=task.per_host, destination=destination, resume=task.resume,
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
