"""The sans-IO parts of http: request heads, response rules, decoders, proxy choice; fuzzed without sockets."""

from __future__ import annotations

import gzip
import itertools
import zlib
from datetime import UTC, datetime

import anyio
import anyio.abc
import h11
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.errors import AuthError, FetchError, NotFound, ProtocolError, TransientError
from fetcher.net.connection import Connection
from fetcher.schemes.http import response as rules
from fetcher.schemes.http.connection import HTTPConnection
from fetcher.schemes.http.decoding import PIECE, decoder_for
from fetcher.schemes.http.proxy import bypassed, choose_proxy, parse_proxy
from fetcher.schemes.http.request import build_connect, build_request, public
from fetcher.url import HttpURL, join, parse_url


def http(text: str) -> HttpURL:
    url = parse_url(text)
    assert isinstance(url, HttpURL)
    return url


# -- requests -----------------------------------------------------------------------------------------


def test_request_head_for_plain_resumed_and_proxied_requests() -> None:
    head = build_request(http("http://example.com/a%20b?x=%0d%0a"))
    assert (head.method, head.target) == ("GET", "/a%20b?x=%0d%0a")
    assert head.headers == [
        ("Host", "example.com"),
        ("User-Agent", "fetcher/0.1.0"),
        ("Accept", "*/*"),
        ("Accept-Encoding", "gzip, deflate"),
    ]
    resumed = build_request(http("https://[::1]:8443/f"), offset=10, credentials=("u", "p"), user_agent="x/1")
    assert resumed.headers == [
        ("Host", "[::1]:8443"),
        ("User-Agent", "x/1"),
        ("Accept", "*/*"),
        ("Accept-Encoding", "identity"),
        ("Range", "bytes=10-"),
        ("Authorization", "Basic dTpw"),
    ]
    assert "Authorization: Basic ****" in resumed.trace_lines()
    proxied = build_request(http("http://a:b@h:81/p?q"), via_proxy=True)
    assert proxied.target == "http://h:81/p?q"
    assert build_connect(http("https://h/x")).target == "h:443"
    assert str(public(http("http://a:secret@h/"))) == "http://a:****@h/"


def test_basic_credentials_use_the_url_octets() -> None:
    url = http("http://%C3%A9l%E9ve:p%3Aw@h/")
    head = build_request(url, credentials=(url.user or "", url.password))
    assert dict(head.headers)["Authorization"] == "Basic w6ls6XZlOnA6dw=="  # b"\xc3\xa9l\xe9ve:p:w"


# -- response rules ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "exit_code"),
    [(404, NotFound, 6), (410, NotFound, 6), (401, AuthError, 5), (403, AuthError, 5), (503, TransientError, 7),
     (429, TransientError, 7), (500, ProtocolError, 7), (400, ProtocolError, 7), (300, ProtocolError, 7)],
)  # fmt: skip
def test_status_errors(status: int, kind: type[FetchError], exit_code: int) -> None:
    error = rules.status_error(status, "Reason", "http://h/x", [("Retry-After", "120")], sent_credentials=False)
    assert type(error) is kind
    assert error.exit_code == exit_code
    assert error.message.startswith(f"HTTP {status} Reason")
    if kind is TransientError:
        assert error.retry_after == 120.0  # type: ignore[attr-defined]
        assert error.transient


def test_retry_after_date_and_garbage() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert rules.retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now) == 30.0
    assert rules.retry_after("Thu, 01 Jan 2026 11:00:00 GMT", now) == 0.0
    assert rules.retry_after("soon", now) is None
    assert rules.retry_after(None, now) is None


def test_content_range() -> None:
    assert rules.content_range("bytes 10-19/20") == rules.ContentRange(10, 19, 20)
    assert rules.content_range("bytes */20") == rules.ContentRange(None, None, 20)
    assert rules.content_range("bytes 5-9/*") == rules.ContentRange(5, 9, None)
    assert rules.content_range("bytes 9-5/20") is None
    assert rules.content_range("items 1-2/3") is None


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ('attachment; filename="report.pdf"', "report.pdf"),
        ("attachment; filename=plain.txt", "plain.txt"),
        ('attachment; filename="../../etc/passwd"', "passwd"),
        ("attachment; filename*=UTF-8''%E2%82%AC%20rates.txt; filename=\"fallback.txt\"", "\u20ac rates.txt"),
        ('attachment; filename="a\\"b.txt"', "a_b.txt"),
        ('attachment; filename="con.txt"', "_con.txt"),
        ('attachment; filename="evil\x1b[31m.txt"', "evil_[31m.txt"),
        ("inline", None),
        ('attachment; filename=".."', "download"),
    ],
)
def test_disposition_filename(value: str, name: str | None) -> None:
    assert rules.disposition_filename(value) == name


