"""Links in HTML pages: the extractor, and the two readers of a page that use it.

`LinkParser` is pure (text in, link texts out), built on the standard
library's tolerant `html.parser` and fed chunk by chunk so a page never has
to sit in memory whole.  It reports what a browser would request for the
page's own structure: `href` of `a`, `area` and `link`, `src` of `img`,
`script`, `iframe`, `frame`, `embed`, `source`, `audio`, `video` and
`track`, each candidate of `srcset`, and the target of a
`<meta http-equiv="refresh">`.  `<base href>` changes what relative links
resolve against, as HTML says: only its first occurrence counts.  It
neither joins URLs nor decides what to follow, so it can be fuzzed without
a network.

Its readers resolve what it found: `page_links` reads a page `-r` saved
(fetcher.mirror.crawl follows its http(s) links), `page_entries` a page as
it streams, for `fetch --links` and `--json` (fetcher.cli.render asks when
the scheme's handler says its HTML documents are pages: its `page_links`
hook).  `is_html` says whether a saved document is a page at all.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

from fetcher.errors import LimitExceeded
from fetcher.resource import Entry

if TYPE_CHECKING:
    from fetcher.resource import Resource

_LINK_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "a": ("href",),
    "area": ("href",),
    "link": ("href",),
    "img": ("src", "srcset"),
    "script": ("src",),
    "iframe": ("src",),
    "frame": ("src",),
    "embed": ("src",),
    "source": ("src", "srcset"),
    "audio": ("src",),
    "video": ("src", "poster"),
    "track": ("src",),
}
#: `<link rel=...>` values that name something other than a document to mirror.
_SKIPPED_RELS = frozenset({"dns-prefetch", "preconnect", "alternate", "canonical", "manifest"})
_REFRESH_URL = re.compile(r"""^\s*\d*(?:\.\d*)?\s*[;,]\s*(?:url\s*=\s*)?(['"]?)(?P<url>.*?)\1\s*$""", re.I | re.S)
_WHITESPACE_IN_URL = re.compile(r"[\t\n\r]")


class LinkParser(HTMLParser):
    """Feed HTML text with `feed()`; read `links` and `base` as they are found.

    `max_links` bounds what a hostile page can make the list grow to.
    """

    def __init__(self, *, max_links: int = 100_000) -> None:
        super().__init__(convert_charrefs=True)
        self.max_links = max_links
        self.links: list[str] = []
        self.base: str | None = None
        self._seen: set[str] = set()

    def _add(self, value: str | None) -> None:
        if value is None:
            return
        # HTML strips leading/trailing spaces and drops tabs and newlines inside URLs.
        link = _WHITESPACE_IN_URL.sub("", value).strip()
        if not link or link.startswith("#") or link in self._seen:
            return
        lowered = link[:11].lower()
        if lowered.startswith(("javascript:", "data:", "mailto:", "about:")):
            return
        if len(self.links) >= self.max_links:
            raise LimitExceeded("links in one HTML page", self.max_links, "frontier")
        self._seen.add(link)
        self.links.append(link)

    def resolved(self, page_url: str) -> Iterator[tuple[str, str]]:
        """Each link as written and absolute (against `<base>`, else `page_url`; without its fragment)."""
        base = urljoin(page_url, self.base) if self.base else page_url
        for link in self.links:
            yield link, urldefrag(urljoin(base, link))[0]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "base":
            if self.base is None and values.get("href"):
                self.base = _WHITESPACE_IN_URL.sub("", values["href"] or "").strip() or None
            return
        if tag == "meta":
            if (values.get("http-equiv") or "").strip().lower() == "refresh":
                match = _REFRESH_URL.match(values.get("content") or "")
                if match:
                    self._add(match.group("url"))
            return
        names = _LINK_ATTRIBUTES.get(tag)
        if names is None:
            return
        if tag == "link":
            rels = set((values.get("rel") or "").lower().split())
            if rels & _SKIPPED_RELS:
                return
        for name in names:
            value = values.get(name)
            if name == "srcset":
                for candidate in (value or "").split(","):
                    self._add(candidate.strip().split(" ", 1)[0] if candidate.strip() else None)
            else:
                self._add(value)

    handle_startendtag = handle_starttag


def extract_links(html: str, *, max_links: int = 100_000) -> tuple[list[str], str | None]:
    """All link texts of a whole page, in document order without repeats, and its `<base href>`."""
    parser = LinkParser(max_links=max_links)
    parser.feed(html)
    parser.close()
    return parser.links, parser.base


# -- reading pages --------------------------------------------------------------------

#: Content types read as HTML pages.
PAGE_TYPES = ("text/html", "application/xhtml+xml")
#: The HTML signatures of the WHATWG MIME Sniffing standard (7.1), each followed by a space or ">"
#: (or, more leniently, another white-space byte).
_HTML_SIGNATURES = (b"<!doctype html", b"<html", b"<head", b"<script", b"<iframe", b"<h1", b"<div", b"<font",
                    b"<table", b"<a", b"<style", b"<title", b"<b", b"<body", b"<br", b"<p", b"<!--")  # fmt: skip
_TAG_END = frozenset({b" ", b">", b"\t", b"\n", b"\r", b"\x0c"})


def is_page(content_type: str | None) -> bool:
    """Does the Content-Type name an HTML page?"""
    return (content_type or "").split(";", 1)[0].strip().lower() in PAGE_TYPES


def is_html(content_type: str | None, path: Path | None) -> bool:
    """Is a saved document a page to take links from?

    By its type when there is one; a 304 has none (when the run's state
    did not keep it) and some servers send none: then by the name, else by
    the first bytes, as a browser sniffs (`index`, a directory's page, has
    no suffix to go by).
    """
    if content_type:
        return is_page(content_type)
    if path is None:
        return False
    if path.suffix.lower() in (".html", ".htm", ".xhtml"):
        return True
    try:
        with open(path, "rb") as page:
            head = page.read(512)
    except OSError:
        return False
    head = head.removeprefix(b"\xef\xbb\xbf").lstrip(b"\t\n\x0c\r ").lower()
    return any(head.startswith(sign) and head[len(sign) : len(sign) + 1] in _TAG_END for sign in _HTML_SIGNATURES)


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


def page_links(path: Path, page_url: str, content_type: str | None, *, max_links: int) -> tuple[list[str], str | None]:
    """The absolute http(s) links of a saved HTML page (read in pieces), resolved against `<base>` or the page URL.

    Returns the links and a note when the page had more links than `max_links` (those found first are kept).
    """
    decoder = _decoder(content_type)
    parser = LinkParser(max_links=max_links)
    note = None
    try:
        with open(path, "rb") as page:
            while chunk := page.read(65536):
                parser.feed(decoder.decode(chunk))
        parser.feed(decoder.decode(b"", final=True))
        parser.close()
    except LimitExceeded as error:
        note = error.message
    except OSError:
        return [], None
    links = [absolute for _, absolute in parser.resolved(page_url)
             if absolute.split(":", 1)[0].lower() in ("http", "https")]  # fmt: skip
    return links, note


def _without_login(url: str) -> str:
    """The page URL the links resolve against, without user or password (they are not the page's to hand on)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


async def page_entries(resource: Resource, *, max_links: int) -> list[Entry] | None:
    """A page's links as listing entries (name: the link as written; url: absolute, without its fragment,
    one per distinct link), or None if the document is not HTML.

    A page is what a listing is to FTP or Gopher: a list of places to go
    next, absolute URLs that `fetch -i -` takes as they are.  More than
    `max_links` distinct links raise LimitExceeded (exit 7, naming --limit frontier).
    """
    if not is_page(resource.content_type):
        return None
    decoder = _decoder(resource.content_type)
    parser = LinkParser(max_links=max_links)
    async for chunk in resource:
        parser.feed(decoder.decode(chunk))
    parser.feed(decoder.decode(b"", final=True))
    parser.close()
    entries: list[Entry] = []
    seen: set[str] = set()
    for link, absolute in parser.resolved(_without_login(str(resource.url))):
        if absolute and absolute not in seen:
            seen.add(absolute)
            entries.append(Entry(name=link, url=absolute, type="link"))
    return entries
