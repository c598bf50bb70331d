"""The URL values: one immutable class per scheme, and their canonical text.

Decoded text is `str`; octets that are not UTF-8 survive as lone surrogates
(`errors="surrogateescape"`), so every component round-trips byte for byte:
`to_bytes(component)` gives back the octets that go on the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar
from urllib.parse import quote as _quote
from urllib.parse import unquote as _unquote

from fetcher.text import mask_secrets

# What fetcher.url re-exports.
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
    "fields_of",
    "redact",
    "to_bytes",
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


#: What stands for a password wherever a URL is shown (never sent).
MASK = "***"  # the mask fetcher.text.mask_secrets writes

def redact(text: str) -> str:
    """`text` with the password of every `scheme://user:password@` in it masked.

    For text that is not (or may not be) one parsed URL: input lines, messages,
    manifests, JSON, progress labels.  A parsed URL has `URL.redacted()`.
    """
    return mask_secrets(text)


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

    __slots__ = ("_text", "fragment", "scheme")  # _text: str(self), once computed
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

    def __str__(self) -> str:
        # Computed once: a bulk run asks a URL for its text several times
        # (manifest key, layout, messages), and the value never changes.
        try:
            return self._text  # type: ignore[attr-defined,no-any-return]
        except AttributeError:
            text = self._serialize()
            object.__setattr__(self, "_text", text)
            return text

    def _serialize(self) -> str:
        raise NotImplementedError

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
        # The password is masked: reprs end up in logs and tracebacks.
        inner = ", ".join(
            f"{name}={MASK if name == 'password' and getattr(self, name) else getattr(self, name)!r}"
            for name in self._all_fields()
        )
        return f"{type(self).__name__}({inner})"

    def redacted(self) -> str:
        """The canonical text with the password (if any) masked: for messages, traces and output.

        `str(url)` stays the exact serialization that parses back to an equal
        URL, password included; show users `redacted()` instead.
        """
        if not getattr(self, "password", None):
            return str(self)
        return str(self.replace(password=MASK))

    @property
    def origin(self) -> tuple[str, str, int | None]:
        """(scheme, host, port): the unit credentials belong to (host lower-cased)."""
        host = getattr(self, "host", None) or ""
        return self.scheme, host.lower(), getattr(self, "port", None)

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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
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

    def _serialize(self) -> str:
        return f"{self.scheme}:{self.schemepart}{self._tail()}"


def fields_of(url: URL) -> Mapping[str, object]:
    """The decoded fields of a URL as a mapping (for JSON output and tests)."""
    return {name: getattr(url, name) for name in url._all_fields()}
