"""`fetch -r` and `-r -N` against real servers (issue 16): Pure-FTPd (MLSD), vsftpd (LIST only), nginx (ETag).

One tree made for these tests, `mirror/start/` with files in three levels and
links out of it (`../outside.txt`, `/mirror/sibling/`), served by each
server.  Every test runs the real `fetch` twice and asserts on what the
server recorded: the second `-r -N` run transfers no file body (Pure-FTPd's
transfer log, vsftpd's command log, nginx's log of status and body bytes),
and nothing outside `mirror/start/` is ever asked for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import trio

from tests.conftest import require, run_fetch
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.ftp_servers import Vsftpd, start_vsftpd, vsftpd_missing
from tests.interop.nginx_server import Nginx, find_nginx, run_nginx
from tests.interop.pureftpd_server import PureFtpd, pureftpd_missing, pureftpd_root, start_pureftpd

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("no_netrc")]

#: Files below the start directory (27: nine in each of three levels), then what lies outside it.
INSIDE = {f"mirror/start/{level}f{i}.txt": f"{level}file {i}\n".encode()
          for level in ("", "d1/", "d1/d2/") for i in range(9)}  # fmt: skip
PAGES = {
    "mirror/start/index.html": b'<a href="f0.txt">f0</a> <a href="d1/index.html">d1</a> <a href="../outside.txt">up</a>'
    b' <a href="/mirror/sibling/s.txt">sibling</a>',
    "mirror/start/d1/index.html": b'<a href="f1.txt">f1</a> <a href="d2/f2.txt">f2</a> <a href="../../outside.txt">x'
    b"</a>",
}  # fmt: skip
OUTSIDE = {"mirror/outside.txt": b"outside the start directory\n", "mirror/sibling/s.txt": b"a sibling\n"}
#: Symbolic links: one up (a loop), one out to the sibling directory, one to a directory inside (followed).
#: vsftpd's LIST names their targets; Pure-FTPd's MLSD does not (type=OS.unix=slink:), so fetch asks PWD.
LINKS = {"mirror/start/up": "..", "mirror/start/d1/side": "../../sibling", "mirror/start/d1/d2link": "d2"}
#: What -r saves: the files inside, and d2's nine again through d2link.
SAVED = len(INSIDE) + len(PAGES) + 9


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    base = public_tempdir("fetcher-mirror-")
    for relative, data in {**INSIDE, **PAGES, **OUTSIDE}.items():
        path = base / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for link, target in LINKS.items():
        os.symlink(target, base / link)
    for directory, _, _ in os.walk(base):
        os.chmod(directory, 0o755)
    yield base
    remove_tree(base)


@pytest.fixture(scope="module")
def pureftpd(tree: Path) -> Iterator[PureFtpd]:
    reason = pureftpd_missing()
    require(reason is None, str(reason),
            f"apt-get download pure-ftpd && dpkg -x pure-ftpd_*.deb {pureftpd_root()} (see .ci/run)")  # fmt: skip
    server = start_pureftpd(tree)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def vsftpd(tree: Path) -> Iterator[Vsftpd]:
    reason = vsftpd_missing()
    require(reason is None, str(reason), "apt-get install vsftpd (see .ci/run), and run the tests as root")
    server = start_vsftpd(tree)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def nginx(tree: Path) -> Iterator[Nginx]:
    binary = find_nginx()
    require(binary is not None, "nginx", "apt-get install nginx-light")
    assert binary is not None
    with run_nginx(tree, nginx=binary) as server:
        yield server


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = {"http_proxy": "", "https_proxy": "", "HTTPS_PROXY": "", "no_proxy": "", "NO_PROXY": ""}
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=120, env=env))


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def summary(result: subprocess.CompletedProcess[bytes]) -> str:
    found = re.search(r"fetch: mirror: (.*); \d+ bytes", result.stderr.decode())
    assert found is not None, result.stderr
    return found.group(1)


def saved_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)).split("/", 1)[1]: p.read_bytes() for p in out.rglob("*.txt")}


# -- FTP with MLSD: Pure-FTPd ------------------------------------------------------------


async def test_pureftpd_mlsd_mirror_twice_transfers_nothing_the_second_time(
    pureftpd: PureFtpd, tree: Path, tmp_path: Path
) -> None:
    out, manifest = tmp_path / "out", tmp_path / "m.jsonl"
    argv = ["-r", "-N", "--layout", "tree", "-d", str(out), "--manifest", str(manifest), "--no-progress"]
    start = f"{pureftpd.url()}/mirror/start/"
    listing = await cli("--json", start)
    assert listing.returncode == 0, listing.stderr
    rows = [json.loads(line) for line in listing.stdout.decode().splitlines()]
    # MLSD: type, size and time to the second for every entry.
    assert {(row["name"], row["type"]) for row in rows} >= {("f0.txt", "file"), ("d1", "directory")}
    assert all(row["precision"] == "second" and row["modified"] and row["size"] is not None
               for row in rows if row["type"] == "file")  # fmt: skip
    first = await cli(*argv, start)
    assert first.returncode == 0, first.stderr
    assert summary(first) == f"{SAVED} new, 0 updated, 0 unchanged, 2 skipped, 0 failed"
    transferred = pureftpd.transfers()
    assert len(transferred) == SAVED
    assert all(f'"GET {tree}/mirror/start/' in line for line in transferred), transferred  # nothing outside
    second = await cli(*argv, start)
    assert second.returncode == 0, second.stderr
    assert summary(second) == f"0 new, 0 updated, {SAVED} unchanged, 2 skipped, 0 failed"
    assert pureftpd.transfers() == transferred  # no file body the second time
    skipped = {row["name"]: row["reason"] for row in records(manifest) if row["status"] == "skipped"}
    assert skipped == {"up": "a loop: a symbolic link to /mirror/ (this directory or one above it)",
                       "side": "a symbolic link to /mirror/sibling/, outside the start directory (--parent follows it)"}
    files = saved_files(out)
    assert {name: files[name] for name in INSIDE} == INSIDE and "mirror/outside.txt" not in files


# -- FTP without MLSD: vsftpd ---------------------------------------------------------------


def logged(server: Vsftpd) -> list[str]:
    """vsftpd's command log once every session in it has logged its QUIT (each session process writes its own)."""
    deadline = time.monotonic() + 5
    while True:
        text = server.log()
        if text.count('"USER ') <= text.count('"QUIT"') or time.monotonic() > deadline:
            return server.commands()
        time.sleep(0.02)


