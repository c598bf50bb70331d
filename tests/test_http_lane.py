"""The HTTP bulk lane (schemes/http/lane.py): pipelined GETs give the same outcomes as one request at a time.

Every test runs the same URL list through `fetch_all` twice, with
`pipeline=True` (the lane) and `pipeline=False` (one task and one request
per URL), and compares what a user sees (ok or the error's class and
message, bytes on disk) and what the server received.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from fetcher import Client
from fetcher.errors import FetchError, LimitExceeded
from fetcher.schemes.http.fields import Fields
from fetcher.schemes.http.lane import DEPTH
from fetcher.schemes.http.reader import STATUS_OVERHEAD, ReplyReader
from fetcher.settings import Limits
from tests.servers.http_server import Exchange, HTTPTestServer, Received, gzipped, redirect


def _body(index: int) -> bytes:
    return hashlib.sha256(str(index).encode()).digest() * (index % 7 + 1) * 40


async def _run(server: HTTPTestServer, urls: list[str], out: Path, *, pipeline: bool, **settings: object):
    outcomes = {}
    out.mkdir(exist_ok=True)
    async with Client(pipeline=pipeline, retries=0, **settings) as client:  # type: ignore[arg-type]

        def destination(url: object) -> Path:
            return out / str(url).rsplit("/", 1)[1]

        async with client.fetch_all(urls, jobs=4, per_host=2, destination=destination) as results:
            async for outcome in results:
                outcomes[outcome.url] = outcome
    return outcomes


def _seen(outcomes: dict) -> dict[str, tuple[str, str]]:
    """What a user sees of each outcome: ok with the file's bytes' digest, or the error's class and message."""
    seen = {}
    for url, outcome in outcomes.items():
        if outcome.error is None:
            data = Path(outcome.result.path).read_bytes()
            seen[url] = ("ok", hashlib.sha256(data).hexdigest())
        else:
            assert isinstance(outcome.error, FetchError)
            seen[url] = (type(outcome.error).__name__, outcome.error.message)
    return seen


async def _both(server: HTTPTestServer, urls: list[str], tmp_path: Path, **settings: object):
    """(lane outcomes, task outcomes, requests the lane run made, requests the task run made)."""
    lane = await _run(server, urls, tmp_path / "lane", pipeline=True, **settings)
    lane_requests = [request.target for request in server.requests]
    server.requests.clear()
    task = await _run(server, urls, tmp_path / "task", pipeline=False, **settings)
    task_requests = [request.target for request in server.requests]
    return lane, task, lane_requests, task_requests


async def test_the_lane_asks_for_each_url_once_on_few_connections(tmp_path: Path) -> None:
    server = HTTPTestServer()
    for index in range(200):
        server.add(f"/f{index}", _body(index), content_type="application/octet-stream")
    urls = [f"http://127.0.0.1:{{port}}/f{index}" for index in range(200)]
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        urls = [url.format(port=server.port) for url in urls]
        lane = await _run(server, urls, tmp_path / "lane", pipeline=True)
        connections, pipelined = server.connections, server.pipelined
        asked = Counter(request.target for request in server.requests)
        server.pipelined = 0
        await _run(server, urls, tmp_path / "task", pipeline=False)
        nursery.cancel_scope.cancel()
    assert pipelined > 100  # requests were waiting at the server while earlier replies went out
    assert server.pipelined == 0  # --no-pipeline: one request at a time
    assert all(outcome.ok for outcome in lane.values())
    for index in range(200):
        assert (tmp_path / "lane" / f"f{index}").read_bytes() == _body(index)
    assert asked == {f"/f{index}": 1 for index in range(200)}
    assert connections <= 2  # --per-host 2: every URL went down two kept-alive connections
    assert not list((tmp_path / "lane").glob("*.part"))


