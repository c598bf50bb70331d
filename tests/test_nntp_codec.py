"""The pure NNTP codec: status lines, commands, dot-unstuffing, overview, active file."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fetcher.errors import AuthError, NotFound, ProtocolError, TransientError, UsageError
from fetcher.schemes.nntp.client import parse_server
from fetcher.schemes.nntp.overview import (
    article_window,
    decode_words,
    overview_from_headers,
    parse_active,
    parse_headers,
    parse_overview,
)
from fetcher.schemes.nntp.responses import (
    BadReply,
    BodyDecoder,
    GroupStatus,
    Reply,
    command,
    error_for,
    message_id_argument,
    parse_article_status,
    parse_capabilities,
    parse_group,
    parse_status,
    unstuff_line,
)
from tests.servers.nntp import wire

# -- status lines ------------------------------------------------------------


def test_parse_status() -> None:
    reply = parse_status(b"211 5 1 5 test.one\r\n")
    assert (reply.code, reply.text, reply.multiline) == (211, "5 1 5 test.one", False)
    assert parse_status(b"220 2 <a@b> article\r\n").multiline
    assert parse_status(b"205\r\n") == Reply(205, "")
    assert parse_status("200 Grüße\r\n".encode()).text == "Grüße"
    assert parse_status(b"200 caf\xe9\r\n").text == "café"  # Latin-1 from an old server


@pytest.mark.parametrize("line", [b"", b"\r\n", b"hello\r\n", b"2000 x\r\n", b"600 x\r\n", b"20\r\n", b"HTTP/1.1 200"])
def test_parse_status_refuses_non_nntp(line: bytes) -> None:
    with pytest.raises(BadReply) as caught:
        parse_status(line)
    assert caught.value.exit_code == 7


def test_command_refuses_injection() -> None:
    assert command("GROUP", "comp.lang.python") == "GROUP comp.lang.python"
    assert command("AUTHINFO", "USER", "joe") == "AUTHINFO USER joe"
    for bad in ("a b", "a\r\nQUIT", "a\x00", "", "a\tb", "a\x1b"):
        with pytest.raises(ProtocolError):
            command("GROUP", bad)
    assert message_id_argument("x@y") == "<x@y>"
    with pytest.raises(ProtocolError):
        message_id_argument("x>@<y")


def test_replies() -> None:
    assert parse_group(Reply(211, "5 1 5 test.one")) == GroupStatus(5, 1, 5, "test.one")
    assert parse_group(Reply(211, "0 1 0")).count == 0
    with pytest.raises(BadReply):
        parse_group(Reply(211, "five 1 5 test.one"))
    status = parse_article_status(Reply(220, "0 <one.2@example.test> article"))
    assert (status.number, status.message_id) == (0, "one.2@example.test")
    caps = parse_capabilities([b"VERSION 2", b"READER", b"list active newsgroups", b""])
    assert caps == {"VERSION": ("2",), "READER": (), "LIST": ("active", "newsgroups")}


@pytest.mark.parametrize(
    ("code", "kind", "exit_code"),
    [
        (411, NotFound, 6),
        (423, NotFound, 6),
        (430, NotFound, 6),
        (480, AuthError, 5),
        (481, AuthError, 5),
        (502, AuthError, 5),
        (400, TransientError, 7),
        (500, ProtocolError, 7),
        (420, ProtocolError, 7),
        (483, ProtocolError, 7),
    ],
)
def test_error_codes(code: int, kind: type, exit_code: int) -> None:
    error = error_for(Reply(code, "server says no"), "fetching article 3")
    assert type(error) is kind
    assert error.exit_code == exit_code
    assert "fetching article 3" in error.message and str(code) in error.message
    assert (code == 400) == error.transient


# -- data blocks ---------------------------------------------------------------


def test_unstuff_line() -> None:
    assert unstuff_line(b"..two dots\r\n") == b".two dots"
    assert unstuff_line(b".\r\n") is None
    assert unstuff_line(b".\n") is None
    assert unstuff_line(b"plain\r\n") == b"plain"
    assert unstuff_line(b"..\r\n") == b"."


ARTICLE = b"Subject: x\n\nfirst\n.\n.hidden\n..two\n\rlone CR\nend with CR\r\nlast"


def decode_all(data: bytes, pieces: list[int], *, raw: bool = False) -> tuple[bytes, BodyDecoder]:
    decoder = BodyDecoder(raw=raw)
    out = bytearray()
    start = 0
    for size in [*pieces, len(data)]:
        out += decoder.feed(data[start : start + size])
        start += size
        if start >= len(data):
            break
    return bytes(out), decoder


def test_body_decoder_unstuffs_and_converts() -> None:
    out, decoder = decode_all(wire(ARTICLE), [])
    assert decoder.done and decoder.leftover == b""
    assert out == ARTICLE + b"\n"


def test_body_decoder_raw_keeps_crlf() -> None:
    raw, decoder = decode_all(wire(ARTICLE), [], raw=True)
    assert decoder.done
    assert raw == ARTICLE.replace(b"\n", b"\r\n") + b"\r\n"


def test_body_decoder_terminator_split_everywhere() -> None:
    data = wire(b"a\n.\nb\n")
    for cut in range(len(data) + 1):
        for second in range(cut, len(data) + 1):
            out, decoder = decode_all(data, [cut, second - cut])
            assert (out, decoder.done) == (b"a\n.\nb\n", True), (cut, second)


def test_body_decoder_keeps_leftover_and_detects_missing_end() -> None:
    decoder = BodyDecoder()
    assert decoder.feed(b"x\r\n.\r\n205 bye\r\n") == b"x\n"
    assert decoder.done and decoder.leftover == b"205 bye\r\n"
    decoder = BodyDecoder()
    decoder.feed(b"x\r\n.y")
    assert not decoder.done
    assert "before its end" in decoder.eof_error(5).message


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(
        st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"").replace(b"\r", b"")).filter(lambda b: b != b"."),
        max_size=20,
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=40), max_size=10),
    raw=st.booleans(),
)
def test_body_decoder_roundtrip(lines: list[bytes], cuts: list[int], raw: bool) -> None:
    text = b"".join(line + b"\n" for line in lines)
    out, decoder = decode_all(wire(text) + b"junk", cuts, raw=raw)
    assert decoder.done
    assert decoder.leftover == b"junk"
    assert out == (text.replace(b"\n", b"\r\n") if raw else text)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200), cuts=st.lists(st.integers(min_value=0, max_value=50), max_size=8))
def test_body_decoder_any_bytes(data: bytes, cuts: list[int]) -> None:
    out, decoder = decode_all(data, cuts)
    whole, again = decode_all(data, [])
    assert (out, decoder.done, decoder.leftover) == (whole, again.done, again.leftover)
    assert len(out) <= len(data)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_status_parser_fuzz(line: bytes) -> None:
    try:
        reply = parse_status(line)
    except BadReply as error:
        assert error.exit_code == 7
    else:
        assert 100 <= reply.code <= 599


# -- overview, headers, active -------------------------------------------------


def test_parse_overview_inn_line() -> None:
    line = (
        b"5\t=?UTF-8?B?Q3Jvc3Nwb3N0IOKAkyBlbmNvZGVkIHN1YmplY3Q=?=\tBob Example <bob@example.test>\t"
        b"Fri, 20 Nov 2026 23:50:03 +0000 (UTC)\t<two.1-cross@example.test>\t<one.1@example.test>\t585\t1\t"
        b"Xref: news.example.test test.one:5 test.two:1"
    )
    item = parse_overview(line)
    assert item.number == 5
    assert item.subject == "Crosspost – encoded subject"
    assert item.sender == "Bob Example <bob@example.test>"
    assert item.message_id == "two.1-cross@example.test"
    assert item.references == "<one.1@example.test>"
    assert (item.size, item.lines) == (585, 1)
    assert item.timestamp is not None and item.timestamp.year == 2026


def test_parse_overview_raw_utf8_and_short_lines() -> None:
    item = parse_overview("3\tGrüße aus Köln\tJörg Müller <j@x>".encode())
    assert (item.subject, item.sender, item.size, item.date) == ("Grüße aus Köln", "Jörg Müller <j@x>", None, "")
    assert item.timestamp is None
    with pytest.raises(BadReply):
        parse_overview(b"abc\tsubject")


def test_decode_words() -> None:
    assert decode_words("=?ISO-8859-1?Q?Andr=E9?= Pirard") == "André Pirard"
    assert decode_words("=?UTF-8?B?w6k=?= =?UTF-8?B?w6k=?=") == "éé"
    assert decode_words("a =?bogus-charset?Q?x?= b") == "a =?bogus-charset?Q?x?= b"
    assert decode_words("=?UTF-8?Q?a_b?=") == "a b"
    assert decode_words("no words") == "no words"


def test_headers_and_fallback_overview() -> None:
    headers = parse_headers([b"Subject: long", b" folded subject", b"From: a@b", b"Subject: second", b"bad line", b""])
    assert headers == {"subject": b"long\n folded subject", "from": b"a@b"}
    item = overview_from_headers(7, {**headers, "message-id": b"<m@x>", "lines": b"3"})
    assert (item.number, item.subject, item.message_id) == (7, "long folded subject", "m@x")
    assert (item.lines, item.size) == (3, None)


def test_parse_active() -> None:
    group = parse_active(b"test.one 0000000005 0000000001 y")
    assert (group.name, group.high, group.low, group.status, group.estimate) == ("test.one", 5, 1, "y", 5)
    assert parse_active(b"empty 0000000000 0000000001 n").estimate == 0
    with pytest.raises(BadReply):
        parse_active(b"broken x y")


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200))
def test_overview_parsers_fuzz(line: bytes) -> None:
    for parse in (parse_overview, parse_active):
        try:
            parse(line)
        except BadReply as error:
            assert error.exit_code == 7
    parse_headers(line.split(b"\n"))
    decode_words(line.decode("latin-1"))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("=?QBqbuUtTfF-8_ abc=0123456789AEe+/"), max_size=60))
def test_decode_words_fuzz(text: str) -> None:
    assert isinstance(decode_words(text), str)


def test_article_window() -> None:
    assert article_window(1, 5, 5, None) == (1, 5)
    assert article_window(1, 500, 500, None) == (401, 500)
    assert article_window(1, 500, 500, (10, 20)) == (10, 20)
    assert article_window(100, 500, 400, (10, 120)) == (100, 120)
    assert article_window(1, 5, 5, (10, 20)) is None
    assert article_window(1, 0, 0, None) is None


def test_parse_server() -> None:
    assert parse_server("news.example.org", default_port=119) == ("news.example.org", 119)
    assert parse_server("news.example.org:1119", default_port=119) == ("news.example.org", 1119)
    assert parse_server("[::1]:563", default_port=119) == ("::1", 563)
    assert parse_server("::1", default_port=119) == ("::1", 119)
    for bad in ("", "host:port", "a b", "[::1", "host:0", "host:99999"):
        with pytest.raises(UsageError):
            parse_server(bad, default_port=119)
