"""Request notes (fetcher/handler/notes.py): what the caller knows of a URL travels with the request.

`Client.open(url, notes=...)` and the `(url, notes)` items of `fetch_all`
reach the handler as `session.notes`: HTTP sends the conditions of -N and
answers a 304 as "not modified"; a redirect's request is about another URL
and carries none.  The confinement rule the FTP handler reads is the
mirror's own (`link_refused`).
"""

from __future__ import annotations

from email.utils import formatdate
from pathlib import Path

import trio

from fetcher.client import Client
from fetcher.handler.notes import Confinement, RequestNotes, link_refused, split_request
from fetcher.mirror.scope import link_refused as mirror_rule
from tests.servers.http_server import Exchange, HTTPTestServer, Received, Route, redirect

MODIFIED = 1_700_000_000.0
TAG = '"v1"'


def _conditional(body: bytes) -> Route:
    """200 with the body, unless the request names the current ETag (then 304)."""

    async def route(request: Received, exchange: Exchange) -> None:
        if request.header("if-none-match") == TAG:
            await exchange.respond(304, b"", [("ETag", TAG)], length=False)
            return
        await exchange.respond(200, body, [("Content-Type", "text/plain"), ("ETag", TAG)])

    return route


async def _serve(nursery: trio.Nursery) -> HTTPTestServer:
    server = HTTPTestServer()
    server.routes["/doc"] = _conditional(b"the document\n")
    server.routes["/other"] = _conditional(b"another\n")
    await nursery.start(server.serve)
    server.routes["/hop"] = redirect(server.url("/doc"), 301)
    return server


def _sent(server: HTTPTestServer, target: str) -> list[Received]:
    return [request for request in server.requests if request.target == target]


async def test_open_sends_the_notes_conditions_and_a_304_is_not_modified(nursery: trio.Nursery) -> None:
    server = await _serve(nursery)
    notes = RequestNotes(modified_since=MODIFIED, etag=TAG)
    async with Client(timeout=10) as client:
        async with client.open(server.url("/doc"), notes=notes) as resource:
            assert resource.kind == "advisory"
            assert resource.metadata["status"] == 304
        plain = await client.fetch(server.url("/doc"))
    assert plain.kind == "document" and plain.content == b"the document\n"
    noted, unnoted = _sent(server, "/doc")
    assert noted.header("if-none-match") == TAG
    assert noted.header("if-modified-since") == formatdate(MODIFIED, usegmt=True)
    assert unnoted.header("if-none-match") is None and unnoted.header("if-modified-since") is None


async def test_a_redirect_is_asked_for_without_the_notes_of_the_url_that_led_there(nursery: trio.Nursery) -> None:
    server = await _serve(nursery)
    async with Client(timeout=10) as client:
        fetched = await client.fetch(server.url("/hop"), notes=RequestNotes(modified_since=MODIFIED, etag=TAG))
    assert fetched.kind == "document" and fetched.content == b"the document\n"
    (hop,) = _sent(server, "/hop")
    (target,) = _sent(server, "/doc")
    assert hop.header("if-none-match") == TAG
    assert target.header("if-none-match") is None and target.header("if-modified-since") is None


async def test_fetch_all_takes_urls_with_their_notes(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = await _serve(nursery)
    noted, plain = server.url("/doc"), server.url("/other")
    items = [(noted, RequestNotes(modified_since=MODIFIED, etag=TAG)), plain]
    async with Client(timeout=10) as client:
        async with client.fetch_all(items, destination=lambda url: tmp_path / str(url).rsplit("/", 1)[-1]) as results:
            outcomes = {outcome.url: outcome async for outcome in results}
    assert set(outcomes) == {noted, plain}
    assert outcomes[noted].result is not None and outcomes[noted].result.metadata["status"] == 304
    assert not (tmp_path / "doc").exists()  # not modified: nothing written
    assert (tmp_path / "other").read_bytes() == b"another\n"
    assert _sent(server, "/doc")[0].header("if-none-match") == TAG
    assert _sent(server, "/other")[0].header("if-none-match") is None


def test_the_confinement_note_judges_by_the_mirrors_rule() -> None:
    assert mirror_rule is link_refused  # one rule: the mirror's scope and the FTP handler's note
    confined, anywhere = Confinement("/pub/"), Confinement("")
    assert confined.refusal("/pub/a/", "/pub/a/../b/./c") is None
    assert "a loop" in str(confined.refusal("/pub/a/", "/pub/a/sub/../"))
    assert "outside the start directory" in str(confined.refusal("/pub/a/", "/pub/a/../../etc"))
    assert anywhere.refusal("/pub/a/", "/etc") is None
    assert "a loop" in str(anywhere.refusal("/pub/a/", "/"))


def test_notes_are_plain_values() -> None:
    import pickle

    notes = RequestNotes(modified_since=MODIFIED, etag=TAG, confinement=Confinement("/pub/"))
    assert pickle.loads(pickle.dumps(notes)) == notes  # they travel to cluster workers
    assert split_request(("ftp://h/x", notes)) == ("ftp://h/x", notes)
    assert split_request("ftp://h/x") == ("ftp://h/x", None)
