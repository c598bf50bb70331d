"""The worker side of `fetcher.cluster`: one batch, run in a fresh trio loop on a Dask worker.

Each batch keeps a journal (one JSON line per file it completed) in a
directory the driver names beside the output; when Dask runs a batch again
because its worker died, the files in the journal are returned as they are
instead of being fetched a second time.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from ..client import Client
from ..errors import FetchError
from ..settings import Settings
from ..sink import Download
from ..url import parse_url


@dataclass
class BatchTask:
    """One shard sent to a worker: URLs (bound origin first), their target paths, how to fetch."""

    batch_id: str
    items: list[tuple[str, str | None]]
    settings: Settings
    jobs: int
    per_host: int
    resume: bool
    retries: int | None
    journal: str | None


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


def _journal_load(path: Path) -> dict[str, dict[str, Any]]:
    done: dict[str, dict[str, Any]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return done
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the last line of a worker killed while writing it
        if Path(entry["path"]).is_file():
            done[entry["url"]] = entry
    return done


def run_batch(task: BatchTask) -> list[Shipped]:
    """Run one batch in a fresh trio loop (what a Dask worker executes)."""
    return trio.run(_run_batch, task)


async def _run_batch(task: BatchTask) -> list[Shipped]:
    worker = _worker_name()
    shipped: list[Shipped] = []
    journal = Path(task.journal) / f"{task.batch_id}.jsonl" if task.journal else None
    done = _journal_load(journal) if journal is not None else {}
    paths: dict[str, Path] = {}
    todo: list[str] = []
    for text, path in task.items:
        entry = done.get(text)
        if entry is not None:  # completed by an earlier run of this batch on a worker that died
            saved = Download(
                url=parse_url(text), path=Path(entry["path"]), bytes=entry["bytes"], sha256=entry["sha256"],
                content_type=entry["content_type"], resumed_from=entry["resumed_from"],
            )  # fmt: skip
            shipped.append(Shipped(text, _pack(saved), None, entry["attempts"], entry["seconds"], worker, time.time()))
            continue
        todo.append(text)
        if path is not None:
            paths[str(parse_url(text))] = Path(path)
    if not todo:
        return shipped
    destination = (lambda url: paths[str(url)]) if paths else None
    log = open(journal, "a", encoding="utf-8") if journal is not None else None  # noqa: SIM115
    try:
        async with Client(task.settings) as client:
            async with client.fetch_all(
                todo,
                jobs=task.jobs,
                per_host=task.per_host,
                destination=destination,
                resume=task.resume,
                retries=task.retries,
            ) as outcomes:
                async for outcome in outcomes:
                    result = outcome.result
                    if log is not None and isinstance(result, Download):
                        entry = {
                            "url": outcome.url, "path": str(result.path), "bytes": result.bytes,
                            "sha256": result.sha256, "content_type": result.content_type,
                            "resumed_from": result.resumed_from, "attempts": outcome.attempts,
                            "seconds": outcome.seconds,
                        }  # fmt: skip
                        log.write(json.dumps(entry) + "\n")
                        log.flush()
                    error = _pack_error(outcome.error) if outcome.error is not None else None
                    shipped.append(
                        Shipped(
                            outcome.url, _pack(result), error, outcome.attempts, outcome.seconds, worker, time.time()
                        )
                    )
    finally:
        if log is not None:
            log.close()
    return shipped


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"
