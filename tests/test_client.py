"""The library API: Client.open/fetch/download/fetch_all and fetcher.fetch."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import fetcher
from fetcher import Client
from fetcher.errors import NoHandler, TooLarge, UnsafeURL, UsageError
from fetcher.handler import Session
from fetcher.net.pool import Pool
from fetcher.url import parse_url


async def test_fetch_file_document(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"alpha\n")
    result = await fetcher.fetch(f"file://{tmp_path}/a.txt")
    assert result.kind == "document"
    assert result.content == b"alpha\n"
    assert result.size == 6
    assert result.content_type == "text/plain"


async def test_fetch_file_listing(tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"xx")
    async with Client() as client:
        result = await client.fetch(f"file://{tmp_path}")
    assert result.kind == "listing"
    assert [(e.name, e.type, e.size, e.url) for e in result.entries] == [
        ("b.bin", "file", 2, f"file://{tmp_path}/b.bin")
    ]


async def test_open_streams_in_chunks(tmp_path: Path) -> None:
    data = bytes(range(256)) * 20000  # 5 MB: several chunks
    (tmp_path / "big").write_bytes(data)
    digest = hashlib.sha256()
    chunks = 0
    async with Client() as client, client.open(f"file://{tmp_path}/big") as resource:
        async for chunk in resource:
            digest.update(chunk)
            chunks += 1
    assert chunks > 1
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


async def test_download_resumes_a_part_file(tmp_path: Path) -> None:
    data = b"0123456789" * 1000
    (tmp_path / "src").write_bytes(data)
    target = tmp_path / "dst"
    (tmp_path / "dst.part").write_bytes(data[:4321])
    async with Client() as client:
        result = await client.download(f"file://{tmp_path}/src", target, resume=True)
    assert result.resumed_from == 4321
    assert target.read_bytes() == data
    assert result.sha256 == hashlib.sha256(data).hexdigest()
    assert not (tmp_path / "dst.part").exists()


async def test_download_without_resume_restarts(tmp_path: Path) -> None:
    (tmp_path / "src").write_bytes(b"fresh")
    (tmp_path / "dst.part").write_bytes(b"stale stale stale")
    async with Client() as client:
        result = await client.download(f"file://{tmp_path}/src", tmp_path / "dst")
    assert result.resumed_from == 0
    assert (tmp_path / "dst").read_bytes() == b"fresh"


async def test_download_of_a_listing_is_a_usage_error(tmp_path: Path) -> None:
    async with Client() as client:
        with pytest.raises(UsageError, match="is a listing, not a document"):
            await client.download(f"file://{tmp_path}/", tmp_path / "x")


async def test_max_size_stops_the_body(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * (3 << 20))
    async with Client(max_size=1 << 20) as client:
        with pytest.raises(TooLarge, match="larger than the limit"):
            await client.fetch(f"file://{tmp_path}/big")


async def test_guard_runs_before_the_handler() -> None:
    async with Client() as client:
        with pytest.raises(UnsafeURL) as refused:
            await client.fetch("gopher://127.0.0.1:6379/_save")
    assert refused.value.rule == "ssrf-port"
    async with Client(allow_ports={6379}) as client:
        with pytest.raises(Exception) as other:
            await client.fetch("gopher://127.0.0.1:25/_x")
        assert isinstance(other.value, UnsafeURL) and other.value.rule == "bad-port"


async def test_unknown_scheme() -> None:
    async with Client() as client:
        with pytest.raises(NoHandler, match="no handler for scheme 'x-nothing'"):
            await client.fetch("x-nothing:abc")


async def test_follow_refuses_file_and_unlisted_schemes(tmp_path: Path) -> None:
    async with Client() as client:
        session = Session(client, parse_url("http://example.com/"))
        with pytest.raises(UnsafeURL, match="redirect to a file: URL refused"):
            await session.follow(f"file://{tmp_path}/")
        with pytest.raises(UnsafeURL, match="redirect to a telnet: URL refused"):
            await session.follow("telnet://example.com/")


async def test_fetch_all_yields_one_outcome_per_url(tmp_path: Path) -> None:
    for index in range(12):
        (tmp_path / f"f{index}").write_bytes(b"%d" % index)
    urls = [f"file://{tmp_path}/f{index}" for index in range(12)] + [f"file://{tmp_path}/missing"]
    async with Client() as client:
        async with client.fetch_all(urls, jobs=4) as results:
            outcomes = [outcome async for outcome in results]
    assert sorted(outcome.url for outcome in outcomes) == sorted(urls)
    failed = [outcome for outcome in outcomes if not outcome.ok]
    assert [outcome.url for outcome in failed] == [urls[-1]]
    assert failed[0].error is not None and failed[0].error.exit_code == 6


async def test_settings_reject_unknown_names() -> None:
    with pytest.raises(TypeError, match="unknown setting 'colour'"):
        Client(colour="red")


class _Closable:
    def __init__(self) -> None:
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


async def test_pool_reuses_and_expires(autojump_clock: object) -> None:
    import trio

    pool = Pool(idle_timeout=10)
    first = _Closable()
    await pool.give("k", first)
    assert await pool.take("k") is first
    assert await pool.take("k") is None
    await pool.give("k", first)
    await trio.sleep(11)
    assert await pool.take("k") is None
    assert first.closed
    second = _Closable()
    await pool.give("k", second)
    await pool.aclose()
    assert second.closed
