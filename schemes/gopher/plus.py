"""Gopher+ replies: the `+n`/`+-1`/`+-2`/`--n` header, error text, and attribute blocks.

Everything here is pure: bytes in, values (or a `FetchError` naming what was
wrong) out.  The trio part reads a header line with `parse_header`, then
hands the body to a framing decoder and, for `!` and `$` requests, the whole
(capped) reply to `parse_attributes`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fetcher.errors import FetchError, LimitExceeded, NotFound, ProtocolError, TransientError
from fetcher.handler import DEFAULT_LIMITS
from fetcher.schemes.gopher.ask import AskField, parse_ask_lines
from fetcher.schemes.gopher.menu import MenuContext, decode_display, parse_line
from fetcher.text import escape

MAX_HEADER = 64
MAX_ERROR_TEXT = 64 * 1024
#: What one attribute line and one item (an +INFO) cost at least toward the
#: attribute_bytes cap: holding them costs more than their bytes, so a flood of
#: empty lines or bare "+INFO" lines cannot make millions of objects out of 4 MiB.
LINE_COST = 64
ITEM_COST = 256

_HEADER = re.compile(rb"([+-])(\d{1,18}|-1|-2)")
_SIZE = re.compile(r"<\s*(\d+(?:\.\d+)?)\s*([kKbBmM]?)\s*>")
_ANGLE = re.compile(r"<([^<>]*)>")


@dataclass(frozen=True)
class Header:
    """`+n` (exactly n bytes), `+-1` (to a "." line), `+-2` (to close); `ok` False for `-`."""

    ok: bool
    length: int


def parse_header(line: bytes) -> Header | None:
    """The header of a Gopher+ reply, or None when the line is not one (a gopher0 server)."""
    if len(line) > MAX_HEADER:
        return None
    match = _HEADER.fullmatch(line.strip())
    if match is None:
        return None
    return Header(ok=match.group(1) == b"+", length=int(match.group(2)))


def looks_like_error(data: bytes) -> bool:
    """pygopherd's double header: `+36` then `--2` and an error line (gopher-plus.md §4.2)."""
    first, _, rest = data.partition(b"\n")
    header = parse_header(first)
    return header is not None and not header.ok and re.match(rb"\d ", rest) is not None


@dataclass
class PlusError:
    code: int | None
    admin: str
    message: str
    #: Code 3: the descriptor of the new place, when the server gave one.
    moved_to: str | None = None


def parse_error(text: bytes) -> PlusError:
    """`<code> <admin> <<email>>` then the message (gopher-plus.md §2.3)."""
    lines = decode_display(text).replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if lines and lines[-1] == ".":
        lines.pop()
    first = lines[0] if lines else ""
    code_text, _, admin = first.partition(" ")
    code = int(code_text) if code_text.isascii() and code_text.isdigit() else None
    if code is None:
        admin, body = "", lines
    else:
        body = lines[1:]
    moved = None
    if code == 3:
        tabbed = [line for line in [admin, *body] if "\t" in line]
        if tabbed:
            moved = tabbed[0]
    message = " ".join(line.replace("\t", " ").strip() for line in body if line.strip())
    return PlusError(code=code, admin=admin.strip(), message=message, moved_to=moved)


def error_for(error: PlusError, url: str, ctx: MenuContext) -> FetchError:
    """Map a Gopher+ error to fetcher's exit codes (1 -> 6, 2 -> transient, 3 -> 7, else 7)."""
    said = escape(error.message or "(no message)")
    if error.code == 1:
        return NotFound(f"the server says the item is not available: {said}", url=url)
    if error.code == 2:
        return TransientError(f"the server says try again later: {said}", url=url)
    if error.code == 3:
        where = None
        if error.moved_to:
            entry = parse_line(error.moved_to.encode("utf-8", "surrogateescape"), ctx, 0)
            where = entry.url
        location = f"; it moved to {escape(where)}" if where else ""
        return ProtocolError(
            f"the server says the item moved{location}: {said}",
            hint=f"fetch {escape(where)}" if where else "ask the server's administrator where it went",
            url=url,
        )
    code = "no code" if error.code is None else f"code {error.code}"
    return ProtocolError(f"the server refused the request ({code}): {said}", url=url)


