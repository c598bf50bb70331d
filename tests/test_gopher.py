"""gopher: and gophers: against the in-repo trio server (tests/servers/gopher.py): what users see."""

from __future__ import annotations

import json
import ssl
import subprocess
from pathlib import Path

import pytest
import trio
import trustme

from fetcher import Client
from fetcher.errors import NotFound, ProtocolError, Timeout, TooLarge, TransientError, UnsafeURL, UsageError
from tests.conftest import run_fetch
from tests.servers.gopher import BINARY, DOTS_RAW, GopherServer, Reply, serving

pytestmark = pytest.mark.usefixtures("no_netrc")


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=60))


def base(server: GopherServer) -> str:
    return f"gopher://127.0.0.1:{server.port}"


# -- menus ------------------------------------------------------------------------------


async def test_root_menu_is_a_listing_with_absolute_urls() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        fetched = await client.fetch(base(server))
    assert server.raw_requests == [b"\r\n"]
    assert fetched.kind == "listing"
    by_name = {entry.name: entry for entry in fetched.entries}
    assert by_name["Hello text"].url == f"{base(server)}/0/hello.txt"
    assert by_name["A directory"].extra["gopher_plus"] == "+"
    assert by_name["Web link"].url == "http://example.test/page"
    assert by_name["Telnet login"].url == "telnet://guest@telnet.example.test/"
    assert by_name["A form"].url == f"{base(server)}/0/form%09%09%3F"
    assert by_name["Something went wrong"].type == "error" and by_name["Something went wrong"].url is None
    assert by_name["Bad port"].type == "error" and "bad port" in by_name["Bad port"].extra["problem"]
    assert by_name["Caf\u00e9 (Latin-1)"].url is not None
    assert "After the dot" not in by_name
    assert fetched.metadata["terminated"] is True
    assert by_name["Welcome to the test server."].type == "info"


async def test_dangerous_menu_items_are_listed_but_refused_when_followed() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        fetched = await client.fetch(base(server))
        by_name = {entry.name: entry for entry in fetched.entries}
        redis, option = by_name["Redis attack"], by_name["Option selector"]
        assert redis.url == "gopher://127.0.0.1:6379/0SET%20x%20y" and "6379" in redis.extra["refused"]
        assert option.url == f"{base(server)}/0-n/tmp/x" and "option" in option.extra["refused"]
        before = len(server.requests)
        for url in (redis.url, option.url):
            with pytest.raises(UnsafeURL):
                await client.fetch(url)
        assert len(server.requests) == before
    result = await cli(option.url)
    assert result.returncode == 3 and b"option" in result.stderr
    result = await cli(redis.url)
    assert result.returncode == 3 and b"6379" in result.stderr


async def test_menu_view_escapes_display_strings_and_json_and_links_work() -> None:
    async with serving(GopherServer()) as server:
        view = await cli(base(server) + "/1/")
        as_json = await cli("--json", base(server) + "/1/")
        links = await cli("--links", base(server))
    assert view.returncode == 0, view.stderr
    text = view.stdout.decode()
    assert "\x1b" not in text and "\x07" not in text and "\\x1b[2J" in text
    assert "(TXT)   Hello text" in text and "(DIR)   A directory" in text
    assert "        Welcome to the test server." in text
    assert "(HTML)  Web link  -> http://example.test/page" in text
    assert "[other.invalid:70]" in text
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert {"name": "Hello text", "type": "text", "gopher_type": "0", "selector": "/hello.txt"}.items() <= rows[
        1
    ].items()
    assert "\x1b" in rows[15]["name"]  # JSON carries the data; escaping is the terminal's business
    assert links.stdout.decode().splitlines()[:2] == [f"{base(server)}/0/hello.txt", f"{base(server)}/1/dir"]


