"""Listings and advisories as text, JSON lines or links; names for saved files."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import unquote  # already loaded by pathlib

from fetcher.resource import Advisory, Entry, Resource
from fetcher.text import escape, mask_secrets, safe_filename
from fetcher.url import URL, FileURL, FtpURL, GenericURL, GopherURL, HttpURL, NntpURL, ProsperoURL, WaisURL


def _size(size: int | None) -> str:
    if size is None:
        return "-"
    for unit in ("", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{size}{unit}" if unit == "" else f"{size:.1f}{unit}"
        size = size / 1024  # type: ignore[assignment]
    return str(size)  # pragma: no cover


def gopher_menu(entries: list[Entry]) -> str:
    """A Gopher client's menu view: a type tag, the display string, where foreign links lead."""
    return "".join(_menu_lines(entries))


def _menu_lines(entries: list[Entry]) -> Iterator[str]:
    tags = {"text": "TXT", "menu": "DIR", "search": "?", "html": "HTML", "telnet": "TEL", "tn3270": "TEL",
            "error": "ERR", "cso": "CSO", "gif": "IMG", "image": "IMG", "png": "IMG", "sound": "SND"}  # fmt: skip
    # With Gopher+ attributes the facts follow the names, in one column.
    name_width = max((len(escape(entry.name)) for entry in entries if entry.extra.get("attributes")), default=0)
    for entry in entries:
        if entry.type == "info":
            yield " " * 8 + escape(entry.name) + "\n"
            continue
        tag = "(" + tags.get(entry.type, "BIN") + ")"
        line = f"{tag:<8}{escape(entry.name)}"
        extra = entry.extra
        if entry.url and (extra.get("link") or extra.get("gopher_type") in ("8", "T")):
            line += f"  -> {escape(mask_secrets(entry.url))}"
        elif extra.get("foreign"):
            line += f"  [{escape(str(extra.get('host')))}:{extra.get('port')}]"
        if extra.get("gopher_plus") == "?":
            line += "  <form>"
        if extra.get("problem") and extra["problem"] != entry.name:
            line += f"  ({escape(str(extra['problem']))})"
        if extra.get("refused"):
            line += f"  (refused: {escape(str(extra['refused']))})"
        facts = _plus_facts(entry)
        if facts:
            line = f"{line:<{name_width + 8}}  {facts}"
        yield line.rstrip() + "\n"


def _plus_facts(entry: Entry) -> str:
    """A Gopher+ item's facts from its attributes ($ or ! requests): size of its first view, date, abstract."""
    attributes = entry.extra.get("attributes")
    if not isinstance(attributes, dict):
        return ""
    views = attributes.get("views") or []
    size = str(views[0].get("size") or "").strip("<> ") if views and isinstance(views[0], dict) else ""
    modified = str(attributes.get("modified") or "")[:10]
    abstract = " ".join(str(attributes.get("abstract") or "").split())
    return "  ".join(escape(fact) for fact in (f"{size or '-':>5}", modified or "-", abstract) if fact).rstrip()


def _when(entry: Entry) -> str:
    """The modification time to the precision the server gave, in UTC."""
    if entry.modified is None:
        return "-"
    precision = entry.extra.get("precision")
    if precision == "day":
        return entry.modified.strftime("%Y-%m-%d")
    if precision == "minute":
        return entry.modified.strftime("%Y-%m-%d %H:%M")
    return entry.modified.strftime("%Y-%m-%d %H:%M:%S")


def facts_table(entries: list[Entry]) -> str:
    """Like `ls -l`: permissions (or the type), size in bytes, UTC time, name (-> link target)."""
    return "".join(_facts_lines(entries))


def _facts_lines(entries: list[Entry]) -> Iterator[str]:
    rows = []
    for entry in entries:
        name = escape(entry.name)
        if entry.target is not None:
            name += " -> " + escape(entry.target)
        size = "-" if entry.size is None else str(entry.size)
        rows.append((escape(entry.mode or entry.type), size, _when(entry), name))
    widths = [max((len(row[column]) for row in rows), default=0) for column in range(3)]
    for mode, size, when, name in rows:
        yield f"{mode:<{widths[0]}}  {size:>{widths[1]}}  {when:<{widths[2]}}  {name}\n"