@given(st.text())
def test_disposition_filename_never_escapes(value: str) -> None:
    name = rules.disposition_filename(value)
    if name is not None:
        assert name and "/" not in name and "\\" not in name and name not in (".", "..")
        assert not any(ord(c) < 32 for c in name)


@given(st.binary())
def test_location_reference_always_joins_or_fails_cleanly(raw: bytes) -> None:
    reference = rules.location_reference(raw.decode("latin-1"))
    assert all(0x21 <= ord(c) <= 0x7E for c in reference)
    try:
        join("http://h/dir/page", reference)
    except FetchError:
        pass


def test_location_reference_encodes_spaces_and_utf8() -> None:
    assert rules.location_reference(" /a b/\xc3\xa9 ") == "/a%20b/%C3%A9"
    assert str(join("http://h/x/y", rules.location_reference("z w"))) == "http://h/x/z%20w"


# -- decoders ----------------------------------------------------------------------------------------------


CAPS = {"max_encodings": 4, "max_ratio": 1000}


def run_decoder(codings: list[str], chunks: list[bytes]) -> bytes:
    decoder = decoder_for(codings, **CAPS)
    assert decoder is not None
    out = [piece for chunk in chunks for piece in decoder.feed(chunk)]
    out.extend(decoder.flush())
    assert all(len(piece) <= PIECE for piece in out)
    return b"".join(out)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=5000), st.lists(st.integers(min_value=0), max_size=6), st.integers(1, 3))
def test_gzip_and_deflate_round_trip_in_any_pieces(data: bytes, cuts: list[int], members: int) -> None:
    packed = b"".join(gzip.compress(data, mtime=0) for _ in range(members))
    assert run_decoder(["gzip"], split(packed, cuts)) == data * members
    assert run_decoder(["deflate"], split(zlib.compress(data), cuts)) == data
    raw = zlib.compressobj(wbits=-15)
    assert run_decoder(["deflate"], split(raw.compress(data) + raw.flush(), cuts)) == data
    both = gzip.compress(zlib.compress(data), mtime=0)
    assert run_decoder(["deflate", "gzip"], split(both, cuts)) == data


@settings(max_examples=200)
@given(st.sampled_from(["gzip", "deflate"]), st.binary(max_size=300), st.lists(st.integers(0), max_size=4))
def test_decoders_on_garbage_raise_a_defined_error(coding: str, data: bytes, cuts: list[int]) -> None:
    try:
        run_decoder([coding], split(data, cuts))
    except ProtocolError:
        pass


def test_truncated_gzip_and_unknown_coding() -> None:
    with pytest.raises(ProtocolError, match="ended before the end"):
        run_decoder(["gzip"], [gzip.compress(b"x" * 1000)[:-10]])
    with pytest.raises(ProtocolError, match="cannot decode: br"):
        decoder_for(["br"], **CAPS)
    assert decoder_for(["identity"], **CAPS) is None


def test_bomb_is_decoded_in_bounded_pieces() -> None:
    decoder = decoder_for(["gzip"], **CAPS)
    assert decoder is not None
    pieces = decoder.feed(gzip.compress(b"\0" * (64 << 20), compresslevel=9))
    first = next(pieces)
    assert len(first) <= PIECE  # nothing forces the other 64 MiB out


# -- proxies -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "expected"),
    [
        ("example.com", 80, "example.com", True),
        ("www.example.com", 80, ".example.com", True),
        ("www.example.com", 80, "example.com", True),
        ("badexample.com", 80, "example.com", False),
        ("example.com", 80, "*", True),
        ("10.1.2.3", 80, "10.0.0.0/8", True),
        ("10.1.2.3", 80, "10.1.2.4", False),
        ("::1", 80, "[::1]", True),
        ("example.com", 8080, "example.com:80", False),
        ("example.com", 80, "example.com:80", True),
        ("example.com", 80, "", False),
    ],
)
def test_no_proxy(host: str, port: int, no_proxy: str, expected: bool) -> None:
    assert bypassed(host, port, no_proxy) is expected


