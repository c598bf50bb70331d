"""http: against the in-repo trio test server: bodies, encodings, keep-alive, faults, redirects, status, auth."""

from __future__ import annotations

import base64
import gzip
import socket
import zlib
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.abc
import pytest
import trio

import fetcher.net.connect
from fetcher import Client
from fetcher.errors import (
    AuthError,
    LimitExceeded,
    NotFound,
    ProtocolError,
    Timeout,
    TooLarge,
    TransientError,
    UnsafeURL,
)
from tests.conftest import run_fetch
from tests.servers.http_server import Exchange, HTTPTestServer, Received, gzipped, redirect, static

HELLO = b"Hello, world!\n"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "HTTP_PROXY")
NO_PROXY_ENV = dict.fromkeys(PROXY_VARIABLES, "")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "absent-netrc"))
    yield


@pytest.fixture
async def server(nursery: trio.Nursery) -> HTTPTestServer:
    instance = HTTPTestServer()
    await nursery.start(instance.serve)
    instance.add("/hello.txt", HELLO)
    return instance


async def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, bytes, str]:
    result = await trio.to_thread.run_sync(lambda: run_fetch(*args, env={**NO_PROXY_ENV, **(env or {})}, cwd=cwd))
    return result.returncode, result.stdout, result.stderr.decode("utf-8", "replace")


# -- requests ---------------------------------------------------------------------------------------------


async def test_get_sends_exactly_this_request(server: HTTPTestServer) -> None:
    async with Client() as client:
        fetched = await client.fetch(server.url("/hello.txt"))
    assert fetched.content == HELLO
    assert fetched.content_type == "text/plain"
    assert fetched.size == len(HELLO)
    assert server.requests[0].raw == (
        b"GET /hello.txt HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: fetcher/0.1.0\r\nAccept: */*\r\n"
        b"Accept-Encoding: gzip, deflate\r\n\r\n" % server.port
    )


async def test_encoded_crlf_in_path_and_search_stays_encoded(server: HTTPTestServer) -> None:
    url = server.url("/a%0d%0aX-Injected:%201?q=%0D%0AX-Injected:%201&x=%00")
    code, _, _ = await cli(url)
    assert code == 6
    raw = server.requests[0].raw
    assert raw.startswith(b"GET /a%0d%0aX-Injected:%201?q=%0D%0AX-Injected:%201&x=%00 HTTP/1.1\r\n")
    assert raw.count(b"\r\n") == 6  # request line, 4 headers, blank line
    assert all(name.lower() != "x-injected" for name, _ in server.requests[0].headers)


async def test_target_is_sent_as_written_without_reencoding(server: HTTPTestServer) -> None:
    server.add("/semi;colon%2541pct.txt", b"literal\n")
    async with Client() as client:
        fetched = await client.fetch(server.url("/semi;colon%2541pct.txt"))
    assert fetched.content == b"literal\n"
    assert server.requests[0].target == "/semi;colon%2541pct.txt"


# -- bodies -----------------------------------------------------------------------------------------------


async def test_chunked_and_close_delimited_bodies(server: HTTPTestServer) -> None:
    body = bytes(range(256)) * 200
    server.add("/chunked", body, chunked=True)

    @server.route("/close")
    async def close_delimited(request: Received, exchange: Exchange) -> None:
        await exchange.respond(200, body, length=False)

    async with Client() as client:
        chunked = await client.fetch(server.url("/chunked"))
        closed = await client.fetch(server.url("/close"))
    assert chunked.content == body and chunked.size is None
    assert closed.content == body and closed.size is None


async def test_gzip_and_deflate_decoded_and_raw_kept(server: HTTPTestServer) -> None:
    text = b"line of compressible text\n" * 5000
    server.add("/gz", gzipped(text), headers=[("Content-Encoding", "gzip")])
    server.add("/zlib", zlib.compress(text), headers=[("Content-Encoding", "deflate")])
    raw_deflate = zlib.compressobj(wbits=-15)
    server.add(
        "/rawdeflate", raw_deflate.compress(text) + raw_deflate.flush(), headers=[("Content-Encoding", "deflate")]
    )
    server.add("/gz-chunked", gzipped(text), headers=[("Content-Encoding", "gzip")], chunked=True)
    async with Client() as client:
        for path in ("/gz", "/zlib", "/rawdeflate", "/gz-chunked"):
            fetched = await client.fetch(server.url(path))
            assert fetched.content == text, path
            assert fetched.size is None
    async with Client(raw=True) as client:
        kept = await client.fetch(server.url("/gz"))
    assert kept.content == gzipped(text)
    assert kept.size == len(gzipped(text))