async def test_errors_redirects_and_encodings_match_the_task_path(tmp_path: Path) -> None:
    server = HTTPTestServer()
    server.add("/ok", b"plain body\n")
    server.add("/target", b"where the redirect leads\n")
    server.routes["/moved"] = redirect("/target", 301)

    @server.route("/gz")
    async def gz(request: Received, exchange: Exchange) -> None:
        await exchange.respond(200, gzipped(b"inflated " * 500), [("Content-Encoding", "gzip")])

    @server.route("/busy")
    async def busy(request: Received, exchange: Exchange) -> None:
        await exchange.respond(503, b"come back later\n", [("Retry-After", "1")])

    @server.route("/forbidden")
    async def forbidden(request: Received, exchange: Exchange) -> None:
        await exchange.respond(403, gzipped(b"no\n"), [("Content-Encoding", "gzip")])

    names = ["ok", "missing", "moved", "gz", "busy", "forbidden", "ok2"]
    server.add("/ok2", b"second\n")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        urls = [server.url(f"/{name}") for name in names]
        lane, task, lane_requests, task_requests = await _both(server, urls, tmp_path)
        nursery.cancel_scope.cancel()
    assert _seen(lane) == _seen(task)
    assert _seen(lane)[urls[2]] == ("ok", hashlib.sha256(b"where the redirect leads\n").hexdigest())
    assert _seen(lane)[urls[1]][0] == "NotFound"
    assert Counter(lane_requests) == Counter(task_requests)  # nothing asked twice, nothing skipped


async def test_error_pages_are_read_alike_on_both_paths(tmp_path: Path) -> None:
    # One judgement and one error-page decoder (verdict.py) for the lane and the task path:
    # the page a user sees (--show-error-body) is the same bytes whichever path read it.
    pages = {
        "gz": ([("Content-Encoding", "gzip")], gzipped(b"<p>gone</p>\n")),
        "cut": ([("Content-Encoding", "gzip")], gzipped(b"what decoded before the damage " * 4)[:-8]),  # no trailer
        "br": ([("Content-Encoding", "br")], b"left as it came"),
        "bomb": ([("Content-Encoding", "gzip")], gzipped(b"z" * (200 * 1024))),
        "plain": ([], b"plain page\n"),
    }
    server = HTTPTestServer()
    for name, (headers, body) in pages.items():

        async def page(request: Received, exchange: Exchange, headers=headers, body=body) -> None:
            await exchange.respond(404, body, headers)

        server.routes[f"/{name}"] = page
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        urls = [server.url(f"/{name}") for name in pages]
        lane, task, lane_requests, task_requests = await _both(server, urls, tmp_path)
        nursery.cancel_scope.cancel()
    assert _seen(lane) == _seen(task)
    bodies = {url.rsplit("/", 1)[1]: lane[url].error.body for url in urls}
    assert bodies == {url.rsplit("/", 1)[1]: task[url].error.body for url in urls}
    assert bodies["cut"] == b"what decoded before the damage " * 4
    assert bodies["br"] == b"left as it came" and bodies["bomb"] == b"z" * (64 * 1024)
    assert Counter(lane_requests) == Counter(task_requests)  # the lane read them all itself


async def test_a_chunked_reply_ends_pipelining_for_its_origin(tmp_path: Path) -> None:
    """What the lane does not read itself goes the task path; at most one batch is asked twice."""
    server = HTTPTestServer()

    async def chunked(request: Received, exchange: Exchange) -> None:
        await exchange.respond(200, request.target.encode() * 50, chunked=True)

    for index in range(100):
        server.routes[f"/c{index}"] = chunked
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        urls = [server.url(f"/c{index}") for index in range(100)]
        lane, task, lane_requests, _ = await _both(server, urls, tmp_path)
        nursery.cancel_scope.cancel()
    assert _seen(lane) == _seen(task)
    assert all(outcome.ok for outcome in lane.values())
    assert set(lane_requests) == {f"/c{index}" for index in range(100)}
    assert len(lane_requests) <= 100 + 2 * DEPTH  # one batch per connection at most


