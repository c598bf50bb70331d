"""ftp:// against a private vsftpd (tests/interop/ftp_servers.py), started by the fixture.

vsftpd logs every command (log_ftp_protocol=YES), so the tests check what
the server received as well as what the user got.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import trio

from fetcher import Client
from fetcher.errors import AuthError, NotFound
from tests.conftest import require, run_fetch
from tests.interop.content import sha256_file
from tests.interop.ftp_servers import PASSWORD, USER, Vsftpd, start_vsftpd, vsftpd_missing

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("no_netrc")]


@pytest.fixture(scope="module")
def vsftpd(content_tree: Path) -> Iterator[Vsftpd]:
    reason = vsftpd_missing()
    require(reason is None, str(reason), "apt-get install vsftpd (see .ci/run), and run the tests as root")
    server = start_vsftpd(content_tree)
    yield server
    server.stop()


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=120))


def logged_since(server: Vsftpd, mark: int) -> list[str]:
    # vsftpd writes its log from the session process; give it a moment.
    deadline = time.monotonic() + 2
    commands = server.commands()
    while time.monotonic() < deadline and (not commands[mark:] or commands[-1] != "QUIT"):
        time.sleep(0.02)
        commands = server.commands()
    return commands[mark:]


async def test_anonymous_retrieval(vsftpd: Vsftpd, content_tree: Path) -> None:
    mark = len(vsftpd.commands())
    async with Client() as client:
        result = await client.fetch(f"{vsftpd.url}/a/b/c/deep.txt")
    assert result.content == (content_tree / "a/b/c/deep.txt").read_bytes()
    assert result.size == len(result.content)
    assert logged_since(vsftpd, mark) == [
        "USER anonymous",
        "PASS <password>",
        "PWD",
        "CWD a",
        "CWD b",
        "CWD c",
        "TYPE I",
        "SIZE deep.txt",
        "MDTM deep.txt",
        "EPSV",
        "RETR deep.txt",
        "QUIT",
    ]


async def test_a_user_with_a_password_and_paths_relative_to_a_home_that_is_not_root(vsftpd: Vsftpd) -> None:
    base = f"ftp://{USER}:{PASSWORD}@127.0.0.1:{vsftpd.port}"
    absolute = quote(str(vsftpd.home), safe="")  # one segment: "%2Ftmp%2F...%2Ffetchuser"
    mark = len(vsftpd.commands())
    async with Client() as client:
        nested = await client.fetch(f"{base}/sub/nested.txt")
        private = await client.fetch(f"{base}/private.txt")
        again = await client.fetch(f"{base}/{absolute}/private.txt")
    assert nested.content == b"nested private file\n"
    assert private.content == again.content == f"private file of {USER}\n".encode()
    commands = logged_since(vsftpd, mark)
    assert commands[:3] == [f"USER {USER}", "PASS <password>", "PWD"]
    # One connection; back to the login directory (PWD's answer) before the second URL.
    assert commands.count(f"USER {USER}") == 1
    assert commands[3:5] == ["CWD sub", "TYPE I"]
    assert f"CWD {vsftpd.home}" in commands
    assert commands[commands.index(f"CWD {vsftpd.home}") + 1] == "SIZE private.txt"


async def test_a_wrong_password_is_exit_5(vsftpd: Vsftpd) -> None:
    async with Client() as client:
        with pytest.raises(AuthError, match="530"):
            await client.fetch(f"ftp://{USER}:wrong@127.0.0.1:{vsftpd.port}/private.txt")


async def test_550_files(vsftpd: Vsftpd) -> None:
    async with Client() as client:
        with pytest.raises(NotFound, match="550 Failed to open file"):
            await client.fetch(f"{vsftpd.url}/unreadable.txt")
        with pytest.raises(NotFound, match="550"):
            await client.fetch(f"{vsftpd.url}/no-such-file.txt;type=i")
    done = await cli(f"{vsftpd.url}/no-such-file.txt")
    assert done.returncode == 6
    assert b"550" in done.stderr


async def test_directory_listings(vsftpd: Vsftpd) -> None:
    async with Client() as client:
        inside = await client.fetch(f"{vsftpd.url}/a/;type=d")
        named = await client.fetch(f"{vsftpd.url}/a;type=d")
        guessed = await client.fetch(f"{vsftpd.url}/a/b")
    expected = [(e, f"{vsftpd.url}/a/{e}") for e in ("a.txt", "b")]
    assert sorted((e.name, e.url) for e in inside.entries) == expected
    # vsftpd answers "NLST a" with "a/a.txt"; the names are relative to the listed directory.
    assert sorted((e.name, e.url) for e in named.entries) == expected
    # Guessed to be a directory, it is listed with LIST (vsftpd has no MLSD): typed entries.
    assert [(e.name, e.type, e.url) for e in guessed.entries] == [
        ("b.txt", "file", f"{vsftpd.url}/a/b/b.txt"),
        ("c", "directory", f"{vsftpd.url}/a/b/c/"),
    ]
    done = await cli("--links", f"{vsftpd.url}/;type=d")
    assert done.returncode == 0
    links = done.stdout.decode().splitlines()
    assert f"{vsftpd.url}/file%20with%20space.txt" in links
    assert f"{vsftpd.url}/semi%3Bcolon%2541pct.txt" in links
    assert f"{vsftpd.url}/utf8-%C3%B1ame.txt" in links


async def test_names_with_space_semicolon_percent_and_utf8(vsftpd: Vsftpd, content_tree: Path) -> None:
    async with Client() as client:
        listing = await client.fetch(f"{vsftpd.url}/")
        by_name = {entry.name: entry.url for entry in listing.entries}
        for name in ("file with space.txt", "semi;colon%41pct.txt", "utf8-\u00f1ame.txt"):
            url = by_name[name]
            assert url is not None
            result = await client.fetch(url)
            assert result.content == (content_tree / name).read_bytes()


async def test_ascii_mode_line_ends(vsftpd: Vsftpd, content_tree: Path) -> None:
    original = (content_tree / "mixed-eol.txt").read_bytes()
    async with Client() as client:
        text = await client.fetch(f"{vsftpd.url}/mixed-eol.txt;type=a")
    async with Client(raw=True) as client:
        raw = await client.fetch(f"{vsftpd.url}/mixed-eol.txt;type=a")
    assert text.content == original.replace(b"\r\n", b"\n")
    # vsftpd turns LF into CRLF and keeps existing CRLFs and the lone CR.
    assert raw.content == original.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


async def test_64_mib_file_by_sha256_with_its_time(vsftpd: Vsftpd, content_tree: Path, tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    async with Client() as client:
        done = await client.download(f"{vsftpd.url}/big-64M.bin", target)
    source = content_tree / "big-64M.bin"
    assert done.bytes == source.stat().st_size
    assert done.sha256 == sha256_file(source) == hashlib.sha256(target.read_bytes()).hexdigest()
    assert int(target.stat().st_mtime) == int(source.stat().st_mtime)


async def test_resume_with_continue_after_a_cut_transfer(vsftpd: Vsftpd, content_tree: Path, tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    url = f"{vsftpd.url}/big-64M.bin"
    cut = await cli("--max-size", "5M", "-o", str(target), url)
    assert cut.returncode == 7
    assert not target.exists()
    kept = (tmp_path / "big.bin.part").stat().st_size
    assert 0 < kept <= 5 * 1024 * 1024
    mark = len(vsftpd.commands())
    done = await cli("-C", "-o", str(target), url)
    assert done.returncode == 0, done.stderr
    assert sha256_file(target) == sha256_file(content_tree / "big-64M.bin")
    assert not (tmp_path / "big.bin.part").exists()
    commands = logged_since(vsftpd, mark)
    assert commands[-4:] == ["EPSV", f"REST {kept}", "RETR big-64M.bin", "QUIT"]


async def test_bulk_reuses_connections(vsftpd: Vsftpd, tmp_path: Path) -> None:
    names = ["README.txt", "hello.txt", "one-byte.txt", "empty.txt", "dotlines.txt", "a/a.txt", "a/b/b.txt"] * 3
    mark = len(vsftpd.commands())
    async with Client() as client:
        async with client.fetch_all(
            [f"{vsftpd.url}/{name}" for name in names],
            per_host=2,
            destination=lambda url: tmp_path / str(abs(hash(str(url)))),
        ) as results:
            outcomes = [outcome async for outcome in results]
    assert all(outcome.ok for outcome in outcomes), [o.error for o in outcomes if o.error]
    commands = logged_since(vsftpd, mark)
    assert 1 <= commands.count("USER anonymous") <= 2
    assert sum(1 for line in commands if line.startswith("RETR ")) == len(names)
    assert os.path.getsize(tmp_path / str(abs(hash(f"{vsftpd.url}/empty.txt")))) == 0