async def test_corrupt_gzip_is_a_protocol_error(server: HTTPTestServer) -> None:
    server.add("/bad", b"\x1f\x8b\x08\x00garbage-not-deflate", headers=[("Content-Encoding", "gzip")])
    async with Client() as client:
        with pytest.raises(ProtocolError, match="gzip body is corrupt"):
            await client.fetch(server.url("/bad"))


async def test_gzip_bomb_stops_at_max_size(server: HTTPTestServer, tmp_path: Path) -> None:
    bomb = gzip.compress(b"\0" * (32 << 20), compresslevel=9)
    assert len(bomb) < 64 * 1024
    server.add("/bomb", bomb, content_type="application/octet-stream", headers=[("Content-Encoding", "gzip")])
    async with Client(max_size=1 << 20) as client:
        with pytest.raises(TooLarge):
            await client.fetch(server.url("/bomb"))
    target = tmp_path / "bomb.bin"
    code, _, err = await cli("--max-size", "1M", "-o", str(target), server.url("/bomb"))
    assert code == 7
    assert "larger than the limit of 1048576 bytes" in err
    assert not target.exists()
    assert (tmp_path / "bomb.bin.part").stat().st_size <= (1 << 20) + 256 * 1024


# -- keep-alive -------------------------------------------------------------------------------------------


async def test_keep_alive_reuses_one_connection(server: HTTPTestServer) -> None:
    server.add("/gz", gzipped(b"x" * 10000), headers=[("Content-Encoding", "gzip")], chunked=True)
    async with Client() as client:
        for _ in range(3):
            assert (await client.fetch(server.url("/hello.txt"))).content == HELLO
            assert (await client.fetch(server.url("/gz"))).content == b"x" * 10000
    assert server.connections == 1
    assert [request.connection for request in server.requests] == [0] * 6


async def test_tiny_chunks_with_trailers_are_read_and_junk_after_them_is_not_pooled(server: HTTPTestServer) -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked += b"".join(b"1;x=y\r\n%c\r\n" % octet for octet in b"tiny") + b"0\r\nX-Sum: 4\r\n\r\n"

    @server.route("/tiny")
    async def tiny(request: Received, exchange: Exchange) -> None:
        await exchange.send(chunked)

    @server.route("/tiny-junk")
    async def tiny_junk(request: Received, exchange: Exchange) -> None:
        await exchange.send(chunked + b"JUNK")

    async with Client() as client:
        for _ in range(2):
            assert (await client.fetch(server.url("/tiny"))).content == b"tiny"
        assert server.connections == 1
        assert (await client.fetch(server.url("/tiny-junk"))).content == b"tiny"
        assert (await client.fetch(server.url("/hello.txt"))).content == HELLO
    assert server.connections == 2


async def test_unfinished_body_is_not_pooled(server: HTTPTestServer) -> None:
    server.add("/big", b"z" * (4 << 20))
    async with Client() as client:
        async with client.open(server.url("/big")) as resource:
            async for _chunk in resource:
                break
        assert client.pool.idle_count() == 0
        assert (await client.fetch(server.url("/hello.txt"))).content == HELLO
        assert client.pool.idle_count() == 1
    assert server.connections == 2


async def test_pooled_connection_closed_by_server_is_retried_once(server: HTTPTestServer) -> None:
    @server.route("/then-close")
    async def then_close(request: Received, exchange: Exchange) -> None:
        await exchange.respond(200, b"first\n")  # says keep-alive, then hangs up anyway
        await exchange.close()

    async with Client() as client:
        assert (await client.fetch(server.url("/then-close"))).content == b"first\n"
        assert client.pool.idle_count() == 1
        await trio.sleep(0.05)
        assert (await client.fetch(server.url("/hello.txt"))).content == HELLO
    assert server.connections == 2
    assert [r.target for r in server.requests] == ["/then-close", "/hello.txt"]