async def test_untidy_menus() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        nodot = await client.fetch(base(server) + "/1/nodot")
        lf = await client.fetch(base(server) + "/1/lf")
        long_line = await client.fetch(base(server) + "/1/long-line")
        garbage = await client.fetch(base(server) + "/1/garbage")
    assert [e.name for e in nodot.entries] == ["Hello text", "Sub"] and nodot.metadata["terminated"] is False
    assert [e.url for e in lf.entries] == [e.url for e in nodot.entries]
    assert [e.name for e in long_line.entries] == ["Hello text", "Sub", "line 3 is longer than 65536 bytes; skipped",
                                                   "Hello text", "Sub"]  # fmt: skip
    assert garbage.kind == "listing" and garbage.metadata["problems"]


async def test_a_menu_of_100000_lines_is_complete() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        fetched = await client.fetch(base(server) + "/1/big-menu")
    assert len(fetched.entries) == 100_000
    assert fetched.entries[-1].url == f"{base(server)}/0/items/099999.txt"


async def test_an_error_only_menu_is_a_failure() -> None:
    async with serving(GopherServer()) as server:
        result = await cli(base(server) + "/1/nope")
    assert result.returncode == 6
    assert b"'/nope' does not exist" in result.stderr


# -- documents --------------------------------------------------------------------------------


async def test_text_drops_only_a_final_dot_line() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        raw = await client.fetch(base(server) + "/0/dots-raw")
        umn = await client.fetch(base(server) + "/0/dots-umn")
        split = await client.fetch(base(server) + "/0/split")
        empty = await client.fetch(base(server) + "/0/empty.txt")
    assert raw.content == DOTS_RAW
    assert umn.content == split.content == b"first line\r\n..\r\n.hidden-looking line\r\n..two dots\r\nlast line\r\n"
    assert empty.content == b"" and raw.content_type == "text/plain"


async def test_strict_mode_unstuffs() -> None:
    async with serving(GopherServer()) as server:
        result = await cli("--strict", base(server) + "/0/dots-rfc")
    assert result.returncode == 0
    assert result.stdout == b"first line\r\n.\r\n.hidden-looking line\r\n..two dots\r\nlast line\r\n"


