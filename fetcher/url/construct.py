"""Building URL values from the pieces both parsing routes cut out of the text."""

from __future__ import annotations

from typing import Any

from fetcher.errors import URLError
from fetcher.url.values import (
    DEFAULT_PORTS,
    URL,
    FileURL,
    FtpURL,
    GopherURL,
    HttpURL,
    MailtoURL,
    NewsURL,
    NntpURL,
    ProsperoURL,
    TelnetURL,
    WaisURL,
    _decode,
)


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