async def test_a_server_that_closes_after_a_few_replies_gets_the_rest_again(tmp_path: Path) -> None:
    """A keep-alive limit (nginx's keepalive_requests): unanswered requests are sent again on a new connection."""
    server = HTTPTestServer()
    served: Counter[int] = Counter()

    async def limited(request: Received, exchange: Exchange) -> None:
        served[request.connection] += 1
        close = served[request.connection] == 5
        await exchange.respond(200, request.target.encode() * 30, close=close)

    for index in range(120):
        server.routes[f"/k{index}"] = limited
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        urls = [server.url(f"/k{index}") for index in range(120)]
        lane = await _run(server, urls, tmp_path / "lane", pipeline=True)
        nursery.cancel_scope.cancel()
    assert all(outcome.ok for outcome in lane.values()), [o for o in lane.values() if not o.ok][:3]
    for index in range(120):
        assert (tmp_path / "lane" / f"k{index}").read_bytes() == f"/k{index}".encode() * 30
    answered = Counter(request.target for request in server.requests)
    assert set(answered) == {f"/k{index}" for index in range(120)}


async def test_a_reply_cut_short_fails_that_url_and_spares_the_rest(tmp_path: Path) -> None:
    server = HTTPTestServer()
    for index in range(20):
        server.add(f"/p{index}", b"x" * 1000)

    @server.route("/short")
    async def short(request: Received, exchange: Exchange) -> None:
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"y" * 100)
        await exchange.close()

    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        urls = [server.url(f"/p{index}") for index in range(10)]
        urls += [server.url("/short")] + [server.url(f"/p{index}") for index in range(10, 20)]
        lane, task, _, _ = await _both(server, urls, tmp_path)
        nursery.cancel_scope.cancel()
    assert _seen(lane) == _seen(task)
    assert not lane[server.url("/short")].ok
    assert not (tmp_path / "lane" / "short").exists()  # a failed transfer never looks complete
    assert (tmp_path / "lane" / "short.part").read_bytes() == b"y" * 100  # kept for -C
    assert sum(outcome.ok for outcome in lane.values()) == 20


async def test_bodies_in_pieces_whole_and_empty_are_saved_alike(tmp_path: Path) -> None:
    # A body that came with its head is taken from the buffer as it is; one that arrives
    # in pieces afterwards is read as it comes; an empty one makes an empty file.
    server = HTTPTestServer()
    server.add("/empty", b"")
    for index in range(6):
        server.add(f"/whole{index}", _body(index))

    @server.route("/pieces")
    async def pieces(request: Received, exchange: Exchange) -> None:
        body = _body(99) * 5
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        for start in range(0, len(body), 1000):
            await trio.sleep(0.01)
            await exchange.send(body[start : start + 1000])

    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        urls = [server.url("/empty"), server.url("/pieces")] + [server.url(f"/whole{index}") for index in range(6)]
        lane, task, lane_requests, _ = await _both(server, urls, tmp_path)
        nursery.cancel_scope.cancel()
    assert _seen(lane) == _seen(task)
    assert all(outcome.ok for outcome in lane.values())
    assert (tmp_path / "lane" / "empty").read_bytes() == b""
    assert (tmp_path / "lane" / "pieces").read_bytes() == _body(99) * 5
    assert (tmp_path / "lane" / "whole5").read_bytes() == _body(5)
    assert sorted(lane_requests) == sorted("/" + url.split("/", 3)[3] for url in urls)  # each asked for once


