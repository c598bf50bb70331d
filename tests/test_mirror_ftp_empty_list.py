"""An anonymous FTP area whose LIST is empty while NLST names every file (issue 29, item 17).

Debian's `ftpd` (the OpenBSD-derived one) runs /bin/ls for LIST; in an
anonymous chroot without it, LIST answers 150, sends no byte, 226, while
NLST, built into the server, names every file.  A LIST that sent nothing at
all (not even the `total 0` line of an empty directory) is followed by an
NLST before the listing is called empty, so `fetch ftp://HOST/` lists and
`-r` mirrors.  The in-repo fake server plays that ftpd (`Faults.empty_list`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import trio

from tests.conftest import run_fetch
from tests.servers.ftp_fake import FakeFtpServer, Faults, serving

pytestmark = pytest.mark.usefixtures("no_netrc")

FILES = {
    "/pub/a.txt": b"alpha\n",
    "/pub/b.bin": bytes(range(256)) * 3,
    "/pub/sub/deep.txt": b"deep\n",
}


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=60))


async def test_an_empty_list_is_followed_by_nlst() -> None:
    async with serving(FakeFtpServer(FILES, faults=Faults(empty_list=True))) as server:
        done = await cli("--json", f"{server.url}/pub/")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [row["name"] for row in rows] == ["a.txt", "b.bin", "sub"]
    assert rows[0]["url"] == f"{server.url}/pub/a.txt"
    assert server.sessions[0][3:] == ["CWD pub", "FEAT", "TYPE A", "EPSV", "LIST", "EPSV", "NLST", "QUIT"]


async def test_an_empty_directory_stays_empty_after_the_extra_nlst() -> None:
    async with serving(FakeFtpServer({"/pub/a.txt": b"a"}, home="/", faults=Faults(empty_list=True))) as server:
        server.directories.add("/empty")
        done = await cli("--json", f"{server.url}/empty/")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    assert server.sessions[0][3:] == ["CWD empty", "FEAT", "TYPE A", "EPSV", "LIST", "EPSV", "NLST", "QUIT"]


async def test_a_list_with_entries_asks_no_nlst() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        done = await cli("--json", f"{server.url}/pub/")
    assert done.returncode == 0, done.stderr
    assert "NLST" not in server.sessions[0]


async def test_a_mirror_of_such_an_area_gets_every_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    async with serving(FakeFtpServer(FILES, faults=Faults(empty_list=True))) as server:
        done = await cli("-r", "--layout", "tree", "-d", str(out), "--no-progress", f"{server.url}/pub/")
    assert done.returncode == 0, done.stderr
    site = out / f"127.0.0.1_{server.port}" / "pub"
    for path, data in FILES.items():
        assert (site / path.removeprefix("/pub/")).read_bytes() == data
    assert "fetch: mirror: 3 new, 0 updated, 0 unchanged, 0 skipped, 0 failed" in done.stderr.decode()
    sent = [line.split(" ", 1)[0] for session in server.sessions for line in session]
    assert sent.count("LIST") == sent.count("NLST") == 2  # /pub/ and /pub/sub/: each LIST empty, then NLST


async def test_an_nlst_refused_after_an_empty_list_leaves_the_listing_empty() -> None:
    faults = Faults(empty_list=True, replies={"NLST": [b"502 Command not implemented."]})
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        done = await cli("--json", f"{server.url}/pub/")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""  # LIST's answer (nothing) stands
    assert server.sessions[0][3:] == ["CWD pub", "FEAT", "TYPE A", "EPSV", "LIST", "EPSV", "NLST", "QUIT"]
