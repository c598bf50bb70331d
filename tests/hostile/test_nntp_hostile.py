"""fetch against the hostile NNTP server (tests/hostile/nntp_hostile.py): bounded, one-line errors, escaped text."""

from __future__ import annotations

import pytest

from tests.hostile.nntp_hostile import HostileNntp
from tests.servers.common import serving

from .checks import assert_limit_error, cli

pytestmark = pytest.mark.usefixtures("no_netrc")


@pytest.mark.parametrize(
    ("case", "path", "options", "message", "limit"),
    [
        ("endless-caps", "/test.group", (), "the server sent more than 10000 lines in the CAPABILITIES reply",
         "reply_lines"),
        ("endless-line", "/test.group", (), "the server sent more than 65536 bytes in one line", "line_bytes"),
        ("endless-list", "*", ("--limit", "listing_entries=5000"),
         "the server sent more than 5000 lines in the list of newsgroups", "listing_entries"),
        ("endless-over", "/test.group", ("--limit", "listing_entries=5000"),
         "the server sent more than 5000 lines in the overview of test.group", "listing_entries"),
        ("fat-over", "/test.group", ("--limit", "listing_bytes=2000000"),
         "the server sent more than 2000000 bytes in the overview of test.group", "listing_bytes"),
        ("endless-head", "/test.group", (),
         "the server sent more than 262144 bytes in the head of article 999999901", "header_bytes"),
    ],
)  # fmt: skip
async def test_endless_replies_end_at_their_cap(
    case: str, path: str, options: tuple[str, ...], message: str, limit: str
) -> None:
    async with serving(HostileNntp(case)) as server:
        scheme = "news" if path == "*" else "nntp"
        result = await cli(*options, f"{scheme}://127.0.0.1:{server.port}/{path.lstrip('/')}")
    assert_limit_error(result, message, limit)
    if case == "endless-head":
        assert server.commands[-1] == "HEAD 999999901"  # the first HEAD already stopped it


async def test_escapes_in_capabilities_groups_and_subjects_never_reach_the_terminal() -> None:
    async with serving(HostileNntp("escape-caps")) as server:
        groups = await cli("-v", f"news://127.0.0.1:{server.port}/*")
        articles = await cli("-v", f"nntp://127.0.0.1:{server.port}/test.group")
    assert groups.returncode == articles.returncode == 0
    for output in (groups.stdout, groups.stderr, articles.stdout, articles.stderr):
        assert b"\x1b" not in output and b"\x07" not in output and b"\xe2\x80\xae" not in output
    assert "X-\\x1b]0;OWNED\\x07" in groups.stderr.decode()
    assert "evil.\\x1b]0;owned\\x07" in groups.stdout.decode()
    assert "Subject \\x1b]0;owned\\x07" in articles.stdout.decode()
    assert "fetch: note: test.group: listed the newest articles (999999901-1000000000)" in articles.stderr.decode()
