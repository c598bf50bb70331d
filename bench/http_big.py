"""One big file from a private loopback nginx to disk: fetcher against curl and wget.

    python bench/http_big.py [--mib 1024] [--runs 5] [--report DIR]

Issue 4's goal: at most 1.25 x curl's median wall time, and faster than wget.
Each tool writes the same file to a directory on tmpfs (/dev/shm when it
exists: a virtual disk's write-back stalls vary by seconds between runs and
would drown the clients' differences), deleted before every run; the runs
alternate (fetcher, curl, wget, ...) after one warm-up round.  The source
file stays in the page cache, so this measures the clients, not the disk.
fetcher also hashes what it writes (SHA-256 for its Download record), which
curl and wget do not; the "fetcher-stdout" row (the body to /dev/null, no
file, no hash) shows what the HTTP path alone costs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Figure, alternate, fetch_command, markdown, write_report
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.nginx_server import find_nginx, run_nginx


def make_file(path: Path, mib: int) -> None:
    block = os.urandom(1 << 20)
    with open(path, "wb") as sink:
        for index in range(mib):
            sink.write(index.to_bytes(8, "big") + block[8:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="size of the file in MiB (default 1024 = 1 GiB)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--report", type=Path, help="also write latest.md/latest.json into this directory")
    args = parser.parse_args()
    nginx = find_nginx()
    if nginx is None:
        sys.exit("nginx is not installed (apt-get install nginx-light)")
    content = public_tempdir("fetcher-bench-content-")
    shm = Path("/dev/shm")
    out = Path(tempfile.mkdtemp(prefix="fetcher-bench-out-", dir=shm if shm.is_dir() else None))
    try:
        make_file(content / "big.bin", args.mib)
        with run_nginx(content, nginx=nginx) as server:
            url = server.url("/big.bin")
            env_free = {"http_proxy": "", "no_proxy": "*"}
            os.environ.update(env_free)
            commands = {
                "fetcher": [*fetch_command(), "-o", str(out / "fetcher.bin"), url],
                "curl": ["curl", "-sS", "--fail", "-o", str(out / "curl.bin"), url],
                "wget": ["wget", "-q", "-O", str(out / "wget.bin"), url],
                "fetcher-stdout": [*fetch_command(), url],
            }

            def clean(tool: str) -> None:
                for leftover in out.iterdir():
                    leftover.unlink()

            figure = Figure(f"http_big ({args.mib} MiB)", "<= 1.25 x curl, < wget")
            alternate(figure, commands, runs=args.runs, before_each=clean)
    finally:
        remove_tree(content)
        remove_tree(out)
    print(markdown([figure]))
    if args.report is not None:
        write_report([figure], args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
