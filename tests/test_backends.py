"""The library on both anyio backends (issue 20): trio and asyncio run the same client code.

Each test runs the client with `anyio.run(..., backend=...)` for "trio" and
"asyncio"; the in-repo servers are trio programs, so each runs on its own
trio loop in a thread (`in_thread`) and the client's loop stays whichever
backend the test asks for.  What is checked is what a user sees: bytes,
listings, errors, and the commands the server received.
"""

from __future__ import annotations

import asyncio
import hashlib
import queue
import socket
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
import trio
import trustme

import fetcher
from fetcher import Client
from fetcher.errors import ConnectError, NotFound, Timeout, UsageError
from tests.servers.ftp_fake import FakeFtpServer
from tests.servers.ftp_fake import serving as ftp_serving
from tests.servers.gopher import GopherServer
from tests.servers.gopher import serving as gopher_serving
from tests.servers.http_server import Exchange, HTTPTestServer, Received
from tests.servers.nntp import Group, NntpServer, article
from tests.servers.nntp import serving as nntp_serving
from tests.servers.prospero import Directory, Link, Object, serve_prospero
from tests.servers.wais import Database, Document, WaisServer
from tests.servers.wais import serving as wais_serving

BACKENDS = pytest.mark.parametrize("backend", ["trio", "asyncio"])
HELLO = b"Hello from both loops.\n"
BIG = bytes(range(256)) * 1024  # 256 KiB: several reads
LARGE = bytes(range(256)) * 12_000  # 3 MB: past the sink's 1 MiB small-body limit
NO_PROXY = {"http_proxy": "", "https_proxy": "", "HTTPS_PROXY": "", "no_proxy": "", "NO_PROXY": ""}

T = TypeVar("T")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in NO_PROXY:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "absent-netrc"))
    yield


@contextmanager
def in_thread(serving: Callable[[], AbstractAsyncContextManager[T]]) -> Iterator[T]:
    """Run a trio test server (an async context manager) on its own trio loop in a thread."""
    ready: queue.Queue[tuple[T, trio.lowlevel.TrioToken, trio.CancelScope] | BaseException] = queue.Queue()

    async def main() -> None:
        try:
            with trio.CancelScope() as scope:
                async with serving() as server:
                    ready.put((server, trio.lowlevel.current_trio_token(), scope))
                    await trio.sleep_forever()
        except BaseException as error:  # a server that failed to start: tell the test
            ready.put(error)
            raise

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    started = ready.get(timeout=10)
    if isinstance(started, BaseException):
        raise started
    server, token, scope = started
    try:
        yield server
    finally:
        trio.from_thread.run_sync(scope.cancel, trio_token=token)
        thread.join(timeout=10)


def http_server(tls: ssl.SSLContext | None = None) -> Callable[[], AbstractAsyncContextManager[HTTPTestServer]]:
    @asynccontextmanager
    async def serving() -> AsyncIterator[HTTPTestServer]:
        server = HTTPTestServer(tls=tls)
        server.add("/hello.txt", HELLO)
        server.add("/big.bin", BIG, content_type="application/octet-stream")
        server.add("/large.bin", LARGE, content_type="application/octet-stream")
        for number in range(6):
            server.add(f"/n{number}.txt", b"document %d\n" % number)

        @server.route("/stall")
        async def stall(request: Received, exchange: Exchange) -> None:
            await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
            await trio.sleep(30)

        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve)
            yield server
            nursery.cancel_scope.cancel()

    return serving


def run(backend: str, function: Callable[..., Awaitable[T]], *args: Any) -> T:
    return anyio.run(function, *args, backend=backend)


# -- HTTP and HTTPS ---------------------------------------------------------------------