async def test_fresh_connection_closed_without_reply_is_not_retried(server: HTTPTestServer) -> None:
    @server.route("/hangup")
    async def hangup(request: Received, exchange: Exchange) -> None:
        await exchange.close()

    code, _, err = await cli(server.url("/hangup"))
    assert code == 7
    assert "closed the connection without a complete reply" in err
    assert len(server.requests) == 1


# -- faults -----------------------------------------------------------------------------------------------


async def test_reset_mid_body_leaves_no_complete_file(server: HTTPTestServer, tmp_path: Path) -> None:
    @server.route("/reset")
    async def reset(request: Received, exchange: Exchange) -> None:
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n" + b"a" * 50000)
        await trio.sleep(0.05)
        await exchange.reset()

    target = tmp_path / "out.bin"
    code, _, err = await cli("-o", str(target), server.url("/reset"))
    assert code == 7
    assert not target.exists()
    assert "127.0.0.1" in err


async def test_truncated_chunked_body_is_an_error(server: HTTPTestServer, tmp_path: Path) -> None:
    @server.route("/truncated")
    async def truncated(request: Received, exchange: Exchange) -> None:
        await exchange.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n8\r\n0123")
        await exchange.close()

    target = tmp_path / "out.txt"
    code, _, err = await cli("-o", str(target), server.url("/truncated"))
    assert code == 7
    assert "before the end of the body" in err
    assert not target.exists()


async def test_truncated_content_length_body_is_an_error(server: HTTPTestServer) -> None:
    @server.route("/short")
    async def short(request: Received, exchange: Exchange) -> None:
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
        await exchange.close()

    async with Client() as client:
        with pytest.raises(ProtocolError, match="before the end of the body"):
            await client.fetch(server.url("/short"))


@pytest.mark.parametrize("before_head", [True, False])
async def test_stalled_server_times_out(server: HTTPTestServer, before_head: bool) -> None:
    @server.route("/stall")
    async def stall(request: Received, exchange: Exchange) -> None:
        if not before_head:
            await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        await trio.sleep_forever()

    code, _, err = await cli("--timeout", "0.5", server.url("/stall"))
    assert code == 8
    assert "sent nothing for 0.5 s" in err


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 abc Bad\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.2\r\n",
        b"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
        b"\x00\xff" * 40,
    ],
)
async def test_bad_status_lines_are_protocol_errors(server: HTTPTestServer, reply: bytes) -> None:
    @server.route("/bad")
    async def bad(request: Received, exchange: Exchange) -> None:
        await exchange.send(reply)
        await exchange.close()

    code, _, err = await cli(server.url("/bad"))
    assert code == 7, err
    assert "fetch:" in err
    assert "\x00" not in err