class SizedBody:
    """A `+n` body: exactly n bytes; fewer before close is a truncation."""

    def __init__(self, length: int) -> None:
        self.remaining = length

    def feed(self, chunk: bytes) -> bytes:
        if self.remaining <= 0:
            return b""
        part = chunk[: self.remaining]
        self.remaining -= len(part)
        return part

    @property
    def done(self) -> bool:
        return self.remaining <= 0


# -- attribute blocks -------------------------------------------------------


@dataclass
class View:
    mime: str
    lang: str | None = None
    #: The size exactly as the server wrote it ("<10k>"), and an estimate in bytes.
    size_text: str | None = None
    approx_bytes: int | None = None

    @property
    def request(self) -> str:
        """The Gopher+ string that asks for this view (`+mime[ lang]`)."""
        return "+" + self.mime + (" " + self.lang if self.lang else "")

    def as_dict(self) -> dict[str, Any]:
        return {"mime": self.mime, "lang": self.lang, "size": self.size_text, "approx_bytes": self.approx_bytes}


def parse_view(line: str) -> View | None:
    """` <mime>[ <lang>]: [<size>]`, sizes with units k/K/b (or none)."""
    head, sep, tail = line.strip().rpartition(":")
    if not sep:
        head, tail = line.strip(), ""
    words = head.split()
    if not words:
        return None
    view = View(mime=words[0], lang=words[1] if len(words) > 1 else None)
    match = _SIZE.search(tail)
    if match:
        view.size_text = match.group(0)
        scale = {"k": 1024, "m": 1024 * 1024, "b": 1, "": 1}[match.group(2).lower()]
        view.approx_bytes = int(float(match.group(1)) * scale)
    return view


@dataclass
class Attributes:
    """The blocks about one item: +INFO, +ADMIN, +VIEWS, +ABSTRACT, +ASK, and any others raw."""

    info: str | None = None
    admin: dict[str, str] = field(default_factory=dict)
    modified: datetime | None = None
    views: list[View] = field(default_factory=list)
    abstract: list[str] = field(default_factory=list)
    ask: list[AskField] | None = None
    other: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "info": self.info,
            "admin": self.admin,
            "modified": self.modified.isoformat() if self.modified else None,
            "views": [view.as_dict() for view in self.views],
            "abstract": "\n".join(self.abstract),
            "ask": [item.as_dict() for item in self.ask] if self.ask is not None else None,
            "other": self.other,
        }


def _timestamp(value: str) -> datetime | None:
    found = _ANGLE.findall(value)
    digits = found[-1].strip() if found else ""
    if len(digits) != 14 or not digits.isdigit():
        return None
    try:
        return datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError:
        return None


def _fill(item: Attributes, name: str, value: str, lines: list[str]) -> None:
    if name == "INFO":
        item.info = value
    elif name == "ADMIN":
        for line in lines:
            key, sep, rest = line.partition(":")
            if not sep:
                continue
            key, rest = key.strip(), rest.strip()
            item.admin[key] = rest
            if key.lower() in ("mod-date", "date") and item.modified is None:
                item.modified = _timestamp(rest)
    elif name == "VIEWS":
        item.views.extend(view for view in map(parse_view, lines) if view is not None)
    elif name == "ABSTRACT":
        item.abstract.extend(lines if lines else ([value] if value else []))
    elif name == "ASK":
        item.ask = parse_ask_lines(lines)
    else:
        item.other[name] = ([value] if value else []) + lines


def _charge(cost: int, more: int, cap: int) -> int:
    cost += more
    if cost > cap:
        raise LimitExceeded(f"bytes of Gopher+ attributes (a line counts at least {LINE_COST}, an item "
                            f"{ITEM_COST})", cap, "attribute_bytes")  # fmt: skip
    return cost


