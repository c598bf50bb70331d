"""The guard of RFC 1738 §6: refuse dangerous ports and line injection.

`check(url, policy)` runs before any name lookup or socket; `check_port` runs
again inside `fetcher.net.connect` for every derived connection (FTP data ports,
redirects, Prospero resolutions).  Nothing here does I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fetcher.errors import UnsafeURL
from fetcher.url import (
    URL,
    FileURL,
    FtpURL,
    GenericURL,
    GopherURL,
    HttpURL,
    MailtoURL,
    NewsURL,
    NntpURL,
    ProsperoURL,
    TelnetURL,
    WaisURL,
)

# The WHATWG Fetch "bad port" list.
BAD_PORTS = frozenset(
    {
        0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87,
        95, 101, 102, 103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143,
        161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556,
        563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190,
        5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
    }
)  # fmt: skip

# Ports that server-side request forgery aims at (Docker, MySQL, PostgreSQL,
# Redis, ..., memcached).  Refused for schemes that put user-chosen bytes on the
# wire as one line, where refusing CR/LF does not stop a one-line payload.
SSRF_PORTS = frozenset({2375, 3306, 5432, 6379, 8000, 8500, 9000, 9200, 10050, 11211})
LINE_SCHEMES = frozenset({"gopher", "gophers"})

# Ports a scheme legitimately uses although they are on the bad list.
SCHEME_PORTS: dict[str, frozenset[int]] = {
    "ftp": frozenset({21}),
    "ftps": frozenset({990}),
    "nntp": frozenset({119}),
    "news": frozenset({119}),
    "nntps": frozenset({563}),
    "snews": frozenset({563}),
    "telnet": frozenset({23}),
}

DEFAULT_REDIRECT_SCHEMES = frozenset({"http", "https", "ftp"})

_LINE_BREAKERS = re.compile(r"[\r\n\x00]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RAW_UNSAFE = re.compile(r"[\x00-\x20\x7f]")
# RFC 1738 §3.4.9, exactly: "+", TAB, "1", CRLF, "+-1", CRLF, one CRLF-ended
# line per answer (never a lone "." that would end the block early), ".", CRLF.
_ASK_FORM = re.compile(r"\+\t1\r\n\+-1\r\n(?:(?!\.\r\n)[^\r\n\x00]*\r\n)*\.\r\n")


@dataclass(frozen=True)
class Policy:
    """What the user allowed: extra ports, or no port policy at all."""

    allow_ports: frozenset[int] = field(default_factory=frozenset)
    unsafe_ports: bool = False
    redirect_schemes: frozenset[str] = DEFAULT_REDIRECT_SCHEMES


DEFAULT_POLICY = Policy()


def check(url: URL, policy: Policy = DEFAULT_POLICY) -> None:
    """Raise `UnsafeURL` if fetching `url` could attack the server it names."""
    port = getattr(url, "port", None)
    if port is not None and getattr(url, "host", None):
        check_port(url.scheme, port, policy, default_port=url.default_port)
    _check_injection(url)


def check_port(
    scheme: str,
    port: int,
    policy: Policy = DEFAULT_POLICY,
    *,
    default_port: int | None = None,
    what: str = "port",
) -> None:
    """Raise `UnsafeURL` if `port` is refused for `scheme` under `policy`."""
    if port == default_port or port in SCHEME_PORTS.get(scheme, ()):
        return
    if policy.unsafe_ports or port in policy.allow_ports:
        return
    if port in BAD_PORTS:
        rule = "bad-port"
        why = "it belongs to another service (the WHATWG Fetch bad-port list)"
    elif scheme in LINE_SCHEMES and port in SSRF_PORTS:
        rule = "ssrf-port"
        why = f"{scheme} sends URL text as a raw line, and this port is a common request-forgery target"
    else:
        return
    raise UnsafeURL(
        f"{what} {port} refused for {scheme} ({rule} rule): {why}",
        part="port",
        rule=rule,
        hint=f"if you trust this server, allow it with --allow-port {port} (library: allow_ports={{{port}}})",
    )


def _refuse(part: str, value: str, rule: str, what: str) -> UnsafeURL:
    match = _CONTROL.search(value) or _RAW_UNSAFE.search(value)
    char = repr(value[match.start()]) if match else "?"
    return UnsafeURL(
        f"{part} contains {char} after decoding ({rule} rule): {what}",
        part=part,
        rule=rule,
        hint="nothing lifts this rule; remove the encoded control character from the URL",
    )


def _line_safe(part: str, value: str | None) -> None:
    if value is not None and _LINE_BREAKERS.search(value):
        raise _refuse(part, value, "line-injection", "it would end the protocol line and start another command")


def _tab_safe(part: str, value: str | None) -> None:
    if value is not None and "\t" in value:
        raise _refuse(part, value, "line-injection", f"a TAB ends the gopher {part} field and starts another")


def _raw_safe(part: str, value: str | None) -> None:
    if value is not None and _RAW_UNSAFE.search(value):
        raise _refuse(part, value, "line-injection", "it would end or split the request line")


def _print_safe(part: str, value: str | None) -> None:
    if value is not None and _CONTROL.search(value):
        raise _refuse(part, value, "control-character", "it would be printed to a terminal")


def _check_injection(url: URL) -> None:
    if isinstance(url, FtpURL):
        _line_safe("user", url.user)
        _line_safe("password", url.password)
        for segment in url.cwd:
            _line_safe("cwd segment", segment)
        _line_safe("name", url.name)
    elif isinstance(url, HttpURL):
        _line_safe("user", url.user)
        _line_safe("password", url.password)
        # path and search stay encoded, so parsed URLs never hold these raw;
        # a URL built with .replace() might.
        _raw_safe("path", url.path)
        _raw_safe("search", url.search)
    elif isinstance(url, GopherURL):
        _line_safe("selector", url.selector)
        _tab_safe("selector", url.selector)
        if url.selector.startswith("-") or "?-" in url.selector:
            # Servers that hand selectors (or their "?args") to programs would read these as options.
            raise UnsafeURL(
                f"selector {url.selector[:40]!r} starts with an option ('-') (option-injection rule): "
                "a server that runs programs could obey it",
                part="selector",
                rule="option-injection",
                hint="nothing lifts this rule; a document's selector does not start with '-'",
            )
        _line_safe("search", url.search)
        _tab_safe("search", url.search)
        plus = url.plus
        if plus is not None and _LINE_BREAKERS.search(plus) and not _ASK_FORM.fullmatch(plus):
            raise _refuse(
                "gopher+ string",
                plus,
                "line-injection",
                "only the ASK form of RFC 1738 §3.4.9 "
                "(+%091%0D%0A+-1%0D%0A<answer>%0D%0A...%0D%0A.%0D%0A) may hold CR and LF",
            )
    elif isinstance(url, NewsURL):
        _line_safe("group", url.group)
        _line_safe("message-id", url.message_id)
        if url.message_id is not None and (" " in url.message_id or "\t" in url.message_id):
            raise UnsafeURL(
                "message-id contains white space after decoding (line-injection rule): "
                "it would add arguments to the NNTP command",
                part="message-id",
                rule="line-injection",
                hint="nothing lifts this rule; a message-id holds no white space",
            )
    elif isinstance(url, NntpURL):
        _line_safe("group", url.group)
    elif isinstance(url, ProsperoURL):
        _line_safe("hsoname", url.hsoname)
        for name, value in url.fields.items():
            _line_safe("field", name)
            _line_safe("field", value)
    elif isinstance(url, WaisURL):
        _line_safe("database", url.database)
        _line_safe("search", url.search)
    elif isinstance(url, TelnetURL):
        _print_safe("user", url.user)
        _print_safe("password", url.password)
    elif isinstance(url, MailtoURL):
        _print_safe("address", url.address)
    elif isinstance(url, FileURL):
        if "\x00" in url.path:
            raise _refuse("path", url.path, "nul-in-path", "the operating system would cut the file name there")
    elif isinstance(url, GenericURL):
        pass


def check_redirect(
    source: URL, target: URL, policy: Policy = DEFAULT_POLICY, *, also: frozenset[str] = frozenset()
) -> None:
    """A redirect or resolution may only lead to an allowed scheme; never to file:.

    `also` widens the allowed set for one call (a Prospero resolution may lead
    to any access method the directory names); file: stays refused.
    """
    allowed = policy.redirect_schemes | also
    if target.scheme == "file" or (target.scheme != source.scheme and target.scheme not in allowed):
        raise UnsafeURL(
            f"{source.scheme} redirect to a {target.scheme}: URL refused",
            part="scheme",
            rule="redirect-scheme",
            hint="file: is never followed; allow other schemes with --redirect-schemes"
            if target.scheme != "file"
            else "a server may never send you to a local file",
        )
    check(target, policy)


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def check_headers(headers: tuple[tuple[str, str], ...], user_agent: str | None = None) -> None:
    """Header fields the user adds (-H, -A, -e): refused when CR, LF or NUL could split the request.

    Same shape as the URL rules: `UnsafeURL` (exit 3) naming the part and
    the line-injection rule; a name that is not an RFC 9110 token is refused
    the same way, since it would not reach the server as one field.
    """
    fields = [*headers, *([("User-Agent", user_agent)] if user_agent is not None else [])]
    for name, value in fields:
        _line_safe(f"header {name!r}", name)
        _line_safe(f"header {name!r}", value)
        if _CONTROL.search(value.replace("\t", " ")):
            raise _refuse(f"header {name!r}", value, "control-character", "HTTP does not carry it in a field")
        if not value.isascii():
            from fetcher.errors import UsageError

            raise UsageError(
                f"header {name!r} holds a non-ASCII character; HTTP header values are ASCII",
                hint="percent-encode it, or give the value in ASCII",
            )
        if not _HEADER_NAME.fullmatch(name):
            raise UnsafeURL(
                f"header name {name!r} is not a token (line-injection rule): it would not be sent as one field",
                part="header",
                rule="line-injection",
                hint="give -H 'Name: value' with a name of letters, digits and -",
            )