def test_choose_proxy() -> None:
    plain, secure = http("http://h/"), http("https://h/")
    env = {"http_proxy": "p1:3128", "HTTPS_PROXY": "http://p2:8080", "HTTP_PROXY": "http://evil:1"}
    assert str(choose_proxy(plain, None, env)) == "http://p1:3128/"
    assert str(choose_proxy(secure, None, env)) == "http://p2:8080/"
    assert choose_proxy(plain, None, {"HTTP_PROXY": "http://evil:1"}) is None  # httpoxy
    assert str(choose_proxy(plain, "http://p3:1080", env)) == "http://p3:1080/"
    assert choose_proxy(plain, "http://p3:1080", {"no_proxy": "h"}) is None
    with pytest.raises(FetchError, match="only http:// proxies"):
        parse_proxy("socks5://p:1080")


# -- h11 over a Connection, fed arbitrary bytes --------------------------------------------------------------


class _AnyioSide(anyio.abc.ByteStream):
    """One end of trio's in-memory stream pair, as the anyio byte stream a Connection reads."""

    def __init__(self, stream: trio.abc.HalfCloseableStream) -> None:
        self._stream = stream

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._stream.receive_some(max_bytes)
        if not data:
            raise anyio.EndOfStream
        return bytes(data)

    async def send(self, item: bytes) -> None:
        await self._stream.send_all(item)

    async def send_eof(self) -> None:
        await self._stream.send_eof()

    async def aclose(self) -> None:
        await self._stream.aclose()


async def _exchange(reply: bytes) -> bytes:
    client_stream, server_stream = trio.testing.memory_stream_pair()
    connection = HTTPConnection(Connection(_AnyioSide(client_stream), "h", 80, timeout=2))
    await connection.send_request(build_request(http("http://h/x")))
    assert (await server_stream.receive_some()).startswith(b"GET /x HTTP/1.1\r\n")
    await server_stream.send_all(reply)
    await server_stream.send_eof()
    await connection.receive_response()
    return b"".join([chunk async for chunk in connection.iter_body()])


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400))
def test_any_reply_bytes_give_a_body_or_a_protocol_error(reply: bytes) -> None:
    try:
        trio.run(_exchange, reply)
    except ProtocolError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_any_body_after_a_valid_head(body: bytes) -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    try:
        trio.run(_exchange, head + body)
    except ProtocolError:
        pass
    framed = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    assert trio.run(_exchange, framed) == body


def test_h11_refuses_what_the_request_line_cannot_hold() -> None:
    with pytest.raises(h11.LocalProtocolError):
        h11.Connection(h11.CLIENT).send(h11.Request(method="GET", target="/a b", headers=[("Host", "h")]))


@given(
    # From year 1000: email.utils reads "0099" as 1999 (RFC 5322's rule for two-digit years);
    # an IMF-fixdate's year has four digits, and http_date reads it as written.
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)),
    st.sampled_from(["{}", "{} ", " {}", "{}x", "{}".upper(), "{}".lower()]),
)
def test_http_date_reads_what_email_utils_reads(when: datetime, wrap: str) -> None:
    # The IMF-fixdate fast path and email.utils agree on every date and on near misses (which fall back).
    from email.utils import format_datetime, parsedate_to_datetime

    from fetcher.schemes.http.response import http_date

    text = wrap.format(format_datetime(when.replace(microsecond=0, tzinfo=UTC), usegmt=True))
    try:
        expected = parsedate_to_datetime(text)
        if expected.tzinfo is None:
            expected = expected.replace(tzinfo=UTC)
    except (TypeError, ValueError, IndexError):
        expected = None
    assert http_date(text) == expected


@given(st.text(max_size=40))
def test_http_date_never_raises(text: str) -> None:
    from fetcher.schemes.http.response import http_date

    result = http_date(text)
    assert result is None or result.tzinfo is not None
