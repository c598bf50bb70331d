"""Progress for bulk and mirror runs: one rich line on a terminal, nothing otherwise.

The line shows URLs done of total, %, failures, bytes, rate and time left:

    URLs ━━━━━━━━━━━━━╺━━━━━━  12/20  60%  1 failed  3.1 MB  1.2 MB/s  0:00:04 left

A mirror (-r) finds its URLs as it goes, and `-i -` takes them as stdin
delivers them, so the total is only what is known so far: the bar pulses,
the count says "so far", and there is no % and no time left (an estimate of
a growing total would be made up); elapsed time is shown instead.  Once
stdin ends, the total is known and % and time left appear.  When the run ends, the last state stays as one line.

With -v, one line per finished file (ok or skipped; failures always get
their line) is printed above the bar, or on stderr without one.

Every label and log line shown here passes `fetcher.text.safe_text`:
server text escaped, passwords in URLs masked.  rich is imported only when
the bar is shown, so scripted runs pay nothing for it.
"""

from __future__ import annotations

import sys
from typing import Any


def finished_line(record: dict[str, Any]) -> str | None:
    """The -v line of one finished URL (None for a failure, which has its own line)."""
    status = record.get("status")
    url = record.get("url") or ""
    if status == "failed":
        return None
    if status == "ok":
        path = f" -> {record['path']}" if record.get("path") else ""
        if record.get("change") == "unchanged":
            return f"fetch: unchanged {url}{path}"
        size = f" ({record['bytes']} bytes)" if record.get("bytes") is not None else ""
        kind = f" ({record['kind']})" if record.get("kind") and not size else ""
        return f"fetch: ok {url}{path}{size}{kind}"
    reason = record.get("reason") or ""
    return f"fetch: {status} {url}" + (f": {reason}" if reason else "")


class NoProgress:
    """No bar: failures still go to stderr, one line each (and with -v, every finished URL)."""

    #: Whether a total is shown (worth counting the input for, `expect`).
    shows_total = False

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def url_added(self) -> None:
        pass

    def expect(self, count: int) -> None:
        """`count` input URLs are coming (-i FILE, read as the run goes): the total before they are added."""

    def url_done(self, record: dict[str, Any]) -> None:
        if self.verbose:
            line = finished_line(record)
            if line is not None:
                self.log(line)

    def advance(self, count: int) -> None:
        pass

    def total_known(self) -> None:
        """The last URL of a growing run has been added (-i - reached the end of stdin)."""

    def log(self, text: str) -> None:
        from fetcher.text import safe_text

        sys.stderr.write(safe_text(text) + "\n")


class RichProgress(NoProgress):
    """The run's line on stderr (see the module docstring); `growing`: the total is not known up front."""

    shows_total = True

    def __init__(self, verbose: bool = False, growing: bool = False) -> None:
        super().__init__(verbose)
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn

        self.growing = growing
        self.added = 0
        #: Input URLs counted up front but not yet added (`expect`).
        self.expected = 0
        self.failed = 0
        self.finished = False
        self._progress = Progress(
            TextColumn("URLs"),
            BarColumn(),
            _run_column(self),
            console=Console(file=sys.stderr),
            transient=False,
            refresh_per_second=8,
        )
        # A growing total is drawn as a pulse (total None); the count so far is `added`.
        self._urls = self._progress.add_task("URLs", total=None if growing else 0)
        self._bytes = self._progress.add_task("bytes", total=None, visible=False)

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        # The last state stays as the final line: counts, bytes, average rate and elapsed time.
        self.finished = True
        if self.growing:
            self._progress.update(self._urls, total=max(self.added, 1))
        self._progress.refresh()
        self._progress.stop()

    def url_added(self) -> None:
        self.added += 1
        if not self.growing and self.added > self.expected:
            self._progress.update(self._urls, total=self.added)

    def expect(self, count: int) -> None:
        self.expected = self.added + count
        if not self.growing:
            self._progress.update(self._urls, total=self.expected)

    def url_done(self, record: dict[str, Any]) -> None:
        if record.get("status") == "failed":
            self.failed += 1
        self._progress.advance(self._urls)
        super().url_done(record)

    def advance(self, count: int) -> None:
        self._progress.advance(self._bytes, count)

    def total_known(self) -> None:
        if self.growing:
            self.growing = False
            self._progress.update(self._urls, total=self.added)

    def log(self, text: str) -> None:
        from fetcher.text import safe_text

        self._progress.console.print(safe_text(text), markup=False, highlight=False, soft_wrap=True)

    def columns(self, task: Any) -> str:
        """Everything after the bar, as plain text (the rendering is tested on a pty)."""
        from fetcher.cli.units import binary, binary_rate

        done = int(task.completed)
        total = max(self.added, self.expected)
        if self.growing and not self.finished:
            counts = f"{done}/{total} so far"
        else:
            percent = 100.0 * done / total if total else 0.0
            counts = f"{done}/{total} {percent:3.0f}%"
        byte_task = self._progress.tasks[self._bytes]
        received = int(byte_task.completed)
        if self.finished:
            elapsed = task.elapsed or 0.0
            speed: float | None = received / elapsed if elapsed > 0 else None
        else:
            speed = byte_task.speed
        rate = binary_rate(speed)
        return f"{counts}  {self.failed} failed  {binary(received)}  {rate}  {self._time(task)}"

    def _time(self, task: Any) -> str:
        if self.finished or self.growing or not self.added:
            return _clock(task.elapsed)
        left = task.time_remaining
        return f"{_clock(left)} left" if left is not None else "-:--:-- left"


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "-:--:--"
    whole = int(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _run_column(progress: RichProgress) -> Any:
    """The column after the bar (a class made on demand: rich is imported only when a bar is drawn)."""
    from rich.progress import ProgressColumn, Task
    from rich.text import Text

    class RunColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(progress.columns(task))

    return RunColumn()


def make_progress(wanted: bool | None, *, verbose: bool = False, growing: bool = False) -> NoProgress:
    """The bar when asked (--progress), or by default when stderr is a terminal; -s/--no-progress: none."""
    if wanted is None:
        wanted = sys.stderr.isatty()
    return RichProgress(verbose, growing) if wanted else NoProgress(verbose)
