"""ftp:// against GNU inetutils ftpd (tests/interop/inetutils_ftpd.py): a live `ls -l` LIST, and -r -N over it.

inetutils ftpd offers no MLSD and lists with /bin/ls semantics: a "total"
line, LF line ends, dates to the day for old files, FIFOs and links as
`ls -l` shows them.  The listing is read live here (the byte-for-byte
capture is in tests/test_ftp_listing.py); the mirror skips the FIFO and,
only with --ftp-facts, compares a link by its target's SIZE and MDTM.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.conftest import require, run_fetch
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.inetutils_ftpd import InetutilsFtpd, inetutils_missing, inetutils_root

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("no_netrc")]

OLD = 1551585906  # 2019-03-03 04:05:06 UTC: listed as "Mar  3  2019"


@pytest.fixture(scope="module")
def start_url() -> Iterator[str]:
    """The URL of the directory `start` of a tree served by inetutils ftpd."""
    reason = inetutils_missing()
    unpack = f"apt-get download inetutils-ftpd && dpkg -x inetutils-ftpd_*.deb {inetutils_root()} (see .ci/run)"
    require(reason is None, str(reason), unpack)
    home = public_tempdir("fetcher-inetutils-")
    start = home / "start"
    (start / "sub").mkdir(parents=True)
    (start / "a.txt").write_bytes(b"alpha\n")
    (start / "sub" / "deep.txt").write_bytes(b"deep\n")
    (home / "outside.txt").write_bytes(b"outside\n")
    os.symlink("a.txt", start / "link")
    os.mkfifo(start / "fifo")
    os.utime(start / "a.txt", (OLD, OLD))
    for directory in (home, start, start / "sub"):
        directory.chmod(0o755)
    server = InetutilsFtpd()
    yield server.url(start)
    server.stop()
    remove_tree(home)


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=120))


async def test_a_live_ls_listing_gives_every_entrys_facts(start_url: str) -> None:
    done = await cli("--json", start_url)
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in map(json.loads, done.stdout.decode().splitlines())}
    assert sorted(rows) == ["a.txt", "fifo", "link", "sub"]  # no "total" line, no . or ..
    facts = {name: (row["type"], row["size"], row["precision"], row.get("target")) for name, row in rows.items()}
    assert facts == {"a.txt": ("file", 6, "day", None), "fifo": ("other", 0, "minute", None),
                     "link": ("link", 5, "minute", "a.txt"), "sub": ("directory", 4096, "minute", None)}  # fmt: skip
    assert rows["a.txt"]["modified"] == "2019-03-03T00:00:00+00:00" and rows["a.txt"]["mode"] == "-rw-r--r--"
    assert rows["sub"]["url"].endswith("/start/sub/")


@pytest.mark.parametrize("facts", [False, True])
async def test_mirror_twice_skips_the_fifo_and_compares_links_only_with_ftp_facts(
    start_url: str, tmp_path: Path, facts: bool
) -> None:
    out, manifest = tmp_path / "out", tmp_path / "m.jsonl"
    argv = ["-r", "-N", "-d", str(out), "--manifest", str(manifest), "--no-progress",
            *(["--ftp-facts"] if facts else []), start_url]  # fmt: skip
    first = await cli(*argv)
    second = await cli(*argv)
    assert first.returncode == second.returncode == 0, second.stderr
    assert "fetch: mirror: 3 new, 0 updated, 0 unchanged, 1 skipped, 0 failed" in first.stderr.decode()
    # A link's listed size and time are its own: only SIZE/MDTM of its target (--ftp-facts) show it unchanged.
    again = "0 new, 0 updated, 3 unchanged" if facts else "0 new, 1 updated, 2 unchanged"
    assert f"fetch: mirror: {again}, 1 skipped, 0 failed" in second.stderr.decode()
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    skipped = [row for row in rows if row["status"] == "skipped"]
    assert {row["name"] for row in skipped} == {"fifo"} and "FIFO" in str(skipped[0]["reason"])
    assert not any("outside" in str(row["url"]) for row in rows)
    assert (out / "a.txt").read_bytes() == b"alpha\n" and (out / "link").read_bytes() == b"alpha\n"
    assert (out / "a.txt").stat().st_mtime == OLD  # the server's time (MDTM), to the second
