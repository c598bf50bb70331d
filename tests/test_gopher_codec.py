"""The pure Gopher codec: request bytes, menus, text endings, Gopher+ framing and attributes, ASK forms."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fetcher import guard
from fetcher.errors import (
    AuthError,
    FetchError,
    LimitExceeded,
    NotFound,
    ProtocolError,
    TransientError,
    UnsafeURL,
    UsageError,
)
from fetcher.schemes.gopher import ask
from fetcher.schemes.gopher.menu import MenuContext, MenuParser, parse_menu
from fetcher.schemes.gopher.plus import (
    error_for,
    keep_only,
    looks_like_error,
    parse_attributes,
    parse_error,
    parse_header,
    parse_view,
    wanted_names,
)
from fetcher.schemes.gopher.request import request_bytes
from fetcher.schemes.gopher.server_errors import ERROR_PEEK, error_for_message, error_reply, resembles_error
from fetcher.schemes.gopher.text import DotTerminated, FinalDot
from fetcher.settings import Limits
from fetcher.url import GopherURL, parse_url

CTX = MenuContext(scheme="gopher", host="h.example", port=70)


def gopher(text: str) -> GopherURL:
    url = parse_url(text)
    assert isinstance(url, GopherURL)
    return url


# -- the one rule (gopher-plus.md §3.2) --------------------------------------------


@pytest.mark.parametrize(
    ("url", "sent"),
    [
        ("gopher://h", b"\r\n"),
        ("gopher://h/", b"\r\n"),
        ("gopher://h/1", b"\r\n"),
        ("gopher://h/0/file%20with%20space.txt", b"/file with space.txt\r\n"),
        ("gopher://h/7/cgi-bin/search%09foo%20bar", b"/cgi-bin/search\tfoo bar\r\n"),
        ("gopher://h/7/cgi-bin/search%09foo%20bar%09+", b"/cgi-bin/search\tfoo bar\t+\r\n"),
        ("gopher://h/7/s%09%09!", b"/s\t\t!\r\n"),
        ("gopher://h/0/hello.txt%09%09+", b"/hello.txt\t+\r\n"),
        ("gopher://h/0/x%09%09+application/postscript%20Es_ES", b"/x\t+application/postscript Es_ES\r\n"),
        ("gopher://h/0/x%09%09!+ABSTRACT%20+SMELL", b"/x\t!+ABSTRACT +SMELL\r\n"),
        ("gopher://h/1/gplus%09%09$", b"/gplus\t$\r\n"),
        (
            "gopher://h/0/f%09%09+%091%0D%0A+-1%0D%0ABob%0D%0Ared%0D%0A.%0D%0A",
            b"/f\t+\t1\r\n+-1\r\nBob\r\nred\r\n.\r\n",
        ),
        ("gopher://h/0/a?b;c=d", b"/a?b;c=d\r\n"),
        ("gopher://h/00/x", b"0/x\r\n"),
        ("gopher://h/0/utf8-%C3%B1ame.txt", "/utf8-ñame.txt".encode()),
        ("gopher://h/0/latin%E9", b"/latin\xe9\r\n"),
        ("gopher://h/0/sel%09+", b"/sel\t+\r\n"),
    ],
)
def test_request_bytes_follow_the_one_rule(url: str, sent: bytes) -> None:
    got = request_bytes(gopher(url))
    assert got == sent if sent.endswith(b"\r\n") else got == sent + b"\r\n"


def test_the_rfc_ask_url_passes_the_guard_and_other_line_breaks_do_not() -> None:
    guard.check(gopher("gopher://h/0/f%09%09+%091%0D%0A+-1%0D%0ABob%0D%0Ared%0D%0A.%0D%0A"))
    for bad in ("gopher://h/0/f%0D%0Ax", "gopher://h/7/s%09a%0Ab", "gopher://h/0/f%09%09+%0D%0A"):
        with pytest.raises(UnsafeURL):
            guard.check(gopher(bad))


@pytest.mark.parametrize("selector", ["-n/tmp/x", "-rf", "/cgi-bin/search?-n/tmp/x"])
def test_option_like_selectors_are_refused(selector: str) -> None:
    url = GopherURL(scheme="gopher", host="h", port=70, gtype="0", selector=selector, search=None, plus=None,
                    fragment=None)  # fmt: skip
    with pytest.raises(UnsafeURL) as refused:
        guard.check(url)
    assert refused.value.rule == "option-injection"


# -- menus ---------------------------------------------------------------------------


def test_menu_lines_become_entries_with_absolute_urls() -> None:
    menu = (
        b"iWelcome\t\tnull.host\t1\r\n"
        b"0Hello\t/hello.txt\th.example\t70\r\n"
        b"1Dir\t/dir\tother.example\t7070\t+\r\n"
        b"7Find\t/search\th.example\t70\r\n"
        b"8Login\tguest\ttel.example\t23\r\n"
        b"TMainframe\t\tibm.example\t23\r\n"
        b"hWeb\tURL:http://www.example/page?q=1\th.example\t70\r\n"
        b"0Form\t/form\th.example\t70\t?\r\n"
        b"3Oops\t\terror.host\t1\r\n"
        b"+Mirror\t/hello.txt\tmirror.example\t70\r\n"
        b"9Bin\t/f.bin\th.example\t70\r\n"
        b".\r\n"
        b"0Ignored\t/x\th\t70\r\n"
    )
    parser = parse_menu(menu, CTX)
    rows = [(e.type, e.name, e.url) for e in parser.entries]
    assert rows == [
        ("info", "Welcome", None),
        ("text", "Hello", "gopher://h.example/0/hello.txt"),
        ("menu", "Dir", "gopher://other.example:7070/1/dir"),
        ("search", "Find", "gopher://h.example/7/search"),
        ("telnet", "Login", "telnet://guest@tel.example/"),
        ("tn3270", "Mainframe", "telnet://ibm.example/"),
        ("html", "Web", "http://www.example/page?q=1"),
        ("text", "Form", "gopher://h.example/0/form%09%09%3F"),
        ("error", "Oops", None),
        ("text", "Mirror", "gopher://mirror.example/0/hello.txt"),
        ("binary", "Bin", "gopher://h.example/9/f.bin"),
    ]
    assert parser.terminated
    assert parser.entries[2].extra["gopher_plus"] == "+"
    assert parser.entries[7].extra["gopher_plus"] == "?"
    assert parser.entries[1].extra == {"gopher_type": "0", "line": 2, "selector": "/hello.txt", "host": "h.example",
                                       "port": 70}  # fmt: skip


def test_untidy_menu_lines_are_reported_not_fatal() -> None:
    menu = (
        b"0No host\t/nohost\n"  # lone LF, too few fields
        b"0Bad port\t/p\th.example\t(NULL)\r\n"
        b"0Huge port\t/p\th.example\t99999\r\n"
        b"0Spaced port\t/p\th.example\t70 \r\n"
        b"just text without tabs\r\n"
        b"\r\n"
        b"0Bad host\t/p\th x\t70\r\n"
        b"hFile link\tURL:file:///etc/passwd\th.example\t70\r\n"
        b"0Redis\tSET x y\t127.0.0.1\t6379\r\n"
        b"0Last line without end\t/last\th.example\t70"
    )
    parser = parse_menu(menu, CTX)
    entries = parser.entries
    assert [e.type for e in entries] == ["text", "error", "error", "text", "info", "error", "error", "text", "text"]
    assert entries[0].url == "gopher://h.example/0/nohost" and entries[0].extra["inferred"]
    assert "bad port" in entries[1].extra["problem"]
    assert entries[3].url == "gopher://h.example/0/p"
    assert entries[4].name == "just text without tabs"
    assert entries[6].url is None and "file:" in entries[6].extra["problem"]
    assert entries[7].url == "gopher://127.0.0.1:6379/0SET%20x%20y" and "6379" in entries[7].extra["refused"]
    assert entries[8].url == "gopher://h.example/0/last"
    assert not parser.terminated
    assert len(parser.problems) == 4


def test_display_strings_decode_utf8_else_latin1_and_selectors_stay_bytes() -> None:
    parser = parse_menu(b"0Caf\xe9\t/caf\xe9\th\t70\r\n0Caf\xc3\xa9\t/x\th\t70\r\n", CTX)
    assert [e.name for e in parser.entries] == ["Café", "Café"]
    url = gopher(parser.entries[0].url or "")
    assert request_bytes(url) == b"/caf\xe9\r\n"


def test_a_huge_line_is_skipped_without_buffering_it() -> None:
    parser = MenuParser(CTX)
    parser.feed(b"0A\t/a\th\t70\r\n0")
    for _ in range(64):
        parser.feed(b"x" * 16384)
        assert len(parser._partial) <= 65536
    parser.feed(b"\t/x\th\t70\r\n0B\t/b\th\t70\r\n")
    parser.close()
    assert [e.name for e in parser.entries] == ["A", "line 2 is longer than 65536 bytes; skipped", "B"]


def test_menu_caps_are_fatal_and_come_from_limits() -> None:
    parser = MenuParser(CTX, max_entries=3)
    with pytest.raises(LimitExceeded, match="more than 3 menu entries") as caught:
        parser.feed(b"iline\r\n" * 4)
    assert caught.value.exit_code == 7 and caught.value.limit_name == "listing_entries"
    parser = MenuParser(CTX, max_bytes=100)
    with pytest.raises(LimitExceeded, match="more than 100 bytes of menu"):
        parser.feed(b"i" * 101)
    limits = Limits().replace(listing_entries=5, listing_bytes=10_000, line_bytes=300)
    parser = MenuParser.for_limits(CTX, limits)
    assert (parser.max_entries, parser.max_bytes, parser.max_line) == (5, 10_000, 300)
    with pytest.raises(LimitExceeded, match="more than 5 menu entries"):
        parse_menu(b"0a\t/a\th\t70\r\n" * 6, CTX, limits)


def test_entries_held_in_memory_count_toward_listing_bytes() -> None:
    # 200 bytes of high-bit selector become ~800 bytes of text and 600 of URL: held, not received, hits the cap.
    line = b"0x\t/" + bytes(range(0x80, 0xFF))[:200] + b"\th\t70\r\n"
    parser = MenuParser(CTX, max_bytes=len(line) * 10)
    with pytest.raises(LimitExceeded, match="held in memory"):
        parser.feed(line * 9)
    assert parser.received <= parser.max_bytes


def test_a_gophers_menu_keeps_tls_only_for_its_own_server() -> None:
    ctx = MenuContext(scheme="gophers", host="h", port=7443)
    parser = parse_menu(b"0Here\t/a\th\t7443\r\n0There\t/b\tother\t70\r\n", ctx)
    assert [e.url for e in parser.entries] == ["gophers://h:7443/0/a", "gopher://other/0/b"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            b"3'/nope' does not exist (no handler found)\t\terror.host\t1\r\n",
            "'/nope' does not exist (no handler found)",
        ),
        (b"3Permission denied\t\terror.host\t1\n.\n", "Permission denied"),
        (
            b"Error: File or directory not found! (null)\r\n" + b"_" * 67 + b"\r\n   Gophered by Gophernicus/3.1.1\r\n",
            "File or directory not found! (null)",
        ),
        (  # geomyidae: the "." line and an empty line after it
            b"3Sorry, but the requested token '/x' could not be found.\tErr\tlocalhost\t70\r\n.\r\n\r\n",
            "Sorry, but the requested token '/x' could not be found.",
        ),
        (  # an error item among info lines (Motsognir-style error page)
            b"iOops\t\tnull.host\t1\r\n3Not found\t\tnull.host\t1\r\niGo back\tfake\t(NULL)\t0\r\n.\r\n",
            "Not found",
        ),
        (b"3 apples and 2 pears\r\n", None),
        (b"Error: this document is about errors.\r\nIt has more lines.\r\n", None),
        (b"3a\tb\tc\t70\r\nmore text\r\n", None),
        (b"3\t4\t5\t6\r\n3\t1\t2\t3\r\n", None),  # a table of numbers, not an error item
        (b"iJust information\t\tnull.host\t1\r\n", None),
        (b"", None),
    ],
)
def test_error_replies_are_recognised_only_when_exact(reply: bytes, message: str | None) -> None:
    assert error_reply(reply) == message


@pytest.mark.parametrize(
    ("reply", "complete", "first_line"),
    [
        (b"3a\tb\tc\t70\r\nmore text\r\n", True, "a"),
        (b"Error: this document is about errors.\r\nIt has more lines.\r\n", True,
         "Error: this document is about errors."),
        (b"ERROR 404\r\n" + b"x" * 9000, False, "ERROR 404"),
        (b"\r\nFile not found.\r\n", True, "File not found."),
        (b"Not found\r\n" + b"the rest of a long text\r\n" * 40, True, None),  # long: a document
        (b"Errors and omissions excepted.\r\n", True, None),
        (b"Hello, world!\r\n", True, None),
        (b"", True, None),
    ],
)
def test_replies_that_only_look_like_errors(reply: bytes, complete: bool, first_line: str | None) -> None:
    assert resembles_error(reply, complete=complete) == first_line


# -- text endings --------------------------------------------------------------------


def run(decoder: FinalDot | DotTerminated, data: bytes, size: int) -> bytes:
    out = b"".join(decoder.feed(data[i : i + size]) for i in range(0, len(data), size))
    return out + decoder.close()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"a\r\nb\r\n.\r\n", b"a\r\nb\r\n"),
        (b"a\r\n.\r\n\r\n  \n", b"a\r\n"),
        (b"a\n.\n", b"a\n"),
        (b"a\r\n.", b"a\r\n"),
        (b".\r\n", b""),
        (b"first line\r\n.\r\n.hidden\r\n..two\r\nlast\r\n", b"first line\r\n.\r\n.hidden\r\n..two\r\nlast\r\n"),
        (b"a\r\n. \r\n", b"a\r\n. \r\n"),
        (b"a.\r\n", b"a.\r\n"),
        (b"a\r\n..\r\n", b"a\r\n..\r\n"),
        (b"", b""),
        (b"x", b"x"),
    ],
)
def test_final_dot_is_dropped_whatever_the_chunking(data: bytes, expected: bytes) -> None:
    for size in (1, 2, 3, 7, len(data) or 1):
        assert run(FinalDot(), data, size) == expected


def test_strict_text_stops_at_the_dot_and_unstuffs() -> None:
    data = b"first line\r\n..\r\n..hidden\r\n...two dots\r\nlast\r\n.\r\nnot text\r\n"
    for size in (1, 2, 5, len(data)):
        assert run(DotTerminated("all"), data, size) == b"first line\r\n.\r\n.hidden\r\n..two dots\r\nlast\r\n"
        assert run(DotTerminated("lone"), data, size) == b"first line\r\n.\r\n..hidden\r\n...two dots\r\nlast\r\n"


def test_strict_text_without_terminator_keeps_everything() -> None:
    decoder = DotTerminated("all")
    assert run(decoder, b"a\r\n..b", 2) == b"a\r\n.b"
    assert not decoder.done


@given(st.lists(st.sampled_from([b"a", b".", b"..", b"\r\n", b"\n", b" ", b"x.y"]), max_size=30), st.integers(1, 9))
def test_final_dot_streaming_equals_whole(parts: list[bytes], size: int) -> None:
    data = b"".join(parts)
    assert run(FinalDot(), data, size) == run(FinalDot(), data, max(len(data), 1))
    assert run(DotTerminated("all"), data, size) == run(DotTerminated("all"), data, max(len(data), 1))


# -- Gopher+ --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "ok", "length"),
    [(b"+14\r\n", True, 14), (b"+-1\r\n", True, -1), (b"+-2\n", True, -2), (b" --1 \r\n", False, -1),
     (b"-52\r\n", False, 52), (b"--2\r\n", False, -2)],
)  # fmt: skip
def test_headers(line: bytes, ok: bool, length: int) -> None:
    header = parse_header(line)
    assert header is not None and (header.ok, header.length) == (ok, length)


@pytest.mark.parametrize("line", [b"+abc\r\n", b"Hello\r\n", b"+-3\r\n", b"+" + b"9" * 80 + b"\r\n", b"", b"+\r\n"])
def test_not_headers(line: bytes) -> None:
    assert parse_header(line) is None


def test_pygopherd_double_header_is_an_error() -> None:
    assert looks_like_error(b"--2\r\n1 Test Admin <a@b>\r\nPermission denied\r\n")
    assert not looks_like_error(b"--2 is how a file may start\r\n")


def test_errors_map_to_exit_codes() -> None:
    cases: list[tuple[bytes, type[FetchError], int]] = [
        (b"1 Admin <a@b>\r\nNo such item\r\n.\r\n", NotFound, 6),
        (b"2 Admin <a@b>\r\nBusy\r\n", TransientError, 7),
        (b"3 Admin <a@b>\r\n0New\t/new\tnew.example\t70\r\n", ProtocolError, 7),
        (b"7 Admin <a@b>\r\nOdd\r\n", ProtocolError, 7),
        (b"garbage", ProtocolError, 7),
    ]
    for text, kind, code in cases:
        error = error_for(parse_error(text), "gopher://h/0/x", CTX)
        assert type(error) is kind and error.exit_code == code
    moved = error_for(parse_error(cases[2][0]), "u", CTX)
    assert "gopher://new.example/0/new" in moved.message
    assert TransientError("x").transient


def test_error_text_is_escaped() -> None:
    error = error_for(parse_error(b"1 A <a@b>\r\nbad\tthing \x1b[2J\r\n"), "u", CTX)
    assert "\x1b" not in error.message and "bad thing" in error.message


def test_attribute_blocks_are_structured() -> None:
    reply = (
        b"+INFO: 0hello.txt\t/hello.txt\th\t70\t+\r\n"
        b"+ADMIN:\r\n Admin: Test Admin <admin@example.invalid>\r\n Mod-Date: Fri Nov 20 <20261120234433>\r\n"
        b"+VIEWS:\r\n text/plain: <10k>\r\n application/postscript Es_ES: <45K>\r\n text/plain En_US: <512b>\r\n"
        b" application/gopher+-menu:\r\n"
        b"+abstract:\r\n A friendly greeting.\r\n  Indented.\r\n"
        b"+SMELL\r\n roses\r\n"
        b"+INFO: 1Dir\t/d\th\t70\t+\r\n"
        b"+ASK:\r\n Ask: Name?\tAnon\r\n Choose: Colour?\tred\tgreen\r\n"
    )
    first, second = parse_attributes(reply)
    assert first.info == "0hello.txt\t/hello.txt\th\t70\t+"
    assert first.admin["Admin"] == "Test Admin <admin@example.invalid>"
    assert first.modified is not None and first.modified.isoformat() == "2026-11-20T23:44:33"
    assert [(v.mime, v.lang, v.size_text, v.approx_bytes) for v in first.views] == [
        ("text/plain", None, "<10k>", 10240),
        ("application/postscript", "Es_ES", "<45K>", 46080),
        ("text/plain", "En_US", "<512b>", 512),
        ("application/gopher+-menu", None, None, None),
    ]
    assert first.abstract == ["A friendly greeting.", " Indented."]
    assert first.other == {"SMELL": ["roses"]}
    assert second.ask is not None and [f.as_dict() for f in second.ask] == [
        {"kind": "Ask", "prompt": "Name?", "args": ["Anon"], "default": "Anon"},
        {"kind": "Choose", "prompt": "Colour?", "args": ["red", "green"], "default": None},
    ]
    assert first.views[1].request == "+application/postscript Es_ES"
    only = keep_only(first, wanted_names("!+ABSTRACT +SMELL"))
    assert only.abstract and only.other and not only.views and not only.admin
    assert wanted_names("$+VIEWS+ABSTRACT") == ["VIEWS", "ABSTRACT"]


def test_views_without_sizes_and_odd_spacing() -> None:
    view = parse_view(" Text/plain En_US : ")
    assert view is not None and (view.mime, view.lang, view.size_text) == ("Text/plain", "En_US", None)
    assert parse_view("   ") is None


# -- ASK forms ------------------------------------------------------------------------------


def test_ask_fields_and_answers() -> None:
    fields = ask.parse_ask_lines(
        [
            "Note: hello",
            "just a note",
            "ask: Name?\tAnon",
            "AskP: Password?",
            "AskL: Story",
            "Choose: C?\tred\tgreen",
            "Select: Sub?:1",
            "AskF: Save as?\tout.txt",
        ]
    )
    assert [f.kind for f in fields] == ["Note", "Note", "Ask", "AskP", "AskL", "Choose", "Select", "AskF"]
    assert fields[6].default == "1" and fields[6].label == "Sub?"
    assert ask.check_answer(fields[4], "one\ntwo") == ["2", "one", "two"]
    assert ask.check_answer(fields[5], "GREEN") == ["green"]
    assert ask.check_answer(fields[5], "1") == ["red"]
    assert ask.check_answer(fields[6], "no") == ["0"]
    assert ask.match_given(fields, {"name": "Bob", "3": "x", "Choose: C?": "red"}) == {1: "Bob", 3: "x", 4: "red"}
    for unknown in ({"colour": "red"}, {"s": "x"}, {"99": "x"}):
        with pytest.raises(UsageError, match="matches"):
            ask.match_given(fields, unknown)
    assert ask.form_plus(["Bob", "red"]) == "+\t1\r\n+-1\r\nBob\r\nred\r\n.\r\n"
    for bad in (".", "a\rb", "a\x00"):
        with pytest.raises(UsageError):
            ask.check_answer(fields[2], bad)
    with pytest.raises(UsageError, match="not one of the choices"):
        ask.check_answer(fields[5], "blue")
    with pytest.raises(UsageError, match="upload"):
        ask.check_answer(ask.AskField("ChooseF", "File?"), "x")


def test_gopher0_error_words_choose_exit_codes() -> None:
    assert isinstance(error_for_message("Permission denied", "u"), AuthError)
    assert isinstance(error_for_message("'/x' does not exist", "u"), NotFound)
    assert isinstance(error_for_message("too busy, try again later", "u"), TransientError)
    weird = error_for_message("weird \x1b[2J", "u")
    assert type(weird) is NotFound and weird.exit_code == 6 and "\x1b" not in weird.message


# -- fuzzing: any bytes give values or defined errors, never a crash or a hang ----------


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.integers(1, 64))
def test_fuzz_menu_parser(data: bytes, size: int) -> None:
    parser = MenuParser(CTX, max_line=200)
    try:
        for i in range(0, len(data), size):
            parser.feed(data[i : i + size])
        parser.close()
    except ProtocolError:
        return
    for entry in parser.entries:
        if entry.url is not None:
            parse_url(entry.url)


menu_line = st.builds(
    lambda t, d, s, h, p, plus: t + d + b"\t" + s + b"\t" + h + b"\t" + p + plus + b"\r\n",
    st.sampled_from([b"0", b"1", b"7", b"9", b"h", b"i", b"3", b"8", b"+", b"\xff"]),
    st.binary(max_size=20).filter(lambda b: b"\t" not in b and b"\n" not in b),
    st.binary(max_size=20).filter(lambda b: b"\t" not in b and b"\n" not in b),
    st.sampled_from([b"h", b"127.0.0.1", b"", b"x y", b"[::1]"]),
    st.sampled_from([b"70", b"0", b"(NULL)", b"65536", b"6379", b""]),
    st.sampled_from([b"", b"\t+", b"\t?", b"\tjunk"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(menu_line, max_size=20))
def test_fuzz_menu_lines_round_trip_their_selector(lines: list[bytes]) -> None:
    parser = parse_menu(b"".join(lines), CTX)
    for entry in parser.entries:
        if entry.url and entry.url.startswith("gopher://") and "selector" in entry.extra:
            url = gopher(entry.url)
            assert url.selector == entry.extra["selector"]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000))
def test_fuzz_gopher_plus_parsers(data: bytes) -> None:
    parse_header(data[:70])
    looks_like_error(data)
    error_for(parse_error(data), "u", CTX)
    for item in parse_attributes(data):
        item.as_dict()
    error_reply(data)


_ERROR_TOKENS = st.sampled_from(
    [b"3", b"i", b"Error: ", b"error:", b"Err 5", b"\r\n", b"\n", b"\r", b".", b" ", b"\t", b"not found",
     b"no such item", b"Gophered by x", b"____", b"file.txt", b"\xc3\xa9", b"\xff", b"x" * 150, b"A", b"item 1 ",
     b"3x", b"iinfo\t", b"\tsel\thost\t70"]
)  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(st.one_of(st.binary(max_size=700), st.lists(_ERROR_TOKENS, max_size=40).map(b"".join)), st.booleans())
@example(b"  \r\nError: no such file\r\n" + b"x" * 600, False)
@example(b"\tError: 3\r\n", False)
@example(b"iinfo\tx\ty\t70\r\n3gone away\terr\thost\t70\r\n", True)
@example(b"Error: File not found\r\n____\r\nGophered by me\r\n", True)
@example(b"3no such item\t\terror.host\t1\r\n.\r\n", True)
@example(b".\r\n", True)
@example(b"x" * 199 + b"\r\nERROR: 5", False)
@example(b"ERROR: 5" + b"y" * 300 + b"\r\n", False)
@example((b"item 00001 " * 200)[:2046] + b"\r\n", True)
@example(b"3 gone\r\n3gone\t\th\t1\r\n" + b"z" * 600, False)
@example(b"i\t\th\t1\r\nError: not here\r\n" + b"z" * 600, False)
def test_the_quick_error_checks_agree_with_the_line_by_line_ones(data: bytes, complete: bool) -> None:
    """`error_reply` and `resembles_error` decide most replies from their first byte (issue 17); never differently."""
    from fetcher.schemes.gopher.server_errors import _error_reply, _resembles_error

    assert error_reply(data) == (_error_reply(data) if len(data) <= ERROR_PEEK else None)
    assert resembles_error(data, complete=complete) == _resembles_error(data, complete=complete)
