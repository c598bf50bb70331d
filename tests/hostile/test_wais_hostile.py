"""WAIS against hostile servers (tests/hostile/wais_hostile.py): caps, one-line errors, escaped text.

The caps are exercised with small `--limit` values so each test takes a
moment; bench/hostile_rss.py measures the same servers at the defaults.
"""

from __future__ import annotations

import pytest
import trio

from fetcher.client import Client
from fetcher.errors import LimitExceeded

from .checks import one_error_line
from .checks import timed_fetch as fetch
from .wais_hostile import HostileWais, serving

pytestmark = pytest.mark.usefixtures("no_netrc")
RAW = (b"\x1b", b"\x07", b"\xc2\x9b")


async def test_a_declared_length_of_2_gib_is_refused_before_reading_it() -> None:
    async with serving(HostileWais("declared", length=2**31)) as server:
        done, elapsed = await fetch("--timeout", "20", f"wais://127.0.0.1:{server.port}/db?apple")
        with trio.fail_after(5):
            while not server.closed_by_client:
                await trio.sleep(0.01)
    assert done.returncode == 7
    line = one_error_line(done.stderr)
    assert "more than 16777216 bytes in one WAIS message" in line and "announces 2147483648" in line
    assert b"--limit wais_apdu_bytes=N" in done.stderr
    assert server.closed_by_client == [True]  # it hung up instead of waiting for 2 GiB
    assert elapsed < 15  # not the 20 s --timeout: nothing was awaited


async def test_a_declared_length_under_the_cap_but_past_the_negotiated_size_is_refused() -> None:
    async with serving(HostileWais("declared", length=1_000_000)) as server:
        done, _ = await fetch(f"wais://127.0.0.1:{server.port}/db?apple")
    assert done.returncode == 7
    assert "more than the 100000 bytes negotiated" in one_error_line(done.stderr)


async def test_a_huge_hit_list_stops_at_listing_entries() -> None:
    async with serving(HostileWais("hits", count=5000)) as server:  # 30 kB: inside the negotiated size
        done, _ = await fetch("--limit", "listing_entries=1000", f"wais://127.0.0.1:{server.port}/db?apple")
        async with Client(limits={"listing_entries": 1000}) as client:
            with pytest.raises(LimitExceeded) as caught:
                await client.fetch(f"wais://127.0.0.1:{server.port}/db?apple")
    assert caught.value.limit_name == "listing_entries"
    assert done.returncode == 7
    assert "more than 1000 records (hits) in one WAIS search response" in one_error_line(done.stderr)
    assert b"--limit listing_entries=N" in done.stderr


async def test_a_hit_list_under_the_cap_is_listed_up_to_max_hits() -> None:
    async with serving(HostileWais("hits", count=5000)) as server:
        async with Client() as client:
            result = await client.fetch(f"wais://127.0.0.1:{server.port}/db?apple")
    assert len(result.entries) == 40  # --max-hits, whatever the server sends


async def test_a_huge_field_stops_at_wais_field_bytes() -> None:
    async with serving(HostileWais("field", size=20_000)) as server:
        done, _ = await fetch("--limit", "wais_field_bytes=4096", f"wais://127.0.0.1:{server.port}/db?apple")
    assert done.returncode == 7
    assert "more than 4096 bytes in field 123 of a hit" in one_error_line(done.stderr)
    assert b"--limit wais_field_bytes=N" in done.stderr


async def test_a_field_past_the_default_cap_is_refused_when_the_reply_size_allows_it() -> None:
    # --wais-chunk raises the size the client offers in Init, so a 2 MiB headline fits the reply.
    async with serving(HostileWais("field", size=2 * 1024 * 1024)) as server:
        done, _ = await fetch("--wais-chunk", "4000000", f"wais://127.0.0.1:{server.port}/db?apple")
    assert done.returncode == 7
    assert "more than 1048576 bytes in field 123 of a hit" in one_error_line(done.stderr)


async def test_escape_sequences_in_headlines_traces_and_diagnostics_are_escaped() -> None:
    async with serving(HostileWais("escapes")) as server:
        url = f"wais://127.0.0.1:{server.port}/db?apple"
        listing, _ = await fetch(url)
        traced, _ = await fetch("-v", url)
        as_json, _ = await fetch("--json", url)
    assert listing.returncode == traced.returncode == as_json.returncode == 0
    for output in (listing.stdout, listing.stderr, traced.stdout, traced.stderr, as_json.stdout):
        assert not any(raw in output for raw in RAW), output
    assert b"\\x1b[2J\\x1b]0;owned\\x07" in listing.stdout
    assert b"diagnostic S5 \\x1b[2J" in traced.stderr and b"\\x9b31mserver" in traced.stderr


async def test_a_diagnostic_with_escape_sequences_is_one_escaped_error_line() -> None:
    async with serving(HostileWais("diagnostic")) as server:
        done, _ = await fetch(f"wais://127.0.0.1:{server.port}/db?apple")
    assert done.returncode == 7
    assert not any(raw in done.stderr for raw in RAW)
    assert "diagnostic S5 \\x1b[2J\\x1b]0;owned\\x07" in one_error_line(done.stderr)
