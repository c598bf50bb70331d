"""Every fetch ends (issue 14): --max-time, the low-speed rule, and whole-line deadlines.

The hostile servers (tests/hostile/core_servers.py) drip one byte every
0.3 s into an HTTP body, an HTTP status line, an FTP greeting and a Gopher
document.  With small limits each retrieval ends with exit 8 and a one-line
message naming what ran out, long before the test's own timeout.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from fetcher import Client
from fetcher.errors import Timeout
from tests.conftest import run_fetch
from tests.hostile.core_servers import (
    DripFtpServer,
    HostileServer,
    Script,
    ftp_banner_drip,
    ftp_banner_lines,
    gopher_drip,
    hostile,
    http_drip,
    http_head_drip,
    http_pieces,
)
from tests.servers.ftp_fake import serving

NO_PROXY = {name: "" for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY")}


async def cli(*args: str) -> tuple[int, str]:
    result = await trio.to_thread.run_sync(lambda: run_fetch(*args, env=NO_PROXY, timeout=30))
    return result.returncode, result.stderr.decode("utf-8", "replace")


def one_error(stderr: str) -> str:
    """The `fetch:` line (plus its hint), and nothing else: no traceback."""
    lines = stderr.splitlines()
    assert "Traceback" not in stderr
    assert len(lines) <= 2 and lines[0].startswith("fetch: "), stderr
    return lines[0]


def url_for(kind: str, server: HostileServer) -> str:
    return {
        "http": f"http://127.0.0.1:{server.port}/drip.txt",
        "ftp": f"ftp://127.0.0.1:{server.port}/file.txt",
        "gopher": f"gopher://127.0.0.1:{server.port}/0/drip.txt",
    }[kind]


CASES: list[tuple[str, Callable[[], Script]]] = [
    ("http", http_drip),
    ("http", http_head_drip),
    ("ftp", ftp_banner_drip),
    ("gopher", gopher_drip),
]


@pytest.mark.parametrize(("kind", "script"), CASES, ids=["http-body", "http-head", "ftp-banner", "gopher-body"])
async def test_max_time_bounds_the_whole_url(kind: str, script: Callable[[], Script]) -> None:
    async with hostile(script()) as server:
        url = url_for(kind, server)
        started = trio.current_time()
        async with Client(max_time=1, timeout=10) as client:
            with pytest.raises(Timeout) as caught:
                await client.fetch(url)
        assert trio.current_time() - started < 5
        assert str(caught.value) == f"{url} took longer than --max-time 1 s"
        assert caught.value.exit_code == 8
        assert await server.all_closed()  # the client hung up; nothing left dripping into a dead socket
        code, err = await cli("-m", "1", url)
    assert code == 8
    assert one_error(err) == f"fetch: {url} took longer than --max-time 1 s"


async def test_ftp_data_connection_drip() -> None:
    async with serving(DripFtpServer({"/big.bin": b"z" * 1000})) as server:
        url = f"{server.url}/big.bin"
        async with Client(max_time=1, timeout=10) as client:
            with pytest.raises(Timeout, match=r"took longer than --max-time 1 s"):
                await client.fetch(url)
        async with Client(speed_limit=100, speed_time=1, timeout=10) as client:
            with pytest.raises(Timeout, match=r"arrived slower than 100 bytes/s for 1 s"):
                await client.fetch(url)
        code, err = await cli("-m", "1", url)
    assert code == 8 and one_error(err) == f"fetch: {url} took longer than --max-time 1 s"


@pytest.mark.parametrize(
    ("kind", "script", "what"),
    [(*CASES[1], "its reply"), (*CASES[2], "its reply"), ("ftp", ftp_banner_lines, "its reply")],
    ids=["http-head", "ftp-banner", "ftp-multi-line-banner"],
)
async def test_a_dripping_protocol_line_ends_after_timeout(kind: str, script: Callable[[], Script], what: str) -> None:
    """No --max-time, no speed rule: a line, a head or a reply must still be complete within --timeout."""
    async with hostile(script()) as server:
        url = url_for(kind, server)
        code, err = await cli("--timeout", "1", url)
    assert code == 8
    assert one_error(err) == f"fetch: 127.0.0.1:{server.port} did not finish {what} within 1 s ({url})"


@pytest.mark.parametrize(("kind", "script"), [CASES[0], CASES[3]], ids=["http-body", "gopher-body"])
async def test_the_low_speed_rule_stops_a_drip_feed(kind: str, script: Callable[[], Script]) -> None:
    async with hostile(script()) as server:
        url = url_for(kind, server)
        async with Client(speed_limit=100, speed_time=1, timeout=10) as client:
            with pytest.raises(Timeout, match="arrived slower than 100 bytes/s for 1 s"):
                await client.fetch(url)
        code, err = await cli("--speed-limit", "100", "--speed-time", "1", url)
    assert code == 8
    assert one_error(err) == f"fetch: {url} arrived slower than 100 bytes/s for 1 s"


async def test_the_low_speed_rule_is_on_in_bulk_and_off_for_one_url() -> None:
    async with hostile(http_drip(interval=0.25, length=5)) as server:
        url = url_for("http", server)
        async with Client(speed_time=1, timeout=10) as client:
            single = await client.fetch(url)  # ~1.25 s at 4 bytes/s: fine for one URL
            async with client.fetch_all([url]) as results:
                outcomes = [outcome async for outcome in results]
            explicit_off = Client(speed_time=1, speed_limit=0, timeout=10)
            async with explicit_off, explicit_off.fetch_all([url]) as results:
                off = [outcome async for outcome in results]
    assert single.content == b"xxxxx"
    (outcome,) = outcomes
    assert isinstance(outcome.error, Timeout) and "slower than 100 bytes/s for 1 s" in str(outcome.error)
    assert off[0].ok and isinstance(off[0].result, object)


async def test_streaming_consumer_is_not_blamed_for_its_own_pauses() -> None:
    """The rule counts time spent waiting for the server, not the caller's work between reads.

    The server sends 1000 bytes every 0.05 s (20 kB/s while we wait); the
    caller pauses 0.3 s per chunk, so by the wall clock the body comes at
    about 3 kB/s, below the 10 kB/s asked.
    """
    async with hostile(http_pieces(pieces=8, size=1000, interval=0.05)) as server:
        async with Client(speed_limit=10_000, speed_time=0.5) as client:
            async with client.open(url_for("http", server)) as resource:
                total = 0
                async for chunk in resource:
                    total += len(chunk)
                    await trio.sleep(0.3)
    assert total == 8000


async def test_bulk_runs_stop_a_drip_feed_by_default(tmp_path: Path) -> None:
    """`fetch -i`: no --speed-limit given, yet the drip-feed URL fails (exit 8 in its record)."""
    async with hostile(http_drip()) as server:
        url = url_for("http", server)
        listing = tmp_path / "urls.txt"
        listing.write_text(url + "\n")
        manifest = tmp_path / "manifest.jsonl"
        args = ("-i", str(listing), "-d", str(tmp_path / "out"), "--manifest", str(manifest))
        code, err = await cli(*args, "--speed-time", "1", "--retries", "0")
    assert code == 1
    assert f"{url} arrived slower than 100 bytes/s for 1 s" in err
    (record,) = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert (record["status"], record["exit_code"]) == ("failed", 8)
    assert not (tmp_path / "out" / "drip.txt").exists()  # only the .part, for a later -C
