"""The Prospero v5 text protocol, pure: quoting, requests, and reply lines.

A message is lines separated by unquoted LF; tokens are separated by runs of
unquoted blanks; an apostrophe toggles quoting anywhere inside a token and
`''` inside quotes is one apostrophe.  Servers write `LINK` followed by two
spaces, start quoting mid-token (`AFTP'/pub/README'`) and omit the value-type
of well-known FIELD attributes; the reader below accepts all of that.  Tokens
stay bytes until a caller decodes them (`text()`), so names that are not
UTF-8 survive as surrogates, like every other decoded URL part.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fetcher.errors import LimitExceeded, ProtocolError, URLError
from fetcher.schemes.prospero.reply import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_LINE,
    Attribute,
    Forwarded,
    Link,
    Reply,
    ReplyReader,
    interpret,
    parse_attribute,
    parse_link,
    parse_reply,
    split_host,
    text,
    tokenize,
)
from fetcher.url import to_bytes

__all__ = [
    "Attribute", "ContentsDecoder", "Forwarded", "Link", "Reply", "ReplyReader", "Target", "line", "list_request",
    "object_info_request", "parse_attribute", "parse_link", "parse_reply", "preamble", "quote", "split_host",
    "target_from_fields", "text", "tokenize",
]  # fmt: skip

SOFTWARE_ID = "fetcher"

_QUOTE_FROM = frozenset(b" \t\f\v\n\r/'+,")
_BLANKS = frozenset(b" \t")


# -- writing ------------------------------------------------------------------


def quote(value: str | bytes) -> bytes:
    """One token as the reference writer quotes it: from the first special octet to the end."""
    raw = to_bytes(value) if isinstance(value, str) else value
    if b"\x00" in raw:
        raise ProtocolError("a Prospero token cannot carry a NUL octet")
    if not raw:
        return b"''"
    for at, octet in enumerate(raw):
        if octet in _QUOTE_FROM:
            return raw[:at] + b"'" + raw[at:].replace(b"'", b"''") + b"'"
    return raw


def line(*tokens: bytes | str) -> bytes:
    """A request line; keywords (str) go out as they are, so pass values through `quote`."""
    return b" ".join(to_bytes(t) if isinstance(t, str) else t for t in tokens) + b"\n"


def preamble(user: str) -> bytes:
    """VERSION and AUTHENTICATE lines that open every request message."""
    return line("VERSION", "5", SOFTWARE_ID) + line("AUTHENTICATE", "''", "UNAUTHENTICATED", quote(user))


@dataclass(frozen=True)
class Target:
    """What a URL's `;field=value` part asks for: an object version and SELECT lines."""

    version: str = "0"
    selects: tuple[tuple[str, ...], ...] = ()
    unknown: tuple[str, ...] = ()


def target_from_fields(fields: Mapping[str, str]) -> Target:
    """Map URL fields onto the request (notes §4): OBJECT-VERSION, ID, anything else."""
    version = "0"
    selects: list[tuple[str, ...]] = []
    unknown: list[str] = []
    for name, value in fields.items():
        key = name.upper()
        if key == "OBJECT-VERSION":
            if not value.isascii() or not value.isdigit():
                raise URLError(f"prospero field OBJECT-VERSION={value!r} is not a decimal number", part="field")
            version = str(int(value))
        elif key == "ID":
            words = value.split()
            if len(words) == 1 and words[0].isdigit():
                words = ["REMOTE", words[0]]
            if not words:
                raise URLError("prospero field ID is empty", part="field")
            selects.append(("ID", *words))
        else:
            selects.append((name, value))
            unknown.append(name)
    return Target(version=version, selects=tuple(selects), unknown=tuple(unknown))


def _select_lines(target: Target) -> bytes:
    return b"".join(line("SELECT", "OBJECT", "FIELD", *(quote(v) for v in select)) for select in target.selects)


def list_request(user: str, hsoname: str, target: Target = Target(), *, attributes: bool = True) -> bytes:
    """Request A: select the directory and list every link (with attributes)."""
    return (
        preamble(user)
        + line("DIRECTORY", "ASCII", quote(hsoname), quote(target.version))
        + _select_lines(target)
        + line("LIST", "ATTRIBUTES" if attributes else "''", "COMPONENTS")
    )


