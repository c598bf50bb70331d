"""The authority part of a careful parse: `//[user[:password]@]host[:port]` split and checked.

Positions in errors count from the start of the text after "scheme:", as
the scheme parsers (`parsers`) report them.
"""

from __future__ import annotations

from fetcher.errors import URLError
from fetcher.url.grammar import PATTERNS


def split_login(scheme: str, rest: str, path_starts: str = "/") -> tuple[str, str | None]:
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


def parse_login(
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
    host, port = parse_hostport(login, offset, host_required)
    return user, password, host, port


def parse_hostport(hostport: str, offset: int, host_required: bool = True) -> tuple[str, str | None]:
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
    match = PATTERNS.ipv4.fullmatch(host)
    if match is not None:
        if any(len(octet.lstrip("0")) > 3 or int(octet) > 255 for octet in match.groups()):
            raise URLError(f"host {host!r}: IPv4 octets are 0-255", part="host", position=at)
        return host
    if PATTERNS.hostname.fullmatch(host) is None:
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
    if PATTERNS.digits.fullmatch(text) is None:
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
