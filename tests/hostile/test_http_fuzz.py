"""Fuzzing the sans-IO HTTP reply side: any bytes in, a value or fetcher's own error out, nothing past its cap.

The pure entry points take every cap as an argument, so small caps let
hypothesis reach each of them with small inputs:

* `ReplyReader` (h11 plus the head, field, trailer and buffer caps), fed a
  reply cut into arbitrary pieces;
* `decoder_for` (stacked Content-Encodings, the decoded-ratio cap with its
  floor), fed real and corrupted gzip/deflate streams in arbitrary pieces;
* `ChunkedReader` (chunked bodies read past h11), checked against h11 itself
  on any input and against its line, trailer and count caps;

and the --no-location error over any Location.
"""

from __future__ import annotations

import gzip
import itertools
import os
import zlib

import h11
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note
from hypothesis import strategies as st

from fetcher.errors import FetchError, LimitExceeded, ProtocolError
from fetcher.schemes.http.chunked import ChunkedReader
from fetcher.schemes.http.decoding import PIECE, decoder_for
from fetcher.schemes.http.reader import FIELD_OVERHEAD, ReplyReader
from fetcher.schemes.http.response import RedirectNotFollowed
from fetcher.schemes.http.verdict import not_followed
from fetcher.settings import Limits
from fetcher.text import escape
from fetcher.url import HttpURL, parse_url

