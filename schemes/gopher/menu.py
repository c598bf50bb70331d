"""Gopher menus (RFC 1436 §3.8) into listing entries, fed bytes as they arrive.

Real menus are untidy: no "." line (pygopherd), lone LF line ends, lines
with too few fields, ports such as "(NULL)", 1 MiB lines.  A bad line
becomes an entry of type "error" (and a note in `problems`), never a
failure of the whole menu; only the caps on the menu's size are fatal,
because past them the reply is not a menu but a flood.  The caps come from
`fetcher.settings.Limits` (listing_entries, listing_bytes, line_bytes) and
are arguments, so fuzzing reaches each of them without a socket.

`MenuParser.feed` keeps only the unfinished last line between calls, so a
100 000-line menu costs one pass over its bytes.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from typing import Any

from fetcher.errors import LimitExceeded, UnsafeURL, URLError
from fetcher.handler import DEFAULT_LIMITS, Entry, Limits, guard
from fetcher.schemes.gopher.types import item_type
from fetcher.url import URL, GopherURL, TelnetURL, parse_url

#: What one kept entry costs toward listing_bytes besides its strings (the Entry and its
#: `extra` dict, about 700 bytes in fact): with it, a menu at the cap stays well
#: under 256 MiB however its lines are shaped, rendered as text or JSON.
ENTRY_COST = 256

_HOST = re.compile(r"[A-Za-z0-9._-]{1,253}|\[?[0-9A-Fa-f:.]{2,45}\]?")


def decode_display(raw: bytes) -> str:
    """Display strings: UTF-8 when valid, else Latin-1 (the Gopher+ spec's choice)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def selector_text(raw: bytes) -> str:
    """A selector as the URL classes hold it: bytes that are not UTF-8 survive as surrogates."""
    return raw.decode("utf-8", "surrogateescape")


def parse_port(raw: bytes) -> int | None:
    text = raw.strip()
    if not text.isdigit() or len(text) > 5:
        return None
    port = int(text)
    return port if 1 <= port <= 65535 else None


@dataclass
class MenuContext:
    """Where the menu came from: lines lacking host/port inherit these."""

    scheme: str
    host: str
    port: int
    policy: guard.Policy | None = None


def _gopher_url(ctx: MenuContext, gtype: str, selector: str, host: str, port: int, plus: str | None) -> URL:
    # A gophers menu's links to the same server stay on TLS; links elsewhere are plain gopher.
    scheme = ctx.scheme if (host.lower(), port) == (ctx.host.lower(), ctx.port) else "gopher"
    return GopherURL(scheme=scheme, host=host, port=port, gtype=gtype, selector=selector, search=None, plus=plus,
                     fragment=None)  # fmt: skip


def _telnet_url(selector: str, host: str, port: int) -> URL:
    return TelnetURL(scheme="telnet", user=selector or None, password=None, host=host, port=port, fragment=None)


def parse_line(line: bytes, ctx: MenuContext, lineno: int, previous: Entry | None = None) -> Entry:
    """One menu line (without its line end) as an Entry; never raises for bad input."""
    if b"\t" not in line:
        # Not a menu line at all: show it as text, as Gopher clients do.
        text = line[1:] if line[:1] == b"i" else line
        return Entry(name=decode_display(text), type="info", extra={"gopher_type": "i", "line": lineno})
    fields = line.split(b"\t")
    gtype = chr(fields[0][0]) if fields[0] else "?"
    if not 0x21 <= ord(gtype) <= 0x7E:
        entry = Entry(name=decode_display(fields[0][1:]), type="unknown", extra={"gopher_type": "?", "line": lineno})
        return _problem(entry, f"item type {gtype!r} is not a printable character")
    display = decode_display(fields[0][1:])
    raw_selector = fields[1]
    extra: dict[str, Any] = {"gopher_type": gtype, "line": lineno}
    if gtype == "i":
        return Entry(name=display, type="info", extra=extra)
    if gtype == "3":
        return Entry(name=display, type="error", extra=extra)
    selector = selector_text(raw_selector)
    extra["selector"] = selector
    kind = item_type(gtype)
    effective = gtype
    if gtype == "+" and previous is not None:
        # A redundant server for the previous item: same type, another place.
        effective = str(previous.extra.get("gopher_type", "9"))
        kind = item_type(effective)
        extra["mirror_of"] = previous.name
    plus_flag = fields[4].strip() if len(fields) > 4 else b""
    if plus_flag in (b"+", b"?"):
        extra["gopher_plus"] = plus_flag.decode()
    entry = Entry(name=display, type=kind.word, extra=extra)
    if len(fields) < 4 or not fields[2].strip():
        host, port = ctx.host, ctx.port
        extra["inferred"] = True
    else:
        host = fields[2].strip().decode("latin-1")
        port_or_none = parse_port(fields[3])
        if port_or_none is None:
            return _problem(entry, f"bad port {decode_display(fields[3])!r}")
        port = port_or_none
        if not _HOST.fullmatch(host):
            return _problem(entry, f"bad host name {host!r}")
        host = host.strip("[]")
    extra["host"] = host
    extra["port"] = port
    if (host.lower(), port) != (ctx.host.lower(), ctx.port):
        extra["foreign"] = True
    if effective == "h" and selector.startswith("URL:"):
        return _embedded(entry, selector[4:], ctx)
    if effective in ("8", "T"):
        url = _telnet_url(selector, host, port)
    else:
        url = _gopher_url(ctx, effective, selector, host, port, "?" if plus_flag == b"?" else None)
    _link(entry, url, ctx)
    return entry


def _embedded(entry: Entry, target: str, ctx: MenuContext) -> Entry:
    """A `URL:` selector (Goerzen's convention): the entry links to the URL after the prefix."""
    try:
        url = parse_url(target)
    except URLError as error:
        return _problem(entry, f"unusable URL: link ({error.message})")
    if url.scheme == "file":
        return _problem(entry, "a server's link to a file: URL is never followed")
    entry.extra["link"] = True
    _link(entry, url, ctx)
    return entry


def _link(entry: Entry, url: URL, ctx: MenuContext) -> None:
    """Give the entry its URL, and say (without refusing the listing) if the guard would refuse it."""
    try:
        guard.check(url, ctx.policy or guard.DEFAULT_POLICY)
    except UnsafeURL as error:
        entry.extra["refused"] = error.message
    entry.url = str(url)


def _problem(entry: Entry, why: str) -> Entry:
    entry.extra["problem"] = why
    entry.extra["item_type"] = entry.type
    entry.type = "error"
    entry.url = None
    return entry


@dataclass
class MenuParser:
    """Incremental menu parser: `feed` bytes, then `close`; read `entries`."""

    ctx: MenuContext
    #: Entries kept (listing_entries).
    max_entries: int = DEFAULT_LIMITS.listing_entries
    #: Bytes received, and (separately) bytes the kept entries hold (listing_bytes): ENTRY_COST
    #: each plus their strings (a selector of high bytes costs four times its size as text
    #: and three times in its URL).
    max_bytes: int = DEFAULT_LIMITS.listing_bytes
    #: A longer line is skipped (noted in `problems`), never buffered (line_bytes).
    max_line: int = DEFAULT_LIMITS.line_bytes
    entries: list[Entry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: True once the "." line arrived (what follows it is ignored).
    terminated: bool = False
    #: Whether any line had a TAB (a reply with none is not really a menu).
    saw_tab: bool = False
    received: int = 0
    held: int = 0
    _partial: bytes = b""
    _skipping: bool = False
    _lineno: int = 0
    #: The last real item: a "+" line is a mirror of it.
    _last_item: Entry | None = None

    def feed(self, data: bytes) -> None:
        if self.terminated or not data:
            return
        self.received += len(data)
        if self.received > self.max_bytes:
            raise LimitExceeded("bytes of menu", self.max_bytes, "listing_bytes")
        if self._partial:
            data = self._partial + data
            self._partial = b""
        start = 0
        while not self.terminated:
            newline = data.find(b"\n", start)
            if newline < 0:
                break
            if self._skipping:
                self._skipping = False
            else:
                self._line(data[start:newline])
            start = newline + 1
        if self.terminated:
            return
        rest = data[start:]
        if self._skipping:
            return
        if len(rest) > self.max_line:
            self._too_long()
            return
        self._partial = rest

    def close(self) -> None:
        """End of the reply: a last line without a line end still counts."""
        if not self.terminated and self._partial and not self._skipping:
            self._line(self._partial)
        self._partial = b""

    def _too_long(self) -> None:
        self._lineno += 1
        self._skipping = True
        why = f"line {self._lineno} is longer than {self.max_line} bytes; skipped"
        self.problems.append(why)
        self._add(Entry(name=why, type="error", extra={"gopher_type": None, "line": self._lineno, "problem": why}))

    def _line(self, line: bytes) -> None:
        self._lineno += 1
        if len(line) > self.max_line:
            self._lineno -= 1
            self._too_long()
            self._skipping = False
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if line == b".":
            self.terminated = True
            return
        if not line:
            return
        if b"\t" in line:
            self.saw_tab = True
        entry = parse_line(line, self.ctx, self._lineno, self._last_item)
        if entry.url is not None and entry.extra.get("gopher_type") not in ("i", "3", "+"):
            self._last_item = entry
        problem = entry.extra.get("problem")
        if problem:
            self.problems.append(f"line {self._lineno}: {problem}")
        self._add(entry)

    def _add(self, entry: Entry) -> None:
        if len(self.entries) >= self.max_entries:
            raise LimitExceeded("menu entries", self.max_entries, "listing_entries")
        self.held += ENTRY_COST + sys.getsizeof(entry.name) + sys.getsizeof(entry.url or "")
        selector = entry.extra.get("selector")
        if isinstance(selector, str):
            self.held += sys.getsizeof(selector)
        if self.held > self.max_bytes:
            raise LimitExceeded("bytes of menu entries (as held in memory)", self.max_bytes, "listing_bytes")
        self.entries.append(entry)

    @classmethod
    def for_limits(cls, ctx: MenuContext, limits: Limits) -> MenuParser:
        return cls(ctx, max_entries=limits.listing_entries, max_bytes=limits.listing_bytes,
                   max_line=limits.line_bytes)  # fmt: skip


def parse_menu(data: bytes, ctx: MenuContext, limits: Limits = DEFAULT_LIMITS) -> MenuParser:
    """A whole menu at once (tests, attribute replies)."""
    parser = MenuParser.for_limits(ctx, limits)
    parser.feed(data)
    parser.close()
    return parser
