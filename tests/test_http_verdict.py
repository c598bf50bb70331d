"""What a response means (schemes/http/verdict.py): one pure judgement for the task path and the lane.

Status classes, the 206 and 416 checks of a resume, 304 with and without a
condition, redirects with and without a usable Location, error pages and
their encodings; then hypothesis: any status, reason and fields give a
verdict (a Failure carries fetcher's own error, its message escaped and
without the URL's password), never an exception.
"""

from __future__ import annotations

import gzip
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.disk.resume import Validators
from fetcher.errors import AuthError, FetchError, NotFound, ProtocolError, TransientError
from fetcher.schemes.http.fields import Fields
from fetcher.schemes.http.response import ERROR_BODY_LIMIT, RedirectNotFollowed, content_length
from fetcher.schemes.http.verdict import (
    Asked,
    Complete,
    Document,
    ErrorPage,
    Failure,
    NotModified,
    Redirect,
    StartOver,
    Verdict,
    judge,
)
from fetcher.text import escape
from fetcher.url import HttpURL, parse_url

URL = parse_url("http://user:s3cret@127.0.0.1:8080/dir/doc?x")
assert isinstance(URL, HttpURL)
V1 = Validators(etag='"v1"', modified=1_772_445_600, length=1000)


def fields(*pairs: tuple[str, str]) -> Fields:
    return Fields([(name.encode("latin-1"), value.encode("latin-1")) for name, value in pairs])


def verdict(status: int, *pairs: tuple[str, str], reason: bytes = b"Reason", **asked: object) -> Verdict:
    return judge(status, reason, fields(*pairs), URL, Asked(**asked))  # type: ignore[arg-type]


def failure(status: int, *pairs: tuple[str, str], **asked: object) -> Failure:
    found = verdict(status, *pairs, **asked)
    assert isinstance(found, Failure)
    assert "s3cret" not in found.error.message  # the URL shown is public(url)
    return found


# -- documents -------------------------------------------------------------------------------------------------


def test_a_2xx_is_a_document_of_its_content_length() -> None:
    assert verdict(200, ("Content-Length", "12")) == Document(200, 0, 12)
    assert verdict(200) == Document(200, 0, None)  # close-delimited or chunked: length unknown
    assert verdict(203, ("content-length", " 7 ")) == Document(203, 0, 7)
    assert verdict(204, ("Content-Length", "12")) == Document(204, 0, 0)  # no body, whatever it says
    assert verdict(200, ("Content-Length", "12"), head=True) == Document(200, 0, 0)  # -I
    assert verdict(200, ("Content-Length", "\xb2")) == Document(200, 0, None)  # "²" is a digit to str, not a length
    assert content_length([("Content-Length", "\xb2")]) is None  # int("²") raised ValueError here


def test_a_206_to_a_whole_request_is_the_document_only_when_it_is_all_of_it() -> None:
    assert verdict(206, ("Content-Range", "bytes 0-9/10")) == Document(206, 0, 10)
    part = failure(206, ("Content-Range", "bytes 5-9/10"))
    assert part.body == "unread" and "a part nobody asked for" in part.error.message
    assert "an unknown length" in failure(206, ("Content-Range", "bytes 5-9/*")).error.message
    missing = failure(206)
    assert "without a usable Content-Range" in missing.error.message and missing.body == "unread"


def test_a_206_continues_a_resume_only_from_its_offset_and_of_the_same_document() -> None:
    same = ("Content-Range", "bytes 400-999/1000"), ("Content-Length", "600"), ("ETag", '"v1"')
    assert verdict(206, *same, offset=400, validators=V1) == Document(206, 400, 1000)
    moved = verdict(206, ("Content-Range", "bytes 300-999/1000"), offset=400, validators=V1)
    assert isinstance(moved, StartOver) and moved.body == "unread" and "not from 400" in moved.reason
    changed = verdict(206, ("Content-Range", "bytes 400-999/1000"), ("ETag", '"v2"'), offset=400, validators=V1)
    assert isinstance(changed, StartOver) and "changed" in changed.reason


def test_a_whole_document_answering_a_resume_says_why() -> None:
    assert verdict(200, ("ETag", '"v1"'), ("Content-Length", "1000"), offset=400, validators=V1) == Document(
        200, 0, 1000, "the server ignored the byte range"
    )
    found = verdict(200, ("ETag", '"v2"'), ("Content-Length", "1000"), offset=400, validators=V1)
    assert isinstance(found, Document) and found.restart is not None and "changed" in found.restart


