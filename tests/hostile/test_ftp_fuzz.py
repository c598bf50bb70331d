"""Hypothesis against the pure FTP codec: any bytes in, a value or fetcher's own error out.

Small caps are passed in so every cap is reached; the assertions check that
nothing kept grows past its cap.  Each test is bounded (max_examples, no
per-example deadline) and runs in a second or two.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.errors import LimitExceeded
from fetcher.schemes.ftp.data import LineBatches, NameParser, listing_entries
from fetcher.schemes.ftp.replies import (
    BadReply,
    Reply,
    ReplyReader,
    parse_epsv,
    parse_mdtm,
    parse_pasv,
    parse_pwd,
    parse_replies,
    parse_size,
)
from fetcher.url import FtpURL, parse_url

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Bytes shaped like FTP replies often enough to reach deep states.
reply_like = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"220-", b"220 ", b"220", b"230 ", b"  220 ", b"\r", b"\n", b"\r\n", b"\x1b[", b"\xff"]),
    ),
    max_size=40,
).map(b"".join)


@FUZZ
@given(reply_like, st.integers(1, 8), st.integers(1, 64))
def test_replies_from_any_bytes(data: bytes, max_lines: int, line_bytes: int) -> None:
    try:
        replies = parse_replies(data, max_lines=max_lines, line_bytes=line_bytes)
    except (BadReply, LimitExceeded):
        return
    for item in replies:
        assert 100 <= item.code <= 599
        assert 1 <= len(item.lines) <= max_lines
        assert all(len(line) <= line_bytes for line in item.lines)
        # What is kept of a long reply is bounded by the line cap (plus the closing line).
        assert sum(len(line.encode("utf-8", "surrogateescape")) for line in item.lines[:-1]) <= max(
            line_bytes, len(item.lines[0].encode("utf-8", "surrogateescape"))
        )
        assert "\n" not in "".join(item.lines)
        for char in "\x1b\x07\r\x00\x9b":
            assert char not in item.summary


@FUZZ
@given(st.lists(st.binary(max_size=30), max_size=60))
def test_the_reader_recovers_after_any_error(lines: list[bytes]) -> None:
    reader = ReplyReader(max_lines=5, line_bytes=20)
    for line in lines:
        try:
            reader.feed(line + b"\r\n")
        except (BadReply, LimitExceeded):
            assert not reader.pending  # an error leaves no half reply behind


@FUZZ
@given(st.binary(max_size=80))
def test_pasv_and_epsv_from_any_text(text: bytes) -> None:
    decoded = text.decode("utf-8", "surrogateescape")
    for code, parser in ((227, parse_pasv), (229, parse_epsv)):
        item = Reply(code, (f"{code} {decoded}",))
        try:
            value = parser(item)  # type: ignore[operator]
        except BadReply:
            continue
        if code == 227:
            host, port = value
            parts = host.split(".")
            assert len(parts) == 4 and all(part.isascii() and part.isdigit() and int(part) <= 255 for part in parts)
        else:
            port = value
        assert 0 < port < 65536


no_digits = st.text(alphabet=st.characters(exclude_categories=("Nd",)), max_size=20)


@FUZZ
@given(st.lists(st.integers(0, 255), min_size=6, max_size=6), no_digits, no_digits)
def test_pasv_numbers_inside_any_decoration(numbers: list[int], before: str, after: str) -> None:
    item = Reply(227, (f"227 {before}{','.join(map(str, numbers))}{after}",))
    port = numbers[4] * 256 + numbers[5]
    try:
        found = parse_pasv(item)
    except BadReply:
        assert port == 0
        return
    assert found == (".".join(map(str, numbers[:4])), port)


@FUZZ
@given(st.binary(max_size=60))
def test_size_mdtm_and_257_from_any_text(text: bytes) -> None:
    decoded = text.decode("utf-8", "surrogateescape")
    try:
        size = parse_size(Reply(213, (f"213 {decoded}",)))
        assert size is not None and size >= 0
    except BadReply:
        pass
    try:
        parse_mdtm(Reply(213, (f"213 {decoded}",)))
    except BadReply:
        pass
    try:
        path = parse_pwd(Reply(257, (f"257 {decoded}",)))
    except BadReply:
        return
    if path is not None:
        assert not any(ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F for char in path)


@FUZZ
@given(
    st.lists(st.one_of(st.binary(max_size=30), st.sampled_from([b"\r\n", b"\n", b".\n", b"d/", b"\r"])), max_size=30),
    st.integers(1, 10),
    st.integers(1, 200),
    st.integers(1, 20),
)
def test_nlst_names_from_any_chunks_stay_under_their_caps(
    chunks: list[bytes], max_entries: int, max_bytes: int, line_bytes: int
) -> None:
    parser = NameParser("d", max_entries=max_entries, max_bytes=max_bytes, line_bytes=line_bytes)
    names: list[str] = []
    try:
        for chunk in chunks:
            names += parser.feed(chunk)
            assert len(parser._partial) <= line_bytes  # the unfinished line is bounded too
        names += parser.close()
    except LimitExceeded as error:
        assert error.limit_name in ("listing_entries", "listing_bytes", "line_bytes")
        return
    assert len(names) <= max_entries
    assert sum(len(chunk) for chunk in chunks) <= max_bytes
    for name in names:
        assert "\n" not in name and name not in ("", ".", "..")
        assert len(name.encode("utf-8", "surrogateescape")) <= line_bytes
    # The same bytes in one piece give the same names.
    whole = NameParser("d", max_entries=max_entries, max_bytes=max_bytes, line_bytes=line_bytes)
    assert whole.feed(b"".join(chunks)) + whole.close() == names


@FUZZ
@given(st.lists(st.binary(min_size=1, max_size=20), max_size=10))
def test_every_listed_name_has_a_url_that_names_it_or_none(raw_names: list[bytes]) -> None:
    base = parse_url("ftp://host/pub/")
    assert isinstance(base, FtpURL)
    names = [raw.decode("utf-8", "surrogateescape") for raw in raw_names]
    for entry, name in zip(listing_entries(base, ("pub",), names), names, strict=True):
        assert entry.name == name
        if entry.url is None:
            assert "\x00" in name or "\r" in name
            continue
        parsed = parse_url(entry.url)
        assert isinstance(parsed, FtpURL)
        assert parsed.cwd == ("pub",) and parsed.name == name


@FUZZ
@given(
    st.lists(st.one_of(st.binary(max_size=30), st.sampled_from([b"\r\n", b"\n", b"\r"])), max_size=30),
    st.integers(1, 200),
    st.integers(1, 20),
    st.booleans(),
)
def test_line_batches_from_any_chunks(chunks: list[bytes], max_bytes: int, line_bytes: int, hold_last: bool) -> None:
    batches = LineBatches(max_bytes=max_bytes, line_bytes=line_bytes, hold_last=hold_last)
    out = b""
    try:
        for chunk in chunks:
            batch = batches.feed(chunk)
            assert batch == b"" or batch.endswith(b"\n")
            out += batch
            assert len(batches._held) <= 2 * (line_bytes + 2)  # at most a held line and a partial one
    except LimitExceeded as error:
        assert error.limit_name in ("listing_bytes", "line_bytes")
        return
    # Nothing lost, nothing repeated, whatever the chunking.
    assert out + batches.close() == b"".join(chunks)
    for line in b"".join(chunks).split(b"\n"):
        assert len(line.removesuffix(b"\r")) <= line_bytes
