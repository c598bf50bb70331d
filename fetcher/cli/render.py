"""Listings and advisories as text, JSON lines or links; names for saved files."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from fetcher.registry import hooks
from fetcher.resource import Advisory, Entry, Resource
from fetcher.text import escape, mask_secrets, safe_filename
from fetcher.url import URL

if TYPE_CHECKING:
    from fetcher.handler.base import BaseHandler


def _size(size: int | None) -> str:
    if size is None:
        return "-"
    for unit in ("", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{size}{unit}" if unit == "" else f"{size:.1f}{unit}"
        size = size / 1024  # type: ignore[assignment]
    return str(size)  # pragma: no cover


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


def listing_table(entries: Iterable[Entry], url: URL | None = None) -> str:
    """An aligned table: type, size, name, description; info rows as plain text (see `listing_lines`)."""
    return "".join(listing_lines(entries, url=url))


def listing_lines(entries: Iterable[Entry], form: str = "table", *, url: URL | None = None) -> Iterator[str]:
    """A listing as text, line by line, so a printer never holds it whole: the
    aligned table (the view of `url`'s scheme, as a Gopher menu, else `ls -l`
    facts or type/size/name), "json" lines or "links"."""
    if form == "json":
        yield from (_json_row(entry) for entry in entries)
        return
    if form == "links":
        yield from (escape(entry.url) + "\n" for entry in entries if entry.url)
        return
    entries = list(entries)
    view = _hooks(url.scheme).listing_view(entries) if url is not None and entries else None
    if view is not None:
        yield from view
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

    The scheme's handler says which path lies below the host and how the
    host's directory is named (`tree_segments`, `host_directory` hooks).
    Every component goes through `safe_filename`, so no `..`, absolute path
    or device name from a URL or a server can escape the output directory.
    """
    hooks = _hooks(url.scheme)
    host = str(getattr(url, "host", None) or "localhost")
    port = getattr(url, "port", None)
    top = host if port in (None, url.default_port) else f"{host}_{port}"
    segments = hooks.tree_segments(url)
    parts = [_part(segment) for segment in segments if segment not in ("", ".", "..")]
    if not directory and (not parts or segments[-1] == ""):
        parts.append("index")
    return [_part(hooks.host_directory(url, top)), *parts]


async def links_listing(resource: Resource, *, max_links: int, option: str) -> Resource:
    """A document as the listing of its links, for `--links` and `--json` (an HTML page's links).

    A scheme whose handler says its HTML documents are pages (its
    `page_links` hook) has them read by the mirror's extractor
    (fetcher.mirror.links); a document that cannot be listed (not a page,
    or a scheme without the hook) is a usage error, rather than its bytes
    where a list of URLs was asked for.
    """
    from fetcher.errors import UsageError

    entries = None
    if _hooks(resource.url.scheme).page_links:
        from fetcher.mirror.links import page_entries  # only --links/--json on a page

        entries = await page_entries(resource, max_links=max_links)
    if entries is None:
        kind = resource.content_type.split(";", 1)[0].strip() if resource.content_type else "no type"
        raise UsageError(
            f"{option}: {resource.url.redacted()} is a document ({escape(kind)}), not a listing or an HTML page",
            hint=f"{option} shows listings, advisories and the links of HTML pages; leave it out to get the document",
        )
    return Resource(resource.url, "listing", entries=entries, content_type=resource.content_type)


def _hooks(scheme: str) -> BaseHandler:
    """The scheme's handler hooks (fetcher.registry: the core names no scheme)."""
    return hooks(scheme)


def remote_name(url: URL, suggested: str | None = None, *, index: bool = True) -> str:
    """A local file name for -O: the server's suggestion or the URL's last segment, sanitized.

    The URL's name is its handler's `local_name` hook.  A URL whose last
    segment is empty names a directory (`ftp://h/pub/`, `http://h/pub/`,
    `gopher://h/1/pub/`): -O saves it as `index`, whatever the scheme (the
    README's rule).  `index=False` names it after the directory instead
    (`pub`), as bulk runs and mirrors name listings.
    """
    if suggested:
        return safe_filename(suggested)
    candidate = _hooks(url.scheme).local_name(url, index=index) or ""
    return safe_filename(candidate, fallback="index")
