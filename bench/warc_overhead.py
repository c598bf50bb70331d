"""What --warc-file costs: one big file, and a bulk run, with and without the WARC.

    python bench/warc_overhead.py [--mib 512] [--kind random|lines|words] [--rates 200m,400m]
                                  [--count 500] [--size 4096] [--runs 3] [--report DIR]

Issue 19's goal: writing the WARC slows a big transfer by at most 10%.
The rows are fetcher itself: "fetcher" writes the file only, "fetcher+warc"
also writes NAME.warc.gz (a request and a response record, digests, one
gzip member per record), "fetcher+warc+cdx+dedup" adds the CDXJ index and
the digest table.  The big file is random (incompressible, stored blocks)
by default; --kind lines (--text) is one line repeated (deflate level 1 runs
at memory speed on it), --kind words is random words (ordinary text: level 1
deflates it at about 180 MiB/s on the build machine, slower than loopback).
Everything is written to tmpfs (/dev/shm) and removed before every run,
so this measures the client, not the disk; the WARC's size is reported.
The big file is fetched at loopback speed (where fetcher alone keeps a core
busy, so the WARC's own CPU work, two SHA-1 passes, a CRC-32 and a write,
shows up in the wall time on a machine with few idle cores), at 110 MiB/s
(nginx limit_rate, about a 1 Gbit/s link), where it runs beside the
transfer, and at each --rates pace (nginx's /rate/?rate=): the fastest link
at which the 10% goal holds.  The CPU columns are the stable figures on a
shared machine.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Figure, alternate, fetch_bulk_command, fetch_command, report
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.nginx_server import find_nginx, run_nginx


def make_file(path: Path, mib: int, kind: str) -> None:
    block = os.urandom(1 << 20)
    if kind == "lines":
        line = b"an archived line of ordinary text, as a mailing list or a log holds\n"
        block = (line * ((1 << 20) // len(line) + 1))[: 1 << 20]
    elif kind == "words":
        # Words of this file's docstring in a random order, a line break now and then: deflate finds
        # short matches only (about 3:1 at level 1), and none across the 1 MiB period (its window is 32 KiB).
        choose = random.Random(19).choice
        words = [word.encode() for word in (__doc__ or "").split()] + [b"\n"] * 8
        text = b" ".join(choose(words) for _ in range(300_000))
        block = (text * 2)[: 1 << 20]
    with open(path, "wb") as sink:
        for index in range(mib):
            sink.write(index.to_bytes(8, "big") + block[8:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--count", type=int, default=500, help="files in the bulk run")
    parser.add_argument("--size", type=int, default=4096, help="bytes per file in the bulk run")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kind", choices=["random", "lines", "words"], default="random",
                        help="the big file: random bytes, one line repeated, or random words")  # fmt: skip
    parser.add_argument("--text", action="store_const", const="lines", dest="kind", help="--kind lines")
    parser.add_argument("--no-limited", action="store_true", help="skip the big file at a network's pace")
    parser.add_argument("--no-bulk", action="store_true", help="skip the bulk run")
    parser.add_argument("--rates", default="", help="comma-separated nginx paces for the big file, e.g. 200m,400m")
    parser.add_argument("--report", type=Path)
    args = parser.parse_args()
    nginx = find_nginx()
    if nginx is None:
        sys.exit("nginx is not installed (apt-get install nginx-light)")
    content = public_tempdir("fetcher-bench-warc-")
    shm = Path("/dev/shm")
    work = Path(tempfile.mkdtemp(prefix="fetcher-bench-warc-out-", dir=shm if shm.is_dir() else None))
    figures = []
    try:
        make_file(content / "big.bin", args.mib, args.kind)
        files = content / "files"
        files.mkdir()
        for index in range(args.count):
            (files / f"f{index:05d}.bin").write_bytes(os.urandom(args.size))
        os.environ.update({"http_proxy": "", "no_proxy": "*"})

        def clean(tool: str) -> None:
            remove_tree(work)
            work.mkdir()

        fetch = fetch_command()
        kind = args.kind

        def big_file(url: str, pace: str) -> Figure:
            """The big file from `url`, with and without the WARC, in alternated runs."""
            commands = {
                "fetcher": [*fetch, "-o", str(work / "big.bin"), url],
                "fetcher+warc": [*fetch, "-o", str(work / "big.bin"), "--warc-file", str(work / "big"), url],
            }
            figure = Figure(f"warc_overhead big{pace} ({args.mib} MiB, {kind})", "fetcher+warc <= 1.10 x fetcher")
            alternate(figure, commands, runs=args.runs, before_each=clean)
            return figure

        with run_nginx(content, nginx=nginx) as server:
            figure = big_file(server.url("/big.bin"), "")
            warc = work / "big.warc.gz"
            if warc.exists():
                figure.notes.append(f"WARC size {warc.stat().st_size / (1 << 20):.1f} MiB")
            figures.append(figure)

            if not args.no_limited:
                # The same file at a network's pace (nginx limit_rate 110m, about 1 Gbit/s): the
                # WARC's work (two SHA-1 passes, CRC, write) runs beside the transfer instead of
                # competing with a loopback transfer that already keeps a core busy.
                figures.append(big_file(server.url("/limited/big.bin"), " at 110 MiB/s"))

            for rate in filter(None, args.rates.split(",")):
                figures.append(big_file(server.url(f"/rate/big.bin?rate={rate}"), f" at {rate}/s"))

            if not args.no_bulk:
                url_list = content / "urls.txt"
                url_list.write_text("".join(server.url(f"/files/f{i:05d}.bin") + "\n" for i in range(args.count)))
                plain = fetch_bulk_command(url_list, work / "out", args.jobs)
                bulk = {
                    "fetcher": plain,
                    # Plain HTTP bulk runs take the pipelined lane (fetcher/bulk/lanes.py); anything the lane
                    # does not do, an archive tap included, takes the task path. --max-size is another
                    # such thing and changes nothing here: this row is the task path without a WARC.
                    "fetcher (task path)": [*plain, "--max-size", str(1 << 40)],
                    "fetcher+warc": [*plain, "--warc-file", str(work / "bulk")],
                    "fetcher+warc+cdx+dedup": [*plain, "--warc-file", str(work / "bulk"), "--warc-cdx", "--warc-dedup"],
                }
                figure = Figure(f"warc_overhead bulk ({args.count} x {args.size} B, {args.jobs} at once)",
                                "fetcher+warc close to fetcher")  # fmt: skip
                alternate(figure, bulk, runs=args.runs, before_each=clean)
                figures.append(figure)
    finally:
        remove_tree(content)
        remove_tree(work)
    for figure in figures:
        base = figure.median("fetcher")
        for tool in figure.samples:
            if tool != "fetcher":
                cpu = figure.cpu_median(tool) / figure.cpu_median("fetcher")
                figure.notes.append(
                    f"{tool}: {figure.median(tool) / base:.3f} x fetcher ({base:.2f} s); CPU {cpu:.2f} x"
                )
        if "fetcher (task path)" in figure.samples:
            task = figure.median("fetcher (task path)")
            ratio = figure.median("fetcher+warc") / task
            figure.notes.append(f"fetcher+warc: {ratio:.3f} x the task path ({task:.2f} s)")
    report(figures, args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
