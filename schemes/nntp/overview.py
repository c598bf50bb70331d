"""Listings without I/O: overview lines, article headers, the active file.

OVER/XOVER lines (RFC 3977 §8.3), HEAD blocks (the fallback for servers
without an overview) and LIST ACTIVE lines become small records; header
text is decoded for display (raw UTF-8, Latin-1, RFC 2047 encoded words).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime

from fetcher.schemes.nntp.responses import BadReply, decode

#: Articles listed when no --range is given (the newest ones); the rest is
#: announced with the --range that lists it (`older_note`), never cut silently.
DEFAULT_WINDOW = 100

_ENCODED_WORD = re.compile(r"=\?([A-Za-z0-9_\-.:]+)(?:\*[A-Za-z\-]*)?\?([BbQq])\?([^?\s]*)\?=")
_QP_ESCAPE = re.compile(rb"=([0-9A-Fa-f]{2})")


def _decode_word(charset: str, encoding: str, payload: str) -> str | None:
    try:
        data = payload.encode("ascii")
        if encoding in "Bb":
            data = base64.b64decode(data + b"=" * (-len(data) % 4), validate=True)
        else:
            data = _QP_ESCAPE.sub(lambda match: bytes([int(match.group(1), 16)]), data.replace(b"_", b" "))
        return data.decode(charset, "replace")
    except (LookupError, UnicodeError, ValueError, binascii.Error):
        return None


def decode_words(text: str) -> str:
    """Replace RFC 2047 encoded words by their text; undecodable ones stay as written.

    White space between two adjacent encoded words is dropped (RFC 2047 §6.2).
    """
    if "=?" not in text:
        return text
    pieces: list[str] = []
    end = 0
    after_word = False
    for match in _ENCODED_WORD.finditer(text):
        between = text[end : match.start()]
        if not (after_word and not between.strip()):
            pieces.append(between)
        decoded = _decode_word(*match.groups())
        pieces.append(match.group() if decoded is None else decoded)
        after_word = decoded is not None
        end = match.end()
    pieces.append(text[end:])
    return "".join(pieces)


def header_text(raw: bytes) -> str:
    """A header value for display: decoded, encoded words expanded, folding undone."""
    return decode_words(" ".join(decode(raw).split()) if b"\n" in raw else decode(raw).strip())


@dataclass(frozen=True)
class Overview:
    """One article of a group listing."""

    number: int
    subject: str = ""
    sender: str = ""
    date: str = ""
    message_id: str = ""
    references: str = ""
    size: int | None = None
    lines: int | None = None

    @property
    def timestamp(self) -> datetime | None:
        """The Date header as a datetime, when it parses."""
        if not self.date:
            return None
        try:
            return parsedate_to_datetime(self.date)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None


def _number(raw: bytes) -> int | None:
    text = raw.strip()
    return int(text) if text.isdigit() and len(text) < 20 else None


def parse_overview(line: bytes) -> Overview:
    """One OVER/XOVER line: number TAB subject TAB from TAB date TAB message-id TAB references TAB bytes TAB lines.

    The order of the first seven fields is fixed by RFC 3977 §8.3.1, so
    LIST OVERVIEW.FMT is not needed.  Missing trailing fields are tolerated
    (older servers); a line without an article number raises BadReply.
    """
    fields = line.rstrip(b"\r\n").split(b"\t")
    number = _number(fields[0])
    if number is None:
        raise BadReply(f"overview line without an article number: {decode(line[:60])!r}")
    fields += [b""] * (8 - len(fields))
    message_id = decode(fields[4]).strip()
    return Overview(
        number=number,
        subject=header_text(fields[1]),
        sender=header_text(fields[2]),
        date=decode(fields[3]).strip(),
        message_id=message_id[1:-1] if message_id.startswith("<") and message_id.endswith(">") else message_id,
        references=decode(fields[5]).strip(),
        size=_number(fields[6]),
        lines=_number(fields[7]),
    )


def parse_headers(lines: list[bytes]) -> dict[str, bytes]:
    """Header lines (HEAD) -> lower-case name -> raw value, folded lines joined; the first of a name wins."""
    headers: dict[str, bytes] = {}
    name: str | None = None
    for line in lines:
        if not line:
            break
        if line[:1] in (b" ", b"\t"):
            if name is not None:
                headers[name] += b"\n" + line
            continue
        key, colon, value = line.partition(b":")
        if not colon or not key.strip():
            name = None
            continue
        name = decode(key.strip()).lower()
        if name in headers:
            name = None
            continue
        headers[name] = value.strip()
    return headers


def overview_from_headers(number: int, headers: dict[str, bytes]) -> Overview:
    """An Overview built from HEAD, for servers without OVER/XOVER; the size is unknown."""

    def get(name: str) -> bytes:
        return headers.get(name, b"")

    message_id = decode(get("message-id")).strip()
    return Overview(
        number=number,
        subject=header_text(get("subject")),
        sender=header_text(get("from")),
        date=header_text(get("date")),
        message_id=message_id[1:-1] if message_id.startswith("<") and message_id.endswith(">") else message_id,
        references=header_text(get("references")),
        size=_number(get("bytes")),
        lines=_number(get("lines")),
    )


@dataclass(frozen=True)
class ActiveGroup:
    """One line of LIST ACTIVE: name, highest and lowest article number, posting status."""

    name: str
    high: int
    low: int
    status: str

    @property
    def estimate(self) -> int:
        """Articles in the group, as far as the active file tells."""
        return max(0, self.high - self.low + 1)


def parse_active(line: bytes) -> ActiveGroup:
    """`group high low status` (RFC 3977 §7.6.3; RFC 977 LIST has the same shape)."""
    words = decode(line).split()
    high = _number(words[1].encode()) if len(words) > 1 else None
    low = _number(words[2].encode()) if len(words) > 2 else None
    if len(words) < 3 or high is None or low is None:
        raise BadReply(f"malformed active-file line {decode(line[:60])!r}")
    return ActiveGroup(words[0], high, low, words[3] if len(words) > 3 else "")


def article_window(
    first: int, last: int, count: int, wanted: tuple[int, int] | None, limit: int = DEFAULT_WINDOW
) -> tuple[int, int] | None:
    """The article numbers to list: `wanted` clipped to the group, else the newest `limit`; None if empty."""
    if count <= 0 or last < first or last <= 0:
        return None
    if wanted is not None:
        low, high = max(wanted[0], first), min(wanted[1], last)
    else:
        low, high = max(first, last - limit + 1), last
    return (low, high) if low <= high else None


def older_note(
    group: str, first: int, last: int, count: int, window: tuple[int, int] | None, listed: int
) -> str | None:
    """What a default listing left out, and the --range that lists it; None when nothing was.

    Only the newest DEFAULT_WINDOW articles are asked for without --range:
    a group may hold hundreds of thousands, and an overview of all of them
    is tens of megabytes nobody reads at once (newsreaders and Lynx also
    start with the newest and fetch older ones on demand).
    """
    if window is None or window[0] <= first:
        return None
    low, high = window
    older = count - listed if count > listed else low - first
    return (
        f"{group}: listed the newest articles ({low}-{high}); about {older} older ones ({first}-{low - 1}) "
        f"were left out: add --range {first}-{low - 1} to list them (--range {first}-{last} for the whole group)"
    )