def listing_table(entries: Iterable[Entry]) -> str:
    """An aligned table: type, size, name, description; info rows as plain text."""
    return "".join(listing_lines(entries))


def listing_lines(entries: Iterable[Entry], form: str = "table") -> Iterator[str]:
    """A listing as text, line by line, so a printer never holds it whole: the
    aligned table (a Gopher menu, `ls -l` facts or type/size/name), "json" lines
    or "links"."""
    if form == "json":
        yield from (_json_row(entry) for entry in entries)
        return
    if form == "links":
        yield from (escape(entry.url) + "\n" for entry in entries if entry.url)
        return
    entries = list(entries)
    if entries and all("gopher_type" in entry.extra for entry in entries):
        yield from _menu_lines(entries)
        return
    if entries and any(entry.modified is not None or entry.mode is not None for entry in entries):
        yield from _facts_lines(entries)
        return
    rows: list[tuple[str, str, str, str] | str] = []
    for entry in entries:
        if entry.type == "info":
            rows.append(escape(entry.description or entry.name))
            continue
        rows.append((escape(entry.type), _size(entry.size), escape(entry.name), escape(entry.description)))
    table = [row for row in rows if isinstance(row, tuple)]
    type_width = max((len(row[0]) for row in table), default=0)
    size_width = max((len(row[1]) for row in table), default=0)
    name_width = max((len(row[2]) for row in table), default=0)
    for row in rows:
        if isinstance(row, str):
            yield (" " * (type_width + size_width + 4) + row if table else row) + "\n"
            continue
        kind, size, name, description = row
        line = f"{kind:<{type_width}}  {size:>{size_width}}  {name}"
        if description:
            line = f"{line:<{type_width + size_width + name_width + 4}}  {description}"
        yield line.rstrip() + "\n"


def _json_row(entry: Entry) -> str:
    import json  # only --json needs it (not imported for a plain fetch: issue 17)

    row = entry.as_dict()
    if row.get("url"):
        row["url"] = mask_secrets(row["url"])
    return json.dumps(row, ensure_ascii=True, default=str) + "\n"


def listing_json(entries: Iterable[Entry]) -> str:
    """JSON lines, one per entry: ASCII only (a terminal cannot be fooled), passwords in URLs masked."""
    return "".join(listing_lines(entries, "json"))


def listing_links(entries: Iterable[Entry]) -> str:
    """Absolute URLs, one per line: the input format of `fetch -i -`."""
    return "".join(listing_lines(entries, "links"))


def advisory_text(advisory: Advisory) -> str:
    lines = [escape(advisory.title), escape(advisory.text, keep_newlines=True)]
    for name, value in advisory.fields.items():
        # Structured fields (lists, dicts) are for --json; the text already says them readably.
        if value is not None and not isinstance(value, list | dict):
            lines.append(f"  {escape(str(name))}: {escape(str(value))}")
    return "\n".join(line for line in lines if line) + "\n"


def advisory_json(advisory: Advisory) -> str:
    import json

    data: dict[str, Any] = {"title": advisory.title, "text": advisory.text, **advisory.fields}
    if isinstance(data.get("url"), str):
        data["url"] = mask_secrets(data["url"])
    return json.dumps(data, ensure_ascii=True, default=str) + "\n"


def _part(text: str) -> str:
    return safe_filename(text.replace("/", "_"), fallback="_")


