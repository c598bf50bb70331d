"""One careful parser per scheme: the text after "scheme:" cut into the pieces `construct` takes.

Each takes the scheme, the text after "scheme:" with the fragment removed,
and the fragment; it raises `URLError` with positions counted in that text
(`careful` shifts them to the text as given).
"""

from __future__ import annotations

from collections.abc import Callable

from fetcher.errors import URLError
from fetcher.url.authority import parse_hostport, parse_login, split_login
from fetcher.url.construct import _file, _ftp, _gopher, _http, _mailto, _news, _nntp, _prospero, _telnet, _wais
from fetcher.url.grammar import PATTERNS
from fetcher.url.values import URL, GenericURL, _decode

_MAX_ARTICLE = 2**63 - 1


def _parse_ftp(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = split_login(scheme, rest)
    user, password, host, port = parse_login(scheme, login, userinfo=True)
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
    login, path = split_login(scheme, rest, "/?")
    user, password, host, port = parse_login(scheme, login, userinfo=True)
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
    login, path = split_login(scheme, rest)
    _, _, host, port = parse_login(scheme, login, userinfo=False)
    return _gopher(scheme, host, port, path[1:] if path else None, fragment, at=len(login) + 3)


def _parse_news(scheme: str, rest: str, fragment: str | None) -> URL:
    host = None
    port = None
    at = 0
    if rest.startswith("//"):
        login, path = split_login(scheme, rest)
        _, _, host, port = parse_login(scheme, login, userinfo=False)
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
    if rest != "*" and PATTERNS.newsgroup.fullmatch(rest) is None:
        raise URLError(
            f"{rest!r} is neither a newsgroup name nor a message-id (which needs '@')",
            part="group",
            position=at,
            hint="group names start with a letter and hold letters, digits, '-', '.', '+', '_'",
        )
    return _news(scheme, rest, None, fragment, host, port)


def _parse_nntp(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = split_login(scheme, rest)
    _, _, host, port = parse_login(scheme, login, userinfo=False)
    at = len(login) + 3
    parts = path[1:].split("/") if path else [""]
    group = parts[0]
    if not group:
        raise URLError(
            f"{scheme}: URLs need a newsgroup", part="group", position=at, hint=f"{scheme}://host/group[/article]"
        )
    if PATTERNS.newsgroup.fullmatch(group) is None:
        raise URLError(
            f"{group!r} is not a newsgroup name",
            part="group",
            position=at,
            hint="group names start with a letter and hold letters, digits, '-', '.', '+', '_'",
        )
    article = None
    if len(parts) > 1:
        number = "/".join(parts[1:])
        if len(parts) > 2 or (number and PATTERNS.digits.fullmatch(number) is None):
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
    login, path = split_login(scheme, rest)
    user, password, host, port = parse_login(scheme, login, userinfo=True)
    if path not in (None, "/"):
        raise URLError(
            "telnet: URLs end after host:port (an optional '/')",
            part="path",
            position=len(login) + 3,
            hint="telnet://user:password@host:port/",
        )
    return _telnet(scheme, user, password, host, port, fragment)


def _parse_wais(scheme: str, rest: str, fragment: str | None) -> URL:
    login, path = split_login(scheme, rest, "/?")
    _, _, host, port = parse_login(scheme, login, userinfo=False)
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
        login, path = split_login(scheme, rest)
        if "@" in login:
            raise URLError("file: URLs take no user name or password", part="user", position=2)
        host, port = parse_hostport(login, 2, host_required=False)
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
    login, path = split_login(scheme, rest)
    _, _, host, port = parse_login(scheme, login, userinfo=False)
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


def parse_generic(scheme: str, rest: str, fragment: str | None) -> URL:
    user = password = host = path = None
    port = None
    if rest.startswith("//"):
        login, path = split_login(scheme, rest)
        user, password, host, port = parse_login(scheme, login, userinfo=True, host_required=False)
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


PARSERS: dict[str, Callable[[str, str, str | None], URL]] = {
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
