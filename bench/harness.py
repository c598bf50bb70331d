"""Shared benchmark machinery: run commands in alternation, measure, compare.

Each figure runs fetcher and its peers (curl, wget, aria2c) as separate
processes in alternation (A B C A B C ...) after a warm-up, so slow drifts of
a noisy machine hit every tool alike.  Wall time comes from a monotonic clock
around the process; peak RSS from the child's rusage (`os.wait4`).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Sample:
    seconds: float
    peak_rss_kib: int
    returncode: int
    cpu_s: float = 0.0  # user + system CPU seconds of the process: the stable figure on a shared machine


@dataclass
class Figure:
    """One row group of the report: a workload measured for several tools."""

    name: str
    goal: str
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def median(self, tool: str) -> float:
        return statistics.median(s.seconds for s in self.samples[tool])

    def cpu_median(self, tool: str) -> float:
        return statistics.median(s.cpu_s for s in self.samples[tool])

    def rows(self, baseline: str = "fetcher") -> list[dict[str, object]]:
        rows = []
        base = self.median(baseline) if baseline in self.samples else None
        base_cpu = self.cpu_median(baseline) if baseline in self.samples else None
        for tool, samples in self.samples.items():
            times = [s.seconds for s in samples]
            median = statistics.median(times)
            rows.append(
                {
                    "figure": self.name,
                    "tool": tool,
                    "runs": len(samples),
                    "median_s": round(median, 4),
                    "min_s": round(min(times), 4),
                    "max_s": round(max(times), 4),
                    "peak_rss_mib": round(max(s.peak_rss_kib for s in samples) / 1024, 1),
                    "failures": sum(1 for s in samples if s.returncode != 0),
                    "fetcher_over_tool": None if base is None or tool == baseline else round(base / median, 3),
                    "cpu_s": round(self.cpu_median(tool), 4),
                    "cpu_fetcher_over_tool": None
                    if base_cpu is None or tool == baseline or not self.cpu_median(tool)
                    else round(base_cpu / self.cpu_median(tool), 3),
                }
            )
        return rows


def measure(argv: Sequence[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> Sample:
    """Run one command to completion; its wall time and peak RSS."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    error = process.stderr.read()
    process.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    process.returncode = code
    if code != 0:
        sys.stderr.write(f"  ! {argv[0]} exited {code}: {error.decode(errors='replace')[-300:]}\n")
    cpu = usage.ru_utime + usage.ru_stime
    return Sample(seconds=elapsed, peak_rss_kib=usage.ru_maxrss, returncode=code, cpu_s=cpu)


def alternate(
    figure: Figure,
    commands: dict[str, Sequence[str]],
    *,
    runs: int = 5,
    warmup: int = 1,
    before_each: Callable[[str], None] | None = None,
    cwd: Path | None = None,
) -> Figure:
    """Run every command `warmup` times unmeasured, then `runs` times in alternation.

    Each round starts one tool later than the one before (a, b, c; b, c, a;
    ...): whatever the machine does on a cycle of its own (on this VM, handing
    memory freed by the previous run back to the host a moment later) then
    falls on every tool in turn, not on the one that always follows the same
    neighbour.
    """
    available = {tool: argv for tool, argv in commands.items() if shutil.which(argv[0]) or Path(argv[0]).exists()}
    for tool in commands.keys() - available.keys():
        figure.notes.append(f"{tool} is not installed; skipped")
    order = list(available.items())
    for round_number in range(warmup + runs):
        shift = round_number % len(order) if order else 0
        for tool, argv in order[shift:] + order[:shift]:
            if before_each is not None:
                before_each(tool)
            sample = measure(argv, cwd=cwd)
            if round_number >= warmup:
                figure.samples.setdefault(tool, []).append(sample)
    return figure


def fetch_command() -> list[str]:
    """fetcher as a user runs it (the console script of this checkout's interpreter)."""
    return [sys.executable, "-m", "fetcher"]


