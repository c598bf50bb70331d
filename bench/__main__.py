"""The whole benchmark suite in one command: `python -m bench [--quick]`.

Runs every figure of issue 10 against fetcher's peers on loopback servers the
figures start themselves (nginx, vsftpd, the in-repo Gopher server), each
figure in its own process, then merges their reports into one Markdown table
and one JSON file (bench/results/latest.md, latest.json).  `--quick` is the
smoke mode CI runs: tiny sizes, one measured run, so the suite never rots;
its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Figure, Sample, alternate, fetch_command, machine, markdown, measure

ROOT = Path(__file__).resolve().parent.parent

# figure module -> (full arguments, quick arguments); each writes latest.json to the directory given last.
FIGURES: dict[str, tuple[list[str], list[str], str]] = {
    "http_big": (["--mib", "1024", "--runs", "9"], ["--mib", "8", "--runs", "1"], "--report"),
    "ftp_big": (["--size-mib", "1024", "--runs", "9"], ["--size-mib", "8", "--runs", "1"], "--report"),
    "http_bulk": (["--count", "2000", "--runs", "11"], ["--count", "40", "--runs", "1"], "--report"),
    "ftp_bulk": (
        ["--count", "2000", "--runs", "5"],
        ["--count", "40", "--runs", "1", "--aria2-count", "0"],
        "--report",
    ),
    "gopher_bulk": (["--items", "2000", "--runs", "5"], ["--items", "40", "--runs", "1"], "--out"),
    "bulk_mixed": (
        ["--count", "2000", "--runs", "3", "--rss-count", "10000"],
        ["--count", "30", "--runs", "1", "--rss-count", "30", "--aria2-count", "0"],
        "--report",
    ),
}


def run_figure(name: str, quick: bool, directory: Path) -> list[dict[str, object]]:
    full, short, flag = FIGURES[name]
    argv = [sys.executable, "-m", f"bench.{name}", *(short if quick else full), flag, str(directory)]
    print(f"== {name}: {' '.join(argv[2:])}", flush=True)
    result = subprocess.run(argv, cwd=ROOT)
    if result.returncode != 0:
        raise SystemExit(f"figure {name} failed with exit {result.returncode}")
    data = json.loads((directory / "latest.json").read_text())
    return list(data["figures"])


def cache_bytecode() -> None:
    """Write fetcher's .pyc files before any figure runs, as `pip install` does for a user.

    Without them (a checkout run with PYTHONDONTWRITEBYTECODE=1, as on the
    build machine) every `fetch` compiles its modules from source again:
    about 30 ms a start, which is not fetcher's start-up but the checkout's.
    """
    subprocess.run([sys.executable, "-m", "compileall", "-q", "fetcher", "schemes"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def startup_figure(runs: int) -> Figure:
    """`fetch --version` against `python -c 'import trio'` (goal: at most 50 ms more)."""
    figure = Figure("startup", "fetch --version <= import trio + 50 ms")
    return alternate(
        figure,
        {"fetcher": [*fetch_command(), "--version"], "import-trio": [sys.executable, "-c", "import trio"]},
        runs=runs,
        warmup=2,
    )


def file_startup_figure(runs: int) -> Figure:
    """A whole `fetch file:///...` of one small file against `python -c 'import trio'` (issue 17: <= 1.2 x)."""
    figure = Figure("startup (one small file: URL)", "<= 1.2 x import trio")
    with tempfile.TemporaryDirectory(prefix="fetcher-bench-start-") as temp:
        source = Path(temp) / "small.txt"
        source.write_bytes(b"x" * 4096)
        target = Path(temp) / "copy.txt"
        command = [*fetch_command(), "-o", str(target), f"file://{source}"]
        return alternate(figure, {"fetcher": command, "import-trio": [sys.executable, "-c", "import trio"]}, runs=runs,
                         warmup=2)  # fmt: skip


def parse_figure(quick: bool) -> dict[str, object]:
    count = "5000" if quick else "100000"
    output = subprocess.run(
        [sys.executable, "-m", "bench.parse", "--count", count, "--rounds", "1" if quick else "7"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    print(output, end="")
    return {"figure": "parse_url", "output": output}


def bulk_memory_figures(quick: bool) -> list[Figure]:
    """Peak RSS of bulk runs of 10,000 and 100,000 file: URLs: it must stay flat per URL (issue 17)."""
    return [bulk_memory_figure(count) for count in ((200,) if quick else (10_000, 100_000))]


def bulk_memory_figure(count: int) -> Figure:
    """Peak RSS of a bulk run of `count` file: URLs (goal: <= 200 MiB)."""
    figure = Figure(f"bulk RSS ({count} URLs)", "peak RSS <= 200 MiB")
    shm = Path("/dev/shm")
    with tempfile.TemporaryDirectory(prefix="fetcher-bench-rss-", dir=shm if shm.is_dir() else None) as temp:
        source = Path(temp) / "src"
        source.mkdir()
        lines = []
        for index in range(count):
            path = source / f"f{index}"
            path.write_bytes(b"%d\n" % index)
            lines.append(f"file://{path}")
        url_file = Path(temp) / "urls.txt"
        url_file.write_text("\n".join(lines) + "\n")
        out = Path(temp) / "out"
        argv = [*fetch_command(), "-i", str(url_file), "-d", str(out), "--manifest", str(Path(temp) / "m.jsonl")]
        figure.samples["fetcher"] = [measure(argv)]
    return figure


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smoke mode: tiny sizes, one run")
    parser.add_argument("--only", action="append", choices=sorted(FIGURES), help="run only these figures")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args()
    started = time.monotonic()
    cache_bytecode()
    figures: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="fetcher-bench-") as temp:
        for name in args.only or list(FIGURES):
            directory = Path(temp) / name
            figures += run_figure(name, args.quick, directory)
    runs = 3 if args.quick else 20
    local = [startup_figure(runs), file_startup_figure(runs), *bulk_memory_figures(args.quick)]
    parse = parse_figure(args.quick) if not args.only else None
    merged = [_figure_from(data) for data in figures] + local
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    table = f"Benchmarks of {stamp} on {machine()}{' (quick smoke run)' if args.quick else ''}\n\n"
    table += markdown(merged)
    startup = local[0]
    extra = statistics.median(s.seconds for s in startup.samples["fetcher"]) - statistics.median(
        s.seconds for s in startup.samples["import-trio"]
    )
    table += f"\nfetch --version minus import trio: {extra * 1000:+.0f} ms\n"
    if parse is not None:
        table += "\n```\n" + str(parse["output"]) + "```\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.md").write_text(table)
    rows = [row for figure in merged for row in figure.rows()]
    report = {"date": stamp, "machine": machine(), "quick": args.quick, "rows": rows}
    (args.out / "latest.json").write_text(json.dumps(report, indent=1))
    print(table)
    print(f"suite took {time.monotonic() - started:.0f} s; report in {args.out}/latest.md")
    return 0


def _figure_from(data: dict[str, object]) -> Figure:
    figure = Figure(str(data["name"]), str(data["goal"]), notes=list(data.get("notes", [])))  # type: ignore[call-overload]
    samples = data["samples"]
    assert isinstance(samples, dict)
    for tool, rows in samples.items():
        figure.samples[tool] = [Sample(**row) for row in rows]
    return figure


if __name__ == "__main__":
    sys.exit(main())