@BACKENDS
def test_http_fetch_open_and_keep_alive(backend: str) -> None:
    with in_thread(http_server()) as server:

        async def main() -> tuple[bytes, bytes, bytes]:
            async with Client() as client:
                first = await client.fetch(server.url("/hello.txt"))
                second = await client.fetch(server.url("/big.bin"))
                async with client.open(server.url("/big.bin"), offset=1000) as resource:
                    streamed = b"".join([chunk async for chunk in resource])
            return first.content, second.content, streamed

        first, second, streamed = run(backend, main)
    assert first == HELLO
    assert second == BIG
    assert streamed == BIG[1000:]
    assert [request.target for request in server.requests] == ["/hello.txt", "/big.bin", "/big.bin"]
    assert server.requests[2].header("range") == "bytes=1000-"
    assert server.connections == 1  # one pooled connection on either loop


@BACKENDS
def test_https_with_a_private_ca(backend: str, tmp_path: Path) -> None:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    cacert = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(cacert))
    with in_thread(http_server(tls=context)) as server:

        async def main() -> tuple[bytes, bytes]:
            async with Client(cacert=str(cacert)) as client:
                small = await client.fetch(server.url("/hello.txt"))
                big = await client.fetch(server.url("/big.bin"))
            return small.content, big.content

        assert run(backend, main) == (HELLO, BIG)

        async def untrusted() -> None:
            async with Client() as client:
                await client.fetch(server.url("/hello.txt"))

        with pytest.raises(ConnectError, match="certificate"):
            run(backend, untrusted)