#: CI runs a few seconds' worth; FETCHER_FUZZ_EXAMPLES=5000 runs a long hunt by hand.
EXAMPLES = int(os.environ.get("FETCHER_FUZZ_EXAMPLES", "120"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- reply heads and framing ---------------------------------------------------------------------------------

token = st.text("abcXYZ-0123456789", min_size=1, max_size=12)
octets = st.binary(max_size=40)
#: Mostly well-formed field values and reason phrases (to get past h11), sometimes any octets.
plain = st.text("abc xyz,;=/.0123456789", max_size=40).map(str.encode)
value = st.one_of(plain, plain, plain, octets)
good_field = st.builds(lambda n, v: n.encode() + b": " + v, token, plain)
framing_field = st.builds(
    lambda n, v: n.encode() + b":" + v,
    st.sampled_from(["Content-Length", "Transfer-Encoding"]),
    st.sampled_from([b"5", b"chunked", b"chunked", b"0", b"-1", b"9" * 30, b"chunked, gzip", b"x"]),
)
#: Mostly valid lines (so that heads get through h11 and reach the caps), now and then any octets.
field_line = st.one_of(*[good_field] * 12, framing_field, framing_field, octets)
status_line = st.builds(
    lambda version, code, reason: b"HTTP/" + version + b" " + code + b" " + reason,
    st.sampled_from([b"1.1"] * 6 + [b"1.0", b"2", b"x"]),
    st.sampled_from([b"200"] * 4 + [b"100", b"103"] * 2 + [b"101", b"204", b"302", b"404", b"999", b"20", b"abc"]),
    value,
)
head = st.builds(
    lambda status, fields: status + b"\r\n" + b"".join(f + b"\r\n" for f in fields) + b"\r\n",
    status_line,
    st.lists(field_line, max_size=8),
)
chunk = st.one_of(
    st.builds(
        lambda data, ext: b"%x" % len(data) + ext + b"\r\n" + data + b"\r\n",
        octets,
        st.sampled_from([b"", b";a=b", b";" + b"e" * 50]),
    ),
    st.just(b"0\r\n"),
    octets,
)
structured = st.builds(
    lambda heads, body: b"".join(heads) + b"".join(body),
    st.lists(head, min_size=1, max_size=4),
    st.lists(chunk, max_size=8),
)
reply = st.one_of(st.binary(max_size=600), structured, structured, structured)
caps = st.builds(
    lambda count, size, line: Limits().replace(header_count=count, header_bytes=size, line_bytes=line),
    st.integers(1, 6),
    st.integers(16, 4000),
    st.integers(8, 200),
)


def pieces(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def head_fields(event: h11.InformationalResponse | h11.Response | h11.EndOfMessage) -> list[tuple[bytes, bytes]]:
    return list(event.headers.raw_items())


@FUZZ
@given(reply, st.lists(st.integers(0), max_size=6), caps, st.booleans())
def test_any_reply_gives_events_within_the_caps_or_a_fetch_error(
    data: bytes, cuts: list[int], limits: Limits, close: bool
) -> None:
    reader = ReplyReader("h:80", limits)
    reader.h11.send(h11.Request(method="GET", target="/", headers=[("Host", "h")]))
    reader.h11.send(h11.EndOfMessage())
    reader.sent_request()
    feed = [*pieces(data, cuts), b""] if close else pieces(data, cuts)
    head_fields_seen = head_bytes_seen = 0
    try:
        for piece in feed:
            reader.receive_data(piece)
            while True:
                got = reader.next_event()
                buffered, _ = reader.h11.trailing_data
                assert len(buffered) <= limits.header_bytes + len(piece)
                if got is h11.NEED_DATA or isinstance(got, h11.ConnectionClosed | h11.EndOfMessage):
                    break
                if isinstance(got, h11.InformationalResponse | h11.Response):
                    fields = head_fields(got)
                    assert all(len(n) + len(v) + FIELD_OVERHEAD <= limits.line_bytes for n, v in fields)
                    head_fields_seen += len(fields)
                    head_bytes_seen += sum(len(n) + len(v) + FIELD_OVERHEAD for n, v in fields)
                    assert head_fields_seen <= limits.header_count
                    assert head_bytes_seen <= limits.header_bytes
            if isinstance(got, h11.EndOfMessage):
                assert len(head_fields(got)) <= limits.header_count
                break
    except FetchError as error:
        assert error.message and "\x1b" not in error.message and "\r" not in error.message
        note(f"{type(error).__name__} {getattr(error, 'limit_name', '')}")
        if isinstance(error, LimitExceeded):
            assert error.limit_name in ("header_count", "header_bytes", "line_bytes")
    else:
        note("ended" if head_fields_seen or head_bytes_seen else "no head")


@FUZZ
@given(
    st.lists(st.tuples(token, st.text("abcxyz,;=/.0123456789", max_size=60)), max_size=12),
    st.lists(st.integers(0, 3), max_size=3),
    caps,
)
def test_a_complete_head_meets_exactly_the_first_cap_it_breaks(
    fields: list[tuple[str, str]], interims: list[int], limits: Limits
) -> None:
    """The oracle: the first field line over line_bytes, else too many fields, else too many bytes."""
    reader = ReplyReader("h:80", limits)
    reader.h11.send(h11.Request(method="GET", target="/", headers=[("Host", "h")]))
    reader.h11.send(h11.EndOfMessage())
    reader.sent_request()
    lines = [f"{name}: {value}".encode() for name, value in fields]
    final = b"HTTP/1.1 200 OK\r\n" + b"".join(line + b"\r\n" for line in lines) + b"Content-Length: 0\r\n\r\n"
    interim = [b"HTTP/1.1 103 Early Hints\r\n" + b"".join(line + b"\r\n" for line in lines[:n]) + b"\r\n"
               for n in interims]  # fmt: skip
    heads = [*(("interim (1xx) response head", 15 + len("Early Hints"), lines[:n]) for n in interims),
             ("response head", 15 + len("OK"), [*lines, b"Content-Length: 0"])]  # fmt: skip
    expected: tuple[str, str] | None = None
    count = size = 0
    for what, base, head_lines in heads:
        costs = [len(line) + 2 for line in head_lines]
        if any(cost > limits.line_bytes for cost in costs):
            expected = ("line_bytes", what)
            break
        count += len(costs)
        size += base + sum(costs)
        if count > limits.header_count:
            expected = ("header_count", what)
            break
        if size > limits.header_bytes:
            expected = ("header_bytes", what)
            break
    reader.receive_data(b"".join(interim) + final)
    try:
        while not isinstance(reader.next_event(), h11.Response):
            pass
    except LimitExceeded as error:
        assert expected is not None and error.limit_name == expected[0], (error, expected)
        assert expected[1] in error.message
        note(f"limit {error.limit_name}")
        return
    assert expected is None
    note("accepted")


# -- content decoding ------------------------------------------------------------------------------------------

CODINGS = ["gzip", "x-gzip", "deflate", "identity"]


def encode(data: bytes, codings: list[str]) -> bytes:
    """Apply codings in the order the server lists them (the first was applied first)."""
    for coding in codings:
        if coding in ("gzip", "x-gzip"):
            data = gzip.compress(data, compresslevel=1, mtime=0)
        elif coding == "deflate":
            data = zlib.compress(data, 1)
    return data


def mangle(data: bytes, flips: list[int]) -> bytes:
    mutable = bytearray(data)
    for flip in flips:
        if mutable:
            mutable[flip % len(mutable)] ^= 1 << (flip % 8)
    return bytes(mutable)


@FUZZ
@given(
    st.one_of(st.binary(max_size=3000), st.just(b"\0" * 200_000)),
    st.one_of(st.lists(st.sampled_from(CODINGS), max_size=4), st.lists(st.sampled_from([*CODINGS, "br"]), max_size=7)),
    st.lists(st.integers(0), max_size=5),
    st.one_of(st.just([]), st.lists(st.integers(0), max_size=3)),
    st.integers(0, 6),
    st.integers(1, 50),
    st.integers(0, 5000),
)
def test_any_encoded_body_decodes_within_the_caps_or_raises_a_fetch_error(
    payload: bytes,
    codings: list[str],
    cuts: list[int],
    flips: list[int],
    max_encodings: int,
    max_ratio: int,
    floor: int,
) -> None:
    body = mangle(encode(payload, codings), flips)
    received = decoded = 0
    out: list[bytes] = []
    try:
        decoder = decoder_for(codings, max_encodings=max_encodings, max_ratio=max_ratio, ratio_floor=floor)
        if decoder is None:
            return
        for piece in pieces(body, cuts):
            received += len(piece)
            for part in decoder.feed(piece):
                decoded += len(part)
                assert len(part) <= PIECE
                assert decoded <= max(floor, max_ratio * max(received, 1))
                out.append(part)
        for part in decoder.flush():
            decoded += len(part)
            assert decoded <= max(floor, max_ratio * max(received, 1))
            out.append(part)
    except FetchError as error:
        note(f"{type(error).__name__} {getattr(error, 'limit_name', '')}")
        if isinstance(error, LimitExceeded):
            assert error.limit_name in ("encodings", "decoded_ratio")
        return
    note("decoded")
    assert len(codings) <= max_encodings
    if not flips and decoded <= floor:
        assert b"".join(out) == payload


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 400), st.binary(max_size=50))
def test_deep_stacks_decode_without_recursion_when_the_cap_allows(layers: int, payload: bytes) -> None:
    body = payload
    for _ in range(layers):
        body = gzip.compress(body, compresslevel=0, mtime=0)
    decoder = decoder_for(["gzip"] * layers, max_encodings=layers, max_ratio=1000)
    assert decoder is not None
    out = [part for part in decoder.feed(body)] + list(decoder.flush())
    assert b"".join(out) == payload


def test_3000_stacked_gzip_layers_decode_when_allowed() -> None:
    body = b"deep\n"
    for _ in range(3000):
        body = gzip.compress(body, compresslevel=0, mtime=0)
    decoder = decoder_for(["gzip"] * 3000, max_encodings=3000, max_ratio=1000)
    assert decoder is not None
    assert b"".join([*decoder.feed(body), *decoder.flush()]) == b"deep\n"


# -- redirects that are not followed -----------------------------------------------------------------------------

location_text = st.one_of(
    st.text(max_size=80), st.text("htpf:/@?#%:[]0123456789usxyz.;~ \t\r\n\x1b\x9b\u202e", max_size=80)
)


@FUZZ
@given(location_text, st.one_of(st.none(), location_text), st.text(max_size=20))
def test_any_location_gives_a_one_line_escaped_redirect_error_without_passwords(
    location: str, secret_host: str | None, reason: str
) -> None:
    origin = parse_url("http://user:s3cret@h:8080/a/b?x")
    assert isinstance(origin, HttpURL)
    if secret_host is not None:
        location = f"http://other:s3cret@{secret_host}"
    error = not_followed(origin, 302, reason, location)
    assert isinstance(error, RedirectNotFollowed) and error.exit_code == 7
    assert error.message.startswith("HTTP 302") and "not followed (--no-location)" in error.message
    assert "s3cret" not in error.message
    assert error.message == escape(error.message)


# -- chunked bodies, read past h11: the same bytes as h11 gives, within the caps ----------------------------------

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
size_text = st.one_of(
    st.just(None),  # the true size in hex
    st.sampled_from([b"0", b"00", b"1", b"A", b"ff", b"x", b"", b"-1", b" 1", b"1 ", b"9" * 21, b"0" * 20 + b"1"]),
)
wire_chunk = st.builds(
    lambda data, size, ext, end: (b"%x" % len(data) if size is None else size) + ext + b"\r\n" + data + end,
    st.binary(max_size=20),
    size_text,
    st.sampled_from([b"", b";a=b", b"; x", b";\r", b";\n", b" \t"]),
    st.sampled_from([b"\r\n", b"\r\n", b"\r\n", b"\n", b"\r", b"", b"xx"]),
)
trailer_block = st.one_of(
    st.just(b"\r\n"),
    st.just(b"\n"),
    st.builds(
        lambda lines, end: b"".join(lines) + end,
        st.lists(st.sampled_from([b"X-A: b\r\n", b"X-B:c\n", b" folded\r\n", b"bad line\r\n", b"\r"]), max_size=4),
        st.sampled_from([b"\r\n", b"\n", b""]),
    ),
)
chunked_wire = st.one_of(
    st.binary(max_size=200),
    st.builds(
        lambda chunks, last, trailers, tail: b"".join(chunks) + last + trailers + tail,
        st.lists(wire_chunk, max_size=6),
        st.sampled_from([b"0\r\n", b"0\r\n", b"000;x=y\r\n", b"", b"0\n"]),
        trailer_block,
        st.sampled_from([b"", b"", b"HTTP/1.1 200 OK\r\n", b"junk"]),
    ),
)


def h11_reading(wire: bytes) -> tuple[str, bytes, bytes]:
    """What h11 makes of a chunked body: (done | need | error, data, what it holds after the end)."""
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="GET", target="/", headers=[("Host", "h")]))
    connection.send(h11.EndOfMessage())
    connection.receive_data(CHUNKED_HEAD + wire)
    assert isinstance(connection.next_event(), h11.Response)
    data = b""
    try:
        while True:
            got = connection.next_event()
            if isinstance(got, h11.Data):
                data += got.data
            elif isinstance(got, h11.EndOfMessage):
                return "done", data, connection.trailing_data[0]
            else:
                return "need", data, b""
    except h11.RemoteProtocolError:
        return "error", data, b""


