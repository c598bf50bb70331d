"""What goes out: the request head, built from a URL without decoding it.

Pure functions only.  The request target is the URL's path and search exactly
as written (still percent-encoded): decoding it would let `%0d%0a` split the
request, and re-encoding it would change what the server sees.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from fetcher.handler import __version__
from fetcher.url import HttpURL, to_bytes

USER_AGENT = f"fetcher/{__version__}"
ACCEPT_ENCODING = "gzip, deflate"

Origin = tuple[str, str, int]


@dataclass(frozen=True)
class RequestHead:
    """One request line plus headers, as h11 wants them (str; encoded later)."""

    method: str
    target: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    #: Header names whose values the trace must not show.
    secret: frozenset[str] = frozenset({"authorization", "proxy-authorization"})

    def trace_lines(self) -> list[str]:
        lines = [f"{self.method} {self.target} HTTP/1.1"]
        for name, value in self.headers:
            if name.lower() in self.secret:
                scheme = value.split(" ", 1)[0]
                value = f"{scheme} ****"
            lines.append(f"{name}: {value}")
        return lines


def origin_of(url: HttpURL) -> Origin:
    """(scheme, host, port): the unit credentials and connections belong to."""
    return url.scheme, url.host.lower(), url.port


def authority(url: HttpURL) -> str:
    """host[:port] for the Host header and CONNECT, without userinfo."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    return host if url.port == url.default_port else f"{host}:{url.port}"


def public(url: HttpURL) -> HttpURL:
    """The URL without its password, for messages and traces."""
    if url.password is None:
        return url
    replaced = url.replace(password="****")
    assert isinstance(replaced, HttpURL)
    return replaced


def absolute_target(url: HttpURL) -> str:
    """The absolute-form target a plain HTTP proxy needs (no userinfo, no fragment)."""
    return f"{url.scheme}://{authority(url)}{url.target}"


def basic_credentials(user: str, password: str | None) -> str:
    """`Basic base64(user:password)` over the octets the URL encoded (RFC 7617)."""
    raw = to_bytes(user) + b":" + to_bytes(password or "")
    return "Basic " + base64.b64encode(raw).decode("ascii")


def build_request(
    url: HttpURL,
    *,
    user_agent: str | None = None,
    credentials: tuple[str, str | None] | None = None,
    offset: int = 0,
    via_proxy: bool = False,
    proxy_credentials: tuple[str, str | None] | None = None,
    extra: tuple[tuple[str, str], ...] = (),
    method: str = "GET",
) -> RequestHead:
    """The GET (or with `method`, the HEAD) for `url`.

    `extra` (the user's -H/-e fields) come last; one named like a field
    above replaces it, and an empty value removes it (as curl does).

    A resumed request asks for the identity encoding: byte ranges of a gzip
    representation would not line up with the bytes already on disk.
    """
    headers = [
        ("Host", authority(url)),
        ("User-Agent", user_agent or USER_AGENT),
        ("Accept", "*/*"),
    ]
    headers.append(("Accept-Encoding", "identity" if offset > 0 else ACCEPT_ENCODING))
    if offset > 0:
        headers.append(("Range", f"bytes={offset}-"))
    if credentials is not None:
        headers.append(("Authorization", basic_credentials(*credentials)))
    if proxy_credentials is not None:
        headers.append(("Proxy-Authorization", basic_credentials(*proxy_credentials)))
    if extra:
        headers = _merge(headers, extra)
    target = absolute_target(url) if via_proxy else url.target
    return RequestHead(method, target, headers)


def _merge(defaults: list[tuple[str, str]], extra: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """The user's fields replace a default of the same name where it stood (empty: removed); others go last."""
    named = {name.lower() for name, _ in extra}
    merged: list[tuple[str, str]] = []
    for name, value in defaults:
        if name.lower() in named:
            merged.extend((mine, text) for mine, text in extra if mine.lower() == name.lower() and text)
        else:
            merged.append((name, value))
    defaults_named = {name.lower() for name, _ in defaults}
    merged.extend((name, value) for name, value in extra if name.lower() not in defaults_named and value)
    return merged


def build_connect(url: HttpURL, *, user_agent: str | None = None,
                  proxy_credentials: tuple[str, str | None] | None = None) -> RequestHead:  # fmt: skip
    """The CONNECT that opens a tunnel through a proxy for an https: URL."""
    host = f"[{url.host}]" if ":" in url.host else url.host
    target = f"{host}:{url.port}"
    headers = [("Host", target), ("User-Agent", user_agent or USER_AGENT)]
    if proxy_credentials is not None:
        headers.append(("Proxy-Authorization", basic_credentials(*proxy_credentials)))
    return RequestHead("CONNECT", target, headers)
