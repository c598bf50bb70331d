"""The blocking API (fetcher.sync): from a thread with no loop, and inside a running one (a notebook cell)."""

from __future__ import annotations

import asyncio
import threading
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


@pytest.fixture
def threaded_server() -> Iterator[HTTPTestServer]:
    """The HTTP test server on a trio loop of its own thread: a test's own loop is blocked by the sync call."""
    instance = HTTPTestServer()
    instance.add("/hello.txt", HELLO)
    instance.add("/big.bin", BIG, content_type="application/octet-stream")
    ready = threading.Event()
    stop: list[tuple[trio.CancelScope, trio.lowlevel.TrioToken]] = []

    async def serve() -> None:
        async with trio.open_nursery() as nursery:
            stop.append((nursery.cancel_scope, trio.lowlevel.current_trio_token()))
            await nursery.start(instance.serve)
            ready.set()

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        yield instance
    finally:
        scope, token = stop[0]
        trio.from_thread.run_sync(scope.cancel, trio_token=token)
        thread.join(30)


def _calls_in_a_loop(server: HTTPTestServer, tmp_path: Path) -> list[object]:
    """Each blocking call, made from the loop's own thread (a notebook cell), and what it gave."""
    seen: list[object] = [fetcher.fetch_sync(server.url("/hello.txt")).content]
    saved = fetcher.download_sync(server.url("/big.bin"), tmp_path / "big.bin")
    seen.append(saved.path.read_bytes() == BIG)
    outcomes = fetcher.fetch_all_sync([server.url("/hello.txt"), server.url("/missing")], retries=0)
    seen.append(sorted((outcome.url.rsplit("/", 1)[1], outcome.ok) for outcome in outcomes))
    with pytest.raises(NotFound):
        fetcher.fetch_sync(server.url("/missing"))
    with pytest.raises(UsageError, match="unknown setting 'timout'"):
        fetcher.fetch_sync(server.url("/hello.txt"), timout=20)  # type: ignore[call-arg]
    return seen


EXPECTED = [HELLO, True, [("hello.txt", True), ("missing", False)]]


def test_works_inside_a_running_asyncio_loop(threaded_server: HTTPTestServer, tmp_path: Path) -> None:
    async def cell() -> list[object]:
        seen = _calls_in_a_loop(threaded_server, tmp_path)
        await asyncio.sleep(0)  # the loop goes on afterwards
        seen.append(asyncio.get_running_loop().is_running())
        return seen

    assert asyncio.run(cell()) == [*EXPECTED, True]
    # and after the asyncio loop has ended, the same thread runs the call itself
    assert fetcher.fetch_sync(threaded_server.url("/hello.txt")).content == HELLO


def test_works_inside_a_running_trio_loop(threaded_server: HTTPTestServer, tmp_path: Path) -> None:
    async def main() -> list[object]:
        seen = _calls_in_a_loop(threaded_server, tmp_path)
        await trio.sleep(0)
        seen.append(trio.lowlevel.in_trio_run())
        return seen

    assert trio.run(main) == [*EXPECTED, True]
    assert [request.target for request in threaded_server.requests].count("/hello.txt") == 2


async def test_works_inside_the_test_loop_with_file_urls(tmp_path: Path) -> None:
    """Inside pytest-trio's own running loop too (nothing of that loop is needed by a file: URL)."""
    (tmp_path / "a.txt").write_bytes(b"alpha\n")
    assert fetcher.fetch_sync(f"file://{tmp_path}/a.txt").content == b"alpha\n"
    assert fetcher.download_sync(f"file://{tmp_path}/a.txt", tmp_path / "b.txt").bytes == 6
    assert (tmp_path / "b.txt").read_bytes() == b"alpha\n"


#: A loop whose Ctrl-C raises KeyboardInterrupt in the running code, as a notebook kernel's does (trio's; asyncio.run's
#: first Ctrl-C only asks to cancel the main task, which a blocking call in it never sees, this one or time.sleep).
INTERRUPTED_CELL = """
import os, signal, socket, threading
import trio
import fetcher

silent = socket.socket()
silent.bind(("127.0.0.1", 0))
silent.listen()  # the handshake completes in the backlog; no reply ever comes
url = "http://127.0.0.1:%d/stalls" % silent.getsockname()[1]

async def cell():
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    try:
        fetcher.fetch_sync(url, timeout=120)
    except KeyboardInterrupt:
        print("interrupted")
    print("workers alive:", [t.name for t in threading.enumerate() if t.name.startswith("fetcher.") and t.is_alive()])

trio.run(cell)
"""


def test_ctrl_c_in_a_cell_cancels_the_call_on_its_worker_thread() -> None:
    """The interrupt reaches the waiting thread; the worker's transfer is cancelled, not left running."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(fetcher.__file__).resolve().parent.parent)}
    result = subprocess.run([sys.executable, "-c", INTERRUPTED_CELL], capture_output=True, text=True, env=env,
                            timeout=60)  # fmt: skip
    assert result.stdout.splitlines() == ["interrupted", "workers alive: []"], result.stderr
