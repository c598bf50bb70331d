"""The links of an HTML page as listing entries: what `fetch --links` and `--json` show of a page.

A page is what a listing is to FTP or Gopher: a list of places to go next.
`Handler.document_links` (the hook fetcher.cli.render asks for) reads the page
as it streams, through the same `LinkParser` that `-r` uses, and gives one
`Entry` per distinct link, resolved against `<base href>` or the page's URL,
without its fragment: absolute URLs that `fetch -i -` takes as they are.
"""

from __future__ import annotations

import codecs
from typing import TYPE_CHECKING
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

from fetcher.handler import Entry
from fetcher.mirror.links import LinkParser

if TYPE_CHECKING:
    from fetcher.handler import Resource

#: Content types read as HTML pages.
PAGE_TYPES = ("text/html", "application/xhtml+xml")


def is_page(content_type: str | None) -> bool:
    return (content_type or "").split(";", 1)[0].strip().lower() in PAGE_TYPES


def _decoder(content_type: str | None) -> codecs.IncrementalDecoder:
    """The page's charset (Content-Type), else UTF-8; undecodable bytes become U+FFFD."""
    charset = "utf-8"
    for part in (content_type or "").split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.strip().lower() == "charset" and value.strip("\"' "):
            charset = value.strip("\"' ")
    try:
        return codecs.getincrementaldecoder(charset)(errors="replace")
    except LookupError:
        return codecs.getincrementaldecoder("utf-8")(errors="replace")


def _without_login(url: str) -> str:
    """The page URL the links resolve against, without user or password (they are not the page's to hand on)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


async def page_entries(resource: Resource, *, max_links: int) -> list[Entry] | None:
    """The page's links as entries (name: the link as written; url: absolute), or None if it is not HTML.

    More than `max_links` distinct links raise LimitExceeded (exit 7, naming --limit frontier).
    """
    if not is_page(resource.content_type):
        return None
    decoder = _decoder(resource.content_type)
    parser = LinkParser(max_links=max_links)
    async for chunk in resource:
        parser.feed(decoder.decode(chunk))
    parser.feed(decoder.decode(b"", final=True))
    parser.close()
    page = _without_login(str(resource.url))
    base = urljoin(page, parser.base) if parser.base else page
    entries: list[Entry] = []
    seen: set[str] = set()
    for link in parser.links:
        absolute = urldefrag(urljoin(base, link))[0]
        if absolute and absolute not in seen:
            seen.add(absolute)
            entries.append(Entry(name=link, url=absolute, type="link"))
    return entries
