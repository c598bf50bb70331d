"""The progress bar of one download (`fetch -o FILE URL` on a terminal); rich is imported only here.

`fetcher.cli.single` imports this module only when a bar will be drawn, so a
scripted run never loads rich.
"""

from __future__ import annotations

import sys
from typing import Any


class TransferBar:
    """One download on stderr: name, bar, %, bytes of total, rate, time left.

    Without a known size: a spinner, bytes so far, rate and time elapsed.
    The last state stays on screen as one final line when the bar stops.
    """

    def __init__(self, label: str, total: int | None, done: int = 0) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            ProgressColumn,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from fetcher.text import safe_text

        name = safe_text(label)
        name = name if len(name) <= 30 else name[:29] + "…"
        columns: list[ProgressColumn | str]
        if total is not None:
            columns = [TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                       DownloadColumn(binary_units=True), _speed_column(), TimeRemainingColumn()]  # fmt: skip
        else:
            columns = [SpinnerColumn(finished_text="✓"), TextColumn("{task.description}"), _bytes_column(),
                       _speed_column(), TimeElapsedColumn()]  # fmt: skip
        self._progress = Progress(*columns, console=Console(file=sys.stderr), transient=False)
        self._task = self._progress.add_task(name, total=total, completed=done)
        self._known = total is not None

    def __enter__(self) -> TransferBar:
        self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc_info: object) -> None:
        if kind is None and not self._known:  # finished: the spinner becomes a check mark
            task = self._progress.tasks[0]
            speed = task.speed or (task.completed / task.elapsed if task.elapsed else None)
            self._progress.update(self._task, total=task.completed)
            task.finished_speed = speed
        self._progress.refresh()
        self._progress.stop()

    def advance(self, count: int) -> None:
        self._progress.advance(self._task, count)


def _bytes_column() -> Any:
    """Bytes so far, without the `/?` DownloadColumn shows for an unknown total (binary units)."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    from fetcher.cli.units import binary

    class BytesColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(binary(int(task.completed)), style="progress.download")

    return BytesColumn()


def _speed_column() -> Any:
    """The rate in binary units: `--limit-rate 4M` shows as 4.0 MiB/s, not as rich's 4.2 MB/s."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    from fetcher.cli.units import binary_rate

    class SpeedColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text(binary_rate(speed), style="progress.data.speed")

    return SpeedColumn()