async def test_informational_replies_are_skipped(server: HTTPTestServer) -> None:
    @server.route("/hints")
    async def hints(request: Received, exchange: Exchange) -> None:
        await exchange.send(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>\r\n\r\n")
        await exchange.respond(200, b"after hints\n")

    async with Client() as client:
        assert (await client.fetch(server.url("/hints"))).content == b"after hints\n"


async def test_oversized_head_is_refused(server: HTTPTestServer) -> None:
    @server.route("/huge-head")
    async def huge(request: Received, exchange: Exchange) -> None:
        await exchange.send(b"HTTP/1.1 200 OK\r\n" + b"X-Filler: " + b"f" * 100_000 + b"\r\n\r\n")
        await exchange.close()

    async with Client() as client:
        with pytest.raises(LimitExceeded, match="more than 65536 bytes in one response head field") as caught:
            await client.fetch(server.url("/huge-head"))
    assert caught.value.limit_name == "line_bytes"


# -- redirects --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_redirects_are_followed(server: HTTPTestServer, status: int) -> None:
    server.add("/dir/b.txt", b"b\n")
    server.routes["/dir/a"] = redirect("b.txt", status)
    async with Client() as client:
        fetched = await client.fetch(server.url("/dir/a"))
    assert fetched.content == b"b\n"
    assert str(fetched.url) == server.url("/dir/b.txt")
    assert server.connections == 1


async def test_absolute_redirect_and_no_location_flag(server: HTTPTestServer) -> None:
    server.routes["/abs"] = redirect(server.url("/hello.txt"), 301)
    code, out, _ = await cli(server.url("/abs"))
    assert (code, out) == (0, HELLO)
    code, out, err = await cli("--no-location", server.url("/abs"))
    assert (code, out) == (7, b"")
    assert err.splitlines()[0] == (
        f"fetch: HTTP 301 Moved Permanently: {server.url('/abs')} redirects to {server.url('/hello.txt')};"
        " not followed (--no-location)"
    )


async def test_redirect_loop_stops(server: HTTPTestServer) -> None:
    server.routes["/loop"] = redirect("/loop")
    code, _, err = await cli(server.url("/loop"))
    assert code == 7
    assert "more than 20 redirects" in err
    assert len(server.requests) == 21
    code, _, err = await cli("--max-redirs", "3", server.url("/loop"))
    assert code == 7 and "more than 3 redirects" in err


DANGEROUS = [
    "file:///etc/passwd",
    "gopher://127.0.0.1:6379/_save",
    "ftp://127.0.0.1:22/",
    "telnet://127.0.0.1/",
]


@pytest.mark.parametrize("location", DANGEROUS)
async def test_dangerous_redirects_are_refused_without_connecting(
    server: HTTPTestServer, location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.routes["/evil"] = redirect(location)
    attempts: list[tuple[str, int]] = []
    real = fetcher.net.connect.dial

    async def recording(host: str, port: int, **options: float) -> tuple[anyio.abc.SocketStream, socket.socket | None]:
        attempts.append((host, port))
        return await real(host, port, **options)

    monkeypatch.setattr(fetcher.net.connect, "dial", recording)  # what open_connection dials with
    async with Client() as client:
        with pytest.raises(UnsafeURL):
            await client.fetch(server.url("/evil"))
    assert attempts == [("127.0.0.1", server.port)]


@pytest.mark.parametrize("location", DANGEROUS)
async def test_dangerous_redirects_exit_3(server: HTTPTestServer, location: str) -> None:
    server.routes["/evil"] = redirect(location)
    code, out, err = await cli(server.url("/evil"))
    assert code == 3, err
    assert out == b""
    assert "refused" in err


async def test_gopher_redirect_to_redis_refused_even_when_gopher_allowed(server: HTTPTestServer) -> None:
    server.routes["/evil"] = redirect("gopher://127.0.0.1:6379/_save")
    code, _, err = await cli("--redirect-schemes", "http,gopher", server.url("/evil"))
    assert code == 3
    assert "port 6379 refused for gopher" in err


# -- status -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [(404, NotFound, 6), (410, NotFound, 6), (401, AuthError, 5), (403, AuthError, 5), (500, ProtocolError, 7),
     (418, ProtocolError, 7), (503, TransientError, 7), (429, TransientError, 7)],
)  # fmt: skip
async def test_status_mapping_keeps_error_body(
    server: HTTPTestServer, status: int, error: type[Exception], code: int
) -> None:
    @server.route("/status")
    async def reply(request: Received, exchange: Exchange) -> None:
        await exchange.respond(status, b"<p>error page</p>\n", [("Retry-After", "7")])

    async with Client() as client:
        with pytest.raises(error) as caught:
            await client.fetch(server.url("/status"))
        assert caught.value.body == b"<p>error page</p>\n"  # type: ignore[attr-defined]
        if status in (503, 429):
            assert caught.value.retry_after == 7.0  # type: ignore[attr-defined]
        # the error body was read to its end: the connection went back to the pool
        assert client.pool.idle_count() == 1
    exit_code, out, err = await cli(server.url("/status"))
    assert exit_code == code
    assert out == b""
    assert f"HTTP {status}" in err
    exit_code, out, _ = await cli("--show-error-body", server.url("/status"))
    assert (exit_code, out) == (code, b"<p>error page</p>\n")