@FUZZ
@given(chunked_wire, st.lists(st.integers(0), max_size=6))
def test_chunked_reader_reads_what_h11_reads(wire: bytes, cuts: list[int]) -> None:
    outcome, data, after = h11_reading(wire)
    reader = ChunkedReader("h:80", line_bytes=1 << 30, header_bytes=1 << 30, header_count=1 << 30)
    ours = b""
    try:
        for piece in pieces(wire, cuts):
            ours += reader.feed(piece)
    except ProtocolError as error:
        assert not isinstance(error, LimitExceeded)
        assert outcome == "error", (error, outcome)
        assert data.startswith(ours)
        note("both refuse")
        return
    if outcome == "error":
        # Trailers are discarded, so they are read leniently: only h11 refuses a malformed one.
        assert reader.done and ours == data
        note("trailer refused by h11 only")
        return
    assert ours == data
    assert reader.done is (outcome == "done")
    if reader.done:
        assert reader.leftover == after
    note(outcome)


@FUZZ
@given(chunked_wire, st.lists(st.integers(0), max_size=8), st.integers(1, 40), st.integers(1, 200), st.integers(0, 5))
def test_chunked_reader_holds_nothing_past_its_caps(
    wire: bytes, cuts: list[int], line_bytes: int, header_bytes: int, header_count: int
) -> None:
    reader = ChunkedReader("h:80", line_bytes=line_bytes, header_bytes=header_bytes, header_count=header_count)
    try:
        for piece in pieces(wire, cuts):
            reader.feed(piece)
            held = len(reader._line)
            assert held <= max(line_bytes, header_bytes)
    except ProtocolError as error:
        note(f"{type(error).__name__} {getattr(error, 'limit_name', '')}")
        assert "\r" not in error.message and "\n" not in error.message


def chunked_outcome(wire: list[bytes], caps: tuple[int, int, int]) -> tuple[object, ...]:
    line_bytes, header_bytes, header_count = caps
    reader = ChunkedReader("h:80", line_bytes=line_bytes, header_bytes=header_bytes, header_count=header_count)
    data = b""
    try:
        for piece in wire:
            data += reader.feed(piece)
    except ProtocolError as error:
        return type(error).__name__, getattr(error, "limit_name", None)
    return "read", data, reader.done


@FUZZ
@given(chunked_wire, st.lists(st.integers(0), max_size=8), st.integers(1, 40), st.integers(1, 200), st.integers(0, 5))
def test_chunked_reader_outcome_does_not_depend_on_how_reads_cut_the_body(
    wire: bytes, cuts: list[int], line_bytes: int, header_bytes: int, header_count: int
) -> None:
    caps = (line_bytes, header_bytes, header_count)
    whole = chunked_outcome([wire], caps)
    cut = chunked_outcome(pieces(wire, cuts), caps)
    if whole[0] == "read" and cut[0] == "read":
        assert whole[2] == cut[2] and whole[1] == cut[1]
    else:
        assert whole == cut
    note(str(whole[0]))
