"""`fetch -r` over HTTP like `wget -r -np`: links from HTML, <base>, same host, robots.txt, -N with 304.

Against the in-repo HTTP server, asserting on the requests it received.
"""

from __future__ import annotations

import json
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path

import pytest
import trio

from fetcher.cli.bulk import run_bulk
from fetcher.cli.main import build_parser, settings_from_args
from tests.servers.http_server import Exchange, HTTPTestServer, Received

MODIFIED = 1795257000.0  # 2026-11-21 10:30:00 UTC


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def _bulk(*argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return await run_bulk(args, settings_from_args(args))


def _page(body: bytes, content_type: str = "text/html; charset=utf-8") -> object:
    """A document with Last-Modified that answers If-Modified-Since with 304 (as nginx does)."""

    async def route(request: Received, exchange: Exchange) -> None:
        since = request.header("if-modified-since")
        if since is not None and parsedate_to_datetime(since).timestamp() >= MODIFIED:
            await exchange.respond(304, b"", [("Last-Modified", formatdate(MODIFIED, usegmt=True))], length=False)
            return
        await exchange.respond(200, body, [("Content-Type", content_type),
                                           ("Last-Modified", formatdate(MODIFIED, usegmt=True))])  # fmt: skip

    return route


def _site(server: HTTPTestServer) -> None:
    other = server.url("/elsewhere.html", host="localhost")
    server.routes.update({
        "/robots.txt": _page(b"User-agent: *\nDisallow: /site/secret.html\n", "text/plain"),
        "/site/index.html": _page(f"""<html><head><link rel=stylesheet href="style.css"></head><body>
            <a href="a.html">A</a> <a href="sub/page.html#top">page</a> <a href="../outside.html">up</a>
            <a href="/site/secret.html">secret</a> <a href="{other}">other host</a>
            <a href="mailto:x@example.org">mail</a> <img src="/site/img/p.png"></body></html>""".encode()),
        "/site/a.html": _page(b'<a href="index.html">back home (a loop)</a> <a href="sub/b.txt">b</a>'),
        "/site/style.css": _page(b"body {}", "text/css"),
        "/site/img/p.png": _page(b"\x89PNG fake", "image/png"),
        "/site/sub/b.txt": _page(b"bee", "text/plain"),
        "/site/sub/page.html": _page(b'<base href="/site/other/"><a href="c.txt">c</a> <a href="../../x.html">x</a>'),
        "/site/other/c.txt": _page(b"sea", "text/plain"),
        "/site/secret.html": _page(b"secret"),
        "/outside.html": _page(b"outside"),
        "/x.html": _page(b"outside too"),
    })  # fmt: skip


@pytest.mark.parametrize("robots", [True, False])
async def test_http_recursion_stays_below_the_start_and_honours_robots(tmp_path: Path, robots: bool) -> None:
    server = HTTPTestServer()
    _site(server)
    manifest = tmp_path / "m.jsonl"
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        code = await _bulk("-r", "--layout", "tree", "-d", str(tmp_path / "out"), "--manifest", str(manifest),
                           "--no-progress", *([] if robots else ["--no-robots"]),
                           server.url("/site/index.html"))  # fmt: skip
        nursery.cancel_scope.cancel()
    assert code == 0
    asked = sorted(request.path for request in server.requests)
    pages = ["/site/a.html", "/site/img/p.png", "/site/index.html", "/site/other/c.txt", "/site/style.css",
             "/site/sub/b.txt", "/site/sub/page.html"]  # fmt: skip
    if robots:
        assert asked == sorted([*pages, "/robots.txt"])
        skipped = [row for row in _records(manifest) if row["status"] == "skipped"]
        assert [str(row["url"]).rsplit("/", 1)[1] for row in skipped] == ["secret.html"]
        assert "robots.txt" in str(skipped[0]["reason"])
    else:
        assert asked == sorted([*pages, "/site/secret.html"])
    site = tmp_path / "out" / f"127.0.0.1_{server.port}" / "site"
    assert (site / "other" / "c.txt").read_bytes() == b"sea"
    assert (site / "sub" / "b.txt").stat().st_mtime == MODIFIED


async def test_http_timestamping_second_run_gets_only_304(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = HTTPTestServer()
    _site(server)
    manifest = tmp_path / "m.jsonl"
    argv = ["-r", "-N", "--layout", "tree", "-d", str(tmp_path / "out"), "--manifest", str(manifest), "--no-progress"]
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        assert await _bulk(*argv, server.url("/site/index.html")) == 0
        first = len(server.requests)
        assert "fetch: mirror: 7 new, 0 updated, 0 unchanged, 1 skipped, 0 failed" in capsys.readouterr().err
        assert await _bulk(*argv, server.url("/site/index.html")) == 0
        nursery.cancel_scope.cancel()
    second = server.requests[first:]
    assert all(request.header("if-modified-since") for request in second if request.path != "/robots.txt")
    assert "fetch: mirror: 0 new, 0 updated, 7 unchanged, 1 skipped, 0 failed; 0 bytes" in capsys.readouterr().err
    rows = [row for row in _records(manifest)[8:] if row["status"] != "skipped"]
    assert len(rows) == 7 and all(row["change"] == "unchanged" and row["status"] == "ok" for row in rows)


class _Tagged:
    """Documents with an ETag and no Last-Modified, answering only If-None-Match (If-Modified-Since is ignored).

    So a second -N run gets 304s only if fetcher kept each file's ETag and sent it back.
    `body_bytes` counts the body bytes the server sent, per request.
    """

    def __init__(self, documents: dict[str, tuple[bytes, str]]) -> None:
        self.documents = documents
        self.body_bytes: list[int] = []

    def route(self, path: str) -> object:
        async def answer(request: Received, exchange: Exchange) -> None:
            body, tag = self.documents[path]
            kind = "text/html" if path.endswith(".html") else "text/plain"
            if request.header("if-none-match") == tag:
                self.body_bytes.append(0)
                await exchange.respond(304, b"", [("ETag", tag)], length=False)
                return
            self.body_bytes.append(len(body))
            await exchange.respond(200, body, [("Content-Type", kind), ("ETag", tag)])

        return answer


async def test_http_timestamping_keeps_etags_and_sends_if_none_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = HTTPTestServer()
    site = _Tagged({
        "/t/index.html": (b'<a href="a.txt">a</a> <a href="b.txt">b</a> <a href=".fetch-etags.jsonl">x</a>', '"i-1"'),
        "/t/a.txt": (b"alpha\n", 'W/"a-1"'),
        "/t/b.txt": (b"bravo\n", '"b-1"'),
        "/t/.fetch-etags.jsonl": (b"a document that happens to have the state file's name\n", '"s-1"'),
    })  # fmt: skip
    for path in site.documents:
        server.routes[path] = site.route(path)
    out, manifest = tmp_path / "out", tmp_path / "m.jsonl"
    argv = ["-r", "-N", "-d", str(out), "--manifest", str(manifest), "--no-progress", "--no-robots"]
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        start = server.url("/t/index.html")
        assert await _bulk(*argv, start) == 0
        assert "fetch: mirror: 4 new, 0 updated, 0 unchanged" in capsys.readouterr().err
        first = len(server.requests)
        assert await _bulk(*argv, start) == 0
        second = server.requests[first:]
        second_bytes = site.body_bytes[first:]
        assert "fetch: mirror: 0 new, 0 updated, 4 unchanged, 0 skipped, 0 failed; 0 bytes" in capsys.readouterr().err
        # The server changes one document; a local file is edited by hand.
        site.documents["/t/b.txt"] = (b"bravo, second edition\n", '"b-2"')
        (out / "a.txt").write_bytes(b"edited here\n")
        before = len(server.requests)
        assert await _bulk(*argv, start) == 0
        third = {request.path: request for request in server.requests[before:]}
        nursery.cancel_scope.cancel()
    assert {request.path: request.header("if-none-match") for request in second} == {
        "/t/index.html": '"i-1"', "/t/a.txt": 'W/"a-1"', "/t/b.txt": '"b-1"', "/t/.fetch-etags.jsonl": '"s-1"'}
    assert all(request.header("if-modified-since") for request in second)
    assert second_bytes == [0, 0, 0, 0]  # no body was transferred
    assert third["/t/b.txt"].header("if-none-match") == '"b-1"'  # the server's answer: 200 with "b-2"
    assert third["/t/a.txt"].header("if-none-match") is None  # edited locally: the tag no longer describes it
    assert "fetch: mirror: 0 new, 2 updated, 2 unchanged" in capsys.readouterr().err
    assert (out / "b.txt").read_bytes() == b"bravo, second edition\n" and (out / "a.txt").read_bytes() == b"alpha\n"
    # The state file is fetcher's; the document named like it is saved beside it (no leading dot).
    assert (out / "fetch-etags.jsonl").read_bytes().startswith(b"a document")
    state = {row["url"]: row["etag"] for row in _records(out / ".fetch-etags.jsonl")}
    assert state == {start: '"i-1"', server.url("/t/a.txt"): 'W/"a-1"', server.url("/t/b.txt"): '"b-2"',
                     server.url("/t/.fetch-etags.jsonl"): '"s-1"'}  # fmt: skip
    rows = _records(manifest)
    assert [(row["change"], row.get("etag")) for row in rows if str(row["url"]).endswith("b.txt")] == [
        ("new", '"b-1"'), ("unchanged", None), ("updated", '"b-2"')]
    assert all(row["status"] == "ok" for row in rows)


@pytest.mark.parametrize(("depth", "cap"), [(1, None), (5, 3)])
async def test_http_recursion_depth_and_page_limits(tmp_path: Path, depth: int, cap: int | None) -> None:
    server = HTTPTestServer()
    _site(server)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        code = await _bulk("-r", "--depth", str(depth), *(["--limit", f"pages={cap}"] if cap else []),
                           "--layout", "tree", "-d", str(tmp_path / "out"), "--no-progress", "--no-robots",
                           server.url("/site/index.html"))  # fmt: skip
        nursery.cancel_scope.cancel()
    asked = sorted(request.path for request in server.requests)
    if cap is None:  # the start page and what it links to, not the links of those
        assert code == 0
        assert asked == ["/site/a.html", "/site/img/p.png", "/site/index.html", "/site/secret.html",
                         "/site/style.css", "/site/sub/page.html"]  # fmt: skip
    else:  # three URLs taken on in all, then a note and exit 7
        assert code == 7
        assert len(asked) == 3 and "/site/index.html" in asked


async def test_https_recursion_and_timestamping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import ssl

    import trustme

    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    cacert = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(cacert))
    server = HTTPTestServer(tls=context)
    _site(server)
    argv = ["-r", "-N", "--cacert", str(cacert), "--layout", "tree", "-d", str(tmp_path / "out"), "--no-progress"]
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        start = server.url("/site/index.html")
        assert start.startswith("https://")
        assert await _bulk(*argv, start) == 0
        first = len(server.requests)
        assert await _bulk(*argv, start) == 0
        nursery.cancel_scope.cancel()
    asked = sorted({request.path for request in server.requests})
    assert asked == ["/robots.txt", "/site/a.html", "/site/img/p.png", "/site/index.html", "/site/other/c.txt",
                     "/site/style.css", "/site/sub/b.txt", "/site/sub/page.html"]  # fmt: skip
    assert all(request.header("if-modified-since") for request in server.requests[first:]
               if request.path != "/robots.txt")  # fmt: skip
    err = capsys.readouterr().err
    assert "fetch: mirror: 7 new, 0 updated, 0 unchanged, 1 skipped, 0 failed" in err
    assert "fetch: mirror: 0 new, 0 updated, 7 unchanged, 1 skipped, 0 failed; 0 bytes" in err


class _Changing:
    """Documents with Last-Modified that answer If-Modified-Since with 304 while unchanged (no ETags).

    `change` gives one a new body and a later time, as an edit on the server does.
    """

    def __init__(self, documents: dict[str, tuple[bytes, str]]) -> None:
        self.documents = {path: (body, kind, MODIFIED) for path, (body, kind) in documents.items()}

    def change(self, path: str, body: bytes) -> None:
        self.documents[path] = (body, self.documents[path][1], MODIFIED + 3600)

    def route(self, path: str) -> object:
        async def answer(request: Received, exchange: Exchange) -> None:
            body, kind, when = self.documents[path]
            since = request.header("if-modified-since")
            if since is not None and parsedate_to_datetime(since).timestamp() >= when:
                await exchange.respond(304, b"", [("Last-Modified", formatdate(when, usegmt=True))], length=False)
                return
            stamp = formatdate(when, usegmt=True)
            await exchange.respond(200, body, [("Content-Type", kind), ("Last-Modified", stamp)])

        return answer


@pytest.mark.parametrize("state", ["kept", "deleted"])
async def test_timestamping_follows_the_links_of_pages_answered_304(tmp_path: Path, state: str) -> None:
    """`fetch -r -N --layout tree -d out http://HOST/pub/` after a file below the start page changed.

    The start page and `sub/` are saved as `index` (no suffix) and answered
    304: their saved copies are read again, so the changed file is found and
    fetched.  With the state file kept, the type it recorded says "HTML" (and
    `f.txt`, text/plain that starts like a page, stays text); deleted, the
    first bytes say it, as a browser sniffs.
    """
    from tests.hostile.checks import cli

    site = _Changing({
        "/pub/": (b'<!DOCTYPE html>\n<a href="f.txt">f</a> <a href="sub/">sub</a>', "text/html"),
        "/pub/f.txt": (b'<p> not a page, though it starts like one: <a href="h.txt">h</a>\n', "text/plain"),
        "/pub/h.txt": (b"only a text file links here\n", "text/plain"),
        "/pub/sub/": (b'<html><a href="g.txt">g</a></html>', "text/html; charset=utf-8"),
        "/pub/sub/g.txt": (b"first edition\n", "text/plain"),
    })  # fmt: skip
    server = HTTPTestServer()
    for path in site.documents:
        server.routes[path] = site.route(path)
    out = tmp_path / "out"
    argv = ["-r", "-N", "--layout", "tree", "-d", str(out), "--no-progress", "--no-robots"]
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        first = await cli(*argv, server.url("/pub/"))
        assert first.returncode == 0, first.stderr
        assert "fetch: mirror: 4 new, 0 updated, 0 unchanged" in first.stderr.decode()
        site.change("/pub/sub/g.txt", b"second edition, longer\n")
        if state == "deleted":
            (out / ".fetch-etags.jsonl").unlink()
        before = len(server.requests)
        second = await cli(*argv, server.url("/pub/"))
        nursery.cancel_scope.cancel()
    assert second.returncode == 0, second.stderr
    saved = out / f"127.0.0.1_{server.port}" / "pub"
    assert (saved / "sub" / "g.txt").read_bytes() == b"second edition, longer\n"
    assert (saved / "index").is_file() and (saved / "sub" / "index").is_file()
    asked = sorted(request.path for request in server.requests[before:])
    if state == "kept":
        assert "fetch: mirror: 0 new, 1 updated, 3 unchanged, 0 skipped, 0 failed" in second.stderr.decode()
        assert asked == ["/pub/", "/pub/f.txt", "/pub/sub/", "/pub/sub/g.txt"]
    else:  # without the recorded type, f.txt looks like a page too: its link is new
        assert "fetch: mirror: 1 new, 1 updated, 3 unchanged, 0 skipped, 0 failed" in second.stderr.decode()
        assert asked == ["/pub/", "/pub/f.txt", "/pub/h.txt", "/pub/sub/", "/pub/sub/g.txt"]
    assert all(request.header("if-modified-since") for request in server.requests[before:]
               if request.path != "/pub/h.txt")  # fmt: skip
