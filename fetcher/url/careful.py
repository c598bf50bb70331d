"""The careful route: unwrap, scan, split step by step, and say exactly what is wrong.

Every `URLError` names the part and the position in the text as given
(wrappers included).  The scheme parsers take the text after "scheme:" with
the fragment removed and raise with positions counted in that text;
`_parse_text` shifts them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import URLError
from ..text import LazyPatterns
from .construct import _file, _ftp, _gopher, _http, _mailto, _news, _nntp, _prospero, _telnet, _wais
from .values import URL, GenericURL, _decode

# Labels are letter/digit runs joined by hyphens, so no label starts or ends
# with "-"; the top label starts with a letter (RFC 1738 §3.1, §5).
_LABEL = r"[A-Za-z0-9]+(?:-+[A-Za-z0-9]+)*"
_TOPLABEL = r"[A-Za-z][A-Za-z0-9]*(?:-+[A-Za-z0-9]+)*"


class _Patterns(LazyPatterns):
    """Compiled when the careful route first runs: a URL the fast route takes never needs them."""

    #: Anything outside RFC 1738's xchar (plus the "national" characters that real
    #: URLs use raw, such as "~"), or a "%" that does not start an escape.
    bad_char: re.Pattern[str]
    scheme: re.Pattern[str]
    hostname: re.Pattern[str]
    ipv4: re.Pattern[str]
    digits: re.Pattern[str]
    newsgroup: re.Pattern[str]


_PATTERNS = _Patterns(
    bad_char=r"[^A-Za-z0-9$\-_.+!*'(),;/?:@&=%{}|\\^~\[\]`]|%(?![0-9A-Fa-f]{2})",
    scheme=r"[A-Za-z0-9+.\-]+",
    hostname=rf"(?:{_LABEL}\.)*{_TOPLABEL}",
    ipv4=r"([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)",
    digits=r"[0-9]+",
    newsgroup=r"[A-Za-z][A-Za-z0-9\-.+_]*",
)

_WHITESPACE = " \t\r\n\f\v"
_MAX_ARTICLE = 2**63 - 1


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


def parse_careful(original: str) -> URL:
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
    bad = _PATTERNS.bad_char.search(text)
    if bad is not None and text[bad.start()] == "#":
        bad = _PATTERNS.bad_char.search(text, bad.start() + 1)
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
    if _PATTERNS.scheme.fullmatch(text, 0, colon) is None:
        at = next(index for index in range(colon) if _PATTERNS.scheme.fullmatch(text[index]) is None)
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
    match = _PATTERNS.ipv4.fullmatch(host)
    if match is not None:
        if any(len(octet.lstrip("0")) > 3 or int(octet) > 255 for octet in match.groups()):
            raise URLError(f"host {host!r}: IPv4 octets are 0-255", part="host", position=at)
        return host
    if _PATTERNS.hostname.fullmatch(host) is None:
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
    if _PATTERNS.digits.fullmatch(text) is None:
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
    if rest != "*" and _PATTERNS.newsgroup.fullmatch(rest) is None:
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
    if _PATTERNS.newsgroup.fullmatch(group) is None:
        raise URLError(
            f"{group!r} is not a newsgroup name",
            part="group",
            position=at,
            hint="group names start with a letter and hold letters, digits, '-', '.', '+', '_'",
        )
    article = None
    if len(parts) > 1:
        number = "/".join(parts[1:])
        if len(parts) > 2 or (number and _PATTERNS.digits.fullmatch(number) is None):
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