def object_info_request(user: str, hsoname: str, attributes: Iterable[str], target: Target = Target()) -> bytes:
    """GET-OBJECT-INFO for `+`-joined attribute names (ACCESS-METHOD, #ALL, CONTENTS)."""
    return (
        preamble(user)
        + line("GET-OBJECT-INFO", "+".join(attributes), "ASCII", quote(hsoname), quote(target.version))
        + _select_lines(target)
    )


def _data_position(tokens: list[bytes]) -> int | None:
    """Index of the data token if `tokens` start a CONTENTS attribute line."""
    if len(tokens) < 5 or not tokens[0].startswith(b"ATTRIBUTE") or tokens[3] != b"CONTENTS":
        return None
    at = 4
    if tokens[at] in (b"SEQUENCE", b"ASCII"):
        at += 1
    if len(tokens) > at and tokens[at] == b"DATA":
        return at + 1
    if len(tokens) > at and tokens[at] == b"TAGGED":
        return at + 2
    return None


class ContentsDecoder:
    """Stream the data token of a CONTENTS reply out as it arrives; keep every other line.

    `feed` returns the object's bytes decoded so far (quotes removed), so a
    large PROSPERO-CONTENTS object never sits in memory; `finish` returns the
    rest of the reply (a FAILURE instead of data, warnings...).  What is kept
    besides the data is capped: `max_kept` bytes, `max_lines` lines, `max_line` bytes a line.
    """

    def __init__(
        self,
        *,
        max_kept: int = DEFAULT_MAX_BYTES,
        max_lines: int = DEFAULT_MAX_ENTRIES,
        max_line: int = DEFAULT_MAX_LINE,
    ) -> None:
        self.max_kept = max_kept
        self.max_lines = max_lines
        self.max_line = max_line
        self._line_size = 0
        self.found = False
        self._lines: list[list[bytes]] = []
        self._tokens: list[bytes] = []
        self._token = bytearray()
        self._in_token = False
        self._quoted = False
        self._pending_quote = False
        self._streaming = False
        self._kept = 0

    @property
    def started(self) -> bool:
        """True once the data token has begun (so the reply is not a failure)."""
        return self.found or self._streaming

    def _begin(self) -> None:
        if not self._in_token:
            self._in_token = True
            self._streaming = not self.found and _data_position(self._tokens) == len(self._tokens)

    def _put(self, data: bytes, out: bytearray) -> None:
        if self._streaming:
            out += data
            return
        self._kept += len(data)
        if self._kept > self.max_kept:
            raise LimitExceeded("bytes besides the data in one Prospero CONTENTS reply", self.max_kept, "listing_bytes")
        self._line_size += len(data)
        if self._line_size > self.max_line:
            raise LimitExceeded("bytes in one line of a Prospero reply", self.max_line, "line_bytes")
        self._token += data

    def _end_token(self) -> None:
        if self._in_token:
            if self._streaming:
                self.found = True
                self._streaming = False
            self._tokens.append(bytes(self._token))
            self._token.clear()
            self._in_token = False

    def _end_line(self) -> None:
        self._end_token()
        self._line_size = 0
        if self._tokens:
            if len(self._lines) >= self.max_lines:
                raise LimitExceeded("lines in one Prospero CONTENTS reply", self.max_lines, "listing_entries")
            self._lines.append(self._tokens)
            self._tokens = []

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        at, end = 0, len(data)
        if self._pending_quote and end:
            self._pending_quote = False
            if data[0] == 0x27:
                self._put(b"'", out)
                at = 1
            else:
                self._quoted = False
        while at < end:
            if self._quoted:
                mark = data.find(b"'", at)
                if mark < 0:
                    self._put(data[at:], out)
                    break
                self._put(data[at:mark], out)
                if mark + 1 == end:
                    self._pending_quote = True
                    break
                if data[mark + 1] == 0x27:
                    self._put(b"'", out)
                    at = mark + 2
                else:
                    self._quoted = False
                    at = mark + 1
                continue
            octet = data[at]
            if octet == 0x27:
                self._begin()
                self._quoted = True
            elif octet in (0x0A, 0x0D):
                self._end_line()
            elif octet in _BLANKS:
                self._end_token()
            else:
                self._begin()
                self._put(data[at : at + 1], out)
            at += 1
        return bytes(out)

    def finish(self) -> Reply:
        self._pending_quote = self._quoted = False
        self._end_line()
        reply = Reply()
        for tokens in self._lines:
            if _data_position(tokens) is not None:
                continue
            interpret(reply, tokens)
        return reply
