"""Which proxy (if any) a URL goes through: --proxy, http_proxy, https_proxy, no_proxy.

Pure: the environment is passed in.  Only lower-case `http_proxy` is read for
http: URLs (an upper-case HTTP_PROXY can be set by a CGI request header,
"httpoxy"); `https_proxy` and `no_proxy` are read in either case.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from fetcher.errors import URLError, UsageError
from fetcher.url import HttpURL, parse_url


def _env(environ: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = environ.get(name)
        if value:
            return value
    return None


def parse_proxy(text: str) -> HttpURL:
    """A proxy setting as a URL; a bare `host:port` means http://host:port."""
    candidate = text.strip()
    if "://" not in candidate:
        candidate = "http://" + candidate
    try:
        url = parse_url(candidate)
    except URLError as error:
        raise UsageError(f"bad proxy {text!r}: {error}", hint="give the proxy as http://HOST:PORT") from None
    if not isinstance(url, HttpURL) or url.scheme != "http":
        raise UsageError(
            f"proxy {text!r} uses {url.scheme}:, but only http:// proxies are supported",
            hint="give the proxy as http://HOST:PORT",
        )
    return url


def bypassed(host: str, port: int, no_proxy: str | None) -> bool:
    """True when `no_proxy` names the host: `*`, a domain (and its subdomains), an IP or a CIDR, with optional :port."""
    if not no_proxy:
        return False
    host = host.lower().strip("[]").rstrip(".")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for raw in no_proxy.replace(" ", ",").split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        entry_port: int | None = None
        if entry.startswith("["):
            inside, _, rest = entry[1:].partition("]")
            entry = inside
            if rest.startswith(":") and rest[1:].isdigit():
                entry_port = int(rest[1:])
        elif entry.count(":") == 1:
            name, _, text = entry.partition(":")
            if text.isdigit():
                entry, entry_port = name, int(text)
        if entry_port is not None and entry_port != port:
            continue
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        domain = entry.lstrip("*").lstrip(".").rstrip(".")
        if domain and (host == domain or host.endswith("." + domain)):
            return True
    return False


def choose_proxy(url: HttpURL, setting: str | None, environ: Mapping[str, str]) -> HttpURL | None:
    """The proxy for `url`, or None to connect directly."""
    no_proxy = _env(environ, "no_proxy", "NO_PROXY")
    if bypassed(url.host, url.port, no_proxy):
        return None
    if setting is not None:
        return parse_proxy(setting) if setting else None
    text = _env(environ, "https_proxy", "HTTPS_PROXY") if url.scheme == "https" else _env(environ, "http_proxy")
    return parse_proxy(text) if text else None
