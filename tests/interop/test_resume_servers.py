"""`fetch -C` against real servers whose file changed between the cut download and the resume (issue 29, item 14).

nginx answers a stale `If-Range` with the whole new file (its ETag is the
file's time and size); pyftpdlib answers MDTM and SIZE from the file on
disk.  The first download is cut by `--max-time` under `--limit-rate`
(it would need 16 s): how many bytes it kept does not matter, only that
the resume leaves exactly the server's current bytes.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.conftest import require, run_fetch
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.ftp_servers import pyftpd
from tests.interop.nginx_server import find_nginx, run_nginx

pytestmark = pytest.mark.interop

NO_PROXY = dict.fromkeys(("http_proxy", "https_proxy", "HTTPS_PROXY", "HTTP_PROXY", "no_proxy", "NO_PROXY"), "")
OLD = bytes(range(256)) * (16 << 10)  # 4 MiB
NEW = bytes(reversed(range(256))) * (16 << 10)  # the same size: only the validators tell
RESTART = "starting over from 0"


async def fetch(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(functools.partial(run_fetch, *args, env=NO_PROXY))


@pytest.fixture
def root() -> Iterator[Path]:
    path = public_tempdir("fetcher-resume-")
    (path / "doc.bin").write_bytes(OLD)
    (path / "doc.bin").chmod(0o644)
    yield path
    remove_tree(path)


async def cut_download(url: str, target: Path) -> int:
    """A first `fetch -o` stopped by --max-time: some bytes of OLD in `.part`."""
    first = await fetch("--limit-rate", "256K", "--max-time", "1", "-o", str(target), url)
    assert first.returncode == 8, first.stderr
    kept = (target.parent / (target.name + ".part")).read_bytes()
    assert 0 < len(kept) < len(OLD) and OLD.startswith(kept)
    return len(kept)


def change(path: Path) -> None:
    """NEW in place of OLD, one minute later by its time (a new ETag for nginx, a new MDTM for FTP)."""
    later = path.stat().st_mtime + 60
    path.write_bytes(NEW)
    os.utime(path, (later, later))


async def test_nginx_sends_the_changed_file_whole_for_a_stale_if_range(root: Path, tmp_path: Path) -> None:
    binary = find_nginx()
    require(binary is not None, "nginx", "apt-get install nginx-light")
    assert binary is not None
    target = tmp_path / "doc.bin"
    with run_nginx(root, nginx=binary) as nginx:
        await cut_download(nginx.url("/doc.bin"), target)
        change(root / "doc.bin")
        done = await fetch("-C", "-o", str(target), nginx.url("/doc.bin"))
        statuses = [row[3] for row in nginx.access_log()]
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == NEW
    assert statuses[-1] == "200"
    err = done.stderr.decode()
    assert "the document changed on the server (ETag" in err and RESTART in err


async def test_nginx_resumes_an_unchanged_file_with_if_range(root: Path, tmp_path: Path) -> None:
    binary = find_nginx()
    require(binary is not None, "nginx", "apt-get install nginx-light")
    assert binary is not None
    target = tmp_path / "doc.bin"
    with run_nginx(root, nginx=binary) as nginx:
        await cut_download(nginx.url("/doc.bin"), target)
        assert (tmp_path / "doc.bin.part.resume").exists()  # what the resume sends as If-Range
        done = await fetch("-C", "-o", str(target), nginx.url("/doc.bin"))
        statuses = [row[3] for row in nginx.access_log()]
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == OLD
    assert statuses[-1] == "206" and done.stderr == b""
    assert sorted(path.name for path in tmp_path.iterdir()) == ["doc.bin"]


@pytest.mark.parametrize("changed", [True, False])
async def test_pyftpdlib_resume_compares_size_and_mdtm(root: Path, tmp_path: Path, changed: bool) -> None:
    target = tmp_path / "doc.bin"
    with pyftpd(root) as server:
        kept = await cut_download(f"{server.url}/doc.bin", target)
        if changed:
            change(root / "doc.bin")
        done = await fetch("-C", "-o", str(target), f"{server.url}/doc.bin")
        resumed = server.commands()[-1]
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == (NEW if changed else OLD)
    assert (f"REST {kept}" in resumed) is not changed
    assert (RESTART in done.stderr.decode()) is changed
