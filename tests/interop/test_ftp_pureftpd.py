"""ftp:// against a private Pure-FTPd (tests/interop/pureftpd_server.py), started by the fixture.

Pure-FTPd differs from vsftpd where it matters to a client: a banner that
carries a fortune (here one decorated with terminal escapes and a bell),
multi-line 226 replies, "." and ".." in NLST, and 550 "Can't check for file
existence" to NLST of a name that is not there.  It does not log commands
without syslog, so the tests check its transfer log instead.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.conftest import require, run_fetch
from tests.interop.pureftpd_server import (
    EMPTY_USER,
    PASSWORD,
    PureFtpd,
    pureftpd_missing,
    pureftpd_root,
    start_pureftpd,
)

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("no_netrc")]


@pytest.fixture(scope="module")
def pureftpd(content_tree: Path) -> Iterator[PureFtpd]:
    reason = pureftpd_missing()
    require(
        reason is None,
        str(reason),
        f"apt-get download pure-ftpd && dpkg -x pure-ftpd_*.deb {pureftpd_root()} (see .ci/run), and run as root",
    )
    server = start_pureftpd(content_tree)
    yield server
    server.stop()


async def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, cwd=cwd, timeout=120))


async def test_retrieval_text_and_binary(pureftpd: PureFtpd, content_tree: Path, tmp_path: Path) -> None:
    deep = await cli(f"{pureftpd.url()}/a/b/c/deep.txt")
    assert deep.returncode == 0, deep.stderr
    assert deep.stdout == (content_tree / "a/b/c/deep.txt").read_bytes()
    saved = await cli("-o", str(tmp_path / "tiny.png"), f"{pureftpd.url()}/images/tiny.png")
    assert saved.returncode == 0, saved.stderr
    assert (tmp_path / "tiny.png").read_bytes() == (content_tree / "images/tiny.png").read_bytes()
    transfers = " ".join(pureftpd.transfers())
    assert '/a/b/c/deep.txt" 200' in transfers
    assert '/images/tiny.png" 200' in transfers


async def test_listings_drop_dot_entries_and_name_prefixes(pureftpd: PureFtpd) -> None:
    url = pureftpd.url()
    shown = url.replace(PASSWORD, "***")  # JSON output never shows a password
    # "a/" is listed with MLSD (typed: the directory's URL ends in "/"); ";type=d" with NLST.
    for target, b in ((f"{url}/a/", f"{shown}/a/b/"), (f"{url}/a;type=d", f"{shown}/a/b")):
        done = await cli("--json", target)
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        expected = [("a.txt", f"{shown}/a/a.txt"), ("b", b)]
        assert sorted((row["name"], row["url"]) for row in rows) == expected


async def test_an_empty_directory_is_an_empty_listing_and_a_missing_one_is_not_found(pureftpd: PureFtpd) -> None:
    url = pureftpd.url(EMPTY_USER)
    for target in (f"{url}/empty/", f"{url}/empty;type=d"):
        done = await cli("--json", target)
        assert done.returncode == 0, (target, done.stderr)
        assert done.stdout == b""
    for target in (f"{url}/missing/", f"{url}/missing;type=d"):
        done = await cli(target)
        assert done.returncode == 6, (target, done.stderr)
        assert done.stderr.startswith(b"fetch: ")
        assert b"550" in done.stderr


async def test_an_empty_directory_under_r(pureftpd: PureFtpd, tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.jsonl"
    out = tmp_path / "out"
    done = await cli("-r", "--layout", "tree", "-d", str(out), "--manifest", str(manifest),
                     f"{pureftpd.url(EMPTY_USER)}/")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (host,) = out.iterdir()  # --layout tree: one directory per host
    saved = {str(path.relative_to(host)): path.read_bytes() for path in host.rglob("*") if path.is_file()}
    assert saved["file.txt"] == b"next to an empty directory\n"
    assert saved["empty/index.listing.json"] == b""  # the empty directory's listing: no entries
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert records and all(record.get("status") != "failed" for record in records), records


async def test_a_banner_decorated_with_escapes_is_shown_escaped_and_the_transfer_goes_on(pureftpd: PureFtpd) -> None:
    done = await cli("-v", f"{pureftpd.url()}/hello.txt")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"Hello, world!\n"
    assert b"\x1b" not in done.stderr and b"\x07" not in done.stderr
    assert b"< 220-Welcome to \\x1b[1;31mPure\\x1b[0m-FTPd \\x1b]0;title\\x07 with a bell \\x07" in done.stderr
    # Pure-FTPd's multi-line 226 is traced too.
    assert b"< 226-File successfully transferred" in done.stderr
