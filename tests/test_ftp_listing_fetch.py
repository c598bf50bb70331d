"""Directory listings with facts, end to end: `fetch ftp://host/dir/` uses MLSD when FEAT offers it, else LIST.

Against the in-repo fake server (LIST as vsftpd writes it; MLSD only when a
fault puts MLST in its FEAT reply), pyftpdlib (MLSD) and vsftpd (no MLSD:
LIST).  Every test checks the commands the server received; `;type=d`
keeps RFC 1738's NLST.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
import trio

from fetcher import Client
from tests.conftest import require, run_fetch
from tests.interop.content import public_tempdir, remove_tree
from tests.interop.ftp_servers import pyftpd, start_vsftpd, vsftpd_missing
from tests.servers.ftp_fake import FakeFtpServer, Faults, serving

pytestmark = pytest.mark.usefixtures("no_netrc")

FILES = {
    "/pub/a.txt": b"in pub\n",
    "/pub/sub/deep.txt": b"deep\n",
    "/pub/with space.txt": b"spaced\n",
    "/pub/\x1b[31mred.txt": b"red\n",
}
LOGIN = ["USER anonymous", "PASS anonymous@", "PWD"]
MLST_FEAT = [b"211-Features:", b" EPSV", b" MLST type*;size*;modify*;perm*;", b" SIZE", b"211 End"]


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=60))


def rows(output: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in output.decode().splitlines()]


# -- the in-repo server -------------------------------------------------------------------


async def test_list_when_feat_offers_no_mlsd() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        done = await cli("--json", f"{server.url}/pub/")
    assert done.returncode == 0, done.stderr
    found = [(row["name"], row["type"], row["size"], row["modified"], row["precision"]) for row in rows(done.stdout)]
    assert found == [
        ("\x1b[31mred.txt", "file", 4, "2026-11-21T00:00:00+00:00", "day"),
        ("a.txt", "file", 7, "2026-11-21T00:00:00+00:00", "day"),
        ("sub", "directory", 4096, "2026-11-21T00:00:00+00:00", "day"),
        ("with space.txt", "file", 7, "2026-11-21T00:00:00+00:00", "day"),
    ]
    assert rows(done.stdout)[2]["url"] == f"{server.url}/pub/sub/"
    assert rows(done.stdout)[1]["mode"] == "-rw-r--r--"
    # JSON is ASCII: the escape character travels as \u001b, never raw.
    assert b"\x1b" not in done.stdout
    assert server.sessions[0] == [*LOGIN, "CWD pub", "FEAT", "TYPE A", "EPSV", "LIST", "QUIT"]


async def test_mlsd_when_feat_offers_it_and_feat_once_per_connection() -> None:
    faults = Faults(replies={"FEAT": MLST_FEAT})
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        async with Client() as client:
            first = await client.fetch(f"{server.url}/pub/")
            second = await client.fetch(f"{server.url}/pub/sub/")
    assert [(e.name, e.type, e.size, e.modified, e.extra["precision"]) for e in second.entries] == [
        ("deep.txt", "file", 5, datetime.fromisoformat("2026-11-21T10:30:00+00:00"), "second"),
    ]
    assert [e.type for e in first.entries] == ["file", "file", "directory", "file"]
    assert first.metadata["command"] == "MLSD"
    assert server.sessions[0] == [
        *LOGIN, "CWD pub", "FEAT", "TYPE A", "EPSV", "MLSD", "CWD /", "CWD pub", "CWD sub", "EPSV", "MLSD", "QUIT",
    ]  # fmt: skip


async def test_refused_mlsd_falls_back_to_list_and_refused_list_to_nlst() -> None:
    faults = Faults(replies={"FEAT": MLST_FEAT, "MLSD": [b"500 Unknown command."]})
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        async with Client() as client:
            listed = await client.fetch(f"{server.url}/pub/")
    assert listed.metadata["command"] == "LIST"
    assert [e.type for e in listed.entries] == ["file", "file", "directory", "file"]
    assert server.sessions[0][3:] == ["CWD pub", "FEAT", "TYPE A", "EPSV", "MLSD", "EPSV", "LIST", "QUIT"]
    faults = Faults(replies={"LIST": [b"502 Command not implemented."]})
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        async with Client() as client:
            named = await client.fetch(f"{server.url}/pub/")
    # Names only, as before: NLST cannot say what they are.
    assert [(e.name, e.type) for e in named.entries][:2] == [("\x1b[31mred.txt", "unknown"), ("a.txt", "unknown")]
    assert server.sessions[0][3:] == ["CWD pub", "FEAT", "TYPE A", "EPSV", "LIST", "EPSV", "NLST", "QUIT"]


async def test_typecode_d_keeps_nlst() -> None:
    faults = Faults(replies={"FEAT": MLST_FEAT})
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        done = await cli("--json", f"{server.url}/pub/;type=d")
    assert done.returncode == 0, done.stderr
    assert [(row["name"], row["type"]) for row in rows(done.stdout)][1:3] == [("a.txt", "unknown"), ("sub", "unknown")]
    assert "modified" not in rows(done.stdout)[0]
    assert server.sessions[0] == [*LOGIN, "CWD pub", "TYPE A", "EPSV", "NLST", "QUIT"]


async def test_ftp_facts_fills_in_what_list_lacks_and_only_when_asked() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        plain = await cli("--json", f"{server.url}/pub/")
        asked = await cli("--json", "--ftp-facts", f"{server.url}/pub/")
    assert plain.returncode == asked.returncode == 0, asked.stderr
    # Without the option: the listing alone (no SIZE, no MDTM).
    assert server.sessions[0] == [*LOGIN, "CWD pub", "FEAT", "TYPE A", "EPSV", "LIST", "QUIT"]
    # With it: LIST's dates are to the day, so MDTM for each file (sizes are listed: no SIZE); never a directory.
    assert server.sessions[1] == [*LOGIN, "CWD pub", "FEAT", "TYPE A", "EPSV", "LIST", "MDTM \x1b[31mred.txt",
                                  "MDTM a.txt", "MDTM with space.txt", "QUIT"]  # fmt: skip
    found = [(row["name"], row["type"], row["size"], row["modified"], row["precision"]) for row in rows(asked.stdout)]
    assert found == [
        ("\x1b[31mred.txt", "file", 4, "2026-11-21T10:30:00+00:00", "second"),
        ("a.txt", "file", 7, "2026-11-21T10:30:00+00:00", "second"),
        ("sub", "directory", 4096, "2026-11-21T00:00:00+00:00", "day"),
        ("with space.txt", "file", 7, "2026-11-21T10:30:00+00:00", "second"),
    ]


async def test_ftp_facts_after_nlst_and_never_when_mlsd_gave_everything() -> None:
    faults = Faults(replies={"LIST": [b"502 Command not implemented."]})
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        names = await cli("--json", f"{server.url}/pub/")
        asked = await cli("--json", "--ftp-facts", f"{server.url}/pub/")
    assert names.returncode == asked.returncode == 0, asked.stderr
    assert not any(line.startswith(("SIZE", "MDTM")) for line in server.sessions[0])
    assert server.sessions[1][-10:] == ["TYPE I", "SIZE \x1b[31mred.txt", "MDTM \x1b[31mred.txt", "SIZE a.txt",
                                        "MDTM a.txt", "SIZE sub", "MDTM sub", "SIZE with space.txt",
                                        "MDTM with space.txt", "QUIT"]  # fmt: skip
    found = {row["name"]: (row["type"], row.get("size"), row.get("modified")) for row in rows(asked.stdout)}
    assert found["a.txt"] == ("file", 7, "2026-11-21T10:30:00+00:00")
    assert found["sub"] == ("unknown", None, None)  # SIZE and MDTM refused: still a name of unknown type
    async with serving(FakeFtpServer(FILES, faults=Faults(replies={"FEAT": MLST_FEAT}))) as server:
        full = await cli("--json", "--ftp-facts", f"{server.url}/pub/")
    assert full.returncode == 0, full.stderr
    assert server.sessions[0] == [*LOGIN, "CWD pub", "FEAT", "TYPE A", "EPSV", "MLSD", "QUIT"]


async def test_terminal_listing_looks_like_ls_and_is_escaped() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        done = await cli(f"{server.url}/pub/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines() == [
        "-rw-r--r--     4  2026-11-21  \\x1b[31mred.txt",
        "-rw-r--r--     7  2026-11-21  a.txt",
        "drwxr-xr-x  4096  2026-11-21  sub",
        "-rw-r--r--     7  2026-11-21  with space.txt",
    ]


async def test_listing_bytes_cap() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        done = await cli("--limit", "listing_bytes=100", f"{server.url}/pub/")
    assert done.returncode == 7
    assert b"more than 100 bytes in one listing" in done.stderr
    assert b"--limit listing_bytes=N" in done.stderr
    assert done.stdout == b""


# -- real servers --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree() -> Iterator[Path]:
    root = public_tempdir("fetcher-listing-")
    (root / "dir").mkdir(mode=0o755)
    (root / "dir" / "sub").mkdir(mode=0o755)
    (root / "dir" / "file.txt").write_bytes(b"twelve bytes")
    (root / "dir" / "old.bin").write_bytes(bytes(300))
    (root / "dir" / "link").symlink_to("file.txt")
    for path in (root / "dir" / "file.txt", root / "dir" / "old.bin"):
        path.chmod(0o644)
    os.utime(root / "dir" / "old.bin", (1552000000, 1552000000))  # 2019-03-07 23:06:40 UTC
    yield root
    remove_tree(root)


def _have_pyftpdlib() -> bool:
    try:
        import pyftpdlib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.interop
async def test_pyftpdlib_mlsd(tree: Path) -> None:
    require(_have_pyftpdlib(), "pyftpdlib", "pip install pyftpdlib")
    with pyftpd(tree) as server:
        done = await cli("--json", f"{server.url}/dir/")
        await trio.sleep(0.05)
    assert done.returncode == 0, done.stderr
    found = {row["name"]: row for row in rows(done.stdout)}
    assert set(found) == {"sub", "file.txt", "old.bin", "link"}
    for row in found.values():
        assert row["type"] in ("file", "directory") and row["size"] is not None and row["precision"] == "second"
    assert (found["file.txt"]["type"], found["file.txt"]["size"]) == ("file", 12)
    assert (found["old.bin"]["size"], found["old.bin"]["modified"]) == (300, "2019-03-07T23:06:40+00:00")
    assert found["sub"]["type"] == "directory"
    # pyftpdlib's MLSD describes what a link points to.
    assert (found["link"]["type"], found["link"]["size"]) == ("file", 12)
    (commands,) = server.commands()
    assert commands == ["USER anonymous", "PASS anonymous@", "PWD", "CWD dir", "FEAT", "TYPE A", "EPSV", "MLSD",
                        "QUIT"]  # fmt: skip


def _vsftpd_commands_since(server: object, mark: int) -> list[str]:
    deadline = time.monotonic() + 2
    commands: list[str] = server.commands()  # type: ignore[attr-defined]
    while time.monotonic() < deadline and (not commands[mark:] or commands[-1] != "QUIT"):
        time.sleep(0.02)
        commands = server.commands()  # type: ignore[attr-defined]
    return commands[mark:]


@pytest.mark.interop
async def test_vsftpd_list(tree: Path) -> None:
    reason = vsftpd_missing()
    require(reason is None, str(reason), "apt-get install vsftpd (see .ci/run), and run the tests as root")
    server = start_vsftpd(tree)
    try:
        done = await cli("--json", f"{server.url}/dir/")
        commands = _vsftpd_commands_since(server, 0)
        table = await cli(f"{server.url}/dir/")
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr
    found = {row["name"]: row for row in rows(done.stdout)}
    assert set(found) == {"sub", "file.txt", "old.bin", "link"}
    for row in found.values():
        assert row["size"] is not None and row["modified"] and row["precision"] in ("minute", "day")
    assert (found["file.txt"]["type"], found["file.txt"]["size"], found["file.txt"]["mode"]) == (
        "file", 12, "-rw-r--r--")  # fmt: skip
    assert (found["old.bin"]["modified"], found["old.bin"]["precision"]) == ("2019-03-07T00:00:00+00:00", "day")
    assert (found["link"]["type"], found["link"]["target"]) == ("link", "file.txt")
    assert (found["sub"]["type"], found["sub"]["url"]) == ("directory", f"{server.url}/dir/sub/")
    assert commands == ["USER anonymous", "PASS <password>", "PWD", "CWD dir", "FEAT", "TYPE A", "EPSV", "LIST",
                        "QUIT"]  # fmt: skip
    lines = table.stdout.decode().splitlines()
    assert any(line.startswith("-rw-r--r--  ") and line.endswith("  2019-03-07        old.bin") for line in lines)
    assert any(line.startswith("lrwxrwxrwx ") and line.endswith("  link -> file.txt") for line in lines)
