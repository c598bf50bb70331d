"""http: against a real nginx (Debian's nginx-light): files, 64 MiB by SHA-256, gzip, keep-alive, redirects, resume."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from fetcher import Client
from fetcher.errors import AuthError, NotFound, ProtocolError, TransientError, UnsafeURL
from tests.conftest import require, run_fetch
from tests.interop.content import sha256_file
from tests.interop.nginx_server import Nginx, find_nginx, run_nginx

pytestmark = pytest.mark.interop

NO_PROXY_ENV = {"http_proxy": "", "https_proxy": "", "HTTPS_PROXY": "", "no_proxy": "", "NO_PROXY": ""}


@pytest.fixture(scope="module")
def nginx(content_tree: Path) -> Iterator[Nginx]:
    binary = find_nginx()
    require(binary is not None, "nginx", "apt-get install nginx-light")
    assert binary is not None
    with run_nginx(content_tree, nginx=binary) as server:
        yield server


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in NO_PROXY_ENV:
        monkeypatch.delenv(name, raising=False)
    yield


async def cli(*args: str) -> tuple[int, bytes, str]:
    result = await trio.to_thread.run_sync(lambda: run_fetch(*args, env=NO_PROXY_ENV))
    return result.returncode, result.stdout, result.stderr.decode("utf-8", "replace")


async def test_static_files(nginx: Nginx, content_tree: Path) -> None:
    names = {
        "/hello.txt": "hello.txt",
        "/empty.txt": "empty.txt",
        "/one-byte.txt": "one-byte.txt",
        "/file%20with%20space.txt": "file with space.txt",
        "/semi;colon%2541pct.txt": "semi;colon%41pct.txt",
        "/utf8-%C3%B1ame.txt": "utf8-\u00f1ame.txt",
        "/mixed-eol.txt": "mixed-eol.txt",
        "/images/tiny.png": "images/tiny.png",
    }
    async with Client() as client:
        for path, name in names.items():
            fetched = await client.fetch(nginx.url(path))
            assert fetched.content == (content_tree / name).read_bytes(), path
        png = await client.fetch(nginx.url("/images/tiny.png"))
        assert (png.content_type, png.size) == ("image/png", 69)
        listing = await client.fetch(nginx.url("/a"))  # nginx: 301 to /a/, then its autoindex page
        assert str(listing.url) == nginx.url("/a/") and b'href="a.txt"' in listing.content


async def test_big_file_by_sha256_plain_and_chunked(nginx: Nginx, content_tree: Path, tmp_path: Path) -> None:
    expected = sha256_file(content_tree / "big-64M.bin")
    size = (content_tree / "big-64M.bin").stat().st_size
    async with Client() as client:
        plain = await client.download(nginx.url("/big-64M.bin"), tmp_path / "plain.bin")
        chunked = await client.download(nginx.url("/chunked/big-64M.bin"), tmp_path / "chunked.bin")
    assert (plain.bytes, plain.sha256) == (size, expected)
    assert (chunked.bytes, chunked.sha256) == (size, expected)
    assert sha256_file(tmp_path / "plain.bin") == expected


async def test_gzip_decoded_and_raw(nginx: Nginx, content_tree: Path) -> None:
    text = (content_tree / "text-256k.txt").read_bytes()
    async with Client() as client:
        fetched = await client.fetch(nginx.url("/text-256k.txt"))
    assert fetched.content == text
    assert fetched.metadata["content_encoding"] == "gzip"
    code, out, _ = await cli("--raw", nginx.url("/text-256k.txt"))
    assert code == 0 and out[:2] == b"\x1f\x8b" and len(out) < len(text) // 10
    assert gzip.decompress(out) == text
    status, sent = nginx.access_log()[-1][3:]
    assert status == "200" and len(out) <= int(sent) < len(out) + 100  # plus the chunked framing


async def test_keep_alive_one_connection_for_many_requests(nginx: Nginx) -> None:
    before = len(nginx.access_log())
    async with Client() as client:
        for path in ["/hello.txt", "/text-256k.txt", "/status/404", "/redirect-301-rel", "/chunked/a/a.txt"] * 3:
            try:
                await client.fetch(nginx.url(path))
            except NotFound:
                pass
    # nginx logs a request after it has sent the response, so the last line
    # may land a moment after the client has read it: wait for it (bounded).
    with trio.move_on_after(5):
        while len(nginx.access_log()) - before < 18:
            await trio.sleep(0.02)
    rows = nginx.access_log()[before:]
    assert len(rows) == 18  # 15 requests plus 3 redirect targets
    assert len({row[0] for row in rows}) == 1, rows
    assert [int(row[1]) for row in rows] == list(range(1, 19))


async def test_redirects(nginx: Nginx, content_tree: Path) -> None:
    hello = (content_tree / "hello.txt").read_bytes()
    async with Client() as client:
        for path in ("/redirect-301", "/redirect-301-rel", "/redirect-301-abs", "/redirect-307", "/redirect-chain/19"):
            fetched = await client.fetch(nginx.url(path))
            assert fetched.content == hello, path
            assert str(fetched.url) == nginx.url("/hello.txt")
        deep = await client.fetch(nginx.url("/redirect-301-relpath"))
        assert deep.content == (content_tree / "a/b/c/deep.txt").read_bytes()
        with pytest.raises(ProtocolError, match="more than 20 redirects"):
            await client.fetch(nginx.url("/redirect-chain/20"))
        with pytest.raises(ProtocolError, match="more than 20 redirects"):
            await client.fetch(nginx.url("/redirect-loop"))
        for path in ("/redirect-302-file", "/redirect-302-redis"):
            with pytest.raises(UnsafeURL):
                await client.fetch(nginx.url(path))
    code, out, err = await cli(nginx.url("/redirect-302-file"))
    assert (code, out) == (3, b"")
    assert "file: URL refused" in err


async def test_status_codes(nginx: Nginx) -> None:
    async with Client() as client:
        for path, error in [("/status/404", NotFound), ("/missing.txt", NotFound), ("/unreadable.txt", AuthError),
                            ("/status/503", TransientError), ("/status/500", ProtocolError)]:  # fmt: skip
            with pytest.raises(error) as caught:
                await client.fetch(nginx.url(path))
            assert caught.value.body is not None and b"nginx" in caught.value.body
    code, out, err = await cli("--show-error-body", nginx.url("/status/404"))
    assert code == 6 and b"<title>404 Not Found</title>" in out
    assert "HTTP 404 Not Found" in err


async def test_range_resume(nginx: Nginx, content_tree: Path, tmp_path: Path) -> None:
    source = content_tree / "big-64M.bin"
    target = tmp_path / "big.bin"
    with open(source, "rb") as original:
        (tmp_path / "big.bin.part").write_bytes(original.read(3_000_001))
    before = len(nginx.access_log())
    code, _, err = await cli("-C", "-o", str(target), nginx.url("/big-64M.bin"))
    assert code == 0, err
    assert sha256_file(target) == sha256_file(source)
    row = nginx.access_log()[before]
    assert row[3] == "206" and int(row[4]) == source.stat().st_size - 3_000_001
