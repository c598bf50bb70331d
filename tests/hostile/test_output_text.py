"""Server text is data, everywhere it reaches a terminal, a log, a manifest or JSON.

The pure functions of fetcher.text are fuzzed (nothing a terminal acts on
survives escaping; a stream cut anywhere decodes as the whole); the CLI is
run against servers that put escape sequences and bidi overrides into
error messages, retry reasons and listings, and against URLs carrying
passwords, and the test looks at exactly what the user sees.
"""

from __future__ import annotations

import json
import os
import pty
import stat
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.cli.main import main
from fetcher.cli.render import listing_json, listing_table
from fetcher.resource import Entry
from fetcher.text import TerminalText, escape, escape_bytes, mask_secrets, safe_text
from tests.conftest import ROOT, read_pty
from tests.plugin_scheme import LineServer

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
UNSAFE = {"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"}
#: Characters a terminal or a bidi renderer acts on, drawn often.
NASTY = st.sampled_from(
    ["\x1b", "\x9b", "\r", "\n", "\t", "\x00", "\x7f", "\u202e", "\u2066", "\u200b", "\u200d", "\ufeff",
     "\u2028", "\u061c", "\U000e0001", "\udc9b", "é", "日", "\\", "[", "m"]
)  # fmt: skip
TEXT = st.lists(st.one_of(st.characters(), NASTY), max_size=60).map("".join)


def _leftovers(text: str, *, keep_newlines: bool) -> list[str]:
    allowed = {"\n", "\t"} if keep_newlines else set()
    return [c for c in text if unicodedata.category(c) in UNSAFE and c not in allowed]


@FUZZ
@given(TEXT)
def test_nothing_a_terminal_acts_on_survives_escape(text: str) -> None:
    for keep in (False, True):
        shown = escape(text, keep_newlines=keep)
        assert _leftovers(shown, keep_newlines=keep) == []
        assert "\x1b" not in shown and "\r" not in shown
        assert escape(shown, keep_newlines=keep) == shown  # idempotent: the escapes are plain ASCII
    assert "\n" not in escape(text)


@FUZZ
@given(TEXT)
def test_printable_text_is_left_alone(text: str) -> None:
    plain = "".join(c for c in text if unicodedata.category(c) not in UNSAFE)
    assert escape(plain) == plain


@FUZZ
@given(st.binary(max_size=80) | TEXT.map(lambda t: t.encode("utf-8", "surrogatepass")), st.data())
def test_a_stream_cut_anywhere_shows_as_the_whole(data: bytes, draw: st.DataObject) -> None:
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(data)), max_size=6)))
    decoder = TerminalText()
    pieces = []
    start = 0
    for cut in [*cuts, len(data)]:
        pieces.append(decoder.feed(data[start:cut]))
        start = cut
    pieces.append(decoder.close())
    whole = TerminalText().feed(data, final=True)
    assert "".join(pieces) == whole == escape_bytes(data)
    assert _leftovers(whole, keep_newlines=True) == [] and "\r" not in whole


def test_line_ends_and_split_characters_on_a_terminal() -> None:
    decoder = TerminalText()
    body = "naïve\r\nsecond\rline\n".encode()
    shown = [decoder.feed(body[:3]), decoder.feed(body[3:7]), decoder.feed(body[7:]), decoder.close()]
    assert shown == ["na", "ïve", "\nsecond\\rline\n", ""]


@FUZZ
@given(st.text(alphabet=st.characters(whitelist_categories=("L", "N", "P", "S"), blacklist_characters="/?#@:"),
               min_size=1, max_size=20))  # fmt: skip
def test_passwords_in_urls_are_masked(secret: str) -> None:
    text = f"failed: ftp://alice:{secret}@example.org/pub and http://u:{secret}@h:8080/x"
    assert mask_secrets(text) == "failed: ftp://alice:***@example.org/pub and http://u:***@h:8080/x"


