"""What comes back: status rules and header values, decided without I/O.

Every function takes what the server sent (bytes or str decoded as
latin-1, which maps octets one to one) and returns a value or raises a
defined `FetchError`: server text is data, never trusted to be well formed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import unquote

from fetcher.errors import AuthError, FetchError, NotFound, ProtocolError, TransientError
from fetcher.text import LazyPatterns, escape, mask_secrets, safe_filename

if TYPE_CHECKING:
    from fetcher.handler import Validators

REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: How much of an error page (or of a redirect body being discarded) is read.
ERROR_BODY_LIMIT = 64 * 1024

Headers = list[tuple[str, str]]


class _Patterns(LazyPatterns):
    """Compiled when first needed: a plain 200 reply (Content-Length, no range, no redirect) needs none."""

    content_range: re.Pattern[str]
    #: One `; name=value` parameter of Content-Disposition.
    param: re.Pattern[str]
    #: What a Location value may not hold raw (encoded by `location_reference`).
    location_unsafe: re.Pattern[str]


_PATTERNS = _Patterns(
    content_range=(r"\s*bytes\s+(?:(\d+)-(\d+)|\*)/(\d+|\*)\s*", re.IGNORECASE),
    param=r';\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)',
    location_unsafe=r"[^\x21-\x7e]|[\"<>\\^`{|}]",
)


@dataclass(frozen=True)
class ContentRange:
    """`Content-Range: bytes first-last/total` (total None for `*`)."""

    first: int | None
    last: int | None
    total: int | None


def decode_headers(raw: Iterable[tuple[bytes, bytes]]) -> Headers:
    """h11's raw header pairs as str, one char per octet (latin-1 never fails)."""
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in raw]


def header(headers: Headers, name: str) -> str | None:
    """The last value of a header (names compare case-insensitively)."""
    wanted = name.lower()
    found = None
    for key, value in headers:
        if key.lower() == wanted:
            found = value
    return found


def header_list(headers: Headers, name: str) -> list[str]:
    """All comma-separated items of a (possibly repeated) header, lower-cased."""
    wanted = name.lower()
    items: list[str] = []
    for key, value in headers:
        if key.lower() == wanted:
            items.extend(item.strip().lower() for item in value.split(",") if item.strip())
    return items


def content_length(headers: Headers) -> int | None:
    return length_value(header(headers, "content-length"))


def length_value(value: str | None) -> int | None:
    """A Content-Length value as a number; None when absent or not ASCII digits (`"²"` is a digit to str)."""
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isascii() and value.isdigit() else None


def content_range(value: str | None) -> ContentRange | None:
    """Parse Content-Range; None when absent or unparseable."""
    if value is None:
        return None
    match = _PATTERNS.content_range.fullmatch(value)
    if match is None:
        return None
    first, last, total = match.groups()
    if first is not None and int(first) > int(last):
        return None
    return ContentRange(
        int(first) if first is not None else None,
        int(last) if last is not None else None,
        int(total) if total != "*" else None,
    )


def retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from `Retry-After` (delta-seconds or an HTTP-date)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        # 400 digits of seconds become inf: no real server asks for more than a year.
        return min(float(value), 365 * 86400.0)
    when = http_date(value)
    if when is None:
        return None
    now = now or datetime.now(UTC)
    return max(0.0, (when - now).total_seconds())


def last_modified(value: str | None) -> datetime | None:
    return http_date(value) if value is not None else None


_MONTHS = {name: number for number, name in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)}  # fmt: skip


def http_date(value: str) -> datetime | None:
    """An HTTP-date (RFC 9110 §5.6.7) as an aware datetime, or None when it is not one.

    IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), what servers send today,
    is read here; the obsolete forms go to `email.utils`, whose imports cost
    1.5 ms of a bulk run's start-up.
    """
    numbers = value[5:7] + value[12:16] + value[17:19] + value[20:22] + value[23:25]
    month = _MONTHS.get(value[8:11])
    if (
        len(value) == 29
        and value[3:5] == ", "
        and value[7] == value[11] == value[16] == " "
        and value[19] == value[22] == ":"
        and value[25:] == " GMT"
        and month is not None
        and numbers.isascii()
        and numbers.isdigit()
    ):
        day, year, hour, minute, second = (int(numbers[a:b]) for a, b in ((0, 2), (2, 6), (6, 8), (8, 10), (10, 12)))
        try:
            return datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError:
            return None  # 31 Feb, 25:00: not a date
    try:
        from email.utils import parsedate_to_datetime

        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def disposition_filename(value: str | None) -> str | None:
    """The file name a Content-Disposition suggests, sanitized for local use.

    `filename*` (RFC 6266/5987, charset'lang'percent-encoded) wins over
    `filename`.  The result is one safe path component or None.
    """
    if value is None:
        return None
    plain: str | None = None
    extended: str | None = None
    for name, raw in _PATTERNS.param.findall(value):
        name = name.lower()
        text = raw.strip()
        if text.startswith('"') and text.endswith('"') and len(text) >= 2:
            text = re.sub(r"\\(.)", r"\1", text[1:-1])
        if name == "filename*":
            charset, sep, rest = text.partition("'")
            _, sep2, encoded = rest.partition("'")
            if sep and sep2:
                try:
                    extended = unquote(encoded, encoding=charset or "utf-8", errors="strict")
                except (LookupError, UnicodeDecodeError):
                    extended = None
        elif name == "filename":
            # Octets as sent (latin-1 view); UTF-8 when they decode as UTF-8.
            try:
                plain = text.encode("latin-1").decode("utf-8")
            except (UnicodeEncodeError, UnicodeDecodeError):
                plain = text
    chosen = extended if extended else plain
    if not chosen:
        return None
    return safe_filename(chosen, fallback="download")