@BACKENDS
def test_download_resumes_a_part_file(backend: str, tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    (tmp_path / "big.bin.part").write_bytes(BIG[:5000])
    with in_thread(http_server()) as server:

        async def main() -> fetcher.Download:
            async with Client() as client:
                return await client.download(server.url("/big.bin"), target, resume=True)

        result = run(backend, main)
    assert isinstance(result, fetcher.Download)
    assert target.read_bytes() == BIG
    assert not (tmp_path / "big.bin.part").exists()
    assert server.requests[0].header("range") == "bytes=5000-"


@BACKENDS
def test_a_large_http_download_streams_through_the_writer_task_on_both_loops(backend: str, tmp_path: Path) -> None:
    # Not a direct body and past the small-body limit: a writer task drains batches from the loop's
    # own channel (fetcher.net.aio: trio's on trio, anyio's on asyncio) while the loop receives.
    target = tmp_path / "large.bin"
    with in_thread(http_server()) as server:

        async def main() -> fetcher.Download:
            async with Client() as client:
                return await client.download(server.url("/large.bin"), target)

        result = run(backend, main)
    assert target.read_bytes() == LARGE
    assert result.bytes == len(LARGE) and result.sha256 == hashlib.sha256(LARGE).hexdigest()
    assert not (tmp_path / "large.bin.part").exists()


@BACKENDS
def test_timeout_and_max_time_are_fetchers_own_errors(backend: str) -> None:
    with in_thread(http_server()) as server:

        async def silent() -> None:
            async with Client(timeout=0.3) as client:
                await client.fetch(server.url("/stall"))

        async def budget() -> None:
            async with Client(max_time=0.3, timeout=10) as client:
                await client.fetch(server.url("/stall"))

        with pytest.raises(Timeout, match=r"sent nothing for 0\.3 s"):
            run(backend, silent)
        with pytest.raises(Timeout, match=r"--max-time 0\.3 s"):
            run(backend, budget)


@BACKENDS
def test_connection_refused_is_a_connect_error(backend: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: refused

        async def main() -> None:
            await fetcher.fetch(f"http://127.0.0.1:{port}/")

        with pytest.raises(ConnectError, match=f"cannot connect to 127.0.0.1:{port}"):
            run(backend, main)


@BACKENDS
def test_fetch_all_every_outcome_then_break_and_cancel(backend: str) -> None:
    with in_thread(http_server()) as server:
        urls = [server.url(f"/n{number}.txt") for number in range(6)]

        async def everything() -> dict[str, bytes]:
            got: dict[str, bytes] = {}
            async with Client() as client, client.fetch_all(urls, jobs=3) as outcomes:
                async for outcome in outcomes:
                    assert outcome.error is None and isinstance(outcome.result, fetcher.Fetched)
                    got[outcome.url] = outcome.result.content
            return got

        async def first_only() -> int:
            seen = 0
            async with Client() as client:
                async with client.fetch_all(urls, jobs=2) as outcomes:
                    async for _ in outcomes:
                        seen += 1
                        break
                # the client still works after the abandoned block
                assert (await client.fetch(server.url("/hello.txt"))).content == HELLO
            return seen

        async def cancelled() -> bool:
            async with Client() as client:
                with anyio.move_on_after(0.5) as scope:
                    async with client.fetch_all([server.url("/stall"), *urls], jobs=2) as outcomes:
                        async for _ in outcomes:
                            pass
            return scope.cancelled_caught

        got = run(backend, everything)
        assert got == {url: b"document %d\n" % number for number, url in enumerate(urls)}
        assert run(backend, first_only) == 1
        assert run(backend, cancelled) is True


def test_asyncio_run_of_the_module_level_fetch() -> None:
    with in_thread(http_server()) as server:
        result = asyncio.run(fetcher.fetch(server.url("/hello.txt")))
    assert result.content == HELLO and result.kind == "document"


def test_trio_run_of_the_module_level_fetch() -> None:
    with in_thread(http_server()) as server:
        result = trio.run(fetcher.fetch, server.url("/hello.txt"))
    assert result.content == HELLO


# -- the other schemes -------------------------------------------------------------------


@BACKENDS
def test_ftp_file_and_listing(backend: str) -> None:
    files = {"/pub/hello.txt": HELLO, "/pub/big.bin": BIG}
    with in_thread(lambda: ftp_serving(FakeFtpServer(files))) as server:

        async def main() -> tuple[bytes, bytes, list[str]]:
            async with Client() as client:
                hello = await client.fetch(f"{server.url}/pub/hello.txt")
                big = await client.fetch(f"{server.url}/pub/big.bin")
                listing = await client.fetch(f"{server.url}/pub/")
            return hello.content, big.content, sorted(entry.name for entry in listing.entries)

        hello, big, names = run(backend, main)
    assert (hello, big) == (HELLO, BIG)
    assert names == ["big.bin", "hello.txt"]
    commands = [command for session in server.sessions for command in session]
    assert "RETR hello.txt" in commands and "RETR big.bin" in commands
    assert commands[:2] == ["USER anonymous", "PASS anonymous@"]


@BACKENDS
def test_a_large_ftp_download_takes_the_direct_path_on_both_loops(backend: str, tmp_path: Path) -> None:
    # More than the sink's 1 MiB small-body limit: read with Resource.readinto (recv_into on trio's
    # socket; on asyncio the transport's reads, copied into the same buffers).
    large = bytes(range(256)) * 12_000  # 3 MB
    with in_thread(lambda: ftp_serving(FakeFtpServer({"/large.bin": large}))) as server:

        async def main() -> tuple[bool, str | None]:
            async with Client() as client:
                async with client.open(f"{server.url}/large.bin") as resource:
                    direct = resource.direct
                done = await client.download(f"{server.url}/large.bin", tmp_path / "large.bin")
            return direct, done.sha256

        direct, sha256 = run(backend, main)
    assert direct
    assert (tmp_path / "large.bin").read_bytes() == large
    assert sha256 == hashlib.sha256(large).hexdigest()
    assert not (tmp_path / "large.bin.part").exists()


@BACKENDS
def test_gopher_menu_and_document(backend: str) -> None:
    with in_thread(lambda: gopher_serving(GopherServer())) as server:
        base = f"gopher://127.0.0.1:{server.port}"

        async def main() -> tuple[list[str], bytes]:
            async with Client() as client:
                menu = await client.fetch(base)
                names = [entry.name for entry in menu.entries]
                hello = next(entry for entry in menu.entries if entry.name == "Hello text")
                assert hello.url is not None
                document = await client.fetch(hello.url)
            return names, document.content

        names, content = run(backend, main)
    assert "Hello text" in names and "A directory" in names
    assert server.raw_requests[0] == b"\r\n"
    assert server.raw_requests[1] == b"/hello.txt\r\n"
    assert content == b"Hello, world!\r\n"  # a type 0 document arrives as the server sent it


@BACKENDS
def test_nntp_article(backend: str) -> None:
    groups = [Group("test.group", [article(1, "one@example.test", "First", b"Hello from article one.\n")])]
    with in_thread(lambda: nntp_serving(NntpServer(groups))) as server:

        async def main() -> bytes:
            async with Client() as client:
                return (await client.fetch(f"nntp://127.0.0.1:{server.port}/test.group/1")).content

        content = run(backend, main)
    assert content.endswith(b"Hello from article one.\n")
    assert server.sessions == [["MODE READER", "CAPABILITIES", "GROUP test.group", "ARTICLE 1", "QUIT"]]


@BACKENDS
def test_wais_search_and_retrieval(backend: str) -> None:
    apples = b"Apples are red or green.\nApple pie.\n"
    databases = [Database("testdb", [Document("apples.txt", apples), Document("pears.txt", b"Pears only.\n")])]
    with in_thread(lambda: wais_serving(WaisServer(databases))) as server:

        async def main() -> tuple[list[str], bytes]:
            async with Client() as client:
                hits = await client.fetch(f"wais://127.0.0.1:{server.port}/testdb?apple")
                first = hits.entries[0].url
                assert first is not None
                document = await client.fetch(first)
            return [entry.name.split()[0] for entry in hits.entries], document.content

        names, content = run(backend, main)
    assert names == ["apples.txt"]
    assert content == apples
    kinds = [kind for kind, _ in server.requests]
    assert kinds[:2] == ["init", "search"] and kinds[-1] == "retrieve"


@BACKENDS
def test_prospero_over_udp(backend: str) -> None:
    text = b"".join(b"prospero line %05d\n" % number for number in range(400))  # several ARDP packets
    tree: dict[str, Any] = {
        "/pub": Directory([Link("contents.txt", "FILE", "127.0.0.1", "/pub/contents.txt")]),
        "/pub/contents.txt": Object([["PROSPERO-CONTENTS", "", "", "", ""]], contents=text),
    }
    with in_thread(lambda: serve_prospero(tree)) as server:

        async def main() -> tuple[list[str], bytes]:
            async with Client(prospero_timeout=0.2, prospero_retries=6) as client:
                listing = await client.fetch(f"prospero://127.0.0.1:{server.port}//pub")
                document = await client.fetch(f"prospero://127.0.0.1:{server.port}//pub/contents.txt")
            return [entry.name for entry in listing.entries], document.content

        names, content = run(backend, main)
    assert names == ["contents.txt"]
    assert content == text


@BACKENDS
def test_prospero_port_unreachable_fails_at_once(backend: str) -> None:
    """The unconnected socket still reads the ICMP error (IP_RECVERR) on either loop."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # nobody listens on `port` any more; 10 retries of 1 s would take a minute

    async def main() -> None:
        async with Client(prospero_timeout=1.0, prospero_retries=10) as client:
            with anyio.fail_after(5):
                await client.fetch(f"prospero://127.0.0.1:{port}//pub")

    with pytest.raises(ConnectError):
        run(backend, main)


@BACKENDS
def test_file_urls(backend: str, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(HELLO)

    async def main() -> tuple[bytes, list[str]]:
        async with Client() as client:
            document = await client.fetch((tmp_path / "a.txt").as_uri())
            listing = await client.fetch(tmp_path.as_uri() + "/")
            with pytest.raises(NotFound):
                await client.fetch((tmp_path / "missing").as_uri())
        return document.content, [entry.name for entry in listing.entries]

    content, names = run(backend, main)
    assert content == HELLO
    assert names == ["a.txt"]


def test_the_interactive_telnet_session_needs_trio() -> None:
    from fetcher.schemes.telnet.session import require_trio

    async def main() -> None:
        require_trio()

    trio.run(main)  # fine on trio
    with pytest.raises(UsageError, match="needs trio"):
        asyncio.run(main())
