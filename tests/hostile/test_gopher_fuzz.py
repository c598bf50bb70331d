"""Fuzzing the Gopher parsers with their caps (issue 14): any bytes in, a value or fetcher's own error out.

tests/test_gopher_codec.py fuzzes the parsers with default caps; here the
caps are small and drawn too, so every cap is reached, and each test checks
that nothing is kept past it.
"""

from __future__ import annotations

import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.errors import FetchError, LimitExceeded
from fetcher.schemes.gopher.menu import ENTRY_COST, MenuContext, MenuParser
from fetcher.schemes.gopher.plus import (
    ITEM_COST,
    LINE_COST,
    error_for,
    parse_attributes,
    parse_error,
    parse_header,
    parse_view,
)
from fetcher.schemes.gopher.server_errors import ERROR_PEEK, error_for_message, error_reply, resembles_error
from fetcher.url import parse_url

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CTX = MenuContext(scheme="gopher", host="h", port=70)

#: Bytes with the shapes that matter drawn often: tabs, line ends, dots, type characters, high bytes, escapes.
PIECES = st.sampled_from(
    [b"\t", b"\r\n", b"\n", b"\r", b".", b".\r\n", b"0", b"1", b"3", b"i", b"+", b"h", b"URL:", b"+INFO: ", b"+ADMIN:",
     b"+VIEWS:", b"+ASK:", b" ", b"70", b"(NULL)", b"\x00", b"\xff", b"\xc3\xa9", b"\x1b[2J", b"Error: ", b"not found"]
)  # fmt: skip
GOPHERISH = st.lists(st.one_of(PIECES, st.binary(max_size=12)), max_size=80).map(b"".join)
DATA = st.one_of(st.binary(max_size=1500), GOPHERISH)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DATA, st.integers(1, 40), st.integers(1, 30), st.integers(20, 4000), st.integers(1, 300))
def test_menu_parser_keeps_nothing_past_its_caps(data: bytes, size: int, entries: int, total: int, line: int) -> None:
    parser = MenuParser(CTX, max_entries=entries, max_bytes=total, max_line=line)
    try:
        for start in range(0, len(data), size):
            parser.feed(data[start : start + size])
            assert len(parser._partial) <= line
        parser.close()
    except LimitExceeded as error:
        assert error.exit_code == 7 and error.limit in (entries, total)
    assert len(parser.entries) <= entries
    kept = sum(ENTRY_COST + sys.getsizeof(e.name) + sys.getsizeof(e.url or "") + (sys.getsizeof(e.extra["selector"])
               if "selector" in e.extra else 0) for e in parser.entries)  # fmt: skip
    assert kept <= total and parser.received <= total + size
    for entry in parser.entries:
        if entry.url is not None:
            parse_url(entry.url)  # every link a menu gives parses back (or the entry has none)


@FUZZ
@given(DATA, st.integers(1, 20_000))
def test_attribute_parser_is_bounded_by_attribute_bytes(data: bytes, cap: int) -> None:
    try:
        items = parse_attributes(data, cap)
    except LimitExceeded as error:
        assert error.limit_name == "attribute_bytes" and error.exit_code == 7
        return
    assert len(items) * ITEM_COST <= cap
    kept = sum(len(item.abstract) + len(item.views) + len(item.admin) + sum(map(len, item.other.values()))
               for item in items)  # fmt: skip
    assert kept * LINE_COST <= cap
    for item in items:
        item.as_dict()


def test_floods_of_empty_lines_and_bare_items_hit_the_cap_early() -> None:
    for flood in (b"\n" * 70_000, b"+INFO\n" * 20_000, b"+X:\r\n" * 70_000):
        try:
            parse_attributes(flood, 4 * 1024 * 1024)
        except LimitExceeded:
            continue
        raise AssertionError(f"{flood[:10]!r} flood was not refused")
    assert len(parse_attributes(b"+INFO: 0a\t/a\th\t70\r\n+ABSTRACT:\r\n x\r\n" * 100, 64 * 1024)) == 100


@FUZZ
@given(DATA)
def test_gopher_plus_and_error_parsers_give_values_or_fetch_errors(data: bytes) -> None:
    parse_header(data[:80])
    parse_view(data.decode("latin-1"))
    assert isinstance(error_for(parse_error(data), "u", CTX), FetchError)
    message = error_reply(data)
    if message is not None:
        assert len(data) <= ERROR_PEEK
        assert error_for_message(message, "u").exit_code in (5, 6, 7)
    for complete in (False, True):
        found = resembles_error(data, complete=complete)
        assert found is None or len(found) <= 200
