"""Reading Prospero v5 replies, pure and incremental, with caps on what a server can make grow.

A message is lines separated by unquoted LF (or CR); tokens are separated by
runs of unquoted blanks; an apostrophe toggles quoting anywhere inside a
token and `''` inside quotes is one apostrophe, so a quoted token may span
lines.  Servers write `LINK` followed by two spaces, start quoting mid-token
(`AFTP'/pub/README'`) and omit the value-type of well-known FIELD
attributes; the reader accepts all of that.

`ReplyReader` takes the reply as it arrives and keeps only what it
interpreted, so a listing never sits in memory twice; it refuses a reply past
its byte cap, a line past its line cap and more lines than its entry cap
(`fetcher.errors.LimitExceeded`, exit 7).  Tokens stay bytes until decoded
(`text()`), so names that are not UTF-8 survive as surrogates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fetcher.errors import LimitExceeded, ProtocolError

#: The caps `parse_reply` applies when given none (the defaults of `fetcher.settings.Limits`).
DEFAULT_MAX_ENTRIES = 200_000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_LINE = 64 * 1024

# FIELD attributes whose value-type token the server leaves out.
_WELL_KNOWN_FIELDS = frozenset(
    {
        "ACCESS-METHOD", "BASE-TYPE", "CLOSURE", "DEST-EXP", "FILTER", "HOST", "HOST-TYPE", "HSONAME",
        "HSONAME-TYPE", "ID", "LINK-TYPE", "NAME-COMPONENT", "OWNER", "TARGET", "TTL", "VERSION",
    }
)  # fmt: skip
_VALUE_TYPES = frozenset({"SEQUENCE", "ASCII", "LINK", "FILTER"})
#: What one kept line costs in memory besides its text, which is charged twice (the
#: strings read, then the URL and entry made of them): the objects around them.
HELD_COST = 256

# One token (quotes toggled anywhere, '' inside quotes, an open quote running to the end),
# a line end, or blanks.  Possessive, so a quote never re-pairs by backtracking.
_SCAN = re.compile(rb"(?P<token>(?:[^ \t\r\n']++|'(?:[^']++|'')*+(?:'|\Z))++)|(?P<end>[\r\n])|[ \t]++")
_QUOTED = re.compile(rb"'((?:[^']++|'')*+)(?:'|\Z)")
_LINE_END = re.compile(rb"[\r\n]")


def text(token: bytes) -> str:
    """A token as str (non-UTF-8 octets as surrogates, the URL module's convention)."""
    return token.decode("utf-8", "surrogateescape")


def _unquote(token: bytes) -> bytes:
    if b"'" not in token:
        return token
    return _QUOTED.sub(lambda match: match.group(1).replace(b"''", b"'"), token)


def _scan_line(data: bytes, at: int, final: bool) -> tuple[list[bytes], int] | None:
    """The tokens from `at` to the next unquoted line end, and the position after it.

    None when the line is not complete yet (no line end, or a token touching
    the end of `data` that more data could continue), unless `final`.
    """
    tokens: list[bytes] = []
    end = len(data)
    while at < end:
        match = _SCAN.match(data, at)
        assert match is not None  # every octet starts one of the three alternatives
        if match.group("end") is not None:
            return tokens, match.end()
        token = match.group("token")
        if token is not None:
            if match.end() == end and not final:
                return None
            tokens.append(_unquote(token))
        at = match.end()
    return (tokens, at) if final else None


def tokenize(message: bytes) -> list[list[bytes]]:
    """Split a whole message into lines of tokens, honouring quotes; blank lines vanish."""
    lines: list[list[bytes]] = []
    at = 0
    while at < len(message):
        scanned = _scan_line(message, at, True)
        assert scanned is not None
        tokens, at = scanned
        if tokens:
            lines.append(tokens)
    return lines


def split_host(host: str) -> tuple[str, int | None]:
    """`LOCALHOST(21525)` -> ("LOCALHOST", 21525); no suffix -> port None."""
    if host.endswith(")") and "(" in host:
        name, _, port = host[:-1].rpartition("(")
        if port.isascii() and port.isdigit() and int(port) <= 65535:
            return name, int(port)
        raise ProtocolError(f"Prospero host {host!r} has a malformed port")
    return host, None


@dataclass(slots=True)
class Attribute:
    applies_to: str
    namespace: str
    name: str
    value_type: str
    values: list[str]
    nesting: int = 0
    link: Link | None = None


@dataclass(slots=True)
class Link:
    """One LINK line (target before name, as servers write it)."""

    flavour: str  # L normal, U union
    target: str  # FILE, DIRECTORY, EXTERNAL, SYMBOLIC, ...
    name: str
    host_type: str
    host: str
    hsoname_type: str
    hsoname: str
    version: str
    dest_exp: str | None = None
    remote_id: str | None = None
    attributes: list[Attribute] = field(default_factory=list)

    def access_methods(self) -> list[list[str]]:
        return [a.values for a in self.attributes if a.name == "ACCESS-METHOD" and a.nesting == 0]


@dataclass
class Forwarded:
    host_type: str
    host: str
    hsoname_type: str
    hsoname: str
    version: str


@dataclass
class Reply:
    """Everything one reply message said, in a form the handler can decide on."""

    links: list[Link] = field(default_factory=list)
    attributes: list[Attribute] = field(default_factory=list)  # applying to the object asked about
    none_found: bool = False
    failure: tuple[str, str] | None = None  # (code, text)
    error: str | None = None
    forwarded: Forwarded | None = None
    unresolved: list[str] | None = None
    version: str | None = None
    version_refused: str | None = None
    successes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    def values(self, name: str) -> list[list[str]]:
        return [a.values for a in self.attributes if a.name == name and a.nesting == 0]


def _rest(tokens: list[bytes], start: int) -> str:
    return " ".join(text(t) for t in tokens[start:])


def _shown(tokens: list[bytes]) -> str:
    return " ".join(text(t) for t in tokens)


class _Names:
    """Shares the str of short values that repeat on every line (FILE, INTERNET-D, the host)."""

    def __init__(self) -> None:
        self._known: dict[bytes, str] = {}

    def __call__(self, token: bytes) -> str:
        found = self._known.get(token)
        if found is None:
            found = text(token)
            if len(token) <= 64 and len(self._known) < 4096:
                self._known[token] = found
        return found


def parse_link(tokens: list[bytes], names: _Names | None = None) -> Link:
    """The body of a LINK line (after the keyword)."""
    if len(tokens) < 8:
        raise ProtocolError(f"LINK line has {len(tokens)} fields, 8 expected: {_shown(tokens)!r}")
    share = names or text
    link = Link(share(tokens[0]), share(tokens[1]), text(tokens[2]), share(tokens[3]), share(tokens[4]),
                share(tokens[5]), text(tokens[6]), share(tokens[7]))  # fmt: skip
    rest = [text(t) for t in tokens[8:]]
    if len(rest) >= 2 and rest[0] == "DEST-EXP":
        link.dest_exp = rest[1]
    elif len(rest) == 1 and rest[0].isdigit():
        link.remote_id = rest[0]  # version-1 "magic number"
    return link


def parse_attribute(keyword: str, tokens: list[bytes], names: _Names | None = None) -> Attribute:
    """An ATTRIBUTE line body; `keyword` carries the nesting marks (`ATTRIBUTE>>`)."""
    nesting = len(keyword) - len("ATTRIBUTE")
    if len(tokens) < 3:
        raise ProtocolError(f"ATTRIBUTE line is too short: {_shown(tokens)!r}")
    share = names or text
    applies_to, namespace, name = (share(t) for t in tokens[:3])
    rest = tokens[3:]
    value_type = "SEQUENCE"
    if namespace == "FIELD" and name in _WELL_KNOWN_FIELDS:
        if len(rest) > 1 and text(rest[0]) in ("SEQUENCE", "ASCII"):
            rest = rest[1:]
    elif rest and text(rest[0]) in _VALUE_TYPES:
        value_type = text(rest[0])
        rest = rest[1:]
    elif rest:
        raise ProtocolError(f"ATTRIBUTE {name} has an unknown value type {text(rest[0])!r}")
    if value_type == "ASCII":
        value_type = "SEQUENCE"
    attribute = Attribute(applies_to, namespace, name, value_type, [share(t) for t in rest], nesting)
    if value_type == "LINK":
        attribute.link = parse_link(rest, names)
    return attribute


def interpret(reply: Reply, tokens: list[bytes], names: _Names | None = None) -> None:
    """Add one reply line to `reply`; a line that cannot be read becomes a warning."""
    keyword = text(tokens[0])
    try:
        _interpret(reply, keyword, tokens[1:], tokens, names)
    except ProtocolError as error:
        reply.warnings.append(f"unreadable line ignored: {error}")


def _interpret(reply: Reply, keyword: str, body: list[bytes], tokens: list[bytes], names: _Names | None) -> None:
    if keyword == "LINK":
        reply.links.append(parse_link(body, names))
    elif keyword.startswith("ATTRIBUTE") and set(keyword[9:]) <= {">"}:
        attribute = parse_attribute(keyword, body, names)
        if reply.links:  # in a listing, attribute lines describe the link just read
            reply.links[-1].attributes.append(attribute)
        else:
            reply.attributes.append(attribute)
    elif keyword == "ID" and reply.links and len(body) >= 2:
        reply.links[-1].remote_id = _rest(body, 1)
    elif keyword == "NONE-FOUND":
        reply.none_found = True
    elif keyword == "FAILURE":
        reply.failure = (text(body[0]) if body else "", _rest(body, 1))
    elif keyword == "ERROR":
        reply.error = _rest(body, 0)
    elif keyword == "WARNING":
        reply.warnings.append(_rest(body, 0))
    elif keyword == "SUCCESS":
        reply.successes.append(_rest(body, 0))
    elif keyword == "UNRESOLVED":
        reply.unresolved = [text(t) for t in body]
    elif keyword == "FORWARDED":
        if len(body) < 5:
            raise ProtocolError(f"FORWARDED line has {len(body)} fields, 5 expected")
        reply.forwarded = Forwarded(*(text(t) for t in body[:5]))
    elif keyword == "VERSION":
        reply.version = _rest(body, 0)
    elif keyword == "VERSION-NOT-SUPPORTED":
        reply.version_refused = _rest(body, 0)
    else:
        reply.ignored.append(_shown(tokens))


class ReplyReader:
    """A reply as it arrives: `feed` each chunk, then `finish` for the `Reply`.

    Every line kept (a link, an attribute, a warning...) counts against
    `max_entries`; the whole reply against `max_bytes`, and so does what the
    kept lines hold in memory (`HELD_COST` each plus twice their text: a
    listing of fat names is bounded in memory, not only in bytes); one line
    against `max_line`.  `lines` keeps the first `keep_lines` lines for the
    trace.
    """

    def __init__(
        self,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_line: int = DEFAULT_MAX_LINE,
        keep_lines: int = 0,
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_line = max_line
        self.keep_lines = keep_lines
        self.reply = Reply()
        self.size = 0
        self.count = 0
        #: What the lines kept so far hold in memory, charged against `max_bytes` too.
        self.held = 0
        #: The first `keep_lines` lines as tokens (for the protocol trace).
        self.lines: list[list[bytes]] = []
        self._pending = b""
        self._names = _Names()

    def feed(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.max_bytes:
            raise LimitExceeded("bytes in one Prospero reply", self.max_bytes, "listing_bytes")
        self._pending = self._scan(self._pending + data if self._pending else data, final=False)
        if len(self._pending) > self.max_line:
            raise LimitExceeded("bytes in one line of a Prospero reply", self.max_line, "line_bytes")

    def finish(self) -> Reply:
        self._pending = self._scan(self._pending, final=True)
        return self.reply

    def _scan(self, data: bytes, final: bool) -> bytes:
        at, end = 0, len(data)
        while at < end:
            found = _LINE_END.search(data, at)
            if found is not None and b"'" not in data[at : found.start()]:
                # The common case: no quote, so the line ends at the first line end.
                self._line([token for token in data[at : found.start()].replace(b"\t", b" ").split(b" ") if token])
                at = found.end()
                continue
            if found is None and not final:
                break
            scanned = _scan_line(data, at, final)
            if scanned is None:
                break
            tokens, at = scanned
            self._line(tokens)
        return data[at:]

    def _line(self, tokens: list[bytes]) -> None:
        if not tokens:
            return
        size = sum(len(token) for token in tokens)
        if size > self.max_line:
            raise LimitExceeded("bytes in one line of a Prospero reply", self.max_line, "line_bytes")
        self.count += 1
        if self.count > self.max_entries:
            raise LimitExceeded("lines (links, attributes) in one Prospero reply", self.max_entries, "listing_entries")
        self.held += HELD_COST + 2 * size
        if self.held > self.max_bytes:
            raise LimitExceeded("bytes of a Prospero reply (as held in memory)", self.max_bytes, "listing_bytes")
        if len(self.lines) < self.keep_lines:
            self.lines.append(tokens)
        interpret(self.reply, tokens, self._names)


def parse_reply(
    message: bytes,
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_line: int = DEFAULT_MAX_LINE,
) -> Reply:
    """Interpret a whole reply message; `LimitExceeded` past a cap, warnings for unreadable lines."""
    reader = ReplyReader(max_entries=max_entries, max_bytes=max_bytes, max_line=max_line)
    reader.feed(message)
    return reader.finish()
