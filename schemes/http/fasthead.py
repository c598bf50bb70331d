"""The lean path for a plain response head, sans-IO: one regex pass instead of h11's events.

A small file over a kept-alive connection usually arrives as one read: a
status line, a handful of fields, and the body.  h11 spends ~190 Python calls
on that (state machine, one event per element, per-field validation); this
module reads the head with two C-level regex calls (the status line, then
all field lines at once).  It accepts a strict subset of what h11 accepts
and gives the same result for it (a differential fuzz test holds it to
h11): HTTP/1.1 only, CRLF line ends, no obsolete line folding, a final
status 200-599 other than 204 and 304, and a body framed by exactly one
plain Content-Length or one `Transfer-Encoding: chunked`.  Anything else
(1xx, close-delimited bodies, HTTP/1.0, duplicates, odd whitespace,
malformed lines) returns None, and the caller hands the bytes to
h11, whose rules and error messages then apply unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# RFC 9110/9112 grammar, written as h11 writes it (h11/_abnf.py).
_TOKEN = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_VCHAR = rb"[\x21-\x7e\x80-\xff]"
_CONTENT = _VCHAR + rb"+(?:[ \t]+" + _VCHAR + rb"+)*"
_FIELD = rb"(" + _TOKEN + rb"):[ \t]*(" + _CONTENT + rb")?[ \t]*\r\n"
_STATUS = re.compile(rb"HTTP/1\.1 ([2-5][0-9][0-9]) ((?:[ \t]|" + _VCHAR + rb")*)\r\n")
#: One whole field line: it starts just after a line feed (the lookbehind sees before `pos`),
#: and nothing in it but its end is CR or LF.
_FIELD_LINE_RE = re.compile(rb"(?<=\n)" + _FIELD)

_TOKEN_RE = re.compile(_TOKEN)
_TARGET_RE = re.compile(rb"[\x21-\x7e]+")
_VALUE_RE = re.compile(rb"(?:" + _CONTENT + rb")?")

#: The end of a head.
HEAD_END = b"\r\n\r\n"
_LF = ord("\n")


class FastHeaders(list[tuple[bytes, bytes]]):
    """The fields as received (names in their own case), the shape of h11's `Headers.raw_items()`."""

    def raw_items(self) -> list[tuple[bytes, bytes]]:
        return list(self)


@dataclass(slots=True)
class FastResponse:
    """A final response head read by `parse_head`: the attributes fetcher reads from an h11.Response."""

    status_code: int
    reason: bytes
    headers: FastHeaders
    http_version: bytes = b"1.1"
    #: The body's framing: its Content-Length, or None for chunked.
    length: int | None = None
    chunked: bool = False
    keep_alive: bool = True


def parse_head(head: bytes) -> FastResponse | None:
    """The response whose head is `head` (up to and including the blank line's CRLF), or None to use h11."""
    status = _STATUS.match(head)
    if status is None:
        return None
    start = status.end()
    end = len(head) - 2
    # The fields end where the blank line starts: just after a line feed (or there are none).
    if head[end:] != b"\r\n" or (end > start and head[end - 1] != _LF):
        return None
    # findall gives b"" for an empty value (a group that matched nothing): the pairs as they are.
    fields = FastHeaders(_FIELD_LINE_RE.findall(head, start, end))
    # Each match is one whole line, and every line ends with a line feed, so the lines are all
    # fields exactly when there are as many matches as line feeds: one C pass checks and splits.
    if len(fields) != head.count(b"\n", start, end):
        return None
    code = int(status.group(1))
    if code in (204, 304):
        return None
    length: int | None = None
    chunked = False
    keep_alive = True
    for name, value in fields:
        lower = name.lower()
        if lower == b"content-length":
            if length is not None or not value.isdigit():
                return None
            length = int(value)
        elif lower == b"transfer-encoding":
            if chunked or value != b"chunked":  # h11 would lower-case another spelling
                return None
            chunked = True
        elif lower == b"connection" and b"close" in value.lower():
            keep_alive = False
    if chunked == (length is not None):  # neither (close-delimited) or both: h11's rules decide
        return None
    return FastResponse(code, status.group(2), fields, length=length, chunked=chunked, keep_alive=keep_alive)


def lean_request(method: str, target: str, headers: list[tuple[str, str]]) -> bytes | None:
    """The request head exactly as h11 writes it, or None to let h11 write it (and judge it).

    Taken only when every part passes h11's own grammar: a token method, a
    printable target, token names with clean values (no CR, LF or NUL can
    split the request), ASCII throughout, Host first and alone, and no field
    that frames a body.
    """
    if not headers or headers[0][0].lower() != "host":
        return None
    try:
        parts = [method.encode("ascii"), b" ", target.encode("ascii"), b" HTTP/1.1\r\n"]
        if _TOKEN_RE.fullmatch(parts[0]) is None or _TARGET_RE.fullmatch(parts[2]) is None:
            return None
        for index, (name, value) in enumerate(headers):
            raw_name = name.encode("ascii")
            raw_value = value.encode("ascii")
            lower = raw_name.lower()
            if (index and lower == b"host") or lower in (b"content-length", b"transfer-encoding", b"connection",
                                                         b"expect"):  # fmt: skip
                return None
            if _TOKEN_RE.fullmatch(raw_name) is None or _VALUE_RE.fullmatch(raw_value) is None:
                return None
            parts += (raw_name, b": ", raw_value, b"\r\n")
    except UnicodeEncodeError:
        return None
    parts.append(b"\r\n")
    return b"".join(parts)