async def test_vsftpd_list_mirror_twice_and_never_outside(vsftpd: Vsftpd, tmp_path: Path) -> None:
    out, manifest = tmp_path / "out", tmp_path / "m.jsonl"
    argv = ["-r", "-N", "--layout", "tree", "-d", str(out), "--manifest", str(manifest), "--no-progress"]
    start = f"{vsftpd.url}/mirror/start/"
    mark = len(logged(vsftpd))
    first = await cli(*argv, start)
    assert first.returncode == 0, first.stderr
    assert summary(first) == f"{SAVED} new, 0 updated, 0 unchanged, 2 skipped, 0 failed"
    between = len(logged(vsftpd))
    second = await cli(*argv, start)
    assert second.returncode == 0, second.stderr
    assert summary(second) == f"0 new, 0 updated, {SAVED} unchanged, 2 skipped, 0 failed"
    one, two = logged(vsftpd)[mark:between], logged(vsftpd)[between:]
    assert sum(command.startswith("RETR") and command.endswith((".txt", ".html")) for command in one) == SAVED
    assert not any(command.startswith("RETR") and command.endswith((".txt", ".html")) for command in two)
    assert "LIST" in two and "MLSD" not in two
    # The second run asks nothing about a file; d2link is tried as a file first (SIZE, MDTM, RETR: 550), then CWD.
    assert not any(command.startswith(("SIZE", "MDTM")) and command.endswith((".txt", ".html")) for command in two)
    assert not any("outside" in command or "sibling" in command for command in one + two)
    files = saved_files(out)
    assert {name: files[name] for name in INSIDE} == INSIDE and "mirror/outside.txt" not in files


