"""The pure FTP codec (schemes/ftp/replies.py, data.py): replies, commands, names, line ends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fetcher.errors import AuthError, LimitExceeded, NotFound, ProtocolError, TransientError
from fetcher.schemes.ftp.data import AsciiDecoder, HeldEntries, LineBatches, NameParser, listing_entries, parse_names
from fetcher.schemes.ftp.replies import (
    BadReply,
    Reply,
    ReplyReader,
    command_line,
    error_for,
    parse_epsv,
    parse_mdtm,
    parse_pasv,
    parse_pwd,
    parse_replies,
    parse_size,
)
from fetcher.url import FtpURL, parse_url


def reply(*lines: str) -> Reply:
    return Reply(int(lines[0][:3]), lines)


# -- replies ---------------------------------------------------------------------


def test_single_line_replies_with_crlf_and_bare_lf() -> None:
    replies = parse_replies(b"220 ready\r\n331 Password please.\n230\r\n")
    assert [(r.code, r.lines) for r in replies] == [
        (220, ("220 ready",)),
        (331, ("331 Password please.",)),
        (230, ("230",)),
    ]
    assert replies[1].text == "Password please."


def test_multi_line_reply_ends_only_at_the_same_code_and_a_space() -> None:
    data = (
        b"220-Welcome\r\n"
        b"  230 inside text is not the end\r\n"
        b"220-still going\r\n"
        b"2200 not the end either\r\n"
        b"220 the end\r\n"
        b"200 next\r\n"
    )
    first, second = parse_replies(data)
    assert first.code == 220
    assert len(first.lines) == 5
    assert first.text.startswith("Welcome 230 inside text")
    assert second.code == 200


def test_reader_returns_none_until_a_reply_completes() -> None:
    reader = ReplyReader()
    assert reader.feed(b"211-Features:\r\n") is None
    assert reader.pending
    assert reader.feed(b" EPSV\r\n") is None
    done = reader.feed(b"211 End\r\n")
    assert done is not None and done.lines == ("211-Features:", " EPSV", "211 End")
    assert not reader.pending


@pytest.mark.parametrize(
    "line",
    [b"hello\r\n", b"2x0 no\r\n", b"600 too high\r\n", b"\r\n", b"22\r\n", b"220x\r\n", b"099 low\r\n"],
)
def test_lines_that_are_not_replies_are_refused(line: bytes) -> None:
    with pytest.raises(BadReply) as caught:
        ReplyReader().feed(line)
    assert caught.value.exit_code == 7


@pytest.mark.parametrize(
    "line",
    [b"220 \x1b[2Jcleared\r\n", b"220 bell\x07\r\n", b"220 lone\rcr\r\n", b"220 nul\x00\r\n", b"220 c1 \xc2\x9b\r\n"],
)
def test_control_characters_in_reply_text_are_kept_as_data_and_escaped_when_shown(line: bytes) -> None:
    (only,) = parse_replies(line)
    assert only.code == 220
    assert only.lines[0] == line[:-2].decode("utf-8", "surrogateescape")
    assert not any(char in only.summary for char in "\x1b\x07\r\x00\x9b")


def test_control_characters_inside_a_multi_line_reply_are_data() -> None:
    reader = ReplyReader()
    reader.feed(b"220-fine\r\n")
    assert reader.feed(b"\x1b]0;title\x07\r\n") is None
    done = reader.feed(b"220 end\r\n")
    assert done is not None and done.lines[1] == "\x1b]0;title\x07"


def test_a_multi_line_reply_past_reply_lines_is_a_limit_error() -> None:
    reader = ReplyReader(max_lines=50)
    reader.feed(b"220-start\r\n")
    with pytest.raises(LimitExceeded, match="more than 50 lines") as caught:
        for _ in range(50):
            reader.feed(b" filler\r\n")
    assert caught.value.limit_name == "reply_lines"
    assert caught.value.exit_code == 7


def test_a_long_multi_line_reply_keeps_its_first_lines_and_its_end() -> None:
    reader = ReplyReader(max_lines=1000, line_bytes=100)
    reader.feed(b"220-start\r\n")
    for number in range(500):
        assert reader.feed(b" line %d\r\n" % number) is None
    done = reader.feed(b"220 end\r\n")
    assert done is not None
    assert done.lines[0] == "220-start" and done.lines[-1] == "220 end"
    assert sum(len(line) for line in done.lines[:-1]) <= 100
    assert done.omitted == 501 - len(done.lines) + 1


def test_a_reply_line_past_line_bytes_is_a_limit_error() -> None:
    with pytest.raises(LimitExceeded) as caught:
        ReplyReader(line_bytes=10).feed(b"220 " + b"x" * 7 + b"\r\n")
    assert caught.value.limit_name == "line_bytes"
    assert ReplyReader(line_bytes=10).feed(b"220 " + b"x" * 6 + b"\r\n") is not None


def test_non_utf8_reply_text_survives_as_data() -> None:
    (only,) = parse_replies(b"550 caf\xe9 not found\r\n")
    assert only.code == 550
    assert only.text == "caf\udce9 not found"


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=2000))
def test_fuzz_any_bytes_give_replies_or_bad_reply(data: bytes) -> None:
    try:
        replies = parse_replies(data)
    except (BadReply, LimitExceeded):
        return
    for item in replies:
        assert 100 <= item.code <= 599
        assert item.lines


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=80), max_size=30))
def test_fuzz_the_reader_line_by_line(lines: list[bytes]) -> None:
    reader = ReplyReader()
    for line in lines:
        try:
            reader.feed(line + b"\r\n")
        except (BadReply, LimitExceeded):
            reader = ReplyReader()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120))
def test_fuzz_reply_content_parsers(text: bytes) -> None:
    line = "227 " + text.decode("utf-8", "surrogateescape")
    item = Reply(227, (line,))
    for parser in (parse_epsv, parse_pasv):
        try:
            parser(item)
        except BadReply:
            pass
    for parser_of, code in ((parse_pwd, 257), (parse_size, 213), (parse_mdtm, 213)):
        try:
            parser_of(Reply(code, (f"{code} " + line[4:],)))  # type: ignore[operator]
        except BadReply:
            pass


# -- reply contents ---------------------------------------------------------------


def test_pwd_parsing() -> None:
    assert parse_pwd(reply('257 "/" is the current directory')) == "/"
    assert parse_pwd(reply('257 "/tmp/srv/home/fetchuser" is the current directory')) == "/tmp/srv/home/fetchuser"
    assert parse_pwd(reply('257 "/odd ""quoted"" dir" created')) == '/odd "quoted" dir'
    assert parse_pwd(reply("257 no quotes here")) is None
    assert parse_pwd(reply('257 "unterminated')) is None
    assert parse_pwd(reply('257 "" empty')) is None
    assert parse_pwd(reply('250 "/" wrong code')) is None
    with pytest.raises(BadReply, match="control characters"):
        parse_pwd(reply('257 "/\x1b[31mred" is current'))


def test_epsv_and_pasv_parsing() -> None:
    assert parse_epsv(reply("229 Entering Extended Passive Mode (|||20124|)")) == 20124
    assert parse_epsv(reply("229 Entering extended passive mode (|||20264|).")) == 20264
    assert parse_epsv(reply("229 ok (!!!7000!)")) == 7000
    bad_epsv = ("229 (|||0|)", "229 (|||70000|)", "229 (||1|2|)", "229 no parens", "229 (|||x|)", "229 (|||²|)",
                "229 (\x1b\x1b\x1b7000\x1b)", "229 (   7000 )", "229 (|||0000000080|)")  # fmt: skip
    for bad in bad_epsv:
        with pytest.raises(BadReply):
            parse_epsv(reply(bad))
    assert parse_pasv(reply("227 Entering Passive Mode (127,0,0,1,78,209).")) == ("127.0.0.1", 78 * 256 + 209)
    assert parse_pasv(reply("227 =10,1,2,3,4,5")) == ("10.1.2.3", 1029)
    # The numbers are ASCII digits and not part of a longer number.
    assert parse_pasv(reply("227 \x1b[1m(127,0,0,1,1,2)\x1b[0m")) == ("127.0.0.1", 258)
    bad_pasv = ("227 (300,0,0,1,1,1)", "227 (1,2,3,4,0,0)", "227 nothing", "227 (1234,0,0,1,1,1)",
                "227 (1,2,3,4,5,6789)", "227 (١,٢,٣,٤,٥,٦)")  # fmt: skip
    for bad in bad_pasv:
        with pytest.raises(BadReply):
            parse_pasv(reply(bad))


def test_size_and_mdtm() -> None:
    assert parse_size(reply("213 67108864")) == 67108864
    assert parse_size(reply("550 Could not get file size.")) is None
    for bad in ("213 -1", "213 12\x1b", "213 ١٢", "213 1e9", "213 " + "9" * 20, "213"):
        with pytest.raises(BadReply, match="SIZE"):
            parse_size(reply(bad))
    assert parse_mdtm(reply("213 20261120233729")) == datetime(2026, 11, 20, 23, 37, 29, tzinfo=UTC)
    assert parse_mdtm(reply("213 20261120233729.123")) == datetime(2026, 11, 20, 23, 37, 29, tzinfo=UTC)
    assert parse_mdtm(reply("550 nope")) is None
    for bad in ("213 20261399999999", "213 191001231120000", "213 2026112023372\x1b", "213 yesterday"):
        with pytest.raises(BadReply, match="MDTM"):
            parse_mdtm(reply(bad))


def test_command_lines_distinguish_no_argument_from_an_empty_one() -> None:
    assert command_line("NLST") == b"NLST"
    assert command_line("CWD", "") == b"CWD "
    assert command_line("CWD", "/etc") == b"CWD /etc"
    assert command_line("RETR", "caf\udce9") == b"RETR caf\xe9"
    assert command_line("RETR", "ñ") == "RETR ñ".encode()


@pytest.mark.parametrize(
    ("code", "kind", "exit_code"),
    [
        (530, AuthError, 5),
        (532, AuthError, 5),
        (550, NotFound, 6),
        (421, TransientError, 7),
        (425, TransientError, 7),
        (426, TransientError, 7),
        (450, TransientError, 7),
        (500, ProtocolError, 7),
        (553, ProtocolError, 7),
        (227, ProtocolError, 7),
    ],
)
def test_reply_codes_map_to_exit_codes(code: int, kind: type[Exception], exit_code: int) -> None:
    error = error_for(reply(f"{code} text"), "doing it")
    assert type(error) is kind
    assert error.exit_code == exit_code
    assert f"{code} text" in error.message
    assert error.transient == (400 <= code < 500)


# -- data --------------------------------------------------------------------------


def test_nlst_names() -> None:
    assert parse_names(b"a.txt\r\nb\r\n\r\n.\r\n..\r\nwith space\r\n") == ["a.txt", "b", "with space"]
    assert parse_names(b"a/a.txt\na/b\n", "a") == ["a.txt", "b"]
    assert parse_names(b"caf\xe9\n") == ["caf\udce9"]
    assert parse_names(b"") == []
    assert parse_names(b"no-line-end") == ["no-line-end"]
    assert parse_names(b"\x1b[31mred\r\n") == ["\x1b[31mred"]


def test_nlst_names_split_across_chunks() -> None:
    parser = NameParser("d")
    names = parser.feed(b"d/a") + parser.feed(b"\r") + parser.feed(b"\nd/b\r\nc") + parser.feed(b"") + parser.close()
    assert names == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("over", "at", "data", "name"),
    [
        ({"max_entries": 3}, {"max_entries": 4}, b"a\nb\n.\n..\n\nc\nd\n", "listing_entries"),
        ({"max_bytes": 7}, {"max_bytes": 8}, b"a\nb\nc\nd\n", "listing_bytes"),
        ({"line_bytes": 4}, {"line_bytes": 5}, b"a\nbbbbb\r\n", "line_bytes"),
        ({"line_bytes": 4}, {"line_bytes": 5}, b"a\nbbbbb", "line_bytes"),
    ],
)
def test_nlst_caps(over: dict[str, int], at: dict[str, int], data: bytes, name: str) -> None:
    with pytest.raises(LimitExceeded) as caught:
        parse_names(data, **over)
    assert caught.value.limit_name == name
    assert caught.value.exit_code == 7
    assert parse_names(data, **at)  # exactly at the cap is fine; ".", ".." and empty lines do not count


def test_held_entries_charge_what_python_holds_against_listing_bytes() -> None:
    base = parse_url("ftp://host/pub/")
    assert isinstance(base, FtpURL)
    held = HeldEntries(base, ("pub",), max_bytes=20_000)
    held.add(["a", "b"])
    assert [entry.url for entry in held.entries] == ["ftp://host/pub/a", "ftp://host/pub/b"]
    assert 2 * HeldEntries.ENTRY_COST < held.held < 20_000
    # 40 bytes that are not UTF-8: two bytes a character in the name, "%FF" in the URL.
    name = (b"\xff" * 40).decode("utf-8", "surrogateescape")
    with pytest.raises(LimitExceeded, match="as held in memory") as caught:
        for _ in range(100):
            held.add([name])
    assert caught.value.limit_name == "listing_bytes"
    assert held.held > 20_000 >= held.held - (HeldEntries.ENTRY_COST + 400)
    assert len(held.entries) < 100


def test_held_entries_count_across_batches() -> None:
    base = parse_url("ftp://host/pub/")
    assert isinstance(base, FtpURL)
    held = HeldEntries(base, ("pub",), max_entries=3)
    held.add(["a", "b"])
    held.add(["c"])
    with pytest.raises(LimitExceeded, match="more than 3 entries") as caught:
        held.add(["d"])
    assert caught.value.limit_name == "listing_entries"


def test_line_batches_give_complete_lines_and_hold_one_back_when_asked() -> None:
    plain = LineBatches()
    assert plain.feed(b"one\r\ntw") == b"one\r\n"
    assert plain.feed(b"o\nthree") == b"two\n"
    assert plain.close() == b"three"
    held = LineBatches(hold_last=True)
    assert held.feed(b"a\nb\nc") == b"a\n"
    assert held.feed(b"\n") == b"b\n"
    assert held.feed(b"d\n") == b"c\n"
    assert held.close() == b"d\n"


@pytest.mark.parametrize(
    ("caps", "chunks", "name"),
    [
        ({"max_bytes": 5}, [b"abc\n", b"de"], "listing_bytes"),
        ({"line_bytes": 3}, [b"abc\r\nabcd\n"], "line_bytes"),
        ({"line_bytes": 3}, [b"ab", b"cd"], "line_bytes"),
    ],
)
def test_line_batch_caps(caps: dict[str, int], chunks: list[bytes], name: str) -> None:
    batches = LineBatches(**caps)
    with pytest.raises(LimitExceeded) as caught:
        for chunk in chunks:
            batches.feed(chunk)
    assert caught.value.limit_name == name


def test_a_name_that_cannot_be_sent_back_is_listed_without_a_url() -> None:
    base = parse_url("ftp://host/pub/")
    assert isinstance(base, FtpURL)
    entries = listing_entries(base, ("pub",), ["nul\x00name", "cr\rname", "esc\x1bname"])
    assert [entry.url for entry in entries[:2]] == [None, None]
    assert entries[2].url == "ftp://host/pub/esc%1Bname"


def test_listing_entries_are_absolute_ftp_urls_built_from_the_url_class() -> None:
    base = parse_url("ftp://u@host:2121/pub/;type=d")
    assert isinstance(base, FtpURL)
    names = ["semi;colon%41.txt", "sp ace", "sl/ash", "caf\udce9", "evil\x1b[2JCWD x"]
    entries = listing_entries(base, ("pub",), names)
    assert [e.url for e in entries] == [
        "ftp://u@host:2121/pub/semi%3Bcolon%2541.txt",
        "ftp://u@host:2121/pub/sp%20ace",
        "ftp://u@host:2121/pub/sl%2Fash",
        "ftp://u@host:2121/pub/caf%E9",
        "ftp://u@host:2121/pub/evil%1B%5B2JCWD%20x",
    ]
    for entry, name in zip(entries, names, strict=True):
        assert entry.url is not None
        parsed = parse_url(entry.url)
        assert isinstance(parsed, FtpURL)
        assert parsed.cwd == ("pub",) and parsed.name == name and parsed.typecode is None


def test_ascii_decoder_joins_crlf_split_across_chunks_and_keeps_lone_cr() -> None:
    decoder = AsciiDecoder()
    out = decoder.feed(b"one\r") + decoder.feed(b"\ntwo\r") + decoder.feed(b"x\r\n") + decoder.feed(b"\r")
    out += decoder.flush()
    assert out == b"one\ntwo\rx\n\r"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(min_value=0, max_value=300), max_size=8))
def test_fuzz_ascii_decoder_is_independent_of_chunking(data: bytes, cuts: list[int]) -> None:
    decoder = AsciiDecoder()
    points = sorted({min(cut, len(data)) for cut in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    out = b"".join(decoder.feed(piece) for piece in pieces) + decoder.flush()
    assert out == data.replace(b"\r\n", b"\n")
