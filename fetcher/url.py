"""RFC 1738 URLs: parse text into one typed value per scheme, and back.

The parser splits on reserved characters *before* percent-decoding (RFC 1738
§2.2: "the reserved characters shall never be arbitrarily encoded and
decoded"), so `%2F` inside an FTP segment stays inside that segment. Decoded
text is `str`; octets that are not UTF-8 survive as lone surrogates
(`errors="surrogateescape"`), so every component round-trips byte for byte:
`to_bytes(component)` gives back the octets that go on the wire.

The module is written for speed (the bulk path parses thousands of URLs): one
C-level scan rejects bad characters, and the rest is `str` methods and
pre-compiled patterns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import quote as _quote
from urllib.parse import unquote as _unquote

from .errors import URLError

__all__ = [
    "DEFAULT_PORTS",
    "URL",
    "FileURL",
    "FtpURL",
    "GenericURL",
    "GopherURL",
    "HttpURL",
    "MailtoURL",
    "NewsURL",
    "NntpURL",
    "ProsperoURL",
    "TelnetURL",
    "WaisURL",
    "join",
    "parse_url",
    "to_bytes",
    "unwrap",
]

DEFAULT_PORTS: dict[str, int] = {
    "ftp": 21,
    "ftps": 990,
    "http": 80,
    "https": 443,
    "gopher": 70,
    "gophers": 70,
    "news": 119,
    "nntp": 119,
    "nntps": 563,
    "snews": 563,
    "telnet": 23,
    "wais": 210,
    "prospero": 1525,
}

# Anything outside RFC 1738's xchar (plus the "national" characters that real
# URLs use raw, such as "~"), or a "%" that does not start an escape.
_BAD_CHAR = re.compile(r"[^A-Za-z0-9$\-_.+!*'(),;/?:@&=%{}|\\^~\[\]`]|%(?![0-9A-Fa-f]{2})")
_SCHEME = re.compile(r"[A-Za-z0-9+.\-]+")
_HOSTNAME = re.compile(r"(?:[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?\.)*[a-z](?:[a-z0-9\-]*[a-z0-9])?")
_IPV4 = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)")
_DIGITS = re.compile(r"[0-9]+")
_NEWSGROUP = re.compile(r"[A-Za-z][A-Za-z0-9\-.+_]*")
_WHITESPACE = re.compile(r"\s+")
_HYPHEN_BREAK = re.compile(r"-[ \t]*\r?\n\s*")
_TYPECODE = re.compile(r";[Tt][Yy][Pp][Ee]=([^/;]*)$")

# Characters left raw when a component is written back; everything else is
# percent-encoded.  Per RFC 1738 §5: uchar plus the component's extra set.
_UNRESERVED = "$-_.+!*'(),"
_SAFE_USER = _UNRESERVED + ";?&="
_SAFE_FSEGMENT = _UNRESERVED + "?:@&="
_SAFE_HSEGMENT = _UNRESERVED + ";:@&="
_SAFE_PSEGMENT = _UNRESERVED + "?:@&="
_SAFE_FIELD = _UNRESERVED + "?:@&"
_SAFE_GOPHER = _UNRESERVED + ";/:@&="
_SAFE_NEWS = _UNRESERVED + ";/?:&=@"
_SAFE_WAIS = _UNRESERVED.replace("+", "")
_SAFE_MAILTO = _UNRESERVED + "@"


def to_bytes(component: str) -> bytes:
    """The octets a decoded component stands for (inverse of the decoding)."""
    return component.encode("utf-8", "surrogateescape")


def _decode(text: str) -> str:
    if "%" not in text:
        return text
    return _unquote(text, encoding="utf-8", errors="surrogateescape")


def _encode(text: str, safe: str) -> str:
    return _quote(text, safe=safe, encoding="utf-8", errors="surrogateescape")


class URL:
    """Base of every parsed URL: an immutable value with `scheme` and `port`.

    Subclasses list their decoded fields in `_fields`; equality, hashing and
    `repr` are defined over those fields.
    """

    __slots__ = ("fragment", "scheme")
    _fields: ClassVar[tuple[str, ...]] = ()
    scheme: str
    fragment: str | None

    def __init__(self, **values: Any) -> None:
        for name in self._all_fields():
            object.__setattr__(self, name, values.get(name))

    @classmethod
    def _all_fields(cls) -> tuple[str, ...]:
        return ("scheme", *cls._fields, "fragment")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; use .replace()")

    def replace(self, **changes: Any) -> URL:
        values = {name: getattr(self, name) for name in self._all_fields()}
        values.update(changes)
        return type(self)(**values)

    @property
    def default_port(self) -> int | None:
        return DEFAULT_PORTS.get(self.scheme)

    def _key(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._all_fields())

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, *tuple(_hashable(v) for v in self._key())))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._all_fields())
        return f"{type(self).__name__}({inner})"

    def _tail(self) -> str:
        return "" if self.fragment is None else "#" + self.fragment

    def _authority(self) -> str:
        host: str = getattr(self, "host")  # noqa: B009 - not every URL has a host
        if ":" in host:
            host = f"[{host}]"
        port = getattr(self, "port")  # noqa: B009
        if port is not None and port != self.default_port:
            host = f"{host}:{port}"
        user = getattr(self, "user", None)
        if user is None:
            return host
        login = _encode(user, _SAFE_USER)
        password = getattr(self, "password", None)
        if password is not None:
            login += ":" + _encode(password, _SAFE_USER)
        return f"{login}@{host}"


def _hashable(value: object) -> object:
    if isinstance(value, dict):
        return tuple(value.items())
    return value


class FtpURL(URL):
    """`ftp://[user[:password]@]host[:port]/cwd1/.../name[;type=x]` (§3.2)."""

    __slots__ = ("cwd", "host", "name", "password", "port", "typecode", "user")
    _fields = ("user", "password", "host", "port", "cwd", "name", "typecode")
    user: str | None
    password: str | None
    host: str
    port: int
    cwd: tuple[str, ...]
    name: str
    typecode: str | None

    def __str__(self) -> str:
        path = "/".join(_encode(part, _SAFE_FSEGMENT) for part in (*self.cwd, self.name))
        if self.typecode is not None:
            path += ";type=" + self.typecode
        return f"{self.scheme}://{self._authority()}/{path}{self._tail()}"


class HttpURL(URL):
    """`http://host[:port]/path?search` (§3.3); `path` stays percent-encoded.

    `user:password@` is accepted as an extension for Basic authentication:
    RFC 1738 §3.3 does not allow a user name or password in HTTP URLs.
    """

    __slots__ = ("host", "password", "path", "port", "search", "user")
    _fields = ("user", "password", "host", "port", "path", "search")
    user: str | None
    password: str | None
    host: str
    port: int
    path: str
    search: str | None

    @property
    def target(self) -> str:
        """The request-target exactly as written in the URL."""
        target = "/" + self.path
        if self.search is not None:
            target += "?" + self.search
        return target

    def __str__(self) -> str:
        return f"{self.scheme}://{self._authority()}{self.target}{self._tail()}"


class GopherURL(URL):
    """`gopher://host[:port]/<gtype><selector>%09<search>%09<plus>` (§3.4)."""

    __slots__ = ("gtype", "host", "plus", "port", "search", "selector")
    _fields = ("host", "port", "gtype", "selector", "search", "plus")
    host: str
    port: int
    gtype: str
    selector: str
    search: str | None
    plus: str | None

    def __str__(self) -> str:
        path = self.gtype + _encode(self.selector, _SAFE_GOPHER)
        if self.search is not None or self.plus is not None:
            path += "%09" + _encode(self.search or "", _SAFE_GOPHER)
        if self.plus is not None:
            path += "%09" + _encode(self.plus, _SAFE_GOPHER)
        return f"{self.scheme}://{self._authority()}/{path}{self._tail()}"


class NewsURL(URL):
    """`news:group`, `news:message-id`, `news:*` (§3.6).

    `host`/`port` are None unless the RFC 5538 form `news://host/...` is used.
    """

    __slots__ = ("group", "host", "message_id", "port")
    _fields = ("host", "port", "group", "message_id")
    host: str | None
    port: int | None
    group: str | None
    message_id: str | None

    def __str__(self) -> str:
        part = self.group if self.group is not None else _encode(self.message_id or "", _SAFE_NEWS)
        if self.host is None:
            return f"{self.scheme}:{part}{self._tail()}"
        return f"{self.scheme}://{self._authority()}/{part}{self._tail()}"


class NntpURL(URL):
    """`nntp://host[:port]/group[/article]` (§3.7)."""

    __slots__ = ("article", "group", "host", "port")
    _fields = ("host", "port", "group", "article")
    host: str
    port: int
    group: str
    article: int | None

    def __str__(self) -> str:
        tail = "" if self.article is None else f"/{self.article}"
        return f"{self.scheme}://{self._authority()}/{self.group}{tail}{self._tail()}"


class TelnetURL(URL):
    """`telnet://[user[:password]@]host[:port]/` (§3.8); an advisory."""

    __slots__ = ("host", "password", "port", "user")
    _fields = ("user", "password", "host", "port")
    user: str | None
    password: str | None
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.scheme}://{self._authority()}/{self._tail()}"


class WaisURL(URL):
    """The three `wais://` forms of §3.9.

    `wpath` is the opaque document id exactly as written in the URL (still
    encoded); only the WAIS DocID decoder may take it apart (wais.md §8.3).
    """

    __slots__ = ("database", "host", "port", "search", "wpath", "wtype")
    _fields = ("host", "port", "database", "search", "wtype", "wpath")
    host: str
    port: int
    database: str
    search: str | None
    wtype: str | None
    wpath: str | None

    def __str__(self) -> str:
        path = _encode(self.database, _SAFE_WAIS)
        if self.wtype is not None:
            path += "/" + _encode(self.wtype, _SAFE_WAIS) + "/" + (self.wpath or "")
        elif self.search is not None:
            path += "?" + _encode(self.search, _SAFE_WAIS + " ").replace(" ", "+")
        return f"{self.scheme}://{self._authority()}/{path}{self._tail()}"


class FileURL(URL):
    """`file://host/path` (§3.10); the local file is "/" + path."""

    __slots__ = ("host", "path")
    _fields = ("host", "path")
    host: str
    path: str

    @property
    def port(self) -> None:
        return None

    @property
    def is_local(self) -> bool:
        return self.host in ("", "localhost")

    def __str__(self) -> str:
        path = "/".join(_encode(part, _SAFE_FSEGMENT + ";") for part in self.path.split("/"))
        return f"{self.scheme}://{self.host}/{path}{self._tail()}"


class ProsperoURL(URL):
    """`prospero://host[:port]/hsoname;field=value...` (§3.11)."""

    __slots__ = ("fields", "host", "hsoname", "port")
    _fields = ("host", "port", "hsoname", "fields")
    host: str
    port: int
    hsoname: str
    fields: dict[str, str]

    def __str__(self) -> str:
        path = "/".join(_encode(part, _SAFE_PSEGMENT) for part in self.hsoname.split("/"))
        for name, value in self.fields.items():
            path += f";{_encode(name, _SAFE_FIELD)}={_encode(value, _SAFE_FIELD)}"
        return f"{self.scheme}://{self._authority()}/{path}{self._tail()}"


class MailtoURL(URL):
    """`mailto:addr-spec` (§3.5); an advisory."""

    __slots__ = ("address",)
    _fields = ("address",)
    address: str

    @property
    def port(self) -> None:
        return None

    def __str__(self) -> str:
        return f"mailto:{_encode(self.address, _SAFE_MAILTO)}{self._tail()}"


class GenericURL(URL):
    """A scheme fetcher has no grammar for (§5 `otherurl`): kept as written."""

    __slots__ = ("host", "password", "path", "port", "schemepart", "user")
    _fields = ("schemepart", "user", "password", "host", "port", "path")
    schemepart: str
    user: str | None
    password: str | None
    host: str | None
    port: int | None
    path: str | None

    def __str__(self) -> str:
        return f"{self.scheme}:{self.schemepart}{self._tail()}"


# --------------------------------------------------------------------------
# Parsing


def unwrap(text: str) -> str:
    """Strip the appendix wrappers: `<URL:...>`, `URL:`, and line breaks.

    Inside `<...>` all whitespace is ignored (long URLs broken across lines);
    a line break right after a hyphen keeps the hyphen (the appendix says it
    "may or may not" belong; keeping it loses nothing the user typed).
    """
    text = text.strip()
    if text.startswith("<"):
        if not text.endswith(">"):
            raise URLError("the '<' wrapper is not closed by '>'", part="wrapper", position=0, url=text)
        text = text[1:-1]
        text = _HYPHEN_BREAK.sub("-", text)
        text = _WHITESPACE.sub("", text)
    if text[:4].upper() == "URL:":
        text = text[4:]
    return text


def parse_url(text: str) -> URL:
    """Parse one URL; raise `URLError` naming the offending part."""
    original = text
    if text and (text[0] in " \t\r\n<" or text[-1] in " \t\r\n" or text[:4].upper() == "URL:"):
        text = unwrap(text)
    bad = _BAD_CHAR.search(text)
    if bad is not None and (text[bad.start()] != "#" or _BAD_CHAR.search(text, bad.start() + 1)):
        at = bad.start() if text[bad.start()] != "#" else _BAD_CHAR.search(text, bad.start() + 1).start()  # type: ignore[union-attr]
        raise _bad_character(original, text, at)
    colon = text.find(":")
    if colon <= 0 or not _SCHEME.fullmatch(text, 0, colon):
        raise URLError(
            f"no scheme: expected 'scheme:' at the start of {text!r}",
            part="scheme",
            position=0,
            hint="write a full URL such as ftp://host/path",
            url=original,
        )
    scheme = text[:colon].lower()
    rest = text[colon + 1 :]
    fragment = None
    hash_at = rest.find("#")
    if hash_at >= 0:
        fragment = rest[hash_at + 1 :]
        rest = rest[:hash_at]
    parser = _PARSERS.get(scheme, _parse_generic)
    try:
        return parser(scheme, rest, fragment)
    except URLError as error:
        if error.url is None:
            error.url = original
        raise


def _bad_character(original: str, text: str, at: int) -> URLError:
    char = text[at]
    if char == "%":
        what = f"'%' at position {at} does not start an escape (%XX with two hex digits)"
        part = "escape"
    elif char == " ":
        what = f"raw space at position {at}"
        part = "character"
    elif char == "#":
        what = f"a second '#' at position {at}"
        part = "fragment"
    elif ord(char) < 0x20 or ord(char) == 0x7F:
        what = f"raw control character {char!r} at position {at}"
        part = "character"
    elif ord(char) > 0x7F:
        what = f"raw non-ASCII character {char!r} at position {at}"
        part = "character"
    else:
        what = f"character {char!r} at position {at} is not allowed raw"
        part = "character"
    return URLError(
        what,
        part=part,
        position=at,
        hint=f"percent-encode it as %{ord(char):02X}" if ord(char) < 0x80 else "percent-encode its UTF-8 octets",
        url=original,
    )


def _split_login(scheme: str, rest: str, path_starts: str = "/") -> tuple[str, str | None]:
    """Split `//login/urlpath` into the login and the url-path (None if absent)."""
    if not rest.startswith("//"):
        raise URLError(f"{scheme}: URLs need '//' and a host after '{scheme}:'", part="host", position=len(scheme) + 1)
    end = len(rest)
    for delimiter in path_starts:
        at = rest.find(delimiter, 2)
        if 0 <= at < end:
            end = at
    if end == len(rest):
        return rest[2:], None
    return rest[2:end], rest[end:]


def _parse_login(
    scheme: str, login: str, *, userinfo: bool, host_required: bool = True
) -> tuple[str | None, str | None, str, int | None]:
    """`[user[:password]@]host[:port]` -> decoded user, password, host, port."""
    user = password = None
    at = login.find("@")
    if at >= 0:
        if not userinfo:
            raise URLError(f"{scheme}: URLs take no user name or password", part="user")
        if login.find("@", at + 1) >= 0:
            raise URLError(
                "the login contains more than one '@'", part="user", hint="encode '@' in a user name or password as %40"
            )
        info = login[:at]
        login = login[at + 1 :]
        colon = info.find(":")
        if colon >= 0:
            user, password = _decode(info[:colon]), _decode(info[colon + 1 :])
        else:
            user = _decode(info)
    host, port = _parse_hostport(scheme, login, host_required)
    return user, password, host, port


def _parse_hostport(scheme: str, hostport: str, host_required: bool = True) -> tuple[str, int | None]:
    port_text = None
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise URLError("IPv6 literal is missing its closing ']'", part="host")
        host = _check_ipv6(hostport[1:close])
        after = hostport[close + 1 :]
        if after:
            if not after.startswith(":"):
                raise URLError(f"unexpected {after!r} after the IPv6 literal", part="host")
            port_text = after[1:]
    else:
        colon = hostport.rfind(":")
        if colon >= 0:
            host, port_text = hostport[:colon], hostport[colon + 1 :]
        else:
            host = hostport
        host = _check_host(host, host_required)
    if port_text is None:
        return host, None
    return host, _check_port(port_text)


def _check_host(host: str, required: bool) -> str:
    if not host:
        if required:
            raise URLError("the host is empty", part="host", hint="name a host: scheme://host/...")
        return host
    lowered = host.lower()
    match = _IPV4.fullmatch(lowered)
    if match is not None:
        if any(int(octet) > 255 for octet in match.groups()):
            raise URLError(f"host {host!r}: IPv4 octets are 0-255", part="host")
        return lowered
    if _HOSTNAME.fullmatch(lowered) is None:
        raise URLError(
            f"host {host!r} is not a valid hostname or IPv4 address",
            part="host",
            hint="labels are letters, digits and inner hyphens; the last label starts with a letter",
        )
    return lowered


def _check_ipv6(literal: str) -> str:
    import ipaddress

    try:
        return str(ipaddress.IPv6Address(literal))
    except ValueError:
        raise URLError(f"host [{literal}] is not a valid IPv6 address", part="host") from None


def _check_port(text: str) -> int:
    if not text:
        raise URLError("the port after ':' is empty", part="port", hint="remove the ':' or give a port number")
    if len(text) > 5 or _DIGITS.fullmatch(text) is None:
        raise URLError(f"port {text!r} is not a number from 0 to 65535", part="port")
    port = int(text)
    if port > 65535:
        raise URLError(f"port {text!r} is out of range (0-65535)", part="port")
    return port


def _default(scheme: str, port: int | None) -> int:
    return DEFAULT_PORTS[scheme] if port is None else port


def _parse_ftp(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    user, password, host, port = _parse_login(scheme, login, userinfo=True)
    typecode = None
    if path is None:
        cwd: tuple[str, ...] = ()
        name = ""
    else:
        path = path[1:]
        semicolon = path.rfind(";")
        if semicolon >= 0:
            match = _TYPECODE.search(path, semicolon)
            if match is not None:
                code = match.group(1)
                if len(code) != 1 or code not in "aidAID":
                    raise URLError(
                        f"typecode {_decode(code)!r} is not a, i or d",
                        part="typecode",
                        hint=";type=a (text), ;type=i (binary) or ;type=d (directory listing)",
                    )
                typecode = code.lower()
                path = path[:semicolon]
        segments = path.split("/")
        name = _decode(segments.pop())
        cwd = tuple(_decode(segment) for segment in segments) if segments else ()
    return FtpURL(
        scheme=scheme,
        user=user,
        password=password,
        host=host,
        port=_default(scheme, port),
        cwd=cwd,
        name=name,
        typecode=typecode,
        fragment=fragment,
    )


def _parse_http(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest, "/?")
    user, password, host, port = _parse_login(scheme, login, userinfo=True)
    search = None
    if path is None:
        path = ""
    else:
        question = path.find("?")
        if question >= 0:
            search = path[question + 1 :]
            path = path[:question]
        path = path[1:] if path.startswith("/") else path
    return HttpURL(
        scheme=scheme,
        user=user,
        password=password,
        host=host,
        port=_default(scheme, port),
        path=path,
        search=search,
        fragment=fragment,
    )


def _parse_gopher(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    _, _, host, port = _parse_login(scheme, login, userinfo=False)
    gtype, selector, search, plus = "1", "", None, None
    gopher_path = _decode(path[1:]) if path else ""
    if gopher_path:
        gtype = gopher_path[0]
        if ord(gtype) < 0x21 or ord(gtype) == 0x7F:
            raise URLError(
                f"gopher type {gtype!r} is a control character",
                part="gtype",
                hint="the type is one printable character",
            )
        fields = gopher_path[1:].split("\t", 2)
        selector = fields[0]
        if len(fields) > 1:
            search = fields[1]
        if len(fields) > 2:
            plus = fields[2]
    return GopherURL(
        scheme=scheme,
        host=host,
        port=_default(scheme, port),
        gtype=gtype,
        selector=selector,
        search=search,
        plus=plus,
        fragment=fragment,
    )


def _parse_news(scheme: str, rest: str, fragment: str | None) -> URL:
    host = None
    port = None
    if rest.startswith("//"):
        login, path = _split_login(scheme, rest)
        _, _, host, explicit = _parse_login(scheme, login, userinfo=False)
        port = _default(scheme, explicit)
        rest = path[1:] if path else ""
    if not rest:
        raise URLError(
            f"{scheme}: URL names no newsgroup or message-id", part="group", hint="news:comp.misc or news:id@host"
        )
    if "@" in rest:
        message_id = _decode(rest)
        if message_id.startswith("<") and message_id.endswith(">"):
            message_id = message_id[1:-1]
        return NewsURL(scheme=scheme, host=host, port=port, group=None, message_id=message_id, fragment=fragment)
    if rest != "*" and _NEWSGROUP.fullmatch(rest) is None:
        raise URLError(
            f"{rest!r} is neither a newsgroup name nor a message-id (which needs '@')",
            part="group",
            hint="group names start with a letter and hold letters, digits, '-', '.', '+', '_'",
        )
    return NewsURL(scheme=scheme, host=host, port=port, group=rest, message_id=None, fragment=fragment)


def _parse_nntp(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    _, _, host, port = _parse_login(scheme, login, userinfo=False)
    parts = path[1:].split("/") if path else [""]
    group = parts[0]
    if not group:
        raise URLError("nntp: URLs need a newsgroup: nntp://host/group[/article]", part="group")
    if _NEWSGROUP.fullmatch(group) is None:
        raise URLError(f"{_decode(group)!r} is not a newsgroup name", part="group")
    article = None
    if len(parts) > 2 or (len(parts) == 2 and parts[1] and _DIGITS.fullmatch(parts[1]) is None):
        raise URLError(
            f"article number {'/'.join(parts[1:])!r} is not digits", part="article", hint="nntp://host/group/123"
        )
    if len(parts) == 2 and parts[1]:
        article = int(parts[1])
    return NntpURL(
        scheme=scheme, host=host, port=_default(scheme, port), group=group, article=article, fragment=fragment
    )


def _parse_telnet(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    if path not in (None, "/"):
        raise URLError("telnet: URLs end after host:port (an optional '/')", part="path")
    user, password, host, port = _parse_login(scheme, login, userinfo=True)
    return TelnetURL(
        scheme=scheme, user=user, password=password, host=host, port=_default(scheme, port), fragment=fragment
    )


def _parse_wais(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest, "/?")
    _, _, host, port = _parse_login(scheme, login, userinfo=False)
    if not path or path == "/":
        raise URLError("wais: URLs need a database: wais://host/database", part="database")
    path = path[1:] if path.startswith("/") else path
    search = wtype = wpath = None
    question = path.find("?")
    slash = path.find("/")
    if question >= 0 and (slash < 0 or question < slash):
        search = _decode(path[question + 1 :].replace("+", " "))
        database = path[:question]
    elif slash >= 0:
        database = path[:slash]
        second = path.find("/", slash + 1)
        if second < 0:
            raise URLError("wais: document URLs are /database/wtype/wpath", part="wpath")
        wtype = _decode(path[slash + 1 : second])
        wpath = path[second + 1 :]
    else:
        database = path
    if not database:
        raise URLError("the wais database name is empty", part="database")
    return WaisURL(
        scheme=scheme,
        host=host,
        port=_default(scheme, port),
        database=_decode(database),
        search=search,
        wtype=wtype,
        wpath=wpath,
        fragment=fragment,
    )


def _parse_file(scheme: str, rest: str, fragment: str | None) -> URL:
    if rest.startswith("//"):
        login, path = _split_login(scheme, rest)
        host, port = _parse_hostport(scheme, login, host_required=False)
        if port is not None:
            raise URLError("file: URLs take no port", part="port")
        path = path[1:] if path else ""
    elif rest.startswith("/"):
        host, path = "", rest[1:]  # file:/path, a common shorthand for file:///path
    else:
        raise URLError("file: URLs are file://host/path or file:///path", part="path")
    return FileURL(scheme=scheme, host=host, path=_decode(path), fragment=fragment)


def _parse_prospero(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    _, _, host, port = _parse_login(scheme, login, userinfo=False)
    pieces = path[1:].split(";") if path else [""]
    fields: dict[str, str] = {}
    for spec in pieces[1:]:
        equals = spec.find("=")
        if equals <= 0:
            raise URLError(f"prospero field {_decode(spec)!r} is not name=value", part="field")
        fields[_decode(spec[:equals])] = _decode(spec[equals + 1 :])
    return ProsperoURL(
        scheme=scheme,
        host=host,
        port=_default(scheme, port),
        hsoname=_decode(pieces[0]),
        fields=fields,
        fragment=fragment,
    )


def _parse_mailto(scheme: str, rest: str, fragment: str | None) -> URL:
    if not rest:
        raise URLError("mailto: URL has no address", part="address")
    return MailtoURL(scheme=scheme, address=_decode(rest), fragment=fragment)


def _parse_generic(scheme: str, rest: str, fragment: str | None) -> URL:
    user = password = host = path = None
    port = None
    if rest.startswith("//"):
        login, path = _split_login(scheme, rest)
        user, password, host, port = _parse_login(scheme, login, userinfo=True, host_required=False)
    return GenericURL(
        scheme=scheme, schemepart=rest, user=user, password=password, host=host, port=port, path=path, fragment=fragment
    )


_PARSERS = {
    "ftp": _parse_ftp,
    "ftps": _parse_ftp,
    "http": _parse_http,
    "https": _parse_http,
    "gopher": _parse_gopher,
    "gophers": _parse_gopher,
    "news": _parse_news,
    "snews": _parse_news,
    "nntp": _parse_nntp,
    "nntps": _parse_nntp,
    "telnet": _parse_telnet,
    "wais": _parse_wais,
    "file": _parse_file,
    "prospero": _parse_prospero,
    "mailto": _parse_mailto,
}


# --------------------------------------------------------------------------
# Relative URLs (RFC 1808 §4, the W3C notes' "partial form")


def _split_generic(text: str) -> tuple[str | None, str | None, str, str | None, str | None]:
    """scheme, net_loc, path, query, fragment of RFC 1808 §2.4 (path keeps params)."""
    fragment = query = scheme = netloc = None
    hash_at = text.find("#")
    if hash_at >= 0:
        text, fragment = text[:hash_at], text[hash_at + 1 :]
    colon = text.find(":")
    if colon > 0 and _SCHEME.fullmatch(text, 0, colon):
        scheme, text = text[:colon].lower(), text[colon + 1 :]
    if text.startswith("//"):
        end = text.find("/", 2)
        end = len(text) if end < 0 else end
        netloc, text = text[2:end], text[end:]
    question = text.find("?")
    if question >= 0:
        text, query = text[:question], text[question + 1 :]
    return scheme, netloc, text, query, fragment


def _remove_dot_segments(path: str) -> str:
    segments = path.split("/")
    output: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
            continue
        if segment == ".." and output and output[-1] not in ("", ".."):
            output.pop()
            if last:
                output.append("")
            continue
        if segment == ".." and output == [""]:
            # Above the root: RFC 1808 leaves it; browsers drop it.  Drop it.
            if last:
                output.append("")
            continue
        output.append(segment)
    return "/".join(output)


def join(base: URL | str, reference: str) -> URL:
    """Resolve a partial URL against a base (RFC 1808 §4), then parse it."""
    base_text = str(base)
    reference = unwrap(reference) if reference[:1] in " <" or reference[:4].upper() == "URL:" else reference
    if not reference:
        return parse_url(base_text)
    r_scheme, r_netloc, r_path, r_query, r_fragment = _split_generic(reference)
    if r_scheme is not None:
        return parse_url(reference)
    b_scheme, b_netloc, b_path, b_query, _ = _split_generic(base_text)
    scheme, netloc, path, query = b_scheme, r_netloc, r_path, r_query
    if r_netloc is None:
        netloc = b_netloc
        if not r_path.startswith("/"):
            if not r_path:
                path = b_path
                if r_query is None:
                    query = b_query
            else:
                directory = b_path[: b_path.rfind("/") + 1] if "/" in b_path else "/"
                path = _remove_dot_segments(directory + r_path)
    text = f"{scheme}:"
    if netloc is not None:
        text += "//" + netloc
    text += path
    if query is not None:
        text += "?" + query
    if r_fragment is not None:
        text += "#" + r_fragment
    return parse_url(text)


def fields_of(url: URL) -> Mapping[str, object]:
    """The decoded fields of a URL as a mapping (for JSON output and tests)."""
    return {name: getattr(url, name) for name in url._all_fields()}