def test_a_416_to_a_resume_is_complete_or_a_start_over() -> None:
    assert verdict(416, ("Content-Range", "bytes */400"), offset=400) == Complete()
    whole = Validators(etag='"v1"', length=400)
    assert verdict(416, ("Content-Range", "bytes */400"), ("ETag", '"v1"'), offset=400, validators=whole) == Complete()
    changed = verdict(416, ("Content-Range", "bytes */400"), ("ETag", '"v2"'), offset=400, validators=whole)
    assert isinstance(changed, StartOver) and changed.body == "drop" and "changed" in changed.reason
    longer = verdict(416, ("Content-Range", "bytes */300"), offset=400)
    assert isinstance(longer, StartOver) and "is longer than the document" in longer.reason
    assert verdict(416, offset=400) == StartOver("the server cannot send the bytes from 400 on (HTTP 416)", "drop")
    assert failure(416).body == "page"  # no Range was sent: an error like any other


# -- not modified, errors ------------------------------------------------------------------------------------


def test_a_304_is_not_modified_only_to_a_conditional_request() -> None:
    assert verdict(304, conditional=True) == NotModified()
    unasked = failure(304)
    assert isinstance(unasked.error, ProtocolError) and unasked.body == "page"


@pytest.mark.parametrize(
    ("status", "kind", "exit_code"),
    [(404, NotFound, 6), (410, NotFound, 6), (401, AuthError, 5), (403, AuthError, 5), (429, TransientError, 7),
     (503, TransientError, 7), (500, ProtocolError, 7), (400, ProtocolError, 7), (300, ProtocolError, 7),
     (305, ProtocolError, 7), (999, ProtocolError, 7)],
)  # fmt: skip
def test_error_statuses_fail_with_their_exit_code_and_the_page_read(
    status: int, kind: type[FetchError], exit_code: int
) -> None:
    found = failure(status, ("Retry-After", "120"))
    assert type(found.error) is kind and found.error.exit_code == exit_code and found.body == "page"
    assert found.error.response_code == status
    assert found.error.url is not None and "s3cret" not in found.error.url and found.error.url.endswith("/dir/doc?x")


def test_error_messages_use_the_servers_retry_after_and_the_credentials_sent() -> None:
    busy = failure(503, ("Retry-After", "120"))
    assert isinstance(busy.error, TransientError) and busy.error.retry_after == 120
    assert "check -u" in (failure(401, credentials=True).error.hint or "")
    assert "give credentials" in (failure(401).error.hint or "")
    odd = failure(500, reason=b"Oops\x1b[2J")
    assert "\x1b" not in odd.error.message


# -- redirects -----------------------------------------------------------------------------------------------


def test_a_redirect_with_a_location_leads_to_it() -> None:
    assert verdict(302, ("Location", "/elsewhere?y")) == Redirect(parse_url("http://user:s3cret@127.0.0.1:8080/elsewhere?y"))
    found = verdict(301, ("Location", "other dir/\xc3\xa4"))  # UTF-8 octets, as sent
    assert isinstance(found, Redirect) and str(found.target) == "http://user:s3cret@127.0.0.1:8080/dir/other%20dir/%C3%A4"
    assert verdict(308, ("Location", "https://example.test/")) == Redirect(parse_url("https://example.test/"))


def test_a_redirect_without_a_usable_location_fails() -> None:
    missing = failure(302)
    assert missing.body == "unread" and "without a Location header" in missing.error.message
    unusable = failure(307, ("Location", "http://other:pw@[bad/"))
    assert unusable.body == "drop" and "unusable Location" in unusable.error.message
    assert "pw@" not in unusable.error.message


def test_a_redirect_not_to_be_followed_fails_with_its_page_and_target() -> None:
    found = failure(303, ("Location", "/there"), follow=False)
    assert isinstance(found.error, RedirectNotFollowed) and found.body == "page"
    assert found.error.location == "http://user:s3cret@127.0.0.1:8080/there"
    assert "not followed (--no-location)" in found.error.message


# -- error pages ---------------------------------------------------------------------------------------------


def page_of(codings: list[str], *pieces: bytes) -> ErrorPage:
    page = ErrorPage(codings, max_encodings=4, max_ratio=100_000)
    for piece in pieces:
        if not page.feed(piece):
            return page
    page.end()
    return page


def test_an_error_page_is_decoded_as_its_content_encoding_says() -> None:
    coded = gzip.compress(b"<p>not here</p>\n")
    assert page_of(["gzip"], coded[:10], coded[10:]).page == b"<p>not here</p>\n"
    assert page_of([], b"plain ", b"page").page == b"plain page"
    assert page_of(["br"], b"as it came").page == b"as it came"  # a coding fetcher cannot decode
    assert page_of(["gzip"] * 5, b"as it came").page == b"as it came"  # more codings than allowed