def _split_lines(data: bytes) -> Iterator[bytes]:
    """`data.split(b"\\n")`, one line at a time (no list of a million lines)."""
    start = 0
    while True:
        end = data.find(b"\n", start)
        if end < 0:
            yield data[start:]
            return
        yield data[start:end]
        start = end + 1


def parse_attributes(data: bytes, max_bytes: int = DEFAULT_LIMITS.attribute_bytes) -> list[Attributes]:
    """The reply to `!` or `$`: one `Attributes` per item, each opened by its +INFO.

    `max_bytes` (Limits.attribute_bytes) bounds the reply; each line counts
    at least LINE_COST and each item ITEM_COST toward it (LimitExceeded past it).
    """
    if len(data) > max_bytes:
        raise LimitExceeded("bytes of Gopher+ attributes", max_bytes, "attribute_bytes")
    items: list[Attributes] = []
    current: Attributes | None = None
    block: tuple[str, str] | None = None
    lines: list[str] = []
    cost = 0

    def finish() -> None:
        if block is not None and current is not None:
            _fill(current, block[0], block[1], lines)

    for raw in _split_lines(data):
        cost = _charge(cost, max(len(raw) + 1, LINE_COST), max_bytes)
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        text = decode_display(raw)
        if text.startswith("+"):
            finish()
            lines = []
            name, sep, value = text[1:].partition(":")
            if not sep:
                name, _, value = text[1:].partition(" ")
            name = name.strip().upper()
            if name == "INFO" or current is None:
                cost = _charge(cost, ITEM_COST, max_bytes)
                current = Attributes()
                items.append(current)
            block = (name, value.strip())
        elif block is not None:
            if text == "" and raw == b"":
                continue
            lines.append(text[1:] if text.startswith(" ") else text)
    finish()
    return items


def wanted_names(plus: str) -> list[str]:
    """The attribute names of `!+ABSTRACT +VIEWS` or `$+VIEWS+ABSTRACT` (upper case)."""
    return [name.strip().upper() for name in plus[1:].replace(" ", "+").split("+") if name.strip()]


def describe(item: Attributes, info_url: str | None = None) -> str:
    """Attributes as a person reads them (escaped later by the renderer)."""
    out: list[str] = []
    if item.info is not None:
        out.append(f"Item:      {item.info.replace(chr(9), '  ')}")
    if info_url:
        out.append(f"URL:       {info_url}")
    for key, value in item.admin.items():
        out.append(f"{key + ':':<10} {value}")
    if item.modified is not None:
        out.append(f"Modified:  {item.modified:%Y-%m-%d %H:%M:%S}")
    if item.views:
        out.append("Views:")
        for view in item.views:
            size = f"  {view.size_text}" if view.size_text else ""
            out.append(f"  {view.mime}{' ' + view.lang if view.lang else ''}{size}")
    if item.abstract:
        out.append("Abstract:")
        out.extend("  " + line for line in item.abstract)
    if item.ask is not None:
        out.append("Form (+ASK):")
        out.extend("  " + field.describe() for field in item.ask)
    for name, lines in item.other.items():
        out.append(f"+{name}:")
        out.extend("  " + line for line in lines)
    return "\n".join(out)


def keep_only(item: Attributes, names: list[str]) -> Attributes:
    """The blocks a `!+NAME` request asked for (servers may send them all); +INFO always stays."""
    if not names:
        return item
    return Attributes(
        info=item.info,
        admin=item.admin if "ADMIN" in names else {},
        modified=item.modified if "ADMIN" in names else None,
        views=item.views if "VIEWS" in names else [],
        abstract=item.abstract if "ABSTRACT" in names else [],
        ask=item.ask if "ASK" in names else None,
        other={name: lines for name, lines in item.other.items() if name in names},
    )
