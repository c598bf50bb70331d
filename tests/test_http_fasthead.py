"""The lean response-head path (schemes/http/fasthead.py) against h11, the reference.

Whatever head the lean path accepts, h11 accepts too and reads the same way
(status, reason, fields, framing); whatever it is unsure of, it leaves to h11
(None).  The differential fuzz test builds heads from the pieces where
parsers disagree in practice: odd whitespace, bare LF, obsolete folding,
duplicate or conflicting framing fields, 1xx/204/304, HTTP/1.0.
"""

from __future__ import annotations

import h11
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fetcher.errors import LimitExceeded
from fetcher.schemes.http.fasthead import lean_request, parse_head
from fetcher.schemes.http.reader import ReplyReader
from fetcher.settings import Limits

NGINX = (
    b"HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 24 Nov 2026 03:46:35 GMT\r\n"
    b"Content-Type: application/octet-stream\r\nContent-Length: 4096\r\nConnection: keep-alive\r\n"
    b'ETag: "abc-1000"\r\nAccept-Ranges: bytes\r\n\r\n'
)


def h11_head(head: bytes) -> h11.Response | None:
    """What h11 makes of `head` as the reply to a GET: the final Response, or None if it refuses or wants more."""
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method=b"GET", target=b"/", headers=[(b"host", b"a")]))
    connection.send(h11.EndOfMessage())
    try:
        connection.receive_data(head)
        event = connection.next_event()
    except h11.RemoteProtocolError:
        return None
    return event if isinstance(event, h11.Response) else None


def h11_framing(reply: h11.Response) -> tuple[int | None, bool]:
    names = {name for name, _ in reply.headers}
    if b"transfer-encoding" in names:
        return None, True
    return int(dict(reply.headers)[b"content-length"]), False


def test_a_plain_nginx_head_takes_the_lean_path_as_h11_reads_it() -> None:
    fast = parse_head(NGINX)
    reference = h11_head(NGINX)
    assert fast is not None and reference is not None
    assert (fast.status_code, fast.reason, fast.length, fast.chunked, fast.keep_alive) == (
        200,
        b"OK",
        4096,
        False,
        True,
    )
    assert fast.headers.raw_items() == list(reference.headers.raw_items())


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n",  # HTTP/1.0: h11 decides keep-alive
        b"HTTP/1.1 200 OK\r\n\r\n",  # close-delimited
        b"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 200 OK\nContent-Length: 3\n\n",
        b"HTTP/1.1 200 OK\r\nContent-Length : 3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\x00b\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 200\r\nContent-Length: 3\r\n\r\n",  # no space after the code: h11's case
        # A bad line whose tail, or whose part after a bare CR or LF, looks like a field line:
        # the field pattern alone finds only good lines; the lean path must see the bad one.
        b"HTTP/1.1 200 OK\r\nbad line X: y\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nbad\nX: y\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nbad\rX: y\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX: y\nbad\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n \r\n",  # a last line with no line feed of its own
    ],
)
def test_unusual_heads_are_left_to_h11(head: bytes) -> None:
    assert parse_head(head) is None


def test_lean_path_heads_obey_the_same_caps() -> None:
    head = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(5)) + b"Content-Length: 0\r\n\r\n"
    fast = parse_head(head)
    assert fast is not None
    with pytest.raises(LimitExceeded) as caught:
        ReplyReader("here", Limits(header_count=4)).accept_head(fast.headers, len(fast.reason))
    assert caught.value.limit == 4
    ReplyReader("here", Limits(header_count=6)).accept_head(fast.headers, len(fast.reason))


STATUS = st.sampled_from([
    b"HTTP/1.1 200 OK\r\n", b"HTTP/1.1 404 Not Found\r\n", b"HTTP/1.1 200 \r\n", b"HTTP/1.1 599 x\ty\r\n",
    b"HTTP/1.1 200\r\n", b"HTTP/1.0 200 OK\r\n", b"HTTP/1.1 100 Continue\r\n", b"HTTP/1.1 304 N\r\n",
    b"HTTP/1.1 20 OK\r\n", b"HTTP/1.1 200 O\x7fK\r\n", b"HTTP/1.1 200 \xe9t\xe9\r\n", b"http/1.1 200 OK\r\n",
])  # fmt: skip
NAMES = st.sampled_from([b"Content-Length", b"content-length", b"Transfer-Encoding", b"Connection", b"X-A", b"X A",
                         b"", b"X:", b"\x80"])  # fmt: skip
VALUES = st.sampled_from([b"0", b"12", b"012", b" 12 ", b"1,1", b"-1", b"chunked", b"Chunked", b"gzip", b"close",
                          b"keep-alive", b"a  b", b"\t", b"", b"a\rb", b"a\nb", b"\xff", b"a\x00"])  # fmt: skip
