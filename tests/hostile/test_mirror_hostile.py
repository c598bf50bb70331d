"""`fetch -r` against sites that link out of the mirror's tree (tests/hostile/mirror_hostile.py).

Each run is the real command.  What is checked: the servers on the other
ports were never connected to (robots.txt included), the start server was
asked only for what lies in the start directory, nothing from above it is
on disk, and the manifest gives the reason for each link refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from tests.hostile.checks import cli
from tests.hostile.mirror_hostile import (
    ENCODED_CLIMBS,
    SECRET,
    Recorder,
    gopher_site,
    http_site,
    other_http,
)
from tests.servers.common import serving


def _rows(manifest: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in manifest.read_text().splitlines()]


def _nothing_from_above(out: Path) -> None:
    for path in out.rglob("*"):
        assert path.resolve().is_relative_to(out.resolve())
        if path.is_file():
            assert SECRET not in path.read_bytes(), path


def _climbs_refused(rows: list[dict[str, object]]) -> None:
    refused = [row for row in rows if "dot segment" in str(row.get("reason"))]
    assert len(refused) == len(ENCODED_CLIMBS), rows
    assert all(row["status"] == "skipped" for row in refused)


@pytest.mark.parametrize("span", [False, True])
async def test_http_mirror_stays_on_its_origin_and_below_its_start(tmp_path: Path, span: bool) -> None:
    other, tls = other_http(), Recorder()
    out, manifest = tmp_path / "out", tmp_path / "m.jsonl"
    async with trio.open_nursery() as nursery, serving(tls):
        await nursery.start(other.serve)
        site = http_site(other.port, tls.port)
        await nursery.start(site.serve)
        done = await cli("-r", "--layout", "tree", "-d", str(out), "--manifest", str(manifest), "--no-progress",
                         *(["--span-hosts"] if span else []), site.url("/pub/"))  # fmt: skip
        nursery.cancel_scope.cancel()
    assert done.returncode == 0, done.stderr
    # The https: port is never dialled: not followed without --follow-schemes, so no robots.txt either.
    assert tls.connections == 0
    assert sorted(request.path for request in site.requests) == ["/pub/", "/pub/ok.txt", "/robots.txt"]
    assert (out / f"127.0.0.1_{site.port}" / "pub" / "ok.txt").read_bytes() == b"inside\n"
    _nothing_from_above(out)
    rows = _rows(manifest)
    _climbs_refused(rows)
    if span:  # --span-hosts is the way off the start origin: robots.txt, then the file
        assert [request.path for request in other.requests] == ["/robots.txt", "/pub/x.txt"]
        assert (out / f"127.0.0.1_{other.port}" / "pub" / "x.txt").read_bytes() == b"from another server\n"
    else:
        assert other.connections == 0 and other.requests == []
        away = [row for row in rows if str(row["url"]).startswith(f"http://127.0.0.1:{other.port}/")]
        assert len(away) == 1 and away[0]["status"] == "skipped"
        assert "another port of the same host" in str(away[0]["reason"]) and "--span-hosts" in str(away[0]["reason"])
    assert not any(str(row["url"]).startswith("https:") for row in rows)


async def test_gopher_mirror_stays_on_its_origin_and_below_its_start(tmp_path: Path) -> None:
    other, tls = Recorder(), Recorder()
    out, manifest = tmp_path / "out", tmp_path / "m.jsonl"
    async with serving(other), serving(tls):
        site = gopher_site(other.port, tls.port)
        async with serving(site):
            done = await cli("-r", "--layout", "tree", "-d", str(out), "--manifest", str(manifest), "--no-progress",
                             f"gopher://127.0.0.1:{site.port}/1/pub")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert other.connections == 0 and tls.connections == 0
    assert sorted(request.selector for request in site.requests) == [b"/pub", b"/pub/a.txt"]
    assert (out / f"gopher_127.0.0.1_{site.port}" / "pub" / "a.txt").read_bytes() == b"inside\r\n"
    _nothing_from_above(out)
    rows = _rows(manifest)
    _climbs_refused(rows)
    away = [row for row in rows if f"127.0.0.1:{other.port}/" in str(row["url"])]
    assert len(away) == 2 and all(row["status"] == "skipped" for row in away)
    assert all("another port of the same host" in str(row["reason"]) for row in away)
    assert "fetch: mirror: 1 new, 0 updated, 0 unchanged, 8 skipped, 0 failed" in done.stderr.decode()
