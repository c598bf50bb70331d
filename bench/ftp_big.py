"""One large RETR from a private loopback vsftpd to a file: fetcher against curl and wget.

    python bench/ftp_big.py [--size-mib 1024] [--runs 5] [--report DIR]

Issue 3's goal: at most 1.25 x curl's median wall time, and faster than
wget.  Every tool writes the same file name into its own directory on tmpfs
(emptied before each run), so the disk does not decide; runs alternate
after one warm-up round.  vsftpd needs root (see tests/interop/ftp_servers.py).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Figure, alternate, fetch_command, markdown, write_report
from tests.interop.content import public_tempdir, remove_tree, sha256_file
from tests.interop.ftp_servers import start_vsftpd, vsftpd_missing


def write_big(path: Path, mib: int) -> None:
    block = bytearray(range(256)) * 4096  # 1 MiB
    with open(path, "wb") as sink:
        for index in range(mib):
            block[:8] = index.to_bytes(8, "big")  # no two MiB alike
            sink.write(block)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--report", type=Path)
    args = parser.parse_args()
    reason = vsftpd_missing()
    if reason is not None:
        sys.exit(f"cannot run {reason}")
    content = public_tempdir("fetcher-bench-ftp-")
    shm = Path("/dev/shm")
    work = Path(tempfile.mkdtemp(prefix="fetcher-bench-ftp-out-", dir=shm if shm.is_dir() else None))
    server = None
    try:
        write_big(content / "big.bin", args.size_mib)
        expected = sha256_file(content / "big.bin")
        server = start_vsftpd(content)
        url = f"{server.url}/big.bin"
        outputs = {tool: work / tool for tool in ("fetcher", "curl", "wget")}
        commands = {
            "fetcher": [*fetch_command(), "-o", str(outputs["fetcher"] / "big.bin"), url],
            "curl": ["curl", "-sS", "--fail", "-o", str(outputs["curl"] / "big.bin"), url],
            "wget": ["wget", "-q", "-O", str(outputs["wget"] / "big.bin"), url],
        }

        def clean(tool: str) -> None:
            shutil.rmtree(outputs[tool], ignore_errors=True)
            outputs[tool].mkdir()

        figure = Figure(f"ftp_big ({args.size_mib} MiB RETR to a file)", "<= 1.25 x curl, < wget")
        alternate(figure, commands, runs=args.runs, before_each=clean)
        for tool, directory in outputs.items():
            saved = directory / "big.bin"
            if not saved.exists() or sha256_file(saved) != expected:
                figure.notes.append(f"{tool}'s last copy does not match the source")
    finally:
        if server is not None:
            server.stop()
        remove_tree(content)
        remove_tree(work)
    print(markdown([figure]))
    for tool in ("curl", "wget"):
        if tool in figure.samples and "fetcher" in figure.samples:
            print(f"fetcher / {tool}: {figure.median('fetcher') / figure.median(tool):.3f}")
    if args.report is not None:
        write_report([figure], args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
