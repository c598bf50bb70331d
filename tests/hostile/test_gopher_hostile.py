"""fetch against the hostile Gopher server (tests/hostile/gopher_hostile.py): bounded, one-line errors, escaped text.

Each endless reply must end in LimitExceeded (exit 7) with a one-line
message and a hint naming the `--limit` that raises the cap; terminal
escapes in menus, attributes and error items never reach stdout or stderr raw.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.gopher_hostile import HostileGopher
from tests.servers.common import serving

from .checks import assert_limit_error, cli

pytestmark = pytest.mark.usefixtures("no_netrc")


def base(server: HostileGopher) -> str:
    return f"gopher://127.0.0.1:{server.port}"


def assert_no_raw_controls(*outputs: bytes) -> None:
    for output in outputs:
        assert b"\x1b" not in output and b"\x07" not in output and b"\xe2\x80\xae" not in output


@pytest.mark.parametrize(
    ("path", "options", "message", "limit"),
    [
        ("/1/endless-menu", (), "the server sent more than 67108864 bytes of menu entries (as held in memory)",
         "listing_bytes"),
        ("/1/endless-menu", ("--limit", "listing_entries=3000"), "the server sent more than 3000 menu entries",
         "listing_entries"),
        ("/1/fat-menu", ("--limit", "listing_bytes=3000000"),
         "the server sent more than 3000000 bytes of menu entries (as held in memory)", "listing_bytes"),
        ("/1/endless-line", ("--limit", "listing_bytes=2000000"), "the server sent more than 2000000 bytes of menu",
         "listing_bytes"),
        ("/1/huge-dollar%09%09$", (), "the server sent more than 4194304 bytes of Gopher+ attributes",
         "attribute_bytes"),
        ("/0/huge-bang%09%09!", ("--limit", "attribute_bytes=500000"),
         "the server sent more than 500000 bytes of Gopher+ attributes", "attribute_bytes"),
        ("/0/tiny-lines%09%09!", ("--limit", "attribute_bytes=500000"),
         "the server sent more than 500000 bytes of Gopher+ attributes", "attribute_bytes"),
    ],
)  # fmt: skip
async def test_endless_replies_end_at_their_cap(path: str, options: tuple[str, ...], message: str, limit: str) -> None:
    async with serving(HostileGopher()) as server:
        result = await cli(*options, base(server) + path)
    assert_limit_error(result, message, limit)


async def test_escapes_in_attributes_are_shown_escaped_in_output_and_trace() -> None:
    async with serving(HostileGopher()) as server:
        shown = await cli(base(server) + "/0/escape-attrs%09%09!")
        traced = await cli("-v", base(server) + "/0/escape-attrs%09%09!")
    assert shown.returncode == traced.returncode == 0
    assert_no_raw_controls(shown.stdout, shown.stderr, traced.stdout, traced.stderr)
    assert "\\x1b]0;owned\\x07" in shown.stdout.decode()
    trace = traced.stderr.decode()
    assert "< +INFO: 0\\x1b]0;owned\\x07\\x1b[2J" in trace and "< +ADMIN:" in trace


async def test_escapes_in_menu_names_and_error_items_are_escaped() -> None:
    async with serving(HostileGopher()) as server:
        menu = await cli(base(server) + "/1/escape-menu")
        links = await cli("--links", base(server) + "/1/escape-menu")
        missing = await cli("-v", base(server) + "/0/escape-text")
    assert menu.returncode == links.returncode == 0
    assert missing.returncode == 6
    assert_no_raw_controls(menu.stdout, menu.stderr, links.stdout, links.stderr, missing.stdout, missing.stderr)
    assert "\\x1b]0;owned\\x07\\x1b[2J" in menu.stdout.decode()
    assert missing.stderr.decode().splitlines()[-1].startswith("fetch: the server says there is no such item: ")


async def test_the_warning_about_an_error_lookalike_is_escaped(tmp_path: Path) -> None:
    target = tmp_path / "doc.txt"
    async with serving(HostileGopher()) as server:
        result = await cli("-o", str(target), base(server) + "/0/escape-lookalike")
    assert result.returncode == 0
    assert target.read_bytes().startswith(b"Error: \x1b]0;owned")  # the file keeps the server's bytes
    assert_no_raw_controls(result.stdout, result.stderr)
    assert result.stderr.decode().startswith("fetch: warning: the reply to gopher://")
    assert "Error: \\x1b]0;owned\\x07" in result.stderr.decode()