async def test_digest_false_saves_the_same_files_without_a_sha256(tmp_path: Path) -> None:
    # fetch_all(digest=False) (the command without --manifest): the same bytes on disk,
    # on the lane and on the task path (a large body takes `save`), and no SHA-256 computed.
    server = HTTPTestServer()
    for index in range(10):
        server.add(f"/small{index}", _body(index))
    server.add("/large", _body(3) * 2000)  # over SMALL_BODY: the .part file as it arrives

    async def run(out: Path, *, pipeline: bool, digest: bool) -> dict:
        urls = [server.url(f"/small{index}") for index in range(10)] + [server.url("/large")]
        out.mkdir()
        outcomes = {}

        def destination(url: object) -> Path:
            return out / str(url).rsplit("/", 1)[1]

        async with Client(pipeline=pipeline, retries=0) as client:
            async with client.fetch_all(urls, jobs=4, per_host=2, digest=digest, destination=destination) as results:
                async for outcome in results:
                    outcomes[outcome.url] = outcome
        return outcomes

    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        runs = {
            (pipeline, digest): await run(tmp_path / f"{pipeline}-{digest}", pipeline=pipeline, digest=digest)
            for pipeline in (True, False)
            for digest in (True, False)
        }
        nursery.cancel_scope.cancel()
    for (pipeline, digest), outcomes in runs.items():
        assert all(outcome.ok for outcome in outcomes.values()), [o.error for o in outcomes.values()]
        assert _seen(outcomes) == _seen(runs[(True, True)])
        for outcome in outcomes.values():
            on_disk = hashlib.sha256(outcome.result.path.read_bytes()).hexdigest()
            assert outcome.result.sha256 == (on_disk if digest else None), (pipeline, digest, outcome.url)


_NAMES = st.sampled_from([b"Content-Type", b"content-type", b"ETAG", b"Last-Modified", b"Content-Encoding",
                          b"Location", b"Content-Disposition", b"X-Long", b"Server", b"Date"])  # fmt: skip


@given(
    fields=st.lists(st.tuples(_NAMES, st.binary(max_size=40)), max_size=12),
    reason=st.binary(max_size=10),
    line_bytes=st.integers(4, 60),
    header_count=st.integers(0, 12),
    header_bytes=st.integers(15, 400),
)
@settings(max_examples=300, deadline=None)
def test_the_lanes_one_pass_judges_caps_and_fields_as_the_reader_does(
    fields: list[tuple[bytes, bytes]], reason: bytes, line_bytes: int, header_count: int, header_bytes: int
) -> None:
    # Fields counts what ReplyReader's caps count in the pass that reads the lane's fields:
    # a head is taken exactly when accept_head takes it, and the fields read are the last of each.
    limits = Limits(line_bytes=line_bytes, header_count=header_count, header_bytes=header_bytes)
    try:
        ReplyReader("here", limits).accept_head(fields, len(reason))
        taken = True
    except LimitExceeded:
        taken = False
    counted = Fields(fields)
    reader = ReplyReader("here", limits)
    assert reader.accept_counted(counted.count, STATUS_OVERHEAD + len(reason) + counted.size, counted.longest) is taken
    assert reader.head_received is taken
    by_name = {name.lower(): value for name, value in fields}
    assert counted.etag == (by_name[b"etag"].decode("latin-1") if b"etag" in by_name else None)
    assert counted.last_modified == by_name.get(b"last-modified")
    assert counted.content_type == (by_name[b"content-type"].decode("latin-1") if b"content-type" in by_name else None)


async def test_lane_key_admits_plain_urls_of_an_origin_and_nothing_else() -> None:
    from fetcher.schemes.http.lane import lane_key
    from fetcher.url import parse_url

    async with Client() as client:
        plain = parse_url("http://127.0.0.1:8080/a/b.bin?x=1")
        assert lane_key(plain, client, resume=False) == ("http", "127.0.0.1", 8080)
        assert lane_key(parse_url("http://127.0.0.1:8080/a%20b"), client, resume=False) == ("http", "127.0.0.1", 8080)
        assert lane_key(plain, client, resume=True) is None  # -C: the task path resumes
        assert lane_key(parse_url("http://user@127.0.0.1:8080/a"), client, resume=False) is None  # credentials
        assert lane_key(parse_url("http://127.0.0.1:6000/x"), client, resume=False) is None  # the guard refuses
    async with Client(pipeline=False) as client:
        assert lane_key(plain, client, resume=False) is None