def tree_parts(url: URL, *, directory: bool = False) -> list[str]:
    """Path components that mirror host/path for --layout tree, each sanitized.

    Every component goes through `safe_filename`, so no `..`, absolute path
    or device name from a URL or a server can escape the output directory.
    """
    host = str(getattr(url, "host", None) or "localhost")
    port = getattr(url, "port", None)
    top = host if port in (None, url.default_port) else f"{host}_{port}"
    segments: list[str] = []
    if isinstance(url, FtpURL):
        segments = [*url.cwd, url.name]
    elif isinstance(url, HttpURL):
        from urllib.parse import unquote

        segments = [unquote(part, errors="surrogateescape") for part in url.path.split("/")]
    elif isinstance(url, GopherURL):
        segments = url.selector.split("/")
        if url.gtype == "1" and segments[-1] != "":
            # A menu is a directory, slash or not (Motsognir and many servers name `/a/b`, not `/a/b/`):
            # as a document it would be `b/index`, so `b` stays free for what lies below it.
            segments.append("")
    elif isinstance(url, FileURL):
        segments = url.path.split("/")
    elif isinstance(url, ProsperoURL):
        segments = url.hsoname.split("/")
    elif isinstance(url, NntpURL):
        segments = [url.group] + ([str(url.article)] if url.article is not None else [])
    elif isinstance(url, WaisURL):
        segments = [url.database] + ([url.wtype or "", remote_name(url)] if url.wpath else [])
    parts = [_part(segment) for segment in segments if segment not in ("", ".", "..")]
    if not directory and (not parts or segments[-1] == ""):
        parts.append("index")
    return [_part(url.scheme + "_" + top) if url.scheme not in ("http", "https", "ftp") else _part(top), *parts]


async def links_listing(resource: Resource, *, max_links: int, option: str) -> Resource:
    """A document as the listing of its links, for `--links` and `--json` (an HTML page's links).

    A scheme whose handler says its HTML documents are pages (its
    `page_links` hook) has them read by the mirror's extractor
    (fetcher.mirror.links); a document that cannot be listed (not a page,
    or a scheme without the hook) is a usage error, rather than its bytes
    where a list of URLs was asked for.
    """
    from fetcher.errors import UsageError
    from fetcher.registry import get_handler

    entries = None
    if getattr(get_handler(resource.url.scheme), "page_links", False):
        from fetcher.mirror.links import page_entries  # only --links/--json on a page

        entries = await page_entries(resource, max_links=max_links)
    if entries is None:
        kind = resource.content_type.split(";", 1)[0].strip() if resource.content_type else "no type"
        raise UsageError(
            f"{option}: {resource.url.redacted()} is a document ({escape(kind)}), not a listing or an HTML page",
            hint=f"{option} shows listings, advisories and the links of HTML pages; leave it out to get the document",
        )
    return Resource(resource.url, "listing", entries=entries, content_type=resource.content_type)


def _handler_name(url: URL) -> str | None:
    """The name a handler derives from a URL (`Handler.local_name`), if it has that hook."""
    from fetcher.registry import get_handler

    hook = getattr(get_handler(url.scheme), "local_name", None)
    name = hook(url) if hook is not None else None
    return name if isinstance(name, str) and name else None


def remote_name(url: URL, suggested: str | None = None, *, index: bool = True) -> str:
    """A local file name for -O: the server's suggestion or the URL's last segment, sanitized.

    A URL whose last segment is empty names a directory (`ftp://h/pub/`,
    `http://h/pub/`, `gopher://h/1/pub/`): -O saves it as `index`, whatever
    the scheme (the README's rule).  `index=False` names it after the
    directory instead (`pub`), as bulk runs and mirrors name listings.
    """
    if suggested:
        return safe_filename(suggested)
    candidate = ""
    if isinstance(url, FtpURL):
        candidate = url.name or (url.cwd[-1] if url.cwd and not index else "")
    elif isinstance(url, HttpURL):
        candidate = url.path.rsplit("/", 1)[-1]
        if "%" in candidate:
            candidate = unquote(candidate, errors="surrogateescape")
    elif isinstance(url, GopherURL):
        candidate = (url.selector if index else url.selector.rstrip("/")).rsplit("/", 1)[-1]
    elif isinstance(url, FileURL | ProsperoURL):
        path = url.path if isinstance(url, FileURL) else url.hsoname
        candidate = (path if index else path.rstrip("/")).rsplit("/", 1)[-1]
    elif isinstance(url, NntpURL):
        candidate = f"{url.group}.{url.article}" if url.article is not None else url.group
    elif isinstance(url, WaisURL):
        candidate = _handler_name(url) or url.database
    elif isinstance(url, GenericURL) and url.path:
        candidate = unquote((url.path if index else url.path.rstrip("/")).rsplit("/", 1)[-1], errors="surrogateescape")
    return safe_filename(candidate, fallback="index")
