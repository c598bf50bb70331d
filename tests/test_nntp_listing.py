"""Group listings are never cut silently (issue 15), and server text in -v is data (issue 14).

Without --range a group listing asks for the newest articles only (a real
group holds hundreds of thousands); what it left out is announced on stderr
with the --range that lists it, and recorded in the listing's metadata.
"""

from __future__ import annotations

import subprocess

import pytest
import trio

from fetcher import Client
from fetcher.errors import LimitExceeded
from tests.conftest import run_fetch
from tests.servers.nntp import Faults, Group, NntpServer, article, serving

pytestmark = pytest.mark.usefixtures("no_netrc")


def groups() -> list[Group]:
    return [
        Group("test.big", [article(n, f"b{n}@example.test", f"Article {n}", b"x\n") for n in range(1, 251)]),
        Group("test.small", [article(n, f"s{n}@example.test", f"Small {n}", b"x\n") for n in range(1, 4)]),
    ]


def base(server: NntpServer) -> str:
    return f"nntp://127.0.0.1:{server.port}"


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=60))


async def test_a_big_group_lists_the_newest_and_says_how_to_get_the_rest() -> None:
    async with serving(NntpServer(groups())) as server:
        newest = await cli(f"{base(server)}/test.big")
        older = await cli("--range", "1-150", f"{base(server)}/test.big")
        whole = await cli("--range", "1-250", f"{base(server)}/test.big")
        async with Client() as client:
            listing = await client.fetch(f"{base(server)}/test.big")
    assert newest.returncode == 0
    rows = newest.stdout.decode().splitlines()
    assert len(rows) == 100 and "Article 151" in rows[0] and "Article 250" in rows[-1]
    assert newest.stderr == (
        b"fetch: note: test.big: listed the newest articles (151-250); about 150 older ones (1-150) were left out: "
        b"add --range 1-150 to list them (--range 1-250 for the whole group)\n"
    )
    assert older.returncode == whole.returncode == 0 and older.stderr == whole.stderr == b""
    assert len(older.stdout.decode().splitlines()) == 150 and len(whole.stdout.decode().splitlines()) == 250
    assert [line for line in server.commands if "OVER" in line] == ["OVER 151-250", "OVER 1-150", "OVER 1-250",
                                                                     "OVER 151-250"]  # fmt: skip
    assert len(listing.entries) == 100 and "--range 1-150" in listing.metadata["note"]


async def test_a_small_group_is_listed_whole_without_a_note() -> None:
    async with serving(NntpServer(groups())) as server:
        result = await cli(f"{base(server)}/test.small")
    assert result.returncode == 0 and result.stderr == b""
    assert len(result.stdout.decode().splitlines()) == 3


async def test_an_overview_past_listing_entries_is_refused() -> None:
    async with serving(NntpServer(groups())) as server:
        result = await cli("--limit", "listing_entries=50", "--range", "1-250", f"{base(server)}/test.big")
        async with Client(limits={"listing_entries": 50}, article_range=(1, 250)) as client:
            with pytest.raises(LimitExceeded, match=r"more than 50 lines in the overview of test\.big"):
                await client.fetch(f"{base(server)}/test.big")
    assert result.returncode == 7
    assert result.stderr.startswith(b"fetch: the server sent more than 50 lines in the overview of test.big")
    assert b"--limit listing_entries=N" in result.stderr


async def test_capabilities_in_the_trace_are_escaped() -> None:
    faults = Faults(extra_capabilities=(b"X-\x1b]0;owned\x07EVIL \x1b[2J", b"X-BIDI \xe2\x80\xaeabc"))
    async with serving(NntpServer(groups(), faults=faults)) as server:
        result = await cli("-v", "--range", "1-2", f"{base(server)}/test.small")
    assert result.returncode == 0
    assert b"\x1b" not in result.stderr and b"\x07" not in result.stderr and b"\xe2\x80\xae" not in result.stderr
    trace = result.stderr.decode()
    assert "* news server capabilities: " in trace and "X-\\x1b]0;OWNED\\x07EVIL" in trace


async def test_capabilities_past_reply_lines_are_refused() -> None:
    faults = Faults(extra_capabilities=tuple(b"X-CAP-%d" % n for n in range(40)))
    async with serving(NntpServer(groups(), faults=faults)) as server:
        result = await cli("--limit", "reply_lines=20", f"{base(server)}/test.small")
    assert result.returncode == 7
    assert result.stderr.startswith(b"fetch: the server sent more than 20 lines in the CAPABILITIES reply")
