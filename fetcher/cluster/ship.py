"""What a batch carries to its worker: the URLs and their targets, the settings, the request notes on them.

The driver decides when a batch leaves (`driver`); this module decides what
is in it, so that a worker runs it as a local run would: the same
`Settings` (less the terminal prompt), the login kept to the origin it was
given for, targets every worker reaches, a journal beside the output, and
the request notes that came with the URLs (a recursive run's -N conditions
and FTP confinements).
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

from fetcher.cluster.archive import WarcTask
from fetcher.cluster.shards import Item
from fetcher.cluster.worker import BatchTask
from fetcher.errors import UsageError
from fetcher.handler.notes import RequestNotes
from fetcher.settings import Settings


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


def batch_id(run_id: str, items: list[Item]) -> str:
    """A batch's name (its journal's, its WARC files'): the run, and the input number of its first URL."""
    return f"{run_id}-{items[0].index}"


def shipped_path(path: Path | None, output: str | None) -> str | None:
    """A target as a worker gets it: absolute (a shared directory), or relative to the fsspec `output`."""
    if path is None:
        return None
    if output is None:
        return str(path.absolute())
    if path.is_absolute() or ".." in path.parts:
        raise UsageError(f"{path}: with an fsspec output, destination must give paths relative to it")
    return path.as_posix()


def notes(items: list[Item]) -> dict[str, RequestNotes] | None:
    """The request notes that came with these URLs, by the URL's text as the batch carries it."""
    found = {item.text: item.notes for item in items if item.notes is not None}
    return found or None


class Packer:
    """Packs a run's batches: one `BatchTask` per batch of `Item`s, with what every batch of the run shares.

    The first URL of the run binds the login (`origin`): a batch whose
    first URL is of another origin gets the settings without user and
    password, unless the user trusts every location.  `journal_root` is
    where the batches' journals go: beside the fsspec output, or beside the
    first target (made when the first batch with a target leaves).
    """

    def __init__(self, settings: Settings, *, jobs: int, per_host: int, resume: bool, retries: int | None,
                 output: str | None, archive: WarcTask | None, run_id: str) -> None:  # fmt: skip
        self.given = settings
        self.settings = worker_settings(settings)
        self.jobs = jobs
        self.per_host = per_host
        self.resume = resume
        self.retries = retries
        self.output = output
        self.archive = archive
        self.run_id = run_id
        self.origin: tuple[str, str, int | None] | None = None
        self.journal_root: str | None = f"{output.rstrip('/')}/.fetch-cluster-{run_id}" if output is not None else None

    def bind(self, origin: tuple[str, str, int | None]) -> None:
        """The origin of the run's first URL, which the login is for (later ones change nothing)."""
        if self.origin is None:
            self.origin = origin

    def task(self, items: list[Item]) -> BatchTask:
        """The task of one batch; `items` are sorted in place, the bound origin's URLs first."""
        origin = self.origin
        if origin is not None:
            items.sort(key=lambda item: item.url.origin != origin)
        batch_settings = self.settings
        if origin is not None and not self.given.location_trusted and items[0].url.origin != origin:
            batch_settings = dataclasses.replace(self.settings, user=None, password=None)
        if self.journal_root is None and any(item.path is not None for item in items):
            first = next(item.path for item in items if item.path is not None)
            assert first is not None
            journal = first.absolute().parent / f".fetch-cluster-{self.run_id}"
            journal.mkdir(parents=True, exist_ok=True)
            self.journal_root = str(journal)
        return BatchTask(
            batch_id=batch_id(self.run_id, items), items=[(item.text, shipped_path(item.path, self.output))
                                                           for item in items],
            settings=batch_settings, jobs=self.jobs, per_host=self.per_host, resume=self.resume,
            retries=self.retries, journal=self.journal_root, output=self.output, warc=self.archive,
            run_id=self.run_id, notes=notes(items),
        )  # fmt: skip
