"""Fuzzing the NNTP parsers with their caps (issue 14): any bytes in, a value or fetcher's own error out.

tests/test_nntp_codec.py fuzzes status lines, bodies and overview lines
one at a time; here whole replies are cut into lines and fed through the
caps (BlockLimit, parse_capabilities) with small limits, so every cap is
reached, and nothing is kept past one.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.errors import FetchError, LimitExceeded
from fetcher.schemes.nntp.overview import (
    article_window,
    older_note,
    overview_from_headers,
    parse_active,
    parse_headers,
    parse_overview,
)
from fetcher.schemes.nntp.responses import (
    BlockLimit,
    capability_summary,
    error_for,
    parse_article_status,
    parse_capabilities,
    parse_group,
    parse_status,
    unstuff_line,
)
from fetcher.settings import Limits

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PIECES = st.sampled_from(
    [b"\t", b"\r\n", b"\n", b".", b"..", b" ", b"211 ", b"224 ", b"101 ", b"<", b">", b"@", b"=?UTF-8?B?", b"?=",
     b"\x00", b"\xff", b"\x1b[2J", b"\xe2\x80\xae", b"-1", b"99999999999999999999", b"0"]
)  # fmt: skip
NNTPISH = st.lists(st.one_of(PIECES, st.binary(max_size=10)), max_size=60).map(b"".join)
DATA = st.one_of(st.binary(max_size=800), NNTPISH)


def block_lines(data: bytes) -> list[bytes]:
    """The data lines of a block as the client reads them (up to the "." line)."""
    out = []
    for raw in data.split(b"\n"):
        line = unstuff_line(raw + b"\n")
        if line is None:
            break
        out.append(line)
    return out


@FUZZ
@given(DATA, st.integers(1, 30), st.integers(1, 600))
def test_capabilities_are_bounded_by_reply_lines_and_header_bytes(data: bytes, lines: int, size: int) -> None:
    limits = Limits().replace(reply_lines=lines, header_bytes=size)
    try:
        capabilities = parse_capabilities(block_lines(data), limits)
    except LimitExceeded as error:
        assert error.limit_name in ("reply_lines", "header_bytes") and error.exit_code == 7
        return
    assert len(capabilities) <= lines
    # The cap counts the bytes the server sent; upper-casing a label may lengthen
    # it (latin-1 "\xdf" is "ß", upper case "SS"), by at most three times.
    assert sum(len(line) for line in block_lines(data)) <= size
    assert sum(len(label) + sum(map(len, args)) for label, args in capabilities.items()) <= 3 * size
    summary = capability_summary(capabilities)
    assert "\x1b" not in summary and "\u202e" not in summary and len(summary) <= 403


@FUZZ
@given(DATA, st.integers(1, 30), st.integers(1, 600))
def test_listing_blocks_keep_nothing_past_their_caps(data: bytes, entries: int, size: int) -> None:
    limits = Limits().replace(listing_entries=entries, listing_bytes=size)
    cap = BlockLimit.listing("a listing", limits)
    kept: list[object] = []
    try:
        for line in block_lines(data):
            cap.count(line)
            for parse in (parse_overview, parse_active):
                try:
                    kept.append(parse(line))
                except FetchError as error:
                    assert error.exit_code == 7
    except LimitExceeded as error:
        assert error.limit_name in ("listing_entries", "listing_bytes")
    assert len(kept) <= 2 * entries


@FUZZ
@given(DATA)
def test_replies_and_heads_give_values_or_fetch_errors(data: bytes) -> None:
    for line in data.split(b"\n")[:20]:
        try:
            reply = parse_status(line)
        except FetchError as error:
            assert error.exit_code == 7
            continue
        assert isinstance(error_for(reply, "doing"), FetchError)
        parse_article_status(reply)
        try:
            group = parse_group(reply)
        except FetchError as error:
            assert error.exit_code == 7
        else:
            assert min(group.count, group.first, group.last) >= 0
    item = overview_from_headers(1, parse_headers(block_lines(data)))
    assert item.timestamp is None or item.timestamp.year > 0


@FUZZ
@given(st.integers(-5, 10**12), st.integers(-5, 10**12), st.integers(-5, 10**12),
       st.one_of(st.none(), st.tuples(st.integers(-5, 10**12), st.integers(-5, 10**12))))  # fmt: skip
def test_windows_stay_in_the_group_and_notes_name_a_range(
    first: int, last: int, count: int, wanted: tuple[int, int] | None
) -> None:
    window = article_window(first, last, count, wanted)
    if window is None:
        return
    low, high = window
    assert first <= low <= high <= last
    if wanted is None:
        assert high - low < 100
        note = older_note("g", first, last, count, window, high - low + 1)
        assert (note is None) == (low <= first)
        if note is not None:
            assert f"--range {first}-{low - 1}" in note
