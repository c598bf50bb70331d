"""2000 small Gopher items from one local server: `fetch -i -d` against `curl --parallel`.

Both tools get the same parallelism (default 8 connections) and write every
item to a fresh directory on tmpfs; the server is the in-repo trio Gopher server run
as its own process (tests/servers/gopher.py --items N), so neither tool
competes with it for the interpreter.  Goal (issue 5): fetcher <= 1.0x curl.

    python -m bench.gopher_bulk [--items 2000] [--parallel 8] [--runs 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness import (
    Figure,
    alternate,
    curl_parallel_command,
    fetch_bulk_command,
    fresh_directories,
    markdown,
    write_report,
)
from tests.interop.processes import free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, help="write latest.md/latest.json here")
    args = parser.parse_args()

    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.servers.gopher", "--port", str(port), "--items", str(args.items)],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    # On tmpfs, as the other bulk benches: on this machine's /tmp (a virtual disk) the system time
    # of creating 2,000 files varies several-fold from run to run and swamps both tools' figures.
    shm = Path("/dev/shm")
    work = Path(tempfile.mkdtemp(prefix="fetcher-gopher-bench-", dir=shm if shm.is_dir() else None))
    try:
        wait_for_port(port, process=server)  # type: ignore[arg-type]
        urls = [f"gopher://127.0.0.1:{port}/0/item/{n:05d}.txt" for n in range(args.items)]
        (work / "urls.txt").write_text("".join(url + "\n" for url in urls))
        outputs = {"fetcher": work / "out-fetcher", "curl": work / "out-curl"}
        config = "".join(f'url = "{url}"\noutput = "{outputs["curl"]}/{n:05d}.txt"\n' for n, url in enumerate(urls))
        (work / "curl.conf").write_text(config)
        commands = {
            "fetcher": fetch_bulk_command(work / "urls.txt", outputs["fetcher"], args.parallel),
            # The config names full output paths, so curl gets no --output-dir.
            "curl": [*curl_parallel_command(work / "curl.conf", None, args.parallel), "--create-dirs"],
        }
        fresh = fresh_directories(outputs)

        figure = Figure(
            name=f"gopher_bulk {args.items} x 2 KiB, {args.parallel} parallel",
            goal="fetcher <= 1.0x curl",
        )
        alternate(figure, commands, runs=args.runs, before_each=fresh, cwd=ROOT)
        for tool, directory in outputs.items():
            count = sum(1 for _ in directory.rglob("*.txt"))
            figure.notes.append(f"{tool} wrote {count} files in its last run")
        print(markdown([figure]))
        if "curl" in figure.samples:
            ratio = figure.median("fetcher") / figure.median("curl")
            print(f"fetcher median {figure.median('fetcher'):.3f} s, curl median {figure.median('curl'):.3f} s, "
                  f"ratio fetcher/curl = {ratio:.2f}x")  # fmt: skip
        if args.out:
            write_report([figure], args.out)
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
