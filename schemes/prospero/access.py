"""From a Prospero link or ACCESS-METHOD to a URL of the underlying protocol, pure.

RFC 1738 says external objects are "represented as URLs of the underlying
access method"; the notes §3.2 give the table.  Empty tuple fields default to
the link's (or the queried object's) host and hsoname.  Every URL is built
with the URL classes and then parsed back, so a server cannot hand us a URL
the parser would refuse (a bad host name, say).
"""

from __future__ import annotations

from dataclasses import dataclass

from fetcher.errors import FetchError, ProtocolError
from fetcher.schemes.prospero.protocol import Link, split_host
from fetcher.url import URL, FtpURL, GopherURL, ProsperoURL, TelnetURL, WaisURL, parse_url

CONTENTS = "PROSPERO-CONTENTS"
_TYPECODES = {"BINARY": "i", "TEXT": "a", "DIRECTORY": "d"}


@dataclass(frozen=True)
class Method:
    """One usable access method: the URL to fetch (None for PROSPERO-CONTENTS) and a hint."""

    name: str
    url: URL | None
    hint: str = ""
    host: str = ""
    hsoname: str = ""


def prospero_url(host_field: str, hsoname: str) -> ProsperoURL:
    """A `prospero://` URL for a link's host (`HOST(port)`) and hsoname (notes §3.3)."""
    host, port = split_host(host_field)
    url = ProsperoURL(scheme="prospero", host=host, port=port or 1525, hsoname=hsoname, fields={}, fragment=None)
    return _checked(url)  # type: ignore[return-value]


def _checked(url: URL) -> URL:
    try:
        return parse_url(str(url))
    except FetchError as error:
        raise ProtocolError(f"the server's access method gives an unusable URL: {error}") from None


def _segments(path: str) -> tuple[tuple[str, ...], str]:
    parts = path.lstrip("/").split("/")
    return tuple(parts[:-1]), parts[-1]


def build(values: list[str], default_host: str, default_hsoname: str) -> Method:
    """The URL for one ACCESS-METHOD value; `ProtocolError` says why it cannot be used."""
    if len(values) < 5:
        raise ProtocolError(f"ACCESS-METHOD {' '.join(values)!r} has fewer than 5 fields")
    method, host_type, host_field, _hsoname_type, hsoname = values[:5]
    extra = values[5:]
    if not host_field:
        host_field = default_host
        host_type = host_type or "INTERNET-D"
    hsoname = hsoname or default_hsoname
    if method == CONTENTS:
        return Method(method, None, host=host_field, hsoname=hsoname)
    if host_type not in ("INTERNET-D", ""):
        raise ProtocolError(f"{method}: host type {host_type!r} is not an Internet host")
    host, port = split_host(host_field)
    if not host:
        raise ProtocolError(f"{method}: no host")
    url: URL
    if method in ("AFTP", "FTP"):
        if len(extra) != 1:
            raise ProtocolError(f"{method} takes 6 fields, got {len(values)}")
        cwd, name = _segments(hsoname)
        if method == "FTP" and hsoname.startswith("/"):
            # A full server path: RFC 1738 spells the leading "/" as %2F.
            cwd, name = (("/" + cwd[0], *cwd[1:]), name) if cwd else ((), "/" + name)
        url = FtpURL(scheme="ftp", user=None, password=None, host=host, port=port or 21, cwd=cwd, name=name,
                     typecode=_TYPECODES.get(extra[0].upper()), fragment=None)  # fmt: skip
    elif method == "GOPHER":
        if len(extra) > 1:
            raise ProtocolError(f"GOPHER takes 5 or 6 fields, got {len(values)}")
        kind = extra[0] if extra else ""
        gtype = {"TEXT": "0", "BINARY": "9"}.get(kind.upper(), kind if len(kind) == 1 else "")
        if not gtype:
            if kind or not hsoname:
                raise ProtocolError(f"GOPHER item type {kind!r} is not one character, TEXT or BINARY")
            gtype = hsoname[0]
        url = GopherURL(scheme="gopher", host=host, port=port or 70, gtype=gtype, selector=hsoname, search=None,
                        plus=None, fragment=None)  # fmt: skip
    elif method == "TELNET":
        url = TelnetURL(scheme="telnet", user=None, password=None, host=host, port=port or 23, fragment=None)
        return Method(method, _checked(url), hint=" ".join(extra), host=host_field, hsoname=hsoname)
    elif method == "WAIS":
        url = _wais(host, port, hsoname, extra)
    else:
        raise ProtocolError(f"{method} is not a method fetcher can follow")
    return Method(method, _checked(url), host=host_field, hsoname=hsoname)