async def test_gzipped_error_body_is_decoded(server: HTTPTestServer) -> None:
    @server.route("/gone")
    async def gone(request: Received, exchange: Exchange) -> None:
        await exchange.respond(404, gzipped(b"not here\n"), [("Content-Encoding", "gzip")])

    async with Client() as client:
        with pytest.raises(NotFound) as caught:
            await client.fetch(server.url("/gone"))
    assert caught.value.body == b"not here\n"


# -- credentials ------------------------------------------------------------------------------------------


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


async def test_basic_auth_from_url_userinfo_u_and_netrc(server: HTTPTestServer, tmp_path: Path) -> None:
    url = server.url("/hello.txt").replace("://", "://alice:s%3Acret@")
    code, _, _ = await cli(url)
    assert code == 0
    assert server.requests[-1].header("authorization") == basic("alice", "s:cret")
    code, _, _ = await cli("-u", "bob:pw", server.url("/hello.txt"))
    assert server.requests[-1].header("authorization") == basic("bob", "pw")
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login carol password fromnetrc\n")
    netrc.chmod(0o600)
    code, _, _ = await cli(server.url("/hello.txt"), env={"NETRC": str(netrc)})
    assert server.requests[-1].header("authorization") == basic("carol", "fromnetrc")
    code, _, _ = await cli(server.url("/hello.txt"))
    assert server.requests[-1].header("authorization") is None


async def test_credentials_never_follow_a_redirect_to_another_host(server: HTTPTestServer) -> None:
    # 127.0.0.1 and localhost reach the same server but are different origins.
    server.routes["/elsewhere"] = redirect(server.url("/hello.txt", host="localhost"))
    server.routes["/same"] = redirect("/hello.txt")
    for args in (["-u", "bob:pw"], []):
        url = server.url("/elsewhere") if args else server.url("/elsewhere").replace("://", "://a:b@")
        code, out, _ = await cli(*args, url)
        assert (code, out) == (0, HELLO)
        first, second = server.requests[-2:]
        assert first.header("authorization") is not None
        assert second.header("host") == f"localhost:{server.port}"
        assert second.header("authorization") is None
    code, _, _ = await cli("-u", "bob:pw", server.url("/same"))
    assert [r.header("authorization") for r in server.requests[-2:]] == [basic("bob", "pw")] * 2


async def test_trace_shows_heads_and_hides_the_password(server: HTTPTestServer) -> None:
    code, out, err = await cli("-v", "-u", "bob:secretpw", server.url("/hello.txt"))
    assert (code, out) == (0, HELLO)
    assert "> GET /hello.txt HTTP/1.1" in err
    assert "> Authorization: Basic ****" in err
    assert "< HTTP/1.1 200 OK" in err
    assert f"< Content-Length: {len(HELLO)}" in err
    assert "secretpw" not in err and base64.b64encode(b"bob:secretpw").decode() not in err


# -- resume and file names ---------------------------------------------------------------------------------

DATA = bytes(range(256)) * 1000


async def test_resume_with_range_206(server: HTTPTestServer, tmp_path: Path) -> None:
    server.add("/data.bin", DATA)
    target = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(DATA[:100_000])
    code, _, err = await cli("-C", "-o", str(target), server.url("/data.bin"))
    assert code == 0, err
    assert target.read_bytes() == DATA
    assert server.requests[-1].header("range") == "bytes=100000-"
    assert server.requests[-1].header("accept-encoding") == "identity"


async def test_resume_restarts_when_range_is_ignored(server: HTTPTestServer, tmp_path: Path) -> None:
    server.add("/data.bin", DATA, ranges=False)
    target = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(b"stale bytes that must go")
    code, _, err = await cli("-C", "-o", str(target), server.url("/data.bin"))
    assert code == 0, err
    assert target.read_bytes() == DATA


