"""nntp: and news: against a real INN 2.7 (innd + nnrpd), started by tests/interop/inn_server.py."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from fetcher import Client
from fetcher.errors import NotFound, ProtocolError
from tests.conftest import require, run_fetch
from tests.interop import inn_server
from tests.interop.inn_server import ARTICLES, DOTS_BODY, LARGE_BODY, PASSWORD, USER, UTF8_FROM, UTF8_SUBJECT
from tests.interop.processes import free_port

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("no_netrc")]


@pytest.fixture(scope="module")
def inn() -> Iterator[inn_server.Inn]:
    reason = inn_server.missing()
    require(reason is None, str(reason), "apt-get install inn2 (see .ci/run), and run the tests as root")
    instance = inn_server.start(free_port())
    yield instance
    instance.stop()


def body_of(article: bytes) -> bytes:
    return article.split(b"\n\n", 1)[1]


def header(article: bytes, name: str) -> bytes:
    for line in article.split(b"\n\n", 1)[0].split(b"\n"):
        key, _, value = line.partition(b":")
        if key.lower() == name.lower().encode():
            return value.strip()
    raise AssertionError(f"no {name} header")


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=60))


async def test_article_by_number_with_dot_lines(inn: inn_server.Inn) -> None:
    async with Client() as client:
        result = await client.fetch(f"nntp://127.0.0.1:{inn.port}/test.one/2")
    assert result.content_type == "message/rfc822"
    assert body_of(result.content) == DOTS_BODY
    assert header(result.content, "Message-ID") == b"<one.2-dots@example.test>"
    assert b"\r" not in result.content


async def test_raw_article_keeps_crlf(inn: inn_server.Inn) -> None:
    async with Client(raw=True) as client:
        result = await client.fetch(f"nntp://127.0.0.1:{inn.port}/test.one/2")
    assert result.content.split(b"\r\n\r\n", 1)[1] == DOTS_BODY.replace(b"\n", b"\r\n")
    assert b"\n" not in result.content.replace(b"\r\n", b"")


async def test_large_article_byte_for_byte(inn: inn_server.Inn, tmp_path: Path) -> None:
    target = tmp_path / "large.eml"
    run = await cli("-o", str(target), f"nntp://127.0.0.1:{inn.port}/test.one/4")
    assert run.returncode == 0, run.stderr
    saved = target.read_bytes()
    assert len(LARGE_BODY) == 1_081_344
    assert hashlib.sha256(body_of(saved)).hexdigest() == hashlib.sha256(LARGE_BODY).hexdigest()
    assert not (tmp_path / "large.eml.part").exists()


async def test_message_ids_and_non_ascii_headers(inn: inn_server.Inn) -> None:
    async with Client(nntp_server=f"127.0.0.1:{inn.port}") as client:
        utf8 = await client.fetch("news:one.3-utf8@example.test")
        bracketed = await client.fetch("news:%3Cone.1@example.test%3E")
        with pytest.raises(NotFound):
            await client.fetch("news:no-such-article@example.test")
    assert header(utf8.content, "Subject") == UTF8_SUBJECT.encode()
    assert header(utf8.content, "From") == UTF8_FROM.encode()
    assert body_of(utf8.content) == "Body with UTF-8: naïve café, 東京, ☃.\n".encode()
    assert body_of(bracketed.content) == ARTICLES[0][2]


async def test_group_listing(inn: inn_server.Inn) -> None:
    async with Client(nntp_server=f"127.0.0.1:{inn.port}") as client:
        listing = await client.fetch(f"nntp://127.0.0.1:{inn.port}/test.one")
        news = await client.fetch("news:test.one")
    assert [e.extra["number"] for e in listing.entries] == [1, 2, 3, 4, 5]
    assert [e.extra["message_id"] for e in listing.entries] == [a[0] for a in ARTICLES[:5]]
    subjects = [e.extra["subject"] for e in listing.entries]
    assert subjects[2] == UTF8_SUBJECT
    assert subjects[4] == "Crosspost – encoded subject"
    assert listing.entries[2].extra["from"] == UTF8_FROM
    assert listing.entries[3].size is not None and listing.entries[3].size > len(LARGE_BODY)
    assert all(e.extra["date"] and e.type == "article" for e in listing.entries)
    assert [e.url for e in news.entries] == [f"nntp://127.0.0.1:{inn.port}/test.one/{n}" for n in range(1, 6)]
    run = await cli("--range", "2-3", "--links", f"nntp://127.0.0.1:{inn.port}/test.one")
    assert run.stdout.decode().split() == [f"nntp://127.0.0.1:{inn.port}/test.one/{n}" for n in (2, 3)]


async def test_listed_urls_fetch_the_articles(inn: inn_server.Inn) -> None:
    async with Client() as client:
        listing = await client.fetch(f"nntp://127.0.0.1:{inn.port}/test.two")
        assert [e.extra["message_id"] for e in listing.entries] == ["two.1-cross@example.test"]
        url = listing.entries[0].url
        assert url is not None
        article = await client.fetch(url)
    assert header(article.content, "References") == b"<one.1@example.test>"


async def test_all_groups(inn: inn_server.Inn) -> None:
    run = await cli("--nntp-server", f"127.0.0.1:{inn.port}", "--links", "news:*")
    assert run.returncode == 0, run.stderr
    groups = run.stdout.decode().split()
    assert {"news:test.one", "news:test.two", "news:junk", "news:control"} <= set(groups)
    assert "news:test.secret" not in groups  # hidden from anonymous readers
    async with Client(nntp_server=f"127.0.0.1:{inn.port}") as client:
        listing = await client.fetch("news:*")
    one = next(e for e in listing.entries if e.name == "test.one")
    assert (one.extra["low"], one.extra["high"], one.description) == (1, 5, "5 articles (1-5)")


async def test_authinfo_for_the_secret_group(inn: inn_server.Inn) -> None:
    url = f"nntp://127.0.0.1:{inn.port}/test.secret"
    refused = await cli(f"{url}/1")
    assert refused.returncode == 5
    assert b"requires a login" in refused.stderr
    wrong = await cli("-u", f"{USER}:not-{PASSWORD}", f"{url}/1")
    assert wrong.returncode == 5
    assert b"481" in wrong.stderr
    async with Client(user=USER, password=PASSWORD) as client:
        listing = await client.fetch(url)
        article = await client.fetch(f"{url}/1")
        other = await client.fetch(f"nntp://127.0.0.1:{inn.port}/test.one/1")
    assert [e.extra["message_id"] for e in listing.entries] == ["secret.1@example.test"]
    assert body_of(article.content) == b"Only visible after AUTHINFO.\n"
    assert body_of(other.content) == ARTICLES[0][2]
    traced = await cli("-v", "-u", f"{USER}:{PASSWORD}", f"{url}/1")
    assert traced.returncode == 0
    assert b"> AUTHINFO PASS ****" in traced.stderr and PASSWORD.encode() not in traced.stderr
    assert b"< 281" in traced.stderr


async def test_not_found_codes(inn: inn_server.Inn) -> None:
    async with Client() as client:
        with pytest.raises(NotFound, match="411"):
            await client.fetch(f"nntp://127.0.0.1:{inn.port}/no.such.group")
        with pytest.raises(NotFound, match="423"):
            await client.fetch(f"nntp://127.0.0.1:{inn.port}/test.one/99")
    missing = await cli(f"nntp://127.0.0.1:{inn.port}/test.one/99")
    assert missing.returncode == 6


async def test_starttls_refused_by_inn_is_an_error(inn: inn_server.Inn) -> None:
    # This INN advertises STARTTLS but has no certificate: 580. fetch must not go on in clear text.
    async with Client(starttls=True) as client:
        with pytest.raises(ProtocolError) as caught:
            await client.fetch(f"nntp://127.0.0.1:{inn.port}/test.one/1")
    assert "refused STARTTLS" in caught.value.message and "580" in caught.value.message
    assert caught.value.exit_code == 7