def _wais(host: str, port: int | None, hsoname: str, extra: list[str]) -> URL:
    # [inference] Only an hsoname that already names a database (and, for a
    # document, its type and path) maps onto RFC 1738 §3.9; a bare document id
    # (WAIS/OBJECT/..., or a 6th-field locator) has no database to name.
    parts = hsoname.lstrip("/").split("/", 2)
    if extra or parts[0] in ("", "WAIS") or len(parts) == 2:
        raise ProtocolError("WAIS: the document id names no database, so no wais: URL can be formed")
    wtype, wpath = (parts[1], parts[2]) if len(parts) == 3 else (None, None)
    return WaisURL(scheme="wais", host=host, port=port or 210, database=parts[0], search=None, wtype=wtype,
                   wpath=wpath, fragment=None)  # fmt: skip


def candidates(methods: list[list[str]], default_host: str, default_hsoname: str) -> tuple[list[Method], list[str]]:
    """Every usable method, best first, and the reasons the others were passed over.

    Server order decides within a rank.  A URL method (AFTP, GOPHER, TELNET,
    WAIS) beats FTP, which wants a real login, and both beat
    PROSPERO-CONTENTS: the 5.3 server lists that first, but a UDP transfer is
    slow and crashed that server for AFTP-style names (notes §2.7, §3.1).
    The handler tries them in this order, falling back to the next when one
    cannot be reached or refuses.
    """
    ranked: list[tuple[int, int, Method]] = []
    skipped: list[str] = []
    for index, values in enumerate(methods):
        name = values[0] if values else "?"
        try:
            method = build(values, default_host, default_hsoname)
        except ProtocolError as error:
            skipped.append(f"{name}: {error}")
            continue
        rank = 2 if method.name == CONTENTS else 1 if method.name == "FTP" else 0
        ranked.append((rank, index, method))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in ranked], skipped


def choose(methods: list[list[str]], default_host: str, default_hsoname: str) -> tuple[Method | None, list[str]]:
    """The method to try first and the reasons the others were passed over."""
    usable, skipped = candidates(methods, default_host, default_hsoname)
    return (usable[0] if usable else None), skipped


_FIELDS = ("method", "host_type", "host", "hsoname_type", "hsoname")


def describe(methods: list[list[str]], default_host: str, default_hsoname: str) -> list[dict[str, object]]:
    """Every ACCESS-METHOD as the server sent it, field by field, with the URL it gives or why none."""
    usable, _ = candidates(methods, default_host, default_hsoname)
    described: list[dict[str, object]] = []
    for values in methods:
        row: dict[str, object] = dict(zip(_FIELDS, values, strict=False))
        row["extra"] = list(values[5:])
        try:
            method = build(values, default_host, default_hsoname)
        except ProtocolError as error:
            row["usable"] = False
            row["reason"] = str(error)
        else:
            row["usable"] = True
            row["url"] = str(method.url) if method.url is not None else None
            row["order"] = usable.index(method) + 1 if method in usable else None
        described.append(row)
    return described


def entry_type(link: Link, method: Method | None) -> str:
    """A listing's type word for a link."""
    if link.target in ("DIRECTORY", "DIRECTORY+FILE") or link.flavour == "U":
        return "directory"
    if method is not None and isinstance(method.url, FtpURL) and method.url.typecode == "d":
        return "directory"
    if method is not None and isinstance(method.url, GopherURL) and method.url.gtype == "1":
        return "directory"
    if link.target == "EXTERNAL" and method is not None and method.name == "TELNET":
        return "link"
    return "file"