def test_an_error_page_is_cut_at_the_limit_and_a_broken_encoding_keeps_what_decoded() -> None:
    big = page_of(["gzip"], gzip.compress(b"x" * (ERROR_BODY_LIMIT * 3)))
    assert big.page == b"x" * ERROR_BODY_LIMIT and big.short == "length"
    raw = zlib.compressobj(wbits=31)
    head = raw.compress(b"kept " * 20) + raw.flush(zlib.Z_SYNC_FLUSH)
    broken = page_of(["gzip"], head, b"\xff" * 40)
    assert broken.page == b"kept " * 20 and broken.short == "disconnect"
    stream = gzip.compress(b"y" * 5000)
    ended = page_of(["gzip"], stream[: len(stream) // 2])  # the gzip stream stops half-way
    assert ended.short == "disconnect" and ended.page != b"y" * 5000 and set(ended.page) <= {ord("y")}
    whole = page_of([], b"a" * ERROR_BODY_LIMIT)
    assert whole.short is None and len(whole.page) == ERROR_BODY_LIMIT


def test_fields_read_the_last_of_a_field_and_decode_all_of_them_on_demand() -> None:
    read = fields(("Content-Length", "1"), ("content-length", "2"), ("Content-Encoding", "gzip, X"),
                  ("content-encoding", "identity"), ("X-Other", "caf\xe9"))  # fmt: skip
    assert read.length == 2 and read.codings == ["gzip", "x", "identity"]
    assert read.headers[-1] == ("X-Other", "caf\xe9")


# -- any reply -------------------------------------------------------------------------------------------------

names = st.sampled_from(["Content-Length", "content-range", "Location", "ETag", "Last-Modified", "Retry-After",
                         "Content-Encoding", "Content-Type", "Content-Disposition", "X-Other"])  # fmt: skip
values = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b"0", b"10", b"\xb2", b" 5 ", b"bytes 0-9/10", b"bytes 400-999/1000", b"bytes */400",
                     b"bytes 9-0/10", b"bytes 0-99999999999999999999/*", b'"v1"', b'W/"v2"', b"/x", b"http://[::1",
                     b"//h:99999/", b"gzip", b"gzip, br", b"Sun, 06 Nov 1994 08:49:37 GMT", b"120"]),
)  # fmt: skip
asked = st.builds(
    Asked,
    offset=st.one_of(st.just(0), st.integers(0, 2000)),
    validators=st.one_of(st.none(), st.just(V1)),
    conditional=st.booleans(),
    follow=st.booleans(),
    credentials=st.booleans(),
    head=st.booleans(),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(-5, 1200), st.binary(max_size=30), st.lists(st.tuples(names.map(str.encode), values), max_size=8),
       asked)  # fmt: skip
def test_any_reply_gets_a_verdict_never_an_exception(
    status: int, reason: bytes, pairs: list[tuple[bytes, bytes]], request: Asked
) -> None:
    found = judge(status, reason, Fields(pairs), URL, request)
    assert isinstance(found, Document | Redirect | NotModified | Complete | StartOver | Failure)
    if isinstance(found, Failure):
        assert isinstance(found.error, FetchError) and found.error.exit_code in (5, 6, 7)
        assert found.body in ("page", "drop", "unread")
        assert "s3cret" not in found.error.message and found.error.message == escape(found.error.message)
    elif isinstance(found, Document):
        assert found.start in (0, request.offset)
        assert found.total is None or found.total >= 0
        assert (found.restart is not None) == (request.offset > 0 and found.start == 0)
    elif isinstance(found, NotModified):
        assert status == 304 and request.conditional
    elif isinstance(found, Complete | StartOver):
        assert request.offset > 0 and status in (206, 416)
    else:
        assert request.follow and status in (301, 302, 303, 307, 308)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["gzip", "deflate", "identity", "br", "x"]), max_size=4),
       st.lists(st.binary(max_size=200), max_size=6), st.booleans())  # fmt: skip
def test_any_error_page_bytes_give_a_page_within_the_limit(codings: list[str], pieces: list[bytes], real: bool) -> None:
    if real and pieces:
        pieces[0] = gzip.compress(pieces[0])
    page = page_of(codings, *pieces)
    assert len(page.page) <= ERROR_BODY_LIMIT
    assert page.short in (None, "length", "disconnect")