async def test_resume_416(server: HTTPTestServer, tmp_path: Path) -> None:
    server.add("/data.bin", DATA)
    target = tmp_path / "data.bin"
    (tmp_path / "data.bin.part").write_bytes(DATA)
    code, _, err = await cli("-C", "-o", str(target), server.url("/data.bin"))
    assert code == 0, err
    assert target.read_bytes() == DATA
    assert [r.header("range") for r in server.requests] == [f"bytes={len(DATA)}-"]
    # a local part longer than the remote file: start over
    target.unlink()
    (tmp_path / "data.bin.part").write_bytes(DATA + b"extra")
    code, _, err = await cli("-C", "-o", str(target), server.url("/data.bin"))
    assert code == 0, err
    assert target.read_bytes() == DATA
    assert [r.header("range") for r in server.requests[1:]] == [f"bytes={len(DATA) + 5}-", None]


async def test_content_disposition_name_is_sanitized(server: HTTPTestServer, tmp_path: Path) -> None:
    server.add(
        "/download", b"payload\n", headers=[("Content-Disposition", 'attachment; filename="../../etc/evil name.txt"')]
    )
    code, _, err = await cli("-O", "-J", "--output-dir", str(tmp_path), server.url("/download"))
    assert code == 0, err
    assert [p.name for p in tmp_path.iterdir()] == ["evil name.txt"]
    assert (tmp_path / "evil name.txt").read_bytes() == b"payload\n"
    async with Client() as client, client.open(server.url("/download")) as resource:
        assert resource.filename == "evil name.txt"


# -- proxies ------------------------------------------------------------------------------------------------


async def test_http_proxy_gets_absolute_target(server: HTTPTestServer) -> None:
    origin = "http://origin.invalid:8080/hello.txt"
    code, out, err = await cli("--proxy", server.url("/").replace("://", "://pu:pp@"), origin)
    assert (code, out) == (0, HELLO), err
    request = server.requests[-1]
    assert request.raw.startswith(b"GET http://origin.invalid:8080/hello.txt HTTP/1.1\r\n")
    assert request.header("host") == "origin.invalid:8080"
    assert request.header("proxy-authorization") == basic("pu", "pp")
    code, out, _ = await cli(origin, env={"http_proxy": f"127.0.0.1:{server.port}"})
    assert (code, out) == (0, HELLO)
    code, out, err = await cli(origin, env={"http_proxy": f"127.0.0.1:{server.port}", "no_proxy": "localhost,.invalid"})
    assert code == 4, err  # went direct: origin.invalid does not resolve
    assert len(server.requests) == 2


async def test_timeout_error_is_exit_8_in_library(server: HTTPTestServer) -> None:
    @server.route("/slow")
    async def slow(request: Received, exchange: Exchange) -> None:
        await trio.sleep_forever()

    async with Client(timeout=0.3) as client:
        with pytest.raises(Timeout):
            await client.fetch(server.url("/slow"))


async def test_static_helper_sanity(server: HTTPTestServer) -> None:
    server.routes["/x"] = static(b"abc", content_type="application/x-test")
    async with Client() as client:
        fetched = await client.fetch(server.url("/x"))
    assert (fetched.content, fetched.content_type) == (b"abc", "application/x-test")


async def test_large_bodies_keep_the_connection_alive(server: HTTPTestServer) -> None:
    big = bytes(range(256)) * (12 << 10)  # 3 MiB: read past h11, straight from the socket
    server.add("/big", big)
    async with Client() as client:
        for _ in range(2):
            assert (await client.fetch(server.url("/big"))).content == big
            assert (await client.fetch(server.url("/hello.txt"))).content == HELLO
    assert server.connections == 1
    assert len(server.requests) == 4


async def test_large_body_cut_short_is_an_error(server: HTTPTestServer, tmp_path: Path) -> None:
    @server.route("/cut")
    async def cut(request: Received, exchange: Exchange) -> None:
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\n\r\n")
        for _ in range(20):
            await exchange.send(b"c" * 100_000)
        await exchange.close()

    target = tmp_path / "cut.bin"
    code, _, err = await cli("-o", str(target), server.url("/cut"))
    assert code == 7
    assert "closed the connection before the end of the body" in err
    assert not target.exists()
    assert (tmp_path / "cut.bin.part").stat().st_size == 2_000_000
