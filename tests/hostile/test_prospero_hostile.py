"""Prospero against hostile servers (tests/hostile/prospero_hostile.py): every fetch ends, bounded, in one line.

What the user sees is asserted: the exit code, a single `fetch:` line (plus
its hint), no raw escape sequence anywhere, and elapsed-time bounds loose
enough never to flake (they separate "seconds" from "a minute of retries").
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import trio

from fetcher.client import Client
from fetcher.errors import ConnectError, UnsafeURL
from fetcher.guard import DEFAULT_POLICY
from fetcher.schemes.prospero import ardp, protocol, transport
from tests.conftest import ROOT
from tests.servers.prospero import Directory, Link, Node, serve_prospero

from .checks import one_error_line
from .checks import timed_fetch as fetch
from .prospero_hostile import ESCAPES, HostileProspero, closed_udp_port, serving

pytestmark = pytest.mark.usefixtures("no_netrc")
RAW = (b"\x1b", b"\x07", b"\xc2\x9b")


# -- every fetch ends ---------------------------------------------------------------------


async def test_closed_udp_port_fails_at_once() -> None:
    port = closed_udp_port()
    done, elapsed = await fetch("--timeout", "2", f"prospero://127.0.0.1:{port}//pub")
    assert done.returncode == 4
    assert f"nothing listens on UDP port {port} of 127.0.0.1" in one_error_line(done.stderr)
    assert elapsed < 3  # the ICMP error is the answer; retries would take the whole --timeout


@pytest.mark.parametrize("connect", [False, True], ids=["unconnected-recverr", "connected"])
async def test_port_unreachable_is_an_answer_on_both_socket_kinds(connect: bool) -> None:
    message = protocol.list_request("u", "/pub")
    timers = ardp.Timers(timeout=5.0, retries=3, ceiling=30.0, budget=30.0)
    with trio.fail_after(3):
        with pytest.raises(ConnectError, match="ICMP port unreachable"):
            async with transport.open_exchange("127.0.0.1", closed_udp_port(), message, timers=timers,
                                               policy=DEFAULT_POLICY, connect=connect) as exchange:  # fmt: skip
                async for _ in exchange:
                    pass


async def test_silent_server_is_bounded_by_timeout_not_by_the_retries() -> None:
    # Default Prospero timers (4 s first wait, 3 retries: 60 s in all); --timeout 1 bounds the whole exchange.
    async with serving(HostileProspero("silent")) as server:
        done, elapsed = await fetch("--timeout", "1", f"prospero://127.0.0.1:{server.port}//pub")
    assert done.returncode == 8
    assert "no answer from the Prospero server within 1 s" in one_error_line(done.stderr)
    assert elapsed < 3.5  # far below the 4 s of the first retransmission timer


# -- everything a server can make grow is bounded -------------------------------------------


async def test_endless_listing_stops_at_the_packet_cap() -> None:
    async with serving(HostileProspero("endless")) as server:
        done, elapsed = await fetch(f"prospero://127.0.0.1:{server.port}//pub")
    assert done.returncode == 7
    assert "more than 4096 ARDP packets in one reply" in one_error_line(done.stderr)
    assert b"--limit ardp_packets=N" in done.stderr
    assert 4096 <= server.sent < 4096 + 64
    assert elapsed < 30


@pytest.mark.parametrize(
    ("limit", "said"),
    [("listing_entries=500", "more than 500 lines (links, attributes)"),
     ("listing_bytes=100000", "more than 100000 bytes of a Prospero reply (as held in memory)"),
     ("ardp_packets=40", "more than 40 ARDP packets")],
)  # fmt: skip
async def test_endless_listing_stops_at_each_cap(limit: str, said: str) -> None:
    async with serving(HostileProspero("endless")) as server:
        done, _ = await fetch("--limit", limit, f"prospero://127.0.0.1:{server.port}//pub")
    assert done.returncode == 7
    assert said in one_error_line(done.stderr)
    assert f"--limit {limit.split('=')[0]}=N".encode() in done.stderr
    assert server.sent < 200  # stopped within a few windows of the cap


async def test_oversized_datagrams_count_as_the_packets_they_would_fill() -> None:
    # 60000-octet datagrams (48 packets' worth each): the cap bounds the bytes, not the datagram count.
    async with serving(HostileProspero("endless", size=60_000, window=2)) as server:
        done, _ = await fetch(f"prospero://127.0.0.1:{server.port}//pub")
    assert done.returncode == 7
    assert "more than 4096 ARDP packets (of 1250 octets) in one reply" in one_error_line(done.stderr)
    assert server.sent <= 4096 // 48 + 16


async def test_a_listing_that_drips_is_bounded_by_timeout_as_a_whole() -> None:
    # A packet every 0.2 s is progress, but progress does not extend --timeout for a listing.
    async with serving(HostileProspero("endless", delay=0.2)) as server:
        done, elapsed = await fetch("--timeout", "2", f"prospero://127.0.0.1:{server.port}//pub")
    assert done.returncode == 8
    assert "reply was still incomplete after 2 s" in one_error_line(done.stderr)
    assert elapsed < 6


async def test_announced_packet_count_past_the_cap_is_refused_at_the_first_packet() -> None:
    async with serving(HostileProspero("packets", total=60_000)) as server:
        done, _ = await fetch(f"prospero://127.0.0.1:{server.port}//pub")
        assert server.requests == 1 and server.sent == 1
    assert done.returncode == 7
    assert "more than 4096 ARDP packets" in one_error_line(done.stderr)


# -- redirects pass the guard -----------------------------------------------------------------


async def test_redirect_to_a_refused_port_is_refused_by_the_guard() -> None:
    async with serving(HostileProspero("redirect", redirect_port=25)) as server:
        done, elapsed = await fetch("--timeout", "5", f"prospero://127.0.0.1:{server.port}//pub")
        async with Client() as client:
            with pytest.raises(UnsafeURL):
                await client.fetch(f"prospero://127.0.0.1:{server.port}//pub")
    assert done.returncode == 3
    assert "25" in one_error_line(done.stderr)
    assert elapsed < 5


async def test_redirect_to_an_allowed_port_is_followed_at_once() -> None:
    tree: dict[str, Node] = {"/pub": Directory([Link("moved.txt", "FILE", "LOCALHOST", "/pub/moved.txt")])}
    async with serve_prospero(tree) as real, serving(HostileProspero("redirect", redirect_port=0)) as hop:
        hop.redirect_port = real.port
        start = time.monotonic()
        async with Client(prospero_timeout=4.0) as client:
            result = await client.fetch(f"prospero://127.0.0.1:{hop.port}//pub")
    assert [entry.name for entry in result.entries] == ["moved.txt"]
    assert time.monotonic() - start < 3  # resent on the redirect, not after the 4 s retransmission timer
    assert hop.requests == 1 and len(real.requests) == 1


# -- server text is data -------------------------------------------------------------------


async def test_escape_sequences_in_names_and_attributes_are_escaped() -> None:
    async with serving(HostileProspero("escapes")) as server:
        url = f"prospero://127.0.0.1:{server.port}//pub"
        listing, _ = await fetch(url)
        traced, _ = await fetch("-v", url)
        as_json, _ = await fetch("--json", url)
    assert listing.returncode == traced.returncode == as_json.returncode == 0
    for output in (listing.stdout, listing.stderr, traced.stdout, traced.stderr, as_json.stdout):
        assert not any(raw in output for raw in RAW), output
    assert b"\\x1b[2J\\x1b]0;owned\\x07\\x9b31mname" in listing.stdout
    assert b"\\x1b[2J" in traced.stderr and b"KEYWORD" in traced.stderr  # traced, escaped
    names = [json.loads(line).get("name") for line in as_json.stdout.splitlines() if line.strip()]
    assert f"{ESCAPES}name" in names  # JSON carries the server's bytes exactly, encoded as JSON escapes


# -- the memory bench stays runnable -------------------------------------------------------


async def test_the_hostile_rss_bench_measures_a_prospero_case(tmp_path: Path) -> None:
    report = tmp_path / "rss.json"
    argv = [sys.executable, "-m", "bench.hostile_rss", "--case", "prospero_packet_count", "--json", str(report)]
    done = await trio.run_process(argv, cwd=ROOT, capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr
    (outcome,) = json.loads(report.read_text())
    assert outcome["exit_code"] == 7 and 0 < outcome["peak_rss_mib"] < 256
    assert outcome["message"].startswith("fetch: the server sent more than 4096 ARDP packets in one reply")
