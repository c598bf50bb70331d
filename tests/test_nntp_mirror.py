"""News groups as facts and as mirrors (issue 16), through the real CLI.

A group listing carries the overview facts in --json; `-r news:group` and
`-r nntp://host/group` save every article as NUMBER.eml, and a second run
fetches only the numbers not saved yet (asserted on the commands the server
received).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import trio

from tests.conftest import run_fetch
from tests.servers.nntp import Group, NntpServer, article, serving

pytestmark = pytest.mark.usefixtures("no_netrc")


def group() -> Group:
    return Group(
        "test.mirror",
        [
            article(1, "one@example.test", "First", b"first body\n"),
            article(2, "two@example.test", "Second \x1b[31m", b"second body\n.dotted line\n"),
            article(3, "three@example.test", "Third", b"third body\n", sender="Other <o@example.test>"),
        ],
    )


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=60))


def saved(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.rglob("*.eml")}


def articles_asked(server: NntpServer) -> list[str]:
    return [line for line in server.commands if line.split()[0] in ("ARTICLE", "BODY", "HEAD")]


async def test_a_group_listing_carries_the_overview_facts_in_json() -> None:
    source = group()
    async with serving(NntpServer([source])) as server:
        got = await cli("--json", f"nntp://127.0.0.1:{server.port}/test.mirror")
    assert got.returncode == 0, got.stderr
    rows = [json.loads(line) for line in got.stdout.decode().splitlines()]
    assert [row["number"] for row in rows] == [1, 2, 3]
    first = rows[0]
    assert (first["subject"], first["from"], first["type"]) == ("First", "Tester <t@example.test>", "article")
    assert first["date"] == "Sat, 21 Nov 2026 01:00:00 +0000"
    assert first["modified"] == "2026-11-21T01:00:00+00:00"
    assert first["bytes"] == first["size"] == len(source.articles[0].text.replace(b"\n", b"\r\n"))
    assert first["lines"] == 1
    assert rows[2]["from"] == "Other <o@example.test>"
    assert rows[1]["url"] == f"nntp://127.0.0.1:{server.port}/test.mirror/2"
    assert "filename" not in first and "immutable" not in first


async def test_recursive_mirror_saves_number_eml_and_only_new_numbers_next_time(tmp_path: Path) -> None:
    source = group()
    out = tmp_path / "out"
    async with serving(NntpServer([source])) as server:
        url = f"nntp://127.0.0.1:{server.port}/test.mirror"
        first = await cli("-r", "-d", str(out), url)
        first_asked = articles_asked(server)
        source.articles.append(article(4, "four@example.test", "Fourth", b"fourth body\n"))
        before = len(articles_asked(server))
        second = await cli("-r", "-d", str(out), url)
        second_asked = articles_asked(server)[before:]
    assert first.returncode == 0, first.stderr
    assert sorted(first_asked, key=lambda line: line.split()[-1]) == ["ARTICLE 1", "ARTICLE 2", "ARTICLE 3"]
    files = saved(out)
    assert sorted(files) == ["1.eml", "2.eml", "3.eml", "4.eml"]
    for item in source.articles:
        assert files[f"{item.number}.eml"] == item.text
    assert second.returncode == 0, second.stderr
    assert second_asked == ["ARTICLE 4"]  # 1-3 are on disk already: not fetched again
    assert b"3 skipped" in second.stderr


async def test_recursive_news_group_uses_the_configured_server(tmp_path: Path) -> None:
    source = group()
    async with serving(NntpServer([source])) as server:
        got = await cli("-r", "-d", str(tmp_path / "news"), "--nntp-server", f"127.0.0.1:{server.port}",
                        "news:test.mirror")  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert saved(tmp_path / "news") == {f"{item.number}.eml": item.text for item in source.articles}
