"""The blocking API (fetcher.sync): from a thread with no loop, and refused inside a running loop."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

import fetcher
from fetcher.errors import NotFound, TooLarge, UsageError
from tests.servers.http_server import HTTPTestServer

HELLO = b"Hello, world!\n"
BIG = bytes(range(256)) * 40


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "absent-netrc"))
    yield


@pytest.fixture
async def server(nursery: trio.Nursery) -> HTTPTestServer:
    instance = HTTPTestServer()
    await nursery.start(instance.serve)
    instance.add("/hello.txt", HELLO)
    instance.add("/big.bin", BIG, content_type="application/octet-stream")
    return instance


# The test server runs on the test's trio loop; each blocking call runs in a
# worker thread that has no loop, where it starts its own (trio.run).


async def test_fetch_sync_from_a_thread_without_a_loop(server: HTTPTestServer) -> None:
    result = await trio.to_thread.run_sync(fetcher.fetch_sync, server.url("/hello.txt"))
    assert result.content == HELLO
    assert result.kind == "document"
    assert [(request.method, request.target) for request in server.requests] == [("GET", "/hello.txt")]


async def test_fetch_sync_passes_settings_to_the_client(server: HTTPTestServer) -> None:
    with pytest.raises(TooLarge):
        await trio.to_thread.run_sync(lambda: fetcher.fetch_sync(server.url("/big.bin"), max_size=100))


async def test_a_typed_settings_value_and_keywords_that_override_it(server: HTTPTestServer) -> None:
    small = fetcher.Settings(max_size=100)
    with pytest.raises(TooLarge):
        await trio.to_thread.run_sync(lambda: fetcher.fetch_sync(server.url("/big.bin"), settings=small))
    result = await trio.to_thread.run_sync(
        lambda: fetcher.fetch_sync(server.url("/big.bin"), settings=small, max_size=None)
    )
    assert result.content == BIG
    assert small.max_size == 100  # the caller's value is not changed


async def test_download_sync_resumes_a_part_file(server: HTTPTestServer, tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    (tmp_path / "big.bin.part").write_bytes(BIG[:1000])
    result = await trio.to_thread.run_sync(
        lambda: fetcher.download_sync(server.url("/big.bin"), target, resume=True)
    )
    assert target.read_bytes() == BIG
    assert not (tmp_path / "big.bin.part").exists()
    assert isinstance(result, fetcher.Download)
    assert server.requests[0].header("range") == "bytes=1000-"


async def test_fetch_all_sync_returns_every_outcome(server: HTTPTestServer) -> None:
    urls = [server.url("/hello.txt"), server.url("/missing"), server.url("/big.bin")]
    seen: list[str] = []
    outcomes = await trio.to_thread.run_sync(
        lambda: fetcher.fetch_all_sync(urls, jobs=2, retries=0, on_outcome=lambda outcome: seen.append(outcome.url))
    )
    assert sorted(outcome.url for outcome in outcomes) == sorted(urls)
    assert seen == [outcome.url for outcome in outcomes]
    by_url = {outcome.url: outcome for outcome in outcomes}
    hello, missing, big = (by_url[url] for url in urls)
    assert hello.ok and isinstance(hello.result, fetcher.Fetched) and hello.result.content == HELLO
    assert big.ok and isinstance(big.result, fetcher.Fetched) and big.result.content == BIG
    assert not missing.ok and isinstance(missing.error, NotFound) and missing.error.exit_code == 6


async def test_fetch_all_sync_saves_documents_where_destination_says(server: HTTPTestServer, tmp_path: Path) -> None:
    urls = [server.url("/hello.txt"), server.url("/big.bin")]
    outcomes = await trio.to_thread.run_sync(
        lambda: fetcher.fetch_all_sync(urls, destination=lambda url: tmp_path / str(url).rsplit("/", 1)[1])
    )
    assert all(outcome.ok for outcome in outcomes)
    assert (tmp_path / "hello.txt").read_bytes() == HELLO
    assert (tmp_path / "big.bin").read_bytes() == BIG


def test_plain_script_use_with_file_urls(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"alpha\n")
    (tmp_path / "sub").mkdir()
    assert fetcher.fetch_sync(f"file://{tmp_path}/a.txt").content == b"alpha\n"
    listing = fetcher.fetch_sync(f"file://{tmp_path}/")
    assert listing.kind == "listing"
    assert sorted(entry.name.rstrip("/") for entry in listing.entries) == ["a.txt", "sub"]
    saved = fetcher.download_sync(f"file://{tmp_path}/a.txt", tmp_path / "copy.txt")
    assert (tmp_path / "copy.txt").read_bytes() == b"alpha\n"
    assert saved.path == tmp_path / "copy.txt"
    with pytest.raises(NotFound) as caught:
        fetcher.fetch_sync(f"file://{tmp_path}/absent.txt")
    assert caught.value.exit_code == 6


async def test_refused_inside_a_running_trio_loop(server: HTTPTestServer, tmp_path: Path) -> None:
    for call in (
        lambda: fetcher.fetch_sync(server.url("/hello.txt")),
        lambda: fetcher.download_sync(server.url("/hello.txt"), tmp_path / "x"),
        lambda: fetcher.fetch_all_sync([server.url("/hello.txt")]),
    ):
        with pytest.raises(UsageError) as caught:
            call()
        assert "inside a running trio event loop" in str(caught.value)
        assert caught.value.hint is not None and "trio.to_thread.run_sync" in caught.value.hint
        assert caught.value.exit_code == 2
    assert server.requests == []
    assert not (tmp_path / "x").exists()


def test_refused_inside_a_running_asyncio_loop_but_fine_in_its_worker_thread(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"alpha\n")
    url = f"file://{tmp_path}/a.txt"

    async def main() -> bytes:
        with pytest.raises(UsageError) as caught:
            fetcher.fetch_sync(url)
        assert "inside a running asyncio event loop" in str(caught.value)
        assert caught.value.hint is not None and "asyncio.to_thread" in caught.value.hint
        result = await asyncio.to_thread(fetcher.fetch_sync, url)
        return result.content

    assert asyncio.run(main()) == b"alpha\n"
    # and after the asyncio loop has ended, the same thread may block again
    assert fetcher.fetch_sync(url).content == b"alpha\n"