FIELD = st.tuples(NAMES, st.sampled_from([b":", b": ", b":\t", b" :"]), VALUES,
                  st.sampled_from([b"\r\n", b"\n", b" \r\n", b"\r\n "]))  # fmt: skip

#: A usual framing field last, so that many generated heads are ones the lean path takes.
FRAMING = st.sampled_from([b"", b"Content-Length: 5\r\n", b"Transfer-Encoding: chunked\r\n"])


@settings(max_examples=400, deadline=None)
@example(b"HTTP/1.1 200 OK\r\n", [(b"X-A", b": ", b"a\x00", b"\r\n")], b"Content-Length: 5\r\n", b"\r\n")
@example(b"HTTP/1.1 200 OK\r\n", [(b"X-A", b":\t", b" 12 ", b" \r\n")], b"Content-Length: 5\r\n", b"\r\n")
@example(b"HTTP/1.1 200 OK\r\n", [(b"Transfer-Encoding", b": ", b"Chunked", b"\r\n")], b"", b"\r\n")
@example(b"HTTP/1.1 200 OK\r\n", [(b"Content-Length", b":", b"0", b"\r\n ")], b"", b"\r\n")  # a last line unended
@given(STATUS, st.lists(FIELD, max_size=4), FRAMING, st.sampled_from([b"\r\n", b"\n"]))
def test_the_lean_path_never_reads_a_head_otherwise_than_h11(status: bytes, fields: list[tuple[bytes, ...]],
                                                             framing: bytes, end: bytes) -> None:  # fmt: skip
    head = status + b"".join(b"".join(field) for field in fields) + framing + end
    fast = parse_head(head)
    if fast is None:
        return
    reference = h11_head(head)
    assert reference is not None, head
    assert (fast.status_code, fast.reason, fast.http_version) == (reference.status_code, reference.reason,
                                                                  reference.http_version)  # fmt: skip
    assert fast.headers.raw_items() == list(reference.headers.raw_items())
    assert (fast.length, fast.chunked) == h11_framing(reference)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_any_bytes_after_a_status_line(tail: bytes) -> None:
    head = b"HTTP/1.1 200 OK\r\n" + tail + b"\r\n\r\n"
    fast = parse_head(head)
    if fast is not None:
        reference = h11_head(head)
        assert reference is not None
        assert fast.headers.raw_items() == list(reference.headers.raw_items())


def h11_request(method: str, target: str, headers: list[tuple[str, str]]) -> bytes | None:
    """The bytes h11 writes for a request, or None if it refuses it."""
    connection = h11.Connection(h11.CLIENT)
    try:
        data = connection.send(h11.Request(method=method, target=target, headers=headers))
        end = connection.send(h11.EndOfMessage())
    except (h11.LocalProtocolError, UnicodeEncodeError):
        return None
    assert data is not None and end is not None
    return data + end


def test_a_usual_get_is_written_as_h11_writes_it() -> None:
    headers = [("Host", "example.org:8080"), ("User-Agent", "fetcher/0.1"), ("Accept", "*/*")]
    written = lean_request("GET", "/a%20b?q=1", headers)
    assert written is not None
    assert written == h11_request("GET", "/a%20b?q=1", headers)
    assert written.startswith(b"GET /a%20b?q=1 HTTP/1.1\r\nHost: example.org:8080\r\n")


@pytest.mark.parametrize(
    "target, headers",
    [
        ("/a\r\nX: y", [("Host", "h")]),  # a split request line
        ("/a b", [("Host", "h")]),
        ("/", [("Host", "h"), ("X", "a\r\nEvil: 1")]),
        ("/", [("Host", "h"), ("X", "a\x00")]),
        ("/", [("Host", "h"), ("Bad Name", "1")]),
        ("/", [("Host", "h"), ("Host", "i")]),
        ("/", [("User-Agent", "x")]),  # no Host: h11's message
        ("/é", [("Host", "h")]),
        ("/", [("Host", "h"), ("Content-Length", "3")]),
    ],
)
def test_doubtful_requests_are_left_to_h11(target: str, headers: list[tuple[str, str]]) -> None:
    assert lean_request("GET", target, headers) is None


TEXT = st.sampled_from(["h", "/", "/a", "a b", " x", "x ", "a\tb", "\r\n", "\n", "\x00", "é", "%0d", ":", "", "Host",
                        "host", "Content-Length", "X-Y", "*/*"])  # fmt: skip

FIELD_NAME = st.sampled_from(["X-Y", "Accept", "h", "Range", "Bad Name", "X:", "Host", "content-length", "é"])


@settings(max_examples=400, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=2), st.lists(st.tuples(FIELD_NAME, TEXT), max_size=3))
def test_the_lean_request_is_h11s_or_nothing(target: list[str], more: list[tuple[str, str]]) -> None:
    headers = [("Host", "h"), *more]
    written = lean_request("GET", "".join(target), headers)
    if written is not None:
        assert written == h11_request("GET", "".join(target), headers)
