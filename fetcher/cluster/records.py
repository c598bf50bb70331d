"""Outcomes brought back from the workers: one per URL, with the driver's own URL and target.

A batch's outcomes arrive as `worker.Shipped` tuples; a batch Dask gave up
on arrives as the exception, and each of its URLs gets a `FetchError`.  A
second outcome for a URL (a batch run again after its worker died) is
dropped: the first one counts.  An interrupted run saves what the journals
of its cut-short batches list.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fetcher.client import Outcome
from fetcher.cluster.output import Journal, journaled_download
from fetcher.cluster.shards import Item
from fetcher.cluster.ship import batch_id
from fetcher.cluster.worker import Shipped, _pack_error, _unpack_error
from fetcher.disk.writer import Download
from fetcher.errors import FetchError
from fetcher.url import URL


@dataclass
class ClusterOutcome(Outcome):
    """An `Outcome` that also says where and when it ran (wall-clock seconds)."""

    worker: str = ""
    started: float = 0.0
    ended: float = 0.0


def unpack(result: Any, item: Item) -> Any:
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


def lost_batch(items: list[Item], error: BaseException) -> list[Shipped]:
    """What a batch Dask gave up on brings back: the same failure for each of its URLs."""
    lost = FetchError(
        f"cluster: the batch was lost ({type(error).__name__}: {error})",
        hint="see the dask worker logs; rerun with --skip-done MANIFEST to retry what failed",
    )
    return [Shipped(i.text, None, _pack_error(lost), 0, 0.0, "", time.time()) for i in items]


def arrived(items: list[Item], value: Any, waiting: dict[int, Item],
            on_chunk: Callable[[URL, int], None] | None) -> Iterator[ClusterOutcome]:  # fmt: skip
    """The outcomes of a batch back (`value`: its `Shipped` list, or what it failed with), for URLs still `waiting`.

    Each URL yielded leaves `waiting`; `on_chunk` hears of each saved file before its outcome is yielded.
    """
    by_text: dict[str, deque[Item]] = {}
    for item in items:
        by_text.setdefault(item.text, deque()).append(item)
    if isinstance(value, BaseException):
        value = lost_batch(items, value)
    for one in value:
        queue = by_text.get(one.url)
        if not queue:
            continue
        item = queue.popleft()
        if waiting.pop(item.index, None) is None:
            continue  # a second outcome for this URL: the first one counts
        result = unpack(one.result, item)
        if isinstance(result, Download) and on_chunk is not None:
            on_chunk(item.url, result.bytes - result.resumed_from)
        yield ClusterOutcome(
            url=item.text, result=result, error=_unpack_error(one.error) if one.error else None,
            attempts=one.attempts, seconds=one.seconds, worker=one.worker,
            started=one.ended - one.seconds, ended=one.ended,
        )  # fmt: skip


def journaled(journal_root: str, run_id: str, batches: list[list[Item]], waiting: dict[int, Item],
              local: bool) -> list[Outcome]:  # fmt: skip
    """The files batches cut short (Ctrl-C) had completed, as their journals list them: saved outcomes."""
    saved: list[Outcome] = []
    for items in batches:
        done = Journal(journal_root, batch_id(run_id, items)).load()
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
