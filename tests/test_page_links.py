"""`--links` and `--json` on an HTML page list its links (issue 29, item 6), so that
`fetch --links http://HOST/dir/ | fetch -i - -d out` retrieves what the page links to."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import trio

from tests.conftest import ROOT, run_fetch
from tests.servers.http_server import HTTPTestServer

PAGE = b"""<!doctype html>
<html><head><title>pub</title><link rel="stylesheet" href="style.css"></head>
<body>
<h1>Index of /dir/</h1>
<a href="a.txt">a.txt</a>
<a href="./b.txt">b.txt</a> <a href="a.txt">a.txt again</a>
<a href="../top.txt">up</a>
<a href="%(origin)s/dir/c.txt#section">c, absolute, with a fragment</a>
<a href="#top">this page</a> <a href="mailto:someone@example.org">mail</a>
<img src="pic.png" srcset="pic-2x.png 2x, pic-3x.png 3x">
</body></html>
"""
BASED = b'<html><head><base href="/elsewhere/"></head><body><a href="x.txt">x</a></body></html>'
FILES = ["a.txt", "b.txt", "c.txt", "style.css", "pic.png", "pic-2x.png", "pic-3x.png"]
NO_PROXY = {name: "" for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY")}


async def serve(nursery: trio.Nursery) -> HTTPTestServer:
    server = HTTPTestServer()
    await nursery.start(server.serve)
    origin = server.url("").encode()
    server.add("/dir/", PAGE % {b"origin": origin}, content_type="text/html; charset=utf-8")
    server.add("/based.html", BASED, content_type="text/html")
    for name in FILES:
        server.add(f"/dir/{name}", f"this is {name}\n".encode())
    server.add("/top.txt", b"the top\n")
    server.add("/dir/notes.txt", b"plain text, http://not-a-link.example/\n")
    return server


async def fetch(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, env=NO_PROXY))


async def test_links_of_a_page_are_absolute_urls_one_a_line(nursery: trio.Nursery) -> None:
    server = await serve(nursery)
    result = await fetch("--links", server.url("/dir/"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().splitlines() == [
        server.url("/dir/style.css"),
        server.url("/dir/a.txt"),
        server.url("/dir/b.txt"),
        server.url("/top.txt"),
        server.url("/dir/c.txt"),
        server.url("/dir/pic.png"),
        server.url("/dir/pic-2x.png"),
        server.url("/dir/pic-3x.png"),
    ]
    based = await fetch("--links", server.url("/based.html"))
    assert based.stdout.decode().splitlines() == [server.url("/elsewhere/x.txt")]


async def test_json_of_a_page_is_one_object_per_link_as_in_listings(nursery: trio.Nursery) -> None:
    server = await serve(nursery)
    result = await fetch("--json", server.url("/dir/"))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert rows[1] == {"name": "a.txt", "url": server.url("/dir/a.txt"), "type": "link", "size": None,
                       "description": ""}  # fmt: skip
    assert [row["name"] for row in rows][2:5] == ["./b.txt", "../top.txt", f"{server.url('')}/dir/c.txt#section"]
    assert len(rows) == 8


async def test_links_piped_into_a_bulk_run_fetch_every_linked_file(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = await serve(nursery)
    fetch_command = f"{shlex.quote(sys.executable)} -m fetcher"
    pipeline = f"{fetch_command} --links {server.url('/dir/')} | {fetch_command} -i - -d out"
    env = {**os.environ, **NO_PROXY, "NETRC": str(ROOT / "tests" / "no-such-netrc")}
    command = ["bash", "-o", "pipefail", "-c", pipeline]
    result = await trio.to_thread.run_sync(
        lambda: subprocess.run(command, capture_output=True, cwd=tmp_path, env=env, timeout=60)
    )
    err = result.stderr.decode()
    assert result.returncode == 0, err
    assert "no scheme" not in err and "fetch: 8 retrieved, 0 failed" in err
    saved = sorted(path.name for path in (tmp_path / "out").iterdir())
    assert saved == sorted([*FILES, "top.txt"])
    assert (tmp_path / "out" / "pic-2x.png").read_bytes() == b"this is pic-2x.png\n"


async def test_links_of_a_document_that_is_not_a_page_is_a_usage_error(nursery: trio.Nursery) -> None:
    server = await serve(nursery)
    for option in ("--links", "--json"):
        result = await fetch(option, server.url("/dir/notes.txt"))
        assert result.returncode == 2, result.stderr
        assert result.stdout == b""
        assert result.stderr.decode().startswith(
            f"fetch: {option}: {server.url('/dir/notes.txt')} is a document (text/plain), not a listing or an HTML page"
        )
