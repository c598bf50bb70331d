"""https: against a trio TLS server with trustme certificates: trust, host names, --insecure, CONNECT proxies."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trustme

from fetcher import Client
from fetcher.errors import ConnectError
from tests.conftest import run_fetch
from tests.interop.processes import free_port
from tests.servers.http_server import HTTPTestServer

HELLO = b"Hello, world!\n"
NO_PROXY_ENV = {"http_proxy": "", "https_proxy": "", "HTTPS_PROXY": "", "no_proxy": "", "NO_PROXY": ""}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in NO_PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def cacert(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


async def start(nursery: trio.Nursery, ca: trustme.CA, *names: str) -> HTTPTestServer:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(context)
    server = HTTPTestServer(tls=context)
    await nursery.start(server.serve)
    server.add("/hello.txt", HELLO)
    return server


async def cli(*args: str) -> tuple[int, bytes, str]:
    result = await trio.to_thread.run_sync(lambda: run_fetch(*args, env=NO_PROXY_ENV))
    return result.returncode, result.stdout, result.stderr.decode("utf-8", "replace")


async def test_good_certificate_with_cacert_and_keep_alive(nursery: trio.Nursery, ca: trustme.CA, cacert: str) -> None:
    server = await start(nursery, ca, "127.0.0.1", "localhost")
    async with Client(cacert=cacert) as client:
        for _ in range(3):
            assert (await client.fetch(server.url("/hello.txt"))).content == HELLO
            assert (await client.fetch(server.url("/hello.txt", host="localhost"))).content == HELLO
    assert server.connections == 2  # one per origin, each kept alive
    code, out, err = await cli("--cacert", cacert, server.url("/hello.txt"))
    assert (code, out) == (0, HELLO), err
    assert "WARNING" not in err


async def test_wrong_host_name_is_refused(nursery: trio.Nursery, ca: trustme.CA, cacert: str) -> None:
    server = await start(nursery, ca, "example.org")
    code, out, err = await cli("--cacert", cacert, server.url("/hello.txt"))
    assert (code, out) == (4, b"")
    assert "TLS with 127.0.0.1" in err and "failed" in err
    assert "--cacert" in err  # the hint
    async with Client(cacert=cacert) as client:
        with pytest.raises(ConnectError):
            await client.fetch(server.url("/hello.txt", host="localhost"))
    assert not any(r.target == "/hello.txt" for r in server.requests)


async def test_unknown_ca_is_refused_and_insecure_warns(nursery: trio.Nursery, ca: trustme.CA) -> None:
    server = await start(nursery, ca, "127.0.0.1")
    code, out, err = await cli(server.url("/hello.txt"))
    assert (code, out) == (4, b"")
    assert "certificate verify failed" in err
    code, out, err = await cli("--insecure", server.url("/hello.txt"))
    assert (code, out) == (0, HELLO)
    assert "WARNING: --insecure" in err and "NOT checked" in err
    assert len(server.requests) == 1


async def test_https_through_a_connect_proxy(nursery: trio.Nursery, ca: trustme.CA, cacert: str) -> None:
    origin = await start(nursery, ca, "127.0.0.1")
    proxy = HTTPTestServer()
    await nursery.start(proxy.serve)
    async with Client(cacert=cacert, proxy=proxy.url("/").replace("://", "://pu:pp@")) as client:
        assert (await client.fetch(origin.url("/hello.txt"))).content == HELLO
        assert (await client.fetch(origin.url("/hello.txt"))).content == HELLO
    assert proxy.tunnels == [f"127.0.0.1:{origin.port}"]
    connect = proxy.requests[0]
    assert connect.raw.startswith(f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1\r\n".encode())
    assert connect.header("proxy-authorization") == "Basic cHU6cHA="
    # the origin never saw the proxy's credentials, and both requests used the one tunnel
    assert [r.header("proxy-authorization") for r in origin.requests] == [None, None]
    assert origin.connections == 1


async def test_proxy_refusing_connect(nursery: trio.Nursery, cacert: str) -> None:
    proxy = HTTPTestServer()
    await nursery.start(proxy.serve)
    dead = free_port()  # nothing listens there: the proxy answers 502
    async with Client(cacert=cacert, proxy=proxy.url("/")) as client:
        with pytest.raises(ConnectError, match=r"refused to connect to 127\.0\.0\.1:.*HTTP 502"):
            await client.fetch(f"https://127.0.0.1:{dead}/hello.txt")
    assert proxy.tunnels == [f"127.0.0.1:{dead}"]


async def test_bulk_over_https_pipelines_on_few_connections(
    nursery: trio.Nursery, ca: trustme.CA, cacert: str, tmp_path: Path
) -> None:
    """The bulk lane (schemes/http/lane.py) over TLS: every file once, bytes intact, requests pipelined."""
    server = await start(nursery, ca, "127.0.0.1")
    for index in range(60):
        server.add(f"/t{index}", bytes([index]) * (1000 + index), content_type="application/octet-stream")
    urls = [server.url(f"/t{index}") for index in range(60)]

    def destination(url: object) -> Path:
        return tmp_path / str(url).rsplit("/", 1)[1]

    async with Client(cacert=cacert) as client:
        async with client.fetch_all(urls, jobs=2, per_host=2, destination=destination) as results:
            outcomes = [outcome async for outcome in results]
    assert all(outcome.ok for outcome in outcomes)
    for index in range(60):
        assert (tmp_path / f"t{index}").read_bytes() == bytes([index]) * (1000 + index)
    assert sorted(request.target for request in server.requests) == sorted(f"/t{index}" for index in range(60))
    assert server.connections <= 2 and server.pipelined > 0