async def test_vsftpd_ftp_facts_asks_mdtm_only_when_asked(vsftpd: Vsftpd, tree: Path) -> None:
    start = f"{vsftpd.url}/mirror/start/"
    mark = len(logged(vsftpd))
    plain = await cli("--json", start)
    between = len(logged(vsftpd))
    asked = await cli("--json", "--ftp-facts", start)
    assert plain.returncode == asked.returncode == 0, asked.stderr
    one, two = logged(vsftpd)[mark:between], logged(vsftpd)[between:]
    assert not any(command.startswith(("SIZE", "MDTM")) for command in one)
    # LIST gave sizes and times to the minute: MDTM for each file, never SIZE, never for the directory d1.
    assert sorted(command for command in two if command.startswith(("SIZE", "MDTM"))) == sorted(
        [f"MDTM f{i}.txt" for i in range(9)] + ["MDTM index.html", "SIZE up", "MDTM up"])  # a link: its target's
    plain_rows = {row["name"]: row for row in map(json.loads, plain.stdout.decode().splitlines())}
    asked_rows = {row["name"]: row for row in map(json.loads, asked.stdout.decode().splitlines())}
    assert plain_rows["f0.txt"]["precision"] == "minute" and asked_rows["f0.txt"]["precision"] == "second"
    assert asked_rows["d1"]["precision"] == "minute"
    real = datetime.fromtimestamp(int((tree / "mirror/start/f0.txt").stat().st_mtime), UTC)
    assert asked_rows["f0.txt"]["modified"] == real.isoformat()


# -- HTTP: nginx, ETag and If-None-Match ---------------------------------------------------


async def test_nginx_mirror_twice_304_by_etag_and_never_outside(nginx: Nginx, tmp_path: Path) -> None:
    out, manifest = tmp_path / "out", tmp_path / "m.jsonl"
    argv = ["-r", "-N", "--layout", "tree", "-d", str(out), "--manifest", str(manifest), "--no-progress"]
    start = nginx.url("/mirror/start/index.html")
    mark = len(nginx.validators_log())
    first = await cli(*argv, start)
    assert first.returncode == 0, first.stderr
    between = len(nginx.validators_log())
    second = await cli(*argv, start)
    assert second.returncode == 0, second.stderr
    one, two = nginx.validators_log()[mark:between], nginx.validators_log()[between:]
    asked = {request.split()[1] for request, *_ in one + two}
    assert not any(path.startswith(("/mirror/outside", "/mirror/sibling")) for path in asked), asked
    static = [row for row in two if row[0].split()[1] != "/robots.txt"]
    assert len(static) == 5 and all(row[1] == 304 and row[2] == 0 for row in static), static  # no body
    assert summary(second) == "0 new, 0 updated, 5 unchanged, 0 skipped, 0 failed"
    state = {row["url"].split(str(nginx.port), 1)[1]: row["etag"] for row in records(out / ".fetch-etags.jsonl")}
    # What nginx received is what the first run stored (nginx logs a quote as \x22; text/html is gzipped: W/).
    sent = {row[0].split()[1]: row[3].replace("\\x22", '"') for row in static}
    assert sent == state and set(state) == {"/mirror/start/index.html", "/mirror/start/f0.txt",
                                            "/mirror/start/d1/index.html", "/mirror/start/d1/f1.txt",
                                            "/mirror/start/d1/d2/f2.txt"}  # fmt: skip
    assert all(row[4] != "-" for row in static)  # If-Modified-Since goes along
