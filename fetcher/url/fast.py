"""The fast route: one compiled pattern per scheme for the common, plainly valid shape.

Each pattern accepts a subset of what the careful route accepts and cuts it
at the same places; its groups feed the same constructors.  Anything it does
not match, valid or not, goes to the careful route, which decides.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fetcher.errors import URLError
from fetcher.url.careful import parse_careful
from fetcher.url.construct import _file, _ftp, _gopher, _http, _mailto, _news, _nntp, _prospero, _telnet, _wais
from fetcher.url.values import URL

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")

# Possessive quantifiers (`*+`, `++`) never give characters back: each run
# stops at a delimiter its class excludes, so backtracking could not help.

_U = r"A-Za-z0-9$\-_.+!*'(),~%"  # uchar, with "~" and "%" (escapes are checked apart)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# No label starts or ends with "-"; the top label starts with a letter.  The
# run of labels before the top one is greedy rather than possessive: the
# possessive form means the same, but Debian's CPython 3.11.2 matched
# "a.1com" with it (a top label starting with a digit); giving back is cheap
# here, as every label ends at a dot.
_F_HOSTNAME = r"(?!-)(?:[A-Za-z0-9\-]++(?<!-)\.(?!-))*[A-Za-z][A-Za-z0-9\-]*+(?<!-)"
_F_HOST = rf"({_F_HOSTNAME}|(?:{_OCTET}\.){{3}}{_OCTET})"
_F_PORT = r"(?::([0-9]{1,5}))?"
_F_FRAGMENT = rf"(?:#([{_U};/?:@&=]*+))?"
_F_NEWSGROUP = r"[A-Za-z][A-Za-z0-9\-.+_]*+"


def _f_login(chars: str, ends: str) -> str:
    """`[user[:password]@]`, tried only when an "@" comes before the login ends."""
    return rf"(?:(?=[^{ends}@]*+@)([{chars}]*+)(?::([{chars}]*+))?@)?"


_FAST_FTP = (
    rf"//{_f_login(_U + ';?&=', '/#')}{_F_HOST}{_F_PORT}"
    rf"(?:/([{_U}?:@&=/]*+)(?:;type=([aidAID]))?)?{_F_FRAGMENT}"
)
_FAST_HTTP = (
    rf"//{_f_login(_U + ';&=', '/?#')}{_F_HOST}{_F_PORT}(/[{_U};:@&=/]*+)?(?:\?([{_U};:@&=/?]*+))?{_F_FRAGMENT}"
)
_FAST_GOPHER = rf"//{_F_HOST}{_F_PORT}(?:/([{_U};/?:@&=]*+))?{_F_FRAGMENT}"
_FAST_NEWS = rf"(?!//)(?:({_F_NEWSGROUP}|\*)|([{_U};/?:&=]++@[{_U};/?:&=]*+)){_F_FRAGMENT}"
_FAST_NNTP = rf"//{_F_HOST}{_F_PORT}/({_F_NEWSGROUP})(?:/([0-9]{{1,18}}))?{_F_FRAGMENT}"
_FAST_TELNET = rf"//{_f_login(_U + ';?&=', '/#')}{_F_HOST}{_F_PORT}/?{_F_FRAGMENT}"
_FAST_WAIS = rf"//{_F_HOST}{_F_PORT}/([{_U}]++)(?:\?([{_U};/?:@&=]*+)|/([{_U}]*+)/([{_U}]*+))?{_F_FRAGMENT}"
_FAST_FILE = rf"//(?:{_F_HOST})?/([{_U};?:@&=/]*+){_F_FRAGMENT}"
_FAST_PROSPERO = rf"//{_F_HOST}{_F_PORT}(?:/([{_U}?:@&=/]*+)((?:;[{_U}?:@&]++=[{_U}?:@&]*+)*+))?{_F_FRAGMENT}"
_FAST_MAILTO = rf"([{_U};/?:@&=]++){_F_FRAGMENT}"

# scheme -> (the pattern, the constructor its groups feed).  A pattern is
# compiled the first time its scheme is parsed (`_route`): compiling all of
# them took ~17 ms of every start, which a run of one scheme does not need.
_SOURCES: dict[str, tuple[str, Callable[..., URL]]] = {
    "ftp": (_FAST_FTP, _ftp),
    "ftps": (_FAST_FTP, _ftp),
    "http": (_FAST_HTTP, _http),
    "https": (_FAST_HTTP, _http),
    "gopher": (_FAST_GOPHER, _gopher),
    "gophers": (_FAST_GOPHER, _gopher),
    "news": (_FAST_NEWS, _news),
    "snews": (_FAST_NEWS, _news),
    "nntp": (_FAST_NNTP, _nntp),
    "nntps": (_FAST_NNTP, _nntp),
    "telnet": (_FAST_TELNET, _telnet),
    "wais": (_FAST_WAIS, _wais),
    "file": (_FAST_FILE, _file),
    "prospero": (_FAST_PROSPERO, _prospero),
    "mailto": (_FAST_MAILTO, _mailto),
}


# scheme -> (the compiled pattern's fullmatch, the constructor), filled by `_route`.
_FAST: dict[str, tuple[Callable[[str, int], re.Match[str] | None], Callable[..., URL]]] = {}


def _route(scheme: str) -> tuple[Callable[[str, int], re.Match[str] | None], Callable[..., URL]] | None:
    route = _FAST.get(scheme)
    if route is None:
        source = _SOURCES.get(scheme)
        if source is None:
            return None
        route = _FAST[scheme] = (re.compile(source[0]).fullmatch, source[1])
    return route


def parse_url(text: str) -> URL:
    """Parse one URL; raise `URLError` naming the offending part."""
    colon = text.find(":")
    if colon > 0:
        scheme = text[:colon]
        route = _route(scheme)
        if route is not None:
            match = route[0](text, colon + 1)
            if match is not None and ("%" not in text or _BAD_ESCAPE.search(text) is None):
                try:
                    return route[1](scheme, *match.groups())
                except URLError:
                    pass  # the careful route reports it with its position
    return parse_careful(text)
