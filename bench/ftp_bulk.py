"""Many small files from one private loopback vsftpd: `fetch -i LIST -d DIR -j 8` against its peers.

    python bench/ftp_bulk.py [--count 2000] [--size 4096] [--jobs 8] [--runs 5]
                             [--aria2-count 200] [--report DIR]

Issue 3's goal: at most 1.0 x `curl --parallel --parallel-max 8`'s median
wall time, by reusing control connections and keeping per-file work small.
fetcher gets `-j N --per-host N` (all URLs share one host), curl
`--parallel-max N`; wget -i works one file at a time.  aria2c is so slow on
FTP (it opens a connection per file) that it runs on a separate, smaller
list (`--aria2-count`) once, with fetcher measured on the same list.
Output directories are on tmpfs and emptied before every run; runs
alternate after one warm-up round.  vsftpd needs root.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Figure, alternate, curl_parallel_command, fetch_bulk_command, markdown, write_report
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.ftp_servers import start_vsftpd, vsftpd_missing


def commands_for(urls: list[str], work: Path, jobs: int, tag: str) -> tuple[dict[str, list[str]], dict[str, Path]]:
    url_list = work / f"urls-{tag}.txt"
    url_list.write_text("\n".join(urls) + "\n")
    curl_config = work / f"curl-{tag}.cfg"
    curl_config.write_text("".join(f'url = "{url}"\noutput = "{url.rsplit("/", 1)[1]}"\n' for url in urls))
    outputs = {tool: work / f"{tool}-{tag}" for tool in ("fetcher", "curl", "wget", "aria2c")}
    n = str(jobs)
    commands = {
        "fetcher": fetch_bulk_command(url_list, outputs["fetcher"], jobs),
        "curl": curl_parallel_command(curl_config, outputs["curl"], jobs),
        "wget": ["wget", "-q", "-nc", "-P", str(outputs["wget"]), "-i", str(url_list)],
        "aria2c": ["aria2c", "-q", "-j", n, "-d", str(outputs["aria2c"]), "-i", str(url_list)],
    }
    return commands, outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--aria2-count", type=int, default=200, help="files for the aria2c figure (0: skip it)")
    parser.add_argument("--report", type=Path)
    args = parser.parse_args()
    reason = vsftpd_missing()
    if reason is not None:
        sys.exit(f"cannot run {reason}")
    content = public_tempdir("fetcher-bench-ftpbulk-")
    shm = Path("/dev/shm")
    work = Path(tempfile.mkdtemp(prefix="fetcher-bench-ftpbulk-out-", dir=shm if shm.is_dir() else None))
    server = None
    figures = []
    try:
        files = content / "files"
        files.mkdir(mode=0o755)
        for index in range(max(args.count, args.aria2_count)):
            (files / f"f{index:05d}.bin").write_bytes(os.urandom(args.size))
        server = start_vsftpd(content)
        urls = [f"{server.url}/files/f{index:05d}.bin" for index in range(args.count)]

        def run(figure: Figure, tools: list[str], subset: list[str], tag: str, runs: int, warmup: int) -> None:
            commands, outputs = commands_for(subset, work, args.jobs, tag)

            def clean(tool: str) -> None:
                shutil.rmtree(outputs[tool], ignore_errors=True)
                outputs[tool].mkdir()

            alternate(figure, {tool: commands[tool] for tool in tools}, runs=runs, warmup=warmup, before_each=clean)
            for tool in tools:
                got = len(list(outputs[tool].iterdir())) if outputs[tool].exists() else 0
                if got != len(subset):
                    figure.notes.append(f"{tool} left {got} of {len(subset)} files")
            figures.append(figure)

        main_figure = Figure(f"ftp_bulk ({args.count} x {args.size} B, {args.jobs} at once)", "<= 1.0 x curl")
        run(main_figure, ["fetcher", "curl", "wget"], urls, "main", args.runs, 1)
        if args.aria2_count:
            if shutil.which("aria2c") is None:
                main_figure.notes.append("aria2c is not installed; skipped")
            else:
                subset = urls[: args.aria2_count]
                aria = Figure(f"ftp_bulk aria2c ({len(subset)} x {args.size} B, {args.jobs} at once)", "-")
                run(aria, ["fetcher", "aria2c"], subset, "aria2", 1, 0)
    finally:
        if server is not None:
            server.stop()
        remove_tree(content)
        remove_tree(work)
    print(markdown(figures))
    for figure in figures:
        for tool in figure.samples:
            if tool != "fetcher" and "fetcher" in figure.samples:
                ratio = figure.median("fetcher") / figure.median(tool)
                print(f"{figure.name}: fetcher / {tool} = {ratio:.3f}")
    if args.report is not None:
        write_report(figures, args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
