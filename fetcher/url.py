"""RFC 1738 URLs: parse text into one typed value per scheme, and back.

The parser splits on reserved characters *before* percent-decoding (RFC 1738
§2.2: "the reserved characters shall never be arbitrarily encoded and
decoded"), so `%2F` inside an FTP segment stays inside that segment. Decoded
text is `str`; octets that are not UTF-8 survive as lone surrogates
(`errors="surrogateescape"`), so every component round-trips byte for byte:
`to_bytes(component)` gives back the octets that go on the wire.

Parsing has two routes that end in the same per-scheme constructors (`_ftp`,
`_http`, ...), which decode and check the split components:

* the fast route: one compiled pattern per scheme that accepts only the
  common, plainly valid shape (lower-case scheme, hostname or IPv4 address,
  no wrappers) and hands its groups to the constructor;
* the careful route (`_parse_slow`), taken whenever the fast pattern does not
  match: it unwraps `<URL:...>`, scans for bad characters, splits step by step
  and raises `URLError` naming the part and its position in the input.

The fast patterns accept a subset of what the careful route accepts and cut
it at the same places, so both give equal values (tests/test_url*.py check
this); anything unusual, valid or not, is decided by the careful route.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
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
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SCHEME = re.compile(r"[A-Za-z0-9+.\-]+")
# Labels are letter/digit runs joined by hyphens, so no label starts or ends
# with "-"; the top label starts with a letter (RFC 1738 §3.1, §5).
_LABEL = r"[A-Za-z0-9]+(?:-+[A-Za-z0-9]+)*"
_TOPLABEL = r"[A-Za-z][A-Za-z0-9]*(?:-+[A-Za-z0-9]+)*"
_HOSTNAME = re.compile(rf"(?:{_LABEL}\.)*{_TOPLABEL}")
_IPV4 = re.compile(r"([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)")
_DIGITS = re.compile(r"[0-9]+")
_NEWSGROUP = re.compile(r"[A-Za-z][A-Za-z0-9\-.+_]*")
_WHITESPACE = " \t\r\n\f\v"
_MAX_ARTICLE = 2**63 - 1

# Characters left raw when a component is written back; everything else is
# percent-encoded.  Per RFC 1738 §5: uchar plus the component's extra set.
_UNRESERVED = "$-_.+!*'(),"
_SAFE_USER = _UNRESERVED + ";?&="
_SAFE_FSEGMENT = _UNRESERVED + "?:@&="
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
    _safe_user: ClassVar[str] = _SAFE_USER
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
        login = _encode(user, self._safe_user)
        password = getattr(self, "password", None)
        if password is not None:
            login += ":" + _encode(password, self._safe_user)
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
    _safe_user = _SAFE_USER.replace("?", "")  # "?" would end the authority
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
        path = _encode(self.gtype, _SAFE_GOPHER) + _encode(self.selector, _SAFE_GOPHER)
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
        if self.group is not None:
            part = self.group
        else:
            message_id = self.message_id or ""
            if message_id[:1] == "<" and message_id[-1:] == ">":
                message_id = f"<{message_id}>"  # the parser strips one pair of brackets
            part = _encode(message_id, _SAFE_NEWS)
            if part.startswith("/"):
                part = "%2F" + part[1:]  # "news://" would start the host form
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
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}/{path}{self._tail()}"


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
# Construction from split components (shared by both parsing routes)


def _builder(cls: type[URL]) -> Any:
    """A mutable twin of `cls` with the same slots.

    The parser fills it with plain attribute stores and then assigns
    `__class__ = cls`: several times faster than `object.__setattr__` per
    field, while the public class stays immutable.
    """
    namespace = {"__slots__": cls.__slots__, "__setattr__": object.__setattr__, "_fields": cls._fields}
    return type(f"_{cls.__name__}Builder", (URL,), namespace)


_new = object.__new__
_FtpBuilder = _builder(FtpURL)
_HttpBuilder = _builder(HttpURL)
_GopherBuilder = _builder(GopherURL)
_NewsBuilder = _builder(NewsURL)
_NntpBuilder = _builder(NntpURL)
_TelnetBuilder = _builder(TelnetURL)
_WaisBuilder = _builder(WaisURL)
_FileBuilder = _builder(FileURL)
_ProsperoBuilder = _builder(ProsperoURL)
_MailtoBuilder = _builder(MailtoURL)

# The constructors take the components exactly as the fast patterns' groups
# give them: text cut from the URL, still percent-encoded; the host checked
# but in any case; the port as checked digits (or None).  The careful route
# calls them the same way once it has checked each piece.


def _port(scheme: str, digits: str | None) -> int:
    if digits is None:
        return DEFAULT_PORTS[scheme]
    port = int(digits)
    if port > 65535:
        raise URLError("port out of range", part="port")  # the careful route says it in full
    return port


def _ftp(
    scheme: str,
    user: str | None,
    password: str | None,
    host: str,
    port: str | None,
    path: str | None,
    typecode: str | None,
    fragment: str | None,
) -> URL:
    """`path` is the url-path after the "/" (None when absent), without `;type=`."""
    url = _new(_FtpBuilder)
    if path:
        segments = path.split("/")
        if "%" in path:
            segments = [_decode(segment) for segment in segments]
        url.name = segments.pop()
        url.cwd = tuple(segments)
    else:
        url.name = ""
        url.cwd = ()
    url.scheme = scheme
    url.user = user if user is None or "%" not in user else _decode(user)
    url.password = password if password is None or "%" not in password else _decode(password)
    url.host = host.lower()
    url.port = _port(scheme, port)
    url.typecode = None if typecode is None else typecode.lower()
    url.fragment = fragment
    url.__class__ = FtpURL
    return url  # type: ignore[no-any-return]


def _http(
    scheme: str,
    user: str | None,
    password: str | None,
    host: str,
    port: str | None,
    path: str | None,
    search: str | None,
    fragment: str | None,
) -> URL:
    """`path` starts with its "/" (None when absent)."""
    url = _new(_HttpBuilder)
    url.scheme = scheme
    url.user = user if user is None or "%" not in user else _decode(user)
    url.password = password if password is None or "%" not in password else _decode(password)
    url.host = host.lower()
    url.port = _port(scheme, port)
    url.path = path[1:] if path else ""
    url.search = search
    url.fragment = fragment
    url.__class__ = HttpURL
    return url  # type: ignore[no-any-return]


def _gopher(scheme: str, host: str, port: str | None, path: str | None, fragment: str | None, at: int = 0) -> URL:
    """`path` is the gopher-path after the "/"; `at` is where it starts, for errors."""
    url = _new(_GopherBuilder)
    url.search = url.plus = None
    if path:
        if "%" in path:
            path = _decode(path)
        gtype = path[0]
        if not "!" <= gtype <= "~":
            raise URLError(
                f"gopher type {gtype!r} is not one printable ASCII character",
                part="gtype",
                position=at,
                hint="the first character after 'host/' is the item type, such as 0, 1 or 7",
            )
        url.gtype = gtype
        if "\t" in path:
            fields = path[1:].split("\t", 2)
            url.selector = fields[0]
            url.search = fields[1]
            if len(fields) > 2:
                url.plus = fields[2]
        else:
            url.selector = path[1:]
    else:
        url.gtype = "1"
        url.selector = ""
    url.scheme = scheme
    url.host = host.lower()
    url.port = _port(scheme, port)
    url.fragment = fragment
    url.__class__ = GopherURL
    return url  # type: ignore[no-any-return]


def _news(
    scheme: str,
    group: str | None,
    message_id: str | None,
    fragment: str | None,
    host: str | None = None,
    port: str | None = None,
) -> URL:
    if message_id is not None:
        message_id = _decode(message_id)
        if message_id[:1] == "<" and message_id[-1:] == ">":
            message_id = message_id[1:-1]
    url = _new(_NewsBuilder)
    url.scheme = scheme
    url.host = None if host is None else host.lower()
    url.port = None if host is None else _port(scheme, port)
    url.group = group
    url.message_id = message_id
    url.fragment = fragment
    url.__class__ = NewsURL
    return url  # type: ignore[no-any-return]


def _nntp(scheme: str, host: str, port: str | None, group: str, article: str | None, fragment: str | None) -> URL:
    """`article` is checked digits of at most 19 significant figures (or None)."""
    url = _new(_NntpBuilder)
    url.scheme = scheme
    url.host = host.lower()
    url.port = _port(scheme, port)
    url.group = group
    url.article = None if article is None else int(article)
    url.fragment = fragment
    url.__class__ = NntpURL
    return url  # type: ignore[no-any-return]


def _telnet(
    scheme: str, user: str | None, password: str | None, host: str, port: str | None, fragment: str | None
) -> URL:
    url = _new(_TelnetBuilder)
    url.scheme = scheme
    url.user = user if user is None or "%" not in user else _decode(user)
    url.password = password if password is None or "%" not in password else _decode(password)
    url.host = host.lower()
    url.port = _port(scheme, port)
    url.fragment = fragment
    url.__class__ = TelnetURL
    return url  # type: ignore[no-any-return]


def _wais(
    scheme: str,
    host: str,
    port: str | None,
    database: str,
    search: str | None,
    wtype: str | None,
    wpath: str | None,
    fragment: str | None,
) -> URL:
    url = _new(_WaisBuilder)
    url.scheme = scheme
    url.host = host.lower()
    url.port = _port(scheme, port)
    url.database = _decode(database)
    url.search = None if search is None else _decode(search.replace("+", " "))
    url.wtype = None if wtype is None else _decode(wtype)
    url.wpath = wpath
    url.fragment = fragment
    url.__class__ = WaisURL
    return url  # type: ignore[no-any-return]


def _file(scheme: str, host: str | None, path: str, fragment: str | None) -> URL:
    url = _new(_FileBuilder)
    url.scheme = scheme
    url.host = "" if host is None else host.lower()
    url.path = _decode(path)
    url.fragment = fragment
    url.__class__ = FileURL
    return url  # type: ignore[no-any-return]


def _prospero(
    scheme: str, host: str, port: str | None, hsoname: str | None, specs: str | None, fragment: str | None
) -> URL:
    """`specs` is the checked `;name=value...` text after the hsoname (or None)."""
    fields: dict[str, str] = {}
    if specs:
        for spec in specs[1:].split(";"):
            name, _, value = spec.partition("=")
            fields[_decode(name)] = _decode(value)
    url = _new(_ProsperoBuilder)
    url.scheme = scheme
    url.host = host.lower()
    url.port = _port(scheme, port)
    url.hsoname = _decode(hsoname) if hsoname else ""
    url.fields = fields
    url.fragment = fragment
    url.__class__ = ProsperoURL
    return url  # type: ignore[no-any-return]


def _mailto(scheme: str, address: str, fragment: str | None) -> URL:
    url = _new(_MailtoBuilder)
    url.scheme = scheme
    url.address = _decode(address)
    url.fragment = fragment
    url.__class__ = MailtoURL
    return url  # type: ignore[no-any-return]


# --------------------------------------------------------------------------
# The fast route: one pattern per scheme for the common, plainly valid shape.
# Possessive quantifiers (`*+`, `++`) never give characters back: each run
# stops at a delimiter its class excludes, so backtracking could not help.

_U = r"A-Za-z0-9$\-_.+!*'(),~%"  # uchar, with "~" and "%" (escapes are checked apart)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# No label starts or ends with "-"; the top label starts with a letter.
_F_HOSTNAME = r"(?!-)(?:[A-Za-z0-9\-]++(?<!-)\.(?!-))*+[A-Za-z][A-Za-z0-9\-]*+(?<!-)"
_F_HOST = rf"({_F_HOSTNAME}|(?:{_OCTET}\.){{3}}{_OCTET})"
_F_PORT = r"(?::([0-9]{1,5}))?"
_F_FRAGMENT = rf"(?:#([{_U};/?:@&=]*+))?"
_F_NEWSGROUP = r"[A-Za-z][A-Za-z0-9\-.+_]*+"


def _f_login(chars: str, ends: str) -> str:
    """`[user[:password]@]`, tried only when an "@" comes before the login ends."""
    return rf"(?:(?=[^{ends}@]*+@)([{chars}]*+)(?::([{chars}]*+))?@)?"


_FAST_FTP = re.compile(
    rf"//{_f_login(_U + ';?&=', '/#')}{_F_HOST}{_F_PORT}"
    rf"(?:/([{_U}?:@&=/]*+)(?:;type=([aidAID]))?)?{_F_FRAGMENT}"
)
_FAST_HTTP = re.compile(
    rf"//{_f_login(_U + ';&=', '/?#')}{_F_HOST}{_F_PORT}(/[{_U};:@&=/]*+)?(?:\?([{_U};:@&=/?]*+))?{_F_FRAGMENT}"
)
_FAST_GOPHER = re.compile(rf"//{_F_HOST}{_F_PORT}(?:/([{_U};/?:@&=]*+))?{_F_FRAGMENT}")
_FAST_NEWS = re.compile(rf"(?!//)(?:({_F_NEWSGROUP}|\*)|([{_U};/?:&=]++@[{_U};/?:&=]*+)){_F_FRAGMENT}")
_FAST_NNTP = re.compile(rf"//{_F_HOST}{_F_PORT}/({_F_NEWSGROUP})(?:/([0-9]{{1,18}}))?{_F_FRAGMENT}")
_FAST_TELNET = re.compile(rf"//{_f_login(_U + ';?&=', '/#')}{_F_HOST}{_F_PORT}/?{_F_FRAGMENT}")
_FAST_WAIS = re.compile(rf"//{_F_HOST}{_F_PORT}/([{_U}]++)(?:\?([{_U};/?:@&=]*+)|/([{_U}]*+)/([{_U}]*+))?{_F_FRAGMENT}")
_FAST_FILE = re.compile(rf"//(?:{_F_HOST})?/([{_U};?:@&=/]*+){_F_FRAGMENT}")
_FAST_PROSPERO = re.compile(
    rf"//{_F_HOST}{_F_PORT}(?:/([{_U}?:@&=/]*+)((?:;[{_U}?:@&]++=[{_U}?:@&]*+)*+))?{_F_FRAGMENT}"
)
_FAST_MAILTO = re.compile(rf"([{_U};/?:@&=]++){_F_FRAGMENT}")

# scheme -> (the pattern's fullmatch, the constructor its groups feed)
_FAST: dict[str, tuple[Callable[[str, int], re.Match[str] | None], Callable[..., URL]]] = {
    "ftp": (_FAST_FTP.fullmatch, _ftp),
    "ftps": (_FAST_FTP.fullmatch, _ftp),
    "http": (_FAST_HTTP.fullmatch, _http),
    "https": (_FAST_HTTP.fullmatch, _http),
    "gopher": (_FAST_GOPHER.fullmatch, _gopher),
    "gophers": (_FAST_GOPHER.fullmatch, _gopher),
    "news": (_FAST_NEWS.fullmatch, _news),
    "snews": (_FAST_NEWS.fullmatch, _news),
    "nntp": (_FAST_NNTP.fullmatch, _nntp),
    "nntps": (_FAST_NNTP.fullmatch, _nntp),
    "telnet": (_FAST_TELNET.fullmatch, _telnet),
    "wais": (_FAST_WAIS.fullmatch, _wais),
    "file": (_FAST_FILE.fullmatch, _file),
    "prospero": (_FAST_PROSPERO.fullmatch, _prospero),
    "mailto": (_FAST_MAILTO.fullmatch, _mailto),
}


def parse_url(text: str) -> URL:
    """Parse one URL; raise `URLError` naming the offending part."""
    colon = text.find(":")
    if colon > 0:
        scheme = text[:colon]
        route = _FAST.get(scheme)
        if route is not None:
            match = route[0](text, colon + 1)
            if match is not None and ("%" not in text or _BAD_ESCAPE.search(text) is None):
                try:
                    return route[1](scheme, *match.groups())
                except URLError:
                    pass  # the careful route reports it with its position
    return _parse_slow(text)


# --------------------------------------------------------------------------
# The careful route


def _unwrap_indexed(text: str) -> tuple[str, list[int]]:
    """The URL inside the appendix wrappers, and where each of its characters was."""
    start, end = 0, len(text)
    while start < end and text[start] in _WHITESPACE:
        start += 1
    while end > start and text[end - 1] in _WHITESPACE:
        end -= 1
    if start < end and text[start] == "<":
        if end - start < 2 or text[end - 1] != ">":
            raise URLError(
                "the '<' wrapper is not closed by '>'",
                part="wrapper",
                position=start,
                hint="write <URL:scheme://...> with both brackets",
                url=text,
            )
        kept = [index for index in range(start + 1, end - 1) if text[index] not in _WHITESPACE]
    else:
        kept = list(range(start, end))
    if len(kept) >= 4 and "".join(text[index] for index in kept[:4]).upper() == "URL:":
        kept = kept[4:]
    return "".join(text[index] for index in kept), kept


def unwrap(text: str) -> str:
    """Strip the appendix wrappers: `<URL:...>`, `URL:`, and line breaks.

    Inside `<...>` all whitespace is ignored (long URLs broken across lines).
    A line break right after a hyphen keeps the hyphen: the appendix says it
    "may or may not" belong to the URL, and keeping it loses nothing typed.
    Outside a wrapper only leading and trailing whitespace is dropped.
    """
    return _unwrap_indexed(text)[0]


def _parse_slow(original: str) -> URL:
    text = original
    where = None
    if text and (text[0] in _WHITESPACE or text[0] == "<" or text[-1] in _WHITESPACE or text[:4].upper() == "URL:"):
        text, where = _unwrap_indexed(original)
    try:
        return _parse_text(text)
    except URLError as error:
        if error.url is None:
            error.url = original
        if where is not None and error.position is not None:
            # Report positions in the text the user gave, wrappers included.
            at = error.position
            error.position = where[at] if at < len(where) else (where[-1] + 1 if where else 0)
            error.message = error.message.replace(f"at position {at}", f"at position {error.position}")
            error.args = (error.message,)
        raise


def _parse_text(text: str) -> URL:
    bad = _BAD_CHAR.search(text)
    if bad is not None and text[bad.start()] == "#":
        bad = _BAD_CHAR.search(text, bad.start() + 1)
    if bad is not None:
        raise _bad_character(text, bad.start())
    colon = text.find(":")
    if colon <= 0:
        raise URLError(
            f"no scheme: expected 'scheme:' at the start of {text!r}",
            part="scheme",
            position=0,
            hint="write a full URL such as ftp://host/path",
        )
    if _SCHEME.fullmatch(text, 0, colon) is None:
        at = next(index for index in range(colon) if _SCHEME.fullmatch(text[index]) is None)
        raise URLError(
            f"scheme {text[:colon]!r}: character {text[at]!r} at position {at} is not allowed in a scheme name",
            part="scheme",
            position=at,
            hint="scheme names hold letters, digits, '+', '-' and '.'",
        )
    scheme = text[:colon].lower()
    rest = text[colon + 1 :]
    fragment = None
    hash_at = rest.find("#")
    if hash_at >= 0:
        fragment = rest[hash_at + 1 :]
        rest = rest[:hash_at]
    try:
        return _PARSERS.get(scheme, _parse_generic)(scheme, rest, fragment)
    except URLError as error:
        if error.position is not None:
            error.position += colon + 1
        raise


def _bad_character(text: str, at: int) -> URLError:
    char = text[at]
    if char == "%":
        what = f"'%' at position {at} does not start an escape (%XX with two hex digits)"
        part = "escape"
    elif char == "#":
        what = f"a second '#' at position {at}"
        part = "fragment"
    elif char == " ":
        what = f"raw space at position {at}"
        part = "character"
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
    )


# The careful parsers take the text after "scheme:" (fragment removed) and
# raise with positions counted in that text; `_parse_text` shifts them.


def _split_login(scheme: str, rest: str, path_starts: str = "/") -> tuple[str, str | None]:
    """Split `//login/urlpath` into the login and the url-path (None if absent)."""
    if not rest.startswith("//"):
        raise URLError(
            f"{scheme}: URLs need '//' and a host after '{scheme}:'",
            part="host",
            position=0,
            hint=f"write {scheme}://host/...",
        )
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
) -> tuple[str | None, str | None, str, str | None]:
    """`[user[:password]@]host[:port]` (starting at offset 2) -> raw user, raw password, host, port digits."""
    user = password = None
    offset = 2
    at = login.find("@")
    if at >= 0:
        if not userinfo:
            raise URLError(
                f"{scheme}: URLs take no user name or password",
                part="user",
                position=offset,
                hint=f"remove the '...@' before the host of the {scheme}: URL",
            )
        second = login.find("@", at + 1)
        if second >= 0:
            raise URLError(
                "the login contains more than one '@'",
                part="user",
                position=offset + second,
                hint="encode '@' in a user name or password as %40",
            )
        info = login[:at]
        colon = info.find(":")
        if colon >= 0:
            user, password = info[:colon], info[colon + 1 :]
        else:
            user = info
        login = login[at + 1 :]
        offset += at + 1
    host, port = _parse_hostport(login, offset, host_required)
    return user, password, host, port


def _parse_hostport(hostport: str, offset: int, host_required: bool = True) -> tuple[str, str | None]:
    port_text = None
    port_at = 0
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise URLError("IPv6 literal is missing its closing ']'", part="host", position=offset)
        host = _check_ipv6(hostport[1:close], offset)
        after = hostport[close + 1 :]
        if after:
            if not after.startswith(":"):
                raise URLError(f"unexpected {after!r} after the IPv6 literal", part="host", position=offset + close + 1)
            port_text, port_at = after[1:], offset + close + 2
    else:
        colon = hostport.rfind(":")
        if colon >= 0:
            host, port_text, port_at = hostport[:colon], hostport[colon + 1 :], offset + colon + 1
        else:
            host = hostport
        host = _check_host(host, host_required, offset)
    if port_text is None:
        return host, None
    return host, _check_port(port_text, port_at)


def _check_host(host: str, required: bool, at: int) -> str:
    if not host:
        if required:
            raise URLError("the host is empty", part="host", position=at, hint="name a host: scheme://host/...")
        return host
    match = _IPV4.fullmatch(host)
    if match is not None:
        if any(len(octet.lstrip("0")) > 3 or int(octet) > 255 for octet in match.groups()):
            raise URLError(f"host {host!r}: IPv4 octets are 0-255", part="host", position=at)
        return host
    if _HOSTNAME.fullmatch(host) is None:
        raise URLError(
            f"host {host!r} is not a valid hostname or IPv4 address",
            part="host",
            position=at,
            hint="labels are letters, digits and inner hyphens; the last label starts with a letter",
        )
    return host.lower()


def _check_ipv6(literal: str, at: int) -> str:
    import ipaddress

    if "%" not in literal:
        try:
            return str(ipaddress.IPv6Address(literal))
        except ValueError:
            pass
    raise URLError(f"host [{literal}] is not a valid IPv6 address", part="host", position=at)


def _check_port(text: str, at: int) -> str:
    if not text:
        raise URLError("the port after ':' is empty", part="port", position=at, hint="remove the ':' or give a port")
    if _DIGITS.fullmatch(text) is None:
        raise URLError(
            f"port {text!r} is not a number from 0 to 65535",
            part="port",
            position=at,
            hint="a port is ASCII digits only, with no sign or spaces",
        )
    significant = text.lstrip("0")
    if len(significant) > 5 or int(significant or "0") > 65535:
        shown = text if len(text) <= 24 else text[:20] + "..."
        raise URLError(f"port {shown} is out of range (0-65535)", part="port", position=at)
    return significant or "0"


def _parse_ftp(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    user, password, host, port = _parse_login(scheme, login, userinfo=True)
    typecode = None
    if path is None:
        path = ""
    else:
        base = len(login) + 3  # where the url-path starts, after the "/"
        path = path[1:]
        semicolon = path.find(";")
        if semicolon >= 0:
            spec = path[semicolon + 1 :]
            if spec[:5].lower() != "type=":
                raise URLError(
                    "';' inside an FTP path must be encoded as %3B; only a final ';type=' may follow the name",
                    part="path",
                    position=base + semicolon,
                    hint="encode ';' in file and directory names as %3B",
                )
            code = spec[5:]
            if len(code) != 1 or code not in "aidAID":
                raise URLError(
                    f"typecode {code!r} is not a, i or d",
                    part="typecode",
                    position=base + semicolon + 6,
                    hint=";type=a (text), ;type=i (binary) or ;type=d (directory listing), at the end of the URL",
                )
            typecode = code
            path = path[:semicolon]
    return _ftp(scheme, user, password, host, port, path, typecode, fragment)


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
    return _http(scheme, user, password, host, port, path, search, fragment)


def _parse_gopher(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    _, _, host, port = _parse_login(scheme, login, userinfo=False)
    return _gopher(scheme, host, port, path[1:] if path else None, fragment, at=len(login) + 3)


def _parse_news(scheme: str, rest: str, fragment: str | None) -> URL:
    host = None
    port = None
    at = 0
    if rest.startswith("//"):
        login, path = _split_login(scheme, rest)
        _, _, host, port = _parse_login(scheme, login, userinfo=False)
        rest = path[1:] if path else ""
        at = len(login) + 3
    if not rest:
        raise URLError(
            f"{scheme}: URL names no newsgroup or message-id",
            part="group",
            position=at,
            hint="news:comp.misc, news:* or news:unique@host",
        )
    if "@" in rest:
        return _news(scheme, None, rest, fragment, host, port)
    if rest != "*" and _NEWSGROUP.fullmatch(rest) is None:
        raise URLError(
            f"{rest!r} is neither a newsgroup name nor a message-id (which needs '@')",
            part="group",
            position=at,
            hint="group names start with a letter and hold letters, digits, '-', '.', '+', '_'",
        )
    return _news(scheme, rest, None, fragment, host, port)


def _parse_nntp(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    _, _, host, port = _parse_login(scheme, login, userinfo=False)
    at = len(login) + 3
    parts = path[1:].split("/") if path else [""]
    group = parts[0]
    if not group:
        raise URLError(
            f"{scheme}: URLs need a newsgroup", part="group", position=at, hint=f"{scheme}://host/group[/article]"
        )
    if _NEWSGROUP.fullmatch(group) is None:
        raise URLError(
            f"{group!r} is not a newsgroup name",
            part="group",
            position=at,
            hint="group names start with a letter and hold letters, digits, '-', '.', '+', '_'",
        )
    article = None
    if len(parts) > 1:
        number = "/".join(parts[1:])
        if len(parts) > 2 or (number and _DIGITS.fullmatch(number) is None):
            raise URLError(
                f"article number {number!r} is not digits",
                part="article",
                position=at + len(group) + 1,
                hint=f"{scheme}://host/group/123",
            )
        if number:
            article = _article(number, at + len(group) + 1)
    return _nntp(scheme, host, port, group, article, fragment)


def _article(digits: str, at: int) -> str:
    significant = digits.lstrip("0")
    if len(significant) > 19 or int(significant or "0") > _MAX_ARTICLE:
        shown = digits if len(digits) <= 24 else digits[:20] + "..."
        raise URLError(
            f"article number {shown} is too large", part="article", position=at, hint=f"at most {_MAX_ARTICLE}"
        )
    return significant or "0"


def _parse_telnet(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    user, password, host, port = _parse_login(scheme, login, userinfo=True)
    if path not in (None, "/"):
        raise URLError(
            "telnet: URLs end after host:port (an optional '/')",
            part="path",
            position=len(login) + 3,
            hint="telnet://user:password@host:port/",
        )
    return _telnet(scheme, user, password, host, port, fragment)


def _parse_wais(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest, "/?")
    _, _, host, port = _parse_login(scheme, login, userinfo=False)
    at = len(login) + 3
    if not path or path == "/":
        raise URLError(
            "wais: URLs need a database", part="database", position=at - 1, hint="wais://host/database[?search]"
        )
    if path.startswith("?"):
        raise URLError("the wais database name is empty", part="database", position=at - 1)
    path = path[1:]
    search = wtype = wpath = None
    question = path.find("?")
    slash = path.find("/")
    if question >= 0 and (slash < 0 or question < slash):
        search = path[question + 1 :]
        database = path[:question]
    elif slash >= 0:
        database = path[:slash]
        second = path.find("/", slash + 1)
        if second < 0:
            raise URLError(
                "wais: document URLs are /database/wtype/wpath",
                part="wpath",
                position=at + len(path),
                hint="wais://host/database/wtype/wpath",
            )
        wtype = path[slash + 1 : second]
        wpath = path[second + 1 :]
    else:
        database = path
    if not database:
        raise URLError("the wais database name is empty", part="database", position=at)
    return _wais(scheme, host, port, database, search, wtype, wpath, fragment)


def _parse_file(scheme: str, rest: str, fragment: str | None) -> URL:
    if rest.startswith("//"):
        login, path = _split_login(scheme, rest)
        if "@" in login:
            raise URLError("file: URLs take no user name or password", part="user", position=2)
        host, port = _parse_hostport(login, 2, host_required=False)
        if port is not None:
            raise URLError("file: URLs take no port", part="port", position=2 + login.rfind(":") + 1)
        path = path[1:] if path else ""
    elif rest.startswith("/"):
        host, path = "", rest[1:]  # file:/path, a common shorthand for file:///path
    else:
        raise URLError(
            "file: URLs are file://host/path or file:///path", part="path", position=0, hint="file:///absolute/path"
        )
    return _file(scheme, host, path, fragment)


def _parse_prospero(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = _split_login(scheme, rest)
    _, _, host, port = _parse_login(scheme, login, userinfo=False)
    pieces = path[1:].split(";") if path else [""]
    at = len(login) + 3 + len(pieces[0])
    for spec in pieces[1:]:
        if spec.find("=") <= 0:
            raise URLError(
                f"prospero field {spec!r} is not name=value",
                part="field",
                position=at + 1,
                hint="fields are ;name=value after the hsoname; encode a ';' in the hsoname as %3B",
            )
        at += len(spec) + 1
    specs = ";" + ";".join(pieces[1:]) if len(pieces) > 1 else None
    return _prospero(scheme, host, port, pieces[0], specs, fragment)


def _parse_mailto(scheme: str, rest: str, fragment: str | None) -> URL:
    if not rest:
        raise URLError("mailto: URL has no address", part="address", position=0, hint="mailto:user@host")
    return _mailto(scheme, rest, fragment)


def _parse_generic(scheme: str, rest: str, fragment: str | None) -> URL:
    user = password = host = path = None
    port = None
    if rest.startswith("//"):
        login, path = _split_login(scheme, rest)
        user, password, host, port = _parse_login(scheme, login, userinfo=True, host_required=False)
        user = None if user is None else _decode(user)
        password = None if password is None else _decode(password)
    return GenericURL(
        scheme=scheme,
        schemepart=rest,
        user=user,
        password=password,
        host=host,
        port=None if port is None else int(port),
        path=path,
        fragment=fragment,
    )


_PARSERS: dict[str, Callable[[str, str, str | None], URL]] = {
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


def _split_relative(text: str) -> tuple[str | None, str | None, str, str | None, str | None, str | None]:
    """scheme, net_loc, path, params, query, fragment of RFC 1808 §2.4."""
    fragment = query = params = scheme = netloc = None
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
    semicolon = text.find(";")
    if semicolon >= 0:
        text, params = text[:semicolon], text[semicolon + 1 :]
    return scheme, netloc, text, params, query, fragment


def _remove_dot_segments(path: str) -> str:
    """RFC 1808 §4 step 6 on a path without its leading "/".

    A ".." with nothing left to remove stays (RFC 1808 §5.2: `../../../g`
    against `http://a/b/c/d;p?q` is `http://a/../g`).
    """
    segments = path.split("/")
    last = len(segments) - 1
    output: list[str] = []
    for index, segment in enumerate(segments):
        if segment == ".":
            if index == last:
                output.append("")
            continue
        if segment == ".." and output and output[-1] != "..":
            output.pop()
            if index == last:
                output.append("")
            continue
        output.append(segment)
    return "/".join(output)


def join(base: URL | str, reference: str) -> URL:
    """Resolve a partial (relative) URL against a base, as RFC 1808 §4 says, and parse it.

    A reference with its own scheme is absolute.  The result is parsed, so a
    resolution that yields no valid URL of its scheme (RFC 1808's `http:g`)
    raises `URLError`.
    """
    base_text = str(parse_url(base) if isinstance(base, str) else base)
    if reference[:1] in ("<", " ") or reference[-1:] == " " or reference[:4].upper() == "URL:":
        reference = unwrap(reference)
    if not reference:
        return parse_url(base_text)
    r_scheme, r_netloc, r_path, r_params, r_query, r_fragment = _split_relative(reference)
    if r_scheme is not None:
        return parse_url(reference)
    b_scheme, b_netloc, b_path, b_params, b_query, _ = _split_relative(base_text)
    netloc, path, params, query = r_netloc, r_path, r_params, r_query
    if netloc is None:
        netloc = b_netloc
        if not path:
            path = b_path
            if params is None:
                params = b_params
                if query is None:
                    query = b_query
        elif not path.startswith("/"):
            directory = b_path[: b_path.rfind("/") + 1]
            if directory.startswith("/"):
                path = "/" + _remove_dot_segments(directory[1:] + path)
            elif netloc is not None:
                path = "/" + _remove_dot_segments(path)
            else:
                path = _remove_dot_segments(directory + path)
    text = f"{b_scheme}:"
    if netloc is not None:
        text += "//" + netloc
    text += path
    if params is not None:
        text += ";" + params
    if query is not None:
        text += "?" + query
    if r_fragment is not None:
        text += "#" + r_fragment
    return parse_url(text)


def fields_of(url: URL) -> Mapping[str, object]:
    """The decoded fields of a URL as a mapping (for JSON output and tests)."""
    return {name: getattr(url, name) for name in url._all_fields()}