async def test_binary_is_byte_exact_and_saved(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    async with serving(GopherServer()) as server:
        result = await cli("-o", str(target), base(server) + "/9/binary.bin")
    assert result.returncode == 0, result.stderr
    assert target.read_bytes() == BINARY


async def test_a_reset_mid_file_never_leaves_a_complete_looking_file(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    async with serving(GopherServer()) as server:
        result = await cli("-o", str(target), base(server) + "/9/reset")
    assert result.returncode == 7
    assert b"broke" in result.stderr
    assert not target.exists()


async def test_a_stall_times_out() -> None:
    async with serving(GopherServer()) as server, Client(timeout=0.5) as client:
        with pytest.raises(Timeout):
            await client.fetch(base(server) + "/0/stall")


async def test_max_size_stops_an_endless_text() -> None:
    async with serving(GopherServer()) as server:
        result = await cli("--max-size", "64K", base(server) + "/0/endless")
    assert result.returncode == 7
    assert b"larger than the limit of 65536 bytes" in result.stderr


async def test_terminal_escapes_in_documents_are_escaped_on_stdout_only_for_terminals() -> None:
    async with serving(GopherServer()) as server:
        result = await cli(base(server) + "/0/evil")
    assert result.stdout == b"red \x1b[31malert\x1b[0m bell\x07\r\n"  # not a terminal: the bytes


async def test_gopher0_error_line_for_a_document() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        with pytest.raises(NotFound, match="does not exist"):
            await client.fetch(base(server) + "/0/error3")


# -- search -----------------------------------------------------------------------------------------


async def test_search_from_the_url_from_query_and_the_library_needs_one() -> None:
    async with serving(GopherServer()) as server:
        async with Client() as client:
            fetched = await client.fetch(base(server) + "/7/search%09foo%20bar")
            with pytest.raises(UsageError, match="--query"):
                await client.fetch(base(server) + "/7/search")
        async with Client(query="foo bar") as client:
            by_query = await client.fetch(base(server) + "/7/search")
        result = await cli(base(server) + "/7/search")
    assert [e.name for e in fetched.entries] == ["You searched for: foo bar", "hit"]
    assert [e.name for e in by_query.entries] == ["You searched for: foo bar", "hit"]
    assert server.raw_requests == [b"/search\tfoo bar\r\n"] * 2
    assert result.returncode == 2 and b"--query" in result.stderr


# -- Gopher+ ------------------------------------------------------------------------------------


async def test_gopher_plus_framings() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        sized = await client.fetch(base(server) + "/0/gp.txt%09%09+")
        empty = await client.fetch(base(server) + "/0/gp-empty%09%09+")
        dotted = await client.fetch(base(server) + "/0/gp-dot%09%09+")
        to_close = await client.fetch(base(server) + "/9/gp-two%09%09+")
        menu = await client.fetch(base(server) + "/1/gp-dir%09%09+")
        umn_menu = await client.fetch(base(server) + "/1/gp-umn-dir%09%09+")
        view = await client.fetch(base(server) + "/0/gp.txt%09%09+application/postscript%20Es_ES")
        with pytest.raises(ProtocolError, match="84 bytes before the announced end"):
            await client.fetch(base(server) + "/0/gp-short%09%09+")
        with pytest.raises(ProtocolError, match="before the end of the Gopher"):
            await client.fetch(base(server) + "/0/gp-open%09%09+")
    assert (sized.content, sized.size) == (b"Hello, world!\n", 14)
    assert (empty.content, empty.size) == (b"", 0)
    assert dotted.content == b"line one\r\n.\r\n..x\r\n"
    assert to_close.content == BINARY
    assert [e.name for e in menu.entries] == [e.name for e in umn_menu.entries] == ["Hello text", "Sub"]
    assert (view.content, view.content_type) == (b"%!PS\n", "application/postscript")
    assert server.raw_requests[:7] == [b"/gp.txt\t+\r\n", b"/gp-empty\t+\r\n", b"/gp-dot\t+\r\n", b"/gp-two\t+\r\n",
        b"/gp-dir\t+\r\n", b"/gp-umn-dir\t+\r\n", b"/gp.txt\t+application/postscript Es_ES\r\n"]  # fmt: skip


async def test_gopher_plus_errors_map_to_exit_codes() -> None:
    async with serving(GopherServer()) as server:
        codes = {}
        for name in ("gone", "busy", "moved", "strange", "double"):
            result = await cli(f"{base(server)}/0/{name}%09%09+")
            codes[name] = (result.returncode, result.stderr.decode())
    assert codes["gone"][0] == 6 and "No such item" in codes["gone"][1]
    assert codes["busy"][0] == 7 and "try again later" in codes["busy"][1]
    assert codes["moved"][0] == 7 and "gopher://new.example.test/0/new" in codes["moved"][1]
    assert codes["strange"][0] == 7 and "\x1b" not in codes["strange"][1]
    assert codes["double"][0] == 6 and "Permission denied" in codes["double"][1]
    async with serving(GopherServer()) as server, Client() as client:
        with pytest.raises(TransientError):
            await client.fetch(base(server) + "/0/busy%09%09+")


async def test_a_server_without_gopher_plus_is_read_as_gopher0_with_a_warning() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        fetched = await client.fetch(base(server) + "/0/nohdr%09%09+")
        bad = await client.fetch(base(server) + "/0/badhdr%09%09+")
    assert fetched.content == b"Hello from a gopher0 server\r\n"
    assert "did not answer in Gopher+" in fetched.metadata["warnings"][0]
    assert bad.content == b"+abc\r\nnot a header\r\n"


async def test_attributes_are_structured_and_printed_readably() -> None:
    async with serving(GopherServer()) as server:
        async with Client() as client:
            everything = await client.fetch(base(server) + "/0/gp.txt%09%09!")
            chosen = await client.fetch(base(server) + "/0/gp.txt%09%09!+ABSTRACT")
            directory = await client.fetch(base(server) + "/1/gp-dir%09%09$")
        shown = await cli(base(server) + "/0/gp.txt%09%09!")
        as_json = await cli("--json", base(server) + "/0/gp.txt%09%09!")
    record = everything.metadata["attributes"][0]
    assert record["admin"]["Admin"] == "Test Admin <admin@example.invalid>"
    assert record["modified"] == "2026-11-20T23:44:33"
    assert [v["size"] for v in record["views"]] == ["<10k>", "<45K>", "<512b>", None]
    assert record["abstract"] == "A friendly greeting.\nThis is the abstract."
    assert record["other"] == {"SMELL": ["roses"]}
    only = chosen.metadata["attributes"][0]
    assert only["abstract"] and not only["views"] and not only["admin"] and not only["other"]
    assert directory.kind == "listing" and [e.name for e in directory.entries] == ["Doc", "Ask me"]
    assert directory.entries[0].description == "First abstract line."
    assert directory.entries[1].extra["attributes"]["ask"][1]["args"] == ["red", "green", "blue"]
    text = shown.stdout.decode()
    assert "Modified:  2026-11-20 23:44:33" in text and "  application/postscript Es_ES  <45K>" in text
    assert "Abstract:\n  A friendly greeting." in text and "[{" not in text
    assert json.loads(as_json.stdout)["attributes"][0]["views"][0]["mime"] == "text/plain"
    assert server.raw_requests[:3] == [b"/gp.txt\t!\r\n", b"/gp.txt\t!+ABSTRACT\r\n", b"/gp-dir\t$\r\n"]


async def test_gopher_plus_directory_rows_show_size_date_and_abstract() -> None:
    async with serving(GopherServer()) as server:
        plus = await cli(base(server) + "/1/gp-dir%09%09$")
        plain = await cli(base(server) + "/1/dir")
    assert plus.returncode == 0, plus.stderr
    # The $ reply's +VIEWS size, +ADMIN Mod-Date and +ABSTRACT, after the names in one column.
    assert plus.stdout.decode().splitlines() == [
        "(TXT)   Doc        1k  2024-01-02  First abstract line.",
        "(TXT)   Ask me      -  -",
    ]
    assert plain.stdout.decode().splitlines() == ["(TXT)   Hello text", "(DIR)   Sub"]  # no attributes, no columns


async def test_type7_index_attributes_keep_the_empty_search() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        await client.fetch(base(server) + "/7/s%09%09!")
    assert server.raw_requests == [b"/s\t\t!\r\n"]


# -- ASK forms -------------------------------------------------------------------------------------


async def test_the_rfc_ask_url_sends_exactly_the_rfc_bytes() -> None:
    async with serving(GopherServer()) as server, Client() as client:
        fetched = await client.fetch(base(server) + "/0/f%09%09+%091%0D%0A+-1%0D%0ABob%0D%0Ared%0D%0A.%0D%0A")
    assert server.raw_requests == [b"/f\t+\t1\r\n+-1\r\nBob\r\nred\r\n.\r\n"]
    assert fetched.content == b"Thanks: Bob|red\r\n"


async def test_a_form_is_shown_without_answers_and_submitted_with_them() -> None:
    async with serving(GopherServer()) as server:
        shown = await cli(base(server) + "/0/form%09%09%3F")
        filled = await cli("--form", "name=Bob", "--form", "2=pw", "--form", "Tell a story=once", "--form",
                           "Favourite colour=green", base(server) + "/0/form%09%09%3F")  # fmt: skip
        partial = await cli("--form", "name=Bob", base(server) + "/0/form%09%09%3F")
        bad = await cli("--form", "4=purple", "--form", "2=x", "--form", "3=y", base(server) + "/0/form%09%09%3F")
    assert shown.returncode == 0
    assert "1. Ask: What is your name? [Anonymous]" in shown.stdout.decode()
    assert "4. Choose: Favourite colour? (red | green | blue)" in shown.stdout.decode()
    assert filled.returncode == 0, filled.stderr
    assert filled.stdout == b"Thanks: Bob|pw|1|once|green|1|result.txt\r\n"
    assert partial.returncode == 2 and b"AskP: Password?" in partial.stderr
    assert bad.returncode == 2 and b"not one of the choices" in bad.stderr
    submitted = [raw for raw in server.raw_requests if b"\t1\r\n" in raw]
    assert submitted == [b"/form\t+\t1\r\n+-1\r\nBob\r\npw\r\n1\r\nonce\r\ngreen\r\n1\r\nresult.txt\r\n.\r\n"]
    assert server.raw_requests[0] == b"/form\t!+ASK\r\n"


async def test_a_form_asks_on_a_terminal() -> None:
    answers = iter(["Ann", "secret", "", "blue", "0", ""])
    asked: list[tuple[str, bool]] = []

    def prompt(text: str, secret: bool) -> str | None:
        asked.append((text, secret))
        return next(answers)

    async with serving(GopherServer()) as server, Client(prompt=prompt) as client:
        fetched = await client.fetch(base(server) + "/0/form%09%09?")
    assert fetched.content == b"Thanks: Ann|secret|1||blue|0|result.txt\r\n"
    assert [secret for _, secret in asked] == [False, True, False, False, False, False]
    assert "form_url" in fetched.metadata


async def test_answers_that_would_end_the_form_are_refused() -> None:
    async with serving(GopherServer()) as server, Client(form={"1": ".", "2": "x", "3": "y", "4": "red"}) as client:
        with pytest.raises(UsageError, match=r"lone '\.'"):
            await client.fetch(base(server) + "/0/form%09%09?")
    assert all(b"\t1\r\n" not in raw for raw in server.raw_requests)


# -- gophers ---------------------------------------------------------------------------------------


async def test_gophers_wraps_the_same_protocol_in_tls(tmp_path: Path) -> None:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    cafile = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(cafile))
    async with serving(GopherServer(tls=context)) as server:
        url = f"gophers://127.0.0.1:{server.port}"
        async with Client(cacert=str(cafile)) as client:
            menu = await client.fetch(url + "/1/dir")
            text = await client.fetch(url + "/0/gp.txt%09%09+")
            binary = await client.fetch(url + "/9/binary.bin")
        untrusted = await cli(url + "/0/hello.txt")
    assert menu.entries[0].url == f"{url}/0/hello.txt"
    assert text.content == b"Hello, world!\n" and binary.content == BINARY
    assert untrusted.returncode != 0 and b"TLS" in untrusted.stderr


# -- links with URL: selectors and items that are not fetched ------------------------------------------


async def test_url_selector_follows_under_the_redirect_policy() -> None:
    routes: dict[bytes, bytes | Reply] = {b"/doc": b"the document\r\n"}
    async with serving(GopherServer(routes)) as server, Client() as client:
        own = f"gopher://127.0.0.1:{server.port}/0/doc"
        followed = await client.fetch(f"{base(server)}/hURL:{own}")
        with pytest.raises(UnsafeURL):
            await client.fetch(f"{base(server)}/hURL:file:///etc/passwd")
        telnet = await client.fetch(f"{base(server)}/8guest")
        with pytest.raises(UsageError):
            await client.fetch(f"{base(server)}/iinfo")
    assert followed.content == b"the document\r\n"
    assert telnet.kind == "advisory" and "guest" in telnet.advisory.text  # type: ignore[union-attr]
    assert server.raw_requests == [b"/doc\r\n"]


async def test_max_size_also_bounds_menus() -> None:
    async with serving(GopherServer()) as server, Client(max_size=10_000) as client:
        with pytest.raises(TooLarge):
            await client.fetch(base(server) + "/1/big-menu")


async def test_search_words_are_asked_on_a_terminal() -> None:
    asked: list[str] = []

    def prompt(text: str, secret: bool) -> str | None:
        asked.append(text)
        return "foo bar"

    async with serving(GopherServer()) as server, Client(prompt=prompt) as client:
        fetched = await client.fetch(base(server) + "/7/search")
    assert asked == ["Search for: "]
    assert server.raw_requests == [b"/search\tfoo bar\r\n"]
    assert fetched.entries[1].name == "hit"
