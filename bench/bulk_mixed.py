"""Mixed bulk retrieval: URLs spread over HTTP (nginx), FTP (vsftpd) and Gopher.

    python -m bench.bulk_mixed [--count 2000] [--runs 3] [--rss-count 10000] [--report DIR]

fetcher takes one list of mixed URLs (`fetch -i LIST -d DIR -j 8`); curl
takes the same list with `--parallel --parallel-max 8` (it speaks all three
schemes; aria2c has no Gopher, so it gets the HTTP and FTP part only).  A
second figure measures fetcher's peak RSS over a larger mixed list
(goal: <= 200 MiB for 10 000 URLs).  vsftpd needs root.
"""

from __future__ import annotations

import argparse
import os
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
    measure,
    write_report,
)
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.ftp_servers import start_vsftpd, vsftpd_missing
from tests.interop.nginx_server import find_nginx, run_nginx
from tests.interop.processes import free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent


def mixed_urls(count: int, http: str, ftp: str, gopher: str) -> list[str]:
    urls = []
    for index in range(count):
        name = f"f{index % 2000:05d}.bin"
        kind = index % 3
        if kind == 0:
            urls.append(f"{http}/files/{name}")
        elif kind == 1:
            urls.append(f"{ftp}/files/{name}")
        else:
            urls.append(f"{gopher}/0/item/{index % 2000:05d}.txt")
    return urls


def curl_config(urls: list[str], path: Path) -> None:
    path.write_text("".join(f'url = "{url}"\noutput = "o{index:05d}"\n' for index, url in enumerate(urls)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--rss-count", type=int, default=10_000)
    parser.add_argument("--aria2-count", type=int, default=60)
    parser.add_argument("--report", type=Path)
    args = parser.parse_args()
    nginx = find_nginx()
    if nginx is None or vsftpd_missing():
        sys.exit("needs nginx and vsftpd (apt-get install nginx-light vsftpd) and root")
    content = public_tempdir("fetcher-bench-mixed-")
    work = Path(
        tempfile.mkdtemp(prefix="fetcher-bench-mixed-out-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None)
    )
    (content / "files").mkdir(mode=0o755)
    for index in range(min(max(args.count, args.rss_count), 2000)):
        (content / "files" / f"f{index:05d}.bin").write_bytes(os.urandom(4096))
    gopher_port = free_port()
    gopher = subprocess.Popen(
        [sys.executable, "-m", "tests.servers.gopher", "--port", str(gopher_port), "--items", "2000"],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    ftp = start_vsftpd(content)
    figures: list[Figure] = []
    try:
        wait_for_port(gopher_port)
        with run_nginx(content, nginx=nginx) as web:
            os.environ.update({"http_proxy": "", "no_proxy": "*"})
            urls = mixed_urls(args.count, web.url("").rstrip("/"), ftp.url, f"gopher://127.0.0.1:{gopher_port}")
            url_file = work / "urls.txt"
            url_file.write_text("\n".join(urls) + "\n")
            config = work / "curl.cfg"
            curl_config(urls, config)
            outputs = {tool: work / tool for tool in ("fetcher", "curl", "aria2c")}
            # aria2c needs about 1.5 s per FTP file here, so it gets a sample.
            no_gopher = [url for url in urls if not url.startswith("gopher:")][: args.aria2_count]
            (work / "aria2.txt").write_text("\n".join(no_gopher) + "\n")
            jobs = str(args.jobs)  # for aria2c
            commands = {
                "fetcher": fetch_bulk_command(url_file, outputs["fetcher"], args.jobs),
                "curl": curl_parallel_command(config, outputs["curl"], args.jobs),
            }
            clean = fresh_directories(outputs)

            figure = Figure(f"bulk_mixed ({args.count} URLs: http, ftp, gopher; {args.jobs} at once)", "<= 1.0 x curl")
            alternate(figure, commands, runs=args.runs, warmup=1, before_each=clean)
            figures.append(figure)
            if shutil.which("aria2c") and args.aria2_count:
                aria = Figure(f"bulk_mixed http+ftp part ({len(no_gopher)} URLs)", "(aria2c has no gopher)")
                aria_commands = {
                    "fetcher": fetch_bulk_command(work / "aria2.txt", outputs["fetcher"], args.jobs),
                    "aria2c": [
                        "aria2c",
                        "-q",
                        "-j",
                        jobs,
                        "-x",
                        "1",
                        "-i",
                        str(work / "aria2.txt"),
                        "-d",
                        str(outputs["aria2c"]),
                    ],
                }
                alternate(aria, aria_commands, runs=1, warmup=0, before_each=clean)
                figures.append(aria)
            rss_urls = mixed_urls(args.rss_count, web.url("").rstrip("/"), ftp.url, f"gopher://127.0.0.1:{gopher_port}")
            rss_file = work / "rss.txt"
            rss_file.write_text("\n".join(rss_urls) + "\n")
            clean("fetcher")
            rss = Figure(f"bulk_mixed peak RSS ({args.rss_count} URLs)", "<= 200 MiB")
            rss.samples["fetcher"] = [
                measure(
                    [
                        *fetch_bulk_command(rss_file, outputs["fetcher"], args.jobs),
                        "--manifest",
                        str(work / "m.jsonl"),
                    ]
                )
            ]
            figures.append(rss)
    finally:
        ftp.stop()
        gopher.terminate()
        gopher.wait(timeout=10)
        remove_tree(content)
        shutil.rmtree(work, ignore_errors=True)
    print(markdown(figures))
    if args.report is not None:
        write_report(figures, args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