def fetch_bulk_command(url_file: Path, out: Path, jobs: int) -> list[str]:
    """`fetch -i LIST -d DIR` with `jobs` transfers, all allowed on the one host."""
    n = str(jobs)
    return [*fetch_command(), "-i", str(url_file), "-d", str(out), "-j", n, "--per-host", n, "--no-progress"]


def curl_parallel_command(config: Path, out: Path | None, jobs: int | None) -> list[str]:
    """curl on a `-K` config of url/output pairs, `jobs` at once (curl's own default 50 if None)."""
    argv = ["curl", "-sS", "--fail", "--parallel"]
    if jobs is not None:
        argv += ["--parallel-max", str(jobs)]
    if out is not None:
        argv += ["--output-dir", str(out)]
    return [*argv, "-K", str(config)]


def fresh_directories(outputs: dict[str, Path]) -> Callable[[str], None]:
    """A `before_each` that gives the tool about to run an empty output directory."""

    def fresh(tool: str) -> None:
        if tool in outputs:
            shutil.rmtree(outputs[tool], ignore_errors=True)
            outputs[tool].mkdir(parents=True)

    return fresh


def report(figures: Sequence[Figure], directory: Path | None) -> None:
    """Print the table; also write latest.md/latest.json when a directory is given."""
    print(markdown(figures))
    if directory is not None:
        write_report(figures, directory)


def markdown(figures: Sequence[Figure]) -> str:
    lines = [
        "| figure | goal | tool | median s | min s | max s | peak RSS MiB | fetcher/tool | CPU s | CPU fetcher/tool |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for figure in figures:
        for row in figure.rows():
            ratio = row["fetcher_over_tool"]
            cpu_ratio = row["cpu_fetcher_over_tool"]
            lines.append(
                f"| {figure.name} | {figure.goal} | {row['tool']} | {row['median_s']} | {row['min_s']} | "
                f"{row['max_s']} | {row['peak_rss_mib']} | {'' if ratio is None else f'{ratio:.2f}'} | "
                f"{row['cpu_s']} | {'' if cpu_ratio is None else f'{cpu_ratio:.2f}'} |"
            )
        for note in figure.notes:
            lines.append(f"| {figure.name} | | ({note}) | | | | | | | |")
    return "\n".join(lines) + "\n"


def machine() -> str:
    cpus = os.cpu_count()
    return (f"{platform.node()} {platform.system()} {platform.release()}, {cpus} CPU, "
            f"Python {platform.python_version()}{page_reporting()}")  # fmt: skip


#: Linux's free page reporting (a virtio-balloon VM hands freed memory back to its host).
PAGE_REPORTING_ORDER = Path("/sys/module/page_reporting/parameters/page_reporting_order")


def page_reporting() -> str:
    """Whether this VM gives freed memory back to its host, for the report's header ("" where it cannot).

    When it does, memory a run frees (a tool's 1 GiB output, deleted before
    its next run) is given back within moments, and whoever uses it next
    pays a host page fault per 4 KiB page: about 3 ms per MiB, which turns a
    0.5 s 1 GiB download into 1.5-2 s for any tool that meets it.  Blocks of
    2**order pages are given back; above the largest order (10) nothing is.
    """
    try:
        order = int(PAGE_REPORTING_ORDER.read_text())
    except (OSError, ValueError):
        return ""
    return f", free page reporting {'on' if order <= 10 else 'off'} (order {order})"


def write_report(figures: Sequence[Figure], directory: Path) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = f"Benchmarks of {stamp} on {machine()}\n\n" + markdown(figures)
    table = directory / "latest.md"
    table.write_text(text)
    data = directory / "latest.json"
    data.write_text(
        json.dumps(
            {"date": stamp, "machine": machine(), "figures": [asdict(f) | {"rows": f.rows()} for f in figures]},
            indent=1,
        )
    )
    return table, data
