"""What a response means, decided once for both paths that read one: pure, no I/O (as h11 is).

The task path (handler.py) and the bulk lane (lane.py) hand `judge` the
status, the reason phrase, the head's fields (fields.py) and what the
request asked (`Asked`), and get a verdict back:

* `Document`: the body is the document (where it starts, its whole size,
  why a resume starts over);
* `Redirect`: follow the target (the caller applies the redirect policy and
  the guard: `Session.follow` on the task path, the task path from the lane);
* `NotModified`: a 304 to a conditional request (-N);
* `Complete`: a 416 to a resume whose part already holds the whole document;
* `StartOver`: a resume that cannot continue the part (ask for it whole);
* `Failure`: the error to raise, with what becomes of the body (`Body`).

So the two paths cannot classify a status, read a header or word an error
two ways; what stays theirs is moving the bytes.  Error pages are decoded by
`ErrorPage`, the same way on both.  Messages show the URL without its
password (`request.public`); server text in them is escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from fetcher.errors import FetchError, ProtocolError, URLError
from fetcher.schemes.http.decoding import Decoder, decoder_for
from fetcher.schemes.http.fields import Fields
from fetcher.schemes.http.request import public
from fetcher.schemes.http.response import (
    ERROR_BODY_LIMIT,
    REDIRECTS,
    RedirectNotFollowed,
    content_range,
    header,
    ignored_range,
    location_reference,
    mask_userinfo,
    resume_problem,
    status_error,
    status_line,
    validators_of,
)
from fetcher.text import escape
from fetcher.url import URL, HttpURL, join

if TYPE_CHECKING:
    from fetcher.handler import Validators

#: What becomes of a reply's body that is not the document:
#: "page": read (decoded, at most ERROR_BODY_LIMIT bytes) as the error's page (`FetchError.body`);
#: "drop": read and dropped when small, so the connection can carry the next request;
#: "unread": never read (the task path closes the connection; a lane reads it only to stay in step).
Body = Literal["page", "drop", "unread"]


@dataclass(frozen=True, slots=True)
class Asked:
    """What the request asked, which the reply is judged against."""

    #: The first byte asked for (`Range: bytes=N-`, a resume); 0 for the whole document.
    offset: int = 0
    #: With an offset: what the part on disk was cut from (If-Range was sent from it), if known.
    validators: Validators | None = None
    #: A conditional request (-N): a 304 then means "not modified", not an error.
    conditional: bool = False
    #: Redirects are followed (not --no-location).
    follow: bool = True
    #: Credentials went with the request (a 401 then says they were refused).
    credentials: bool = False
    #: A HEAD request (-I): no body, whatever Content-Length says.
    head: bool = False


#: A plain GET's facts (the lane's, with `follow` as the settings say).
PLAIN = Asked()


class _Value:
    """A verdict: equal to another of its class with equal fields, shown with them.

    Written by hand rather than as dataclasses: this module loads with every
    HTTP fetch, and a dataclass costs some 0.4 ms to define (its methods
    are generated and compiled), which `fetch URL`'s start-up would pay six
    times over.  `Asked`, made once per request shape, stays a dataclass.
    """

    __slots__: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    def __hash__(self) -> int:
        return hash((type(self), *(getattr(self, name) for name in self.__slots__)))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Document(_Value):
    """The body is the document: from byte `start`, `total` bytes in all (None: unknown).

    `restart` says why a resume got the whole document instead (the caller
    prints it).
    """

    __slots__ = ("restart", "start", "status", "total")

    def __init__(self, status: int, start: int, total: int | None, restart: str | None = None) -> None:
        self.status = status
        self.start = start
        self.total = total
        self.restart = restart


class Redirect(_Value):
    """Follow `target` (the Location resolved against the request's URL); the body is dropped."""

    __slots__ = ("target",)

    def __init__(self, target: URL) -> None:
        self.target = target


class NotModified(_Value):
    """A 304 to a conditional request: the local copy is current; the body is dropped."""

    __slots__ = ()


class Complete(_Value):
    """A 416 to a resume whose part holds every byte of the (same) document; the body is dropped."""

    __slots__ = ()


class StartOver(_Value):
    """A resume that cannot continue the part on disk: ask for the whole document, and say `reason`."""

    __slots__ = ("body", "reason")

    def __init__(self, reason: str, body: Body) -> None:
        self.reason = reason
        self.body = body


class Failure(_Value):
    """The request failed with `error`; `body` says what becomes of the reply's body."""

    __slots__ = ("body", "error")

    def __init__(self, error: FetchError, body: Body) -> None:
        self.error = error
        self.body = body


Verdict = Document | Redirect | NotModified | Complete | StartOver | Failure

_NOT_MODIFIED = NotModified()
_COMPLETE = Complete()


def judge(status: int, reason: bytes, fields: Fields, url: HttpURL, asked: Asked = PLAIN) -> Verdict:
    """The verdict on a final response head (any status, any fields: a verdict, never an exception)."""
    if 200 <= status < 300 and status != 206 and not asked.offset:  # most replies: a plain document
        return Document(status, 0, 0 if status == 204 or asked.head else fields.length)
    if asked.offset:
        if status == 416:
            return _range_refused(fields, asked)
        if status == 206:
            problem = resume_problem(fields.headers, asked.offset, asked.validators)
            if problem is not None:
                return StartOver(problem, "unread")  # never append this body to the part on disk
    if status in REDIRECTS:
        return _redirect(url, status, reason.decode("latin-1"), fields.location, asked)
    if status == 304 and asked.conditional:
        return _NOT_MODIFIED
    if status >= 300:
        text = reason.decode("latin-1")
        error = status_error(status, text, str(public(url)), fields.headers, sent_credentials=asked.credentials)
        return Failure(error, "page")
    return _document(status, fields, url, asked)


def _document(status: int, fields: Fields, url: HttpURL, asked: Asked) -> Document | Failure:
    start = 0
    total = fields.length
    if status == 206:
        span = content_range(header(fields.headers, "content-range"))
        if span is None or span.first is None:
            return Failure(ProtocolError("HTTP 206 without a usable Content-Range", hint="retry without -C/--continue"),
                           "unread")  # fmt: skip
        if not asked.offset and (span.first, span.last) != (0, None if span.total is None else span.total - 1):
            return Failure(ProtocolError(  # no Range was sent: a part is not the document (issue 29)
                f"HTTP 206 from {url.host}:{url.port}: bytes {span.first}-{span.last} of "
                f"{span.total if span.total is not None else 'an unknown length'}, a part nobody asked for",
                hint="the server sent a partial reply to a request for the whole document; try again later",
            ), "unread")  # fmt: skip
        if span.first != asked.offset:
            return Failure(ProtocolError(f"asked for the bytes from {asked.offset} on, but the server sent them "
                                         f"from {span.first}", hint="delete the .part file and start again"),
                           "unread")  # fmt: skip
        start = asked.offset
        total = span.total
    if status in (204, 304) or asked.head:
        total = 0
    restart = ignored_range(fields.headers, asked.validators) if asked.offset and not start else None
    return Document(status, start, total, restart)


def _range_refused(fields: Fields, asked: Asked) -> Complete | StartOver:
    """416 to a resume: complete already when the remote size equals the local one, else start over."""
    span = content_range(header(fields.headers, "content-range"))
    offset = asked.offset
    total = span.total if span is not None else None
    recorded = asked.validators
    changed = recorded.changed(validators_of(fields.headers, length=total)) if recorded is not None else None
    if total == offset and changed is None:
        return _COMPLETE
    if changed is not None:
        reason = changed
    elif total is not None and total < offset:
        reason = f"the local part ({offset} bytes) is longer than the document on the server ({total} bytes)"
    else:
        reason = f"the server cannot send the bytes from {offset} on (HTTP 416)"
    return StartOver(reason, "drop")


def _redirect(url: HttpURL, status: int, reason: str, location: str | None, asked: Asked) -> Redirect | Failure:
    if not asked.follow:
        return Failure(not_followed(url, status, reason, location), "page")
    if location is None:
        return Failure(ProtocolError(f"HTTP {status} redirect from {public(url)} without a Location header"), "unread")
    try:
        return Redirect(join(url, location_reference(location)))
    except URLError as error:
        shown = escape(mask_userinfo(location))
        return Failure(ProtocolError(f"HTTP {status} redirect to an unusable Location \"{shown}\": {error.message}",
                                     url=str(public(url))), "drop")  # fmt: skip


def not_followed(url: HttpURL, status: int, reason: str, location: str | None) -> RedirectNotFollowed:
    """The error for a redirect that is not to be followed: it says where the redirect points."""
    origin = str(public(url))
    what = status_line(status, reason)
    target: str | None = None
    if location is None:
        shown = "without a Location header"
    else:
        try:
            target = str(join(url, location_reference(location)))
        except URLError:
            shown = f'to an unusable Location "{escape(mask_userinfo(location))}"'
        else:
            shown = f"to {escape(mask_userinfo(target))}"
    return RedirectNotFollowed(
        f"{what}: {origin} redirects {shown}; not followed (--no-location)",
        status=status,
        location=target,
        hint="fetch the target URL itself, or drop --no-location to follow redirects",
        url=origin,
    )


class ErrorPage:
    """An error page (or a body read only to be dropped) as it arrives: decoded, cut at ERROR_BODY_LIMIT.

    The body is decoded as its Content-Encoding says (--raw or not: the page
    is for reading); a coding fetcher cannot decode leaves it as it came.
    `feed` says when to stop reading; `short` then says why the page is cut
    ("length", "disconnect": the WARC-Truncated reasons), None if whole.
    """

    def __init__(self, codings: list[str], *, max_encodings: int, max_ratio: int) -> None:
        self._decoder: Decoder | None = None
        if codings:
            try:
                self._decoder = decoder_for(codings, max_encodings=max_encodings, max_ratio=max_ratio)
            except FetchError:
                pass
        self._parts: list[bytes] = []
        self._size = 0
        self.short: str | None = None

    def feed(self, data: bytes) -> bool:
        """Take the next bytes of the body; False once the page is cut (read no more)."""
        decoder = self._decoder
        return self._take(lambda: decoder.feed(data) if decoder is not None else (data,))

    def end(self) -> None:
        """The body ended: what the decoder still holds."""
        decoder = self._decoder
        if decoder is not None:
            self._take(decoder.flush)

    def broken(self) -> None:
        """The body could not be read to its end (the connection failed)."""
        self.short = self.short or "disconnect"

    @property
    def page(self) -> bytes:
        """The page as read, at most ERROR_BODY_LIMIT bytes."""
        return b"".join(self._parts)[:ERROR_BODY_LIMIT]

    def _take(self, pieces: Callable[[], Iterable[bytes]]) -> bool:
        if self.short is not None:
            return False
        try:  # a decoder raises when asked (flush) or while it yields (feed)
            for piece in pieces():
                self._parts.append(piece)
                self._size += len(piece)
                if self._size > ERROR_BODY_LIMIT:
                    self.short = "length"
                    return False
        except FetchError:  # a corrupt or over-inflating encoding: the page decoded so far
            self.short = "disconnect"
            return False
        return True
