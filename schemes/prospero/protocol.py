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
from dataclasses import dataclass, field

from fetcher.errors import ProtocolError, URLError
from fetcher.url import to_bytes

SOFTWARE_ID = "fetcher"
#: A listing or object-info reply larger than this is refused (memory bound).
MAX_REPLY = 64 * 1024 * 1024

_QUOTE_FROM = frozenset(b" \t\f\v\n\r/'+,")
_BLANKS = frozenset(b" \t")
# FIELD attributes whose value-type token the server leaves out.
_WELL_KNOWN_FIELDS = frozenset(
    {
        "ACCESS-METHOD", "BASE-TYPE", "CLOSURE", "DEST-EXP", "FILTER", "HOST", "HOST-TYPE", "HSONAME",
        "HSONAME-TYPE", "ID", "LINK-TYPE", "NAME-COMPONENT", "OWNER", "TARGET", "TTL", "VERSION",
    }
)  # fmt: skip
_VALUE_TYPES = frozenset({"SEQUENCE", "ASCII", "LINK", "FILTER"})


def text(token: bytes) -> str:
    """A token as str (non-UTF-8 octets as surrogates, the URL module's convention)."""
    return token.decode("utf-8", "surrogateescape")


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


# -- reading ------------------------------------------------------------------


def tokenize(message: bytes) -> list[list[bytes]]:
    """Split a message into lines of tokens, honouring quotes; blank lines vanish."""
    lines: list[list[bytes]] = []
    tokens: list[bytes] = []
    token = bytearray()
    in_token = quoted = False
    at, end = 0, len(message)
    while at < end:
        octet = message[at]
        if quoted:
            if octet == 0x27:
                if at + 1 < end and message[at + 1] == 0x27:
                    token.append(0x27)
                    at += 1
                else:
                    quoted = False
            else:
                token.append(octet)
        elif octet == 0x27:
            quoted = in_token = True
        elif octet in _BLANKS or octet in (0x0A, 0x0D):
            if in_token:
                tokens.append(bytes(token))
                token.clear()
                in_token = False
            if octet in (0x0A, 0x0D) and tokens:
                lines.append(tokens)
                tokens = []
        else:
            token.append(octet)
            in_token = True
        at += 1
    if in_token:
        tokens.append(bytes(token))
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


@dataclass
class Attribute:
    applies_to: str
    namespace: str
    name: str
    value_type: str
    values: list[str]
    nesting: int = 0
    link: Link | None = None


@dataclass
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


def parse_link(tokens: list[bytes]) -> Link:
    """The body of a LINK line (after the keyword)."""
    if len(tokens) < 8:
        raise ProtocolError(f"LINK line has {len(tokens)} fields, 8 expected: {_shown(tokens)!r}")
    fields = [text(t) for t in tokens]
    flavour, target, name, host_type, host, hsoname_type, hsoname, version = fields[:8]
    link = Link(flavour, target, name, host_type, host, hsoname_type, hsoname, version)
    rest = fields[8:]
    if len(rest) >= 2 and rest[0] == "DEST-EXP":
        link.dest_exp = rest[1]
    elif len(rest) == 1 and rest[0].isdigit():
        link.remote_id = rest[0]  # version-1 "magic number"
    return link


def parse_attribute(keyword: str, tokens: list[bytes]) -> Attribute:
    """An ATTRIBUTE line body; `keyword` carries the nesting marks (`ATTRIBUTE>>`)."""
    nesting = len(keyword) - len("ATTRIBUTE")
    if len(tokens) < 3:
        raise ProtocolError(f"ATTRIBUTE line is too short: {_shown(tokens)!r}")
    applies_to, namespace, name = (text(t) for t in tokens[:3])
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
    attribute = Attribute(applies_to, namespace, name, value_type, [text(t) for t in rest], nesting)
    if value_type == "LINK":
        attribute.link = parse_link(rest)
    return attribute


def parse_reply(message: bytes) -> Reply:
    """Interpret a reply message; raise `ProtocolError` only for what cannot be read at all."""
    if len(message) > MAX_REPLY:
        raise ProtocolError(f"Prospero reply of more than {MAX_REPLY} bytes refused")
    reply = Reply()
    for tokens in tokenize(message):
        keyword = text(tokens[0])
        body = tokens[1:]
        try:
            _interpret(reply, keyword, body, tokens)
        except ProtocolError as error:
            reply.warnings.append(f"unreadable line ignored: {error}")
    return reply


def _interpret(reply: Reply, keyword: str, body: list[bytes], tokens: list[bytes]) -> None:
    if keyword == "LINK":
        reply.links.append(parse_link(body))
    elif keyword.startswith("ATTRIBUTE") and set(keyword[9:]) <= {">"}:
        attribute = parse_attribute(keyword, body)
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
    rest of the reply (a FAILURE instead of data, warnings...).
    """

    def __init__(self) -> None:
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
        if self._kept > MAX_REPLY:
            raise ProtocolError(f"Prospero reply of more than {MAX_REPLY} bytes refused")
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
        if self._tokens:
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
            try:
                _interpret(reply, text(tokens[0]), tokens[1:], tokens)
            except ProtocolError as error:
                reply.warnings.append(f"unreadable line ignored: {error}")
        return reply
