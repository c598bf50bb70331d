"""Progress for bulk runs: rich bars on a terminal, nothing otherwise.

Every label and log line shown here passes `fetcher.text.safe_text`:
server text escaped, passwords in URLs masked.

rich is imported only when bars are shown, so scripted runs (stdout or
stderr not a terminal) pay nothing for it.
"""

from __future__ import annotations

import sys
from typing import Any


class NoProgress:
    """Silent progress: failures still go to stderr, one line each."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def url_added(self) -> None:
        pass

    def url_done(self, record: dict[str, Any]) -> None:
        pass

    def advance(self, count: int) -> None:
        pass

    def log(self, text: str) -> None:
        from .text import safe_text

        sys.stderr.write(safe_text(text) + "\n")


class RichProgress:
    """Overall URL and byte bars (the per-transfer rate shows in the byte bar)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TransferSpeedColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=False,
        )
        self._urls = self._progress.add_task("URLs", total=0)
        self._bytes = self._progress.add_task("bytes", total=None)

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._progress.stop()

    def url_added(self) -> None:
        task = self._progress.tasks[self._urls]
        self._progress.update(self._urls, total=(task.total or 0) + 1)

    def url_done(self, record: dict[str, Any]) -> None:
        self._progress.advance(self._urls)

    def advance(self, count: int) -> None:
        self._progress.advance(self._bytes, count)

    def log(self, text: str) -> None:
        from .text import safe_text

        self._progress.console.print(safe_text(text), markup=False, highlight=False)


def make_progress(wanted: bool | None) -> NoProgress | RichProgress:
    """Bars when asked, or by default when both stdout and stderr are terminals."""
    if wanted is None:
        wanted = sys.stderr.isatty() and sys.stdout.isatty()
    return RichProgress() if wanted else NoProgress()
