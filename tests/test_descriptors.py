"""A bulk run within the process's open-file limit (fetcher/cli/descriptors.py): no EMFILE, no crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from fetcher.cli.descriptors import PER_TRANSFER, RESERVED, transfers_within
from tests.conftest import ROOT
from tests.servers.http_server import HTTPTestServer

resource = pytest.importorskip("resource")


def test_transfers_fit_in_the_open_file_limit() -> None:
    assert transfers_within(1024, 8) == 8
    assert transfers_within(64, 100) == (64 - RESERVED) // PER_TRANSFER
    assert transfers_within(RESERVED, 8) == 1  # never none


#: Sets the open-file limit given as argv[1:3], then becomes the command that follows (no preexec_fn:
#: it is not safe in a process with threads, as a test run has).
LIMITED = (
    "import os, resource, sys; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]), int(sys.argv[2]))); "
    "os.execv(sys.argv[3], sys.argv[3:])"
)


def run_limited(limits: tuple[int, int], *args: str) -> subprocess.CompletedProcess[str]:
    """The real `fetch` command in a process whose open-file limit (soft, hard) is `limits`."""
    env = dict(os.environ, NETRC=str(ROOT / "tests" / "no-such-netrc"), http_proxy="", HTTP_PROXY="", all_proxy="",
               ALL_PROXY="")  # fmt: skip
    argv = [sys.executable, "-c", LIMITED, *map(str, limits), sys.executable, "-m", "fetcher", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)


async def serve_files(nursery: trio.Nursery, tmp_path: Path, count: int) -> Path:
    server = HTTPTestServer()
    await nursery.start(server.serve)
    urls = []
    for index in range(count):
        server.add(f"/f{index}.txt", b"body %d\n" % index, content_type="text/plain")
        urls.append(server.url(f"/f{index}.txt"))
    (tmp_path / "urls.txt").write_text("\n".join(urls) + "\n")
    return tmp_path / "urls.txt"


async def test_more_jobs_than_open_files_run_fewer_at_once(nursery: trio.Nursery, tmp_path: Path) -> None:
    # 60 transfers need ~230 descriptors; with 64 (and no higher hard limit) they used to fail
    # with EMFILE and end the run with a traceback.  Now -j is lowered, with one line saying so.
    urls = await serve_files(nursery, tmp_path, 200)
    out = tmp_path / "out"
    result = await trio.to_thread.run_sync(
        lambda: run_limited((64, 64), "-i", str(urls), "-d", str(out), "-j", "60", "--per-host", "60", "--no-progress")
    )
    assert result.returncode == 0, result.stderr[-2000:]
    fitted = (64 - RESERVED) // PER_TRANSFER
    assert f"fetch: -j 60 needs up to {60 * PER_TRANSFER + RESERVED} open files and this process may have 64 " \
           f"(ulimit -n): running {fitted} at once\n" in result.stderr  # fmt: skip
    assert "Traceback" not in result.stderr
    assert len(list(out.iterdir())) == 200
    assert (out / "f199.txt").read_bytes() == b"body 199\n"


def test_the_soft_limit_is_raised_to_the_hard_one_first() -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 64:
        pytest.skip(f"the hard limit here ({hard}) leaves nothing to raise")
    code = (
        "import resource; from fetcher.cli.descriptors import raise_soft_limit; "
        "print(raise_soft_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    )
    result = subprocess.run([sys.executable, "-c", LIMITED, "64", str(hard), sys.executable, "-c", code],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)  # fmt: skip
    reported, now = result.stdout.split()
    assert reported == now != "64"
    if hard != resource.RLIM_INFINITY:
        assert int(now) == hard