def test_listing_rows_are_escaped_and_json_masks_passwords() -> None:
    entries = [
        Entry(name="evil\u202egnp.exe\x1b[2J", url="ftp://bob:hunter2@h/evil", description="\x9b31m"),
        Entry(name="ok.txt", url="ftp://bob:hunter2@h/ok.txt", size=3),
    ]
    table = listing_table(entries)
    assert "\u202e" not in table and "\x1b" not in table and "\x9b" not in table
    assert "evil\\u202egnp.exe\\x1b[2J" in table
    rows = [json.loads(line) for line in listing_json(entries).splitlines()]
    assert [row["url"] for row in rows] == ["ftp://bob:***@h/evil", "ftp://bob:***@h/ok.txt"]
    assert "hunter2" not in listing_json(entries)
    assert listing_json(entries).isascii()


# -- through the command ------------------------------------------------------------


def serve(replies: dict[str, bytes | None]) -> LineServer:
    return LineServer(lambda name: replies.get(name, b"ERR 6 no such thing\r\n"))


def test_error_messages_from_a_server_are_escaped(x_test: None, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    server = serve({"doc": "ERR 7 bad \x1b]0;owned\x07 \u202eeman\r\n".encode()})
    try:
        assert main([f"x-test://127.0.0.1:{server.port}/doc"]) == 7
        err = capsysbinary.readouterr().err.decode()
        assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
        assert "bad \\x1b]0;owned\\x07 \\u202eeman" in err
    finally:
        server.close()


def test_bulk_retry_lines_are_escaped_and_masked(
    tmp_path: Path, x_test: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    server = serve({"doc": "ERR busy come back \x1b[2J\u2066later\r\n".encode()})
    try:
        url = f"x-test://user:s3cret@127.0.0.1:{server.port}/doc"
        manifest = tmp_path / "m.jsonl"
        code = main(["-v", "--retries", "1", "--retry-max-time", "5", "-d", str(tmp_path / "out"),
                     "--manifest", str(manifest), "--no-progress", url])  # fmt: skip
        assert code == 1
        err = capsysbinary.readouterr().err.decode()
        assert "retrying" in err
        assert "\x1b" not in err and "\u2066" not in err
        assert "come back \\x1b[2J\\u2066later" in err
        assert "s3cret" not in err
        text = manifest.read_text()
        assert "s3cret" not in text and "user:***@127.0.0.1" in text
        assert json.loads(text)["status"] == "failed"
    finally:
        server.close()


def test_progress_lines_are_escaped_and_masked(capsys: pytest.CaptureFixture[str]) -> None:
    from fetcher.cli.progress import NoProgress

    NoProgress().log("fetch: ftp://u:pw@h/\x1b[31mred\u202e: failed")
    assert capsys.readouterr().err == "fetch: ftp://u:***@h/\\x1b[31mred\\u202e: failed\n"
    assert safe_text("a\nb") == "a\\nb"


def _run_on_pty(args: list[str]) -> tuple[int, bytes]:
    """Run `fetch` with stdout on a pseudo-terminal; return exit code and what the terminal got."""
    leader, follower = pty.openpty()
    env = dict(os.environ, NETRC=str(ROOT / "tests" / "no-such-netrc"))
    process = subprocess.Popen([sys.executable, "-m", "fetcher", *args], stdout=follower, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL, env=env)  # fmt: skip
    os.close(follower)
    received = read_pty(leader)
    return process.wait(timeout=30), received


def test_a_document_on_a_terminal_keeps_line_ends_and_letters(tmp_path: Path) -> None:
    page = tmp_path / "page.txt"
    page.write_bytes("héllo\r\nworld \x1b[2J\u202e\r\n".encode())
    code, shown = _run_on_pty([f"file://{page}"])
    assert code == 0
    # The pty turns LF into CRLF itself; no CR came from the document.
    assert shown == "héllo\r\nworld \\x1b[2J\\u202e\r\n".encode()


def test_output_named_as_a_terminal_is_escaped_in_place(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    page = tmp_path / "page.txt"
    page.write_bytes("ok \x1b]0;title\x07 \u202e\r\n".encode())
    leader, follower = pty.openpty()
    try:
        terminal = os.ttyname(follower)
        assert main(["-o", terminal, f"file://{page}"]) == 0
        shown = os.read(leader, 4096)
        assert stat.S_ISCHR(os.stat(terminal).st_mode) and not os.path.exists(terminal + ".part")
    finally:
        os.close(leader)
        os.close(follower)
    assert shown == b"ok \\x1b]0;title\\x07 \\u202e\r\n"