def location_reference(value: str) -> str:
    """A Location value as a URL reference: stray octets percent-encoded.

    Servers put raw spaces and UTF-8 in Location; RFC 1738 does not allow
    them, so they are encoded (never decoded) before `fetcher.url.join`.
    """
    text = value.strip()

    def encode(match: re.Match[str]) -> str:
        return "".join(f"%{octet:02X}" for octet in match.group().encode("latin-1", "replace"))

    return _PATTERNS.location_unsafe.sub(encode, text)


def mask_userinfo(text: str) -> str:
    """A URL or Location value with any password hidden (`fetcher.text.mask_secrets`), scheme-relative too."""
    if text.startswith("//"):
        return mask_secrets("x:" + text)[2:]
    return mask_secrets(text)


class RedirectNotFollowed(ProtocolError):
    """A redirect arrived while redirects are not followed (--no-location, follow_redirects=False).

    Exit 7 like any reply the client was told not to accept; `location` is
    the absolute target (None when the Location was missing or unusable),
    `status` the redirect status.
    """

    def __init__(self, message: str, *, status: int, location: str | None, hint: str | None, url: str) -> None:
        super().__init__(message, hint=hint, url=url)
        self.status = status
        self.response_code = status
        self.location = location


def status_line(status: int, reason: str) -> str:
    """`HTTP 404 Not Found` with the server's reason phrase escaped (it is server text)."""
    return f"HTTP {status} {escape(reason)}".rstrip()


def status_error(status: int, reason: str, where: str, headers: Headers, *, sent_credentials: bool) -> FetchError:
    """The error a non-success status means (its exit code)."""
    what = status_line(status, reason)
    error: FetchError
    if status in (404, 410):
        error = NotFound(f"{what}: {where} does not exist", url=where)
    elif status == 401:
        hint = (
            "the server refused these credentials; check -u USER:PASSWORD or ~/.netrc"
            if sent_credentials
            else "give credentials with -u USER[:PASSWORD] or in ~/.netrc"
        )
        error = AuthError(f"{what}: {where} needs a login", hint=hint, url=where)
    elif status == 403:
        error = AuthError(f"{what}: access to {where} is forbidden", hint="the server refuses this file", url=where)
    elif status in (429, 503):
        delay = retry_after(header(headers, "retry-after"))
        hint = f"the server asks to retry after {delay:g} s" if delay is not None else "try again later"
        error = TransientError(f"{what}: {where} is unavailable for now", retry_after=delay, hint=hint, url=where)
    else:
        hint = "the server failed; try again later" if status >= 500 else ""
        error = ProtocolError(f"{what} for {where}", hint=hint or None, url=where)
    error.response_code = status
    return error


# -- resuming (-C): never append another version's tail ---------------------------------------------


def validators_of(headers: Headers, *, length: int | None) -> Validators:
    """What a reply says about its document: ETag, Last-Modified, and the whole `length` the caller read."""
    from fetcher.handler import Validators, seconds
    from fetcher.text import valid_tag

    return Validators(etag=valid_tag(header(headers, "etag")),
                      modified=seconds(last_modified(header(headers, "last-modified"))), length=length)  # fmt: skip


def resume_problem(headers: Headers, offset: int, recorded: Validators | None) -> str | None:
    """Why a 206 cannot continue a local part of `offset` bytes, or None when it can.

    The range must start where the part ends and agree with Content-Length;
    the document it is cut from must be the one the part was cut from
    (`recorded`): a server that ignores If-Range answers a changed file
    with the new version's tail, and only the validators tell.
    """
    span = content_range(header(headers, "content-range"))
    if span is None or span.first is None or span.last is None:
        return "the server's 206 reply has no usable Content-Range"
    if span.first != offset:
        return f"the server sent the bytes from {span.first} on, not from {offset}"
    if span.total is not None and span.last >= span.total:
        return f"the server's Content-Range ends at byte {span.last} of a {span.total}-byte document"
    length = content_length(headers)
    if length is not None and length != span.last - span.first + 1:
        return f"the server's 206 reply has {length} bytes for a range of {span.last - span.first + 1}"
    if recorded is None:
        return None
    return recorded.changed(validators_of(headers, length=span.total))


def ignored_range(headers: Headers, recorded: Validators | None) -> str:
    """Why a whole document answered a resume: it changed (If-Range did its job), or ranges are ignored."""
    if recorded is not None:
        coded = bool(header_list(headers, "content-encoding"))
        changed = recorded.changed(validators_of(headers, length=None if coded else content_length(headers)))
        if changed is not None:
            return changed
    return "the server ignored the byte range"
