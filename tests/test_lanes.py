"""Lanes (fetcher/bulk/lanes.py) share job and per-host slots with the task path without deadlock.

A mirror is the hard case: the lane's next URLs come from a listing that
runs on the task path, on the same host, while the lane's workers wait idle
holding the host's slots.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import trio

from fetcher import Client
from tests.interop.ftp_servers import pyftpd


async def test_a_task_path_url_of_the_host_gets_a_slot_from_idle_lane_workers(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "pub").mkdir(parents=True)
    for index in range(6):
        (root / "pub" / f"f{index}.txt").write_bytes(b"x" * index)
    out = tmp_path / "out"
    out.mkdir()
    with pyftpd(root) as server:
        send, receive = trio.open_memory_channel[str](100)
        base = f"{server.url}/pub"
        async with Client() as client:
            results = []
            def destination(url: object) -> Path:
                return out / str(url).rsplit("/", 1)[1]

            with trio.fail_after(20):
                async with client.fetch_all(receive, jobs=4, per_host=2, destination=destination) as outcomes:
                    # Two files take the lane (its workers then idle, holding both host slots) ...
                    send.send_nowait(f"{base}/f0.txt")
                    send.send_nowait(f"{base}/f1.txt")
                    async for outcome in outcomes:
                        results.append(outcome)
                        if len(results) == 2:
                            # ... then a directory (the task path) on the same host, then more files.
                            send.send_nowait(f"{base}/")
                        if len(results) == 3:
                            for index in range(2, 6):
                                send.send_nowait(f"{base}/f{index}.txt")
                        if len(results) == 7:
                            send.close()
    assert all(outcome.ok for outcome in results), [o for o in results if not o.ok]
    assert sorted(path.name for path in out.iterdir()) == [f"f{index}.txt" for index in range(6)]


async def test_a_mixed_list_keeps_its_lane_workers_and_every_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """URLs of two lane keys, alternating, more keys' workers wanted than job slots (issue 17).

    A new worker for a key that already has one takes another key's idle
    worker's slot only when its queue backs up; taking it for every URL
    retired and restarted workers every few URLs (and in a bulk_mixed run
    their connections with them).  A worker dismissed while URLs of its key
    were queued takes them: retiring would leave them with no worker and
    the run would end without their outcomes.
    """
    from fetcher.bulk.lanes import Lanes
    from tests.servers.gopher import GopherServer, serving

    started: list[object] = []
    real = Lanes._worker

    async def counting(self: Lanes, key: object, *args: object) -> None:
        started.append(key)
        await real(self, key, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Lanes, "_worker", counting)
    names = itertools.count()

    def destination(url: object) -> Path:
        return tmp_path / f"{next(names)}.txt"

    async with serving(GopherServer()) as one, serving(GopherServer()) as two, Client() as client:
        for _ in range(4):  # the lost URLs depended on timing: a few rounds
            started.clear()
            urls = [f"gopher://127.0.0.1:{server.port}/0/hello.txt%09q{index}" for index in range(60)
                    for server in (one, two)]  # fmt: skip
            with trio.fail_after(30):
                async with client.fetch_all(urls, jobs=2, per_host=2, destination=destination) as outcomes:
                    results = [outcome async for outcome in outcomes]
            assert sorted(outcome.url for outcome in results) == sorted(urls)
            assert all(outcome.ok for outcome in results)
            # (a worker per URL before; a few restarts remain where a key's workers find its queue empty)
            assert len(started) <= 24, f"{len(started)} lane workers started for 120 URLs of two keys"
    assert len(one.requests) == len(two.requests) == 240


async def test_one_admission_check_keeps_logins_and_traces_off_the_lanes_that_speak_for_themselves() -> None:
    # fetcher.bulk.lanes.admits is the one check: the HTTP and FTP lanes (which speak to the server
    # themselves) ask it with own_exchange, the sequential lane (the handler's own open) without.
    import logging

    from fetcher.handler.lanes import admits, sequential_key
    from fetcher.schemes.ftp.lane import lane_key as ftp_key
    from fetcher.schemes.http.lane import lane_key as http_key
    from fetcher.url import parse_url

    http, ftp, gopher = (parse_url(f"{scheme}://127.0.0.1:2121/d/f") for scheme in ("http", "ftp", "gopher"))
    http_login, ftp_login = parse_url("http://u:p@127.0.0.1:2121/f"), parse_url("ftp://u@127.0.0.1:2121/f")
    trace = logging.getLogger("fetcher.trace")
    async with Client() as client:
        assert http_key(http, client, resume=False) is not None and ftp_key(ftp, client, resume=False) is not None
        assert http_key(http_login, client, resume=False) is None and ftp_key(ftp_login, client, resume=False) is None
        assert admits(http_login, client, resume=False) and not admits(http_login, client, resume=False,
                                                                        own_exchange=True)  # fmt: skip
        level = trace.level
        trace.setLevel(logging.DEBUG)  # -v
        try:
            assert http_key(http, client, resume=False) is None and ftp_key(ftp, client, resume=False) is None
            assert not admits(http, client, resume=False, own_exchange=True)
            assert sequential_key(gopher, client, resume=False) is not None  # the handler's open writes the trace
        finally:
            trace.setLevel(level)
        for key in (http_key, ftp_key):
            assert key(http if key is http_key else ftp, client, resume=True) is None  # -C, for every lane
        assert sequential_key(gopher, client, resume=True) is None
