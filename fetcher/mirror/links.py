"""Links in an HTML page, for `-r` over HTTP (pure: text in, link texts out).

Built on the standard library's tolerant `html.parser`, fed chunk by chunk so
a page never has to sit in memory whole.  It reports what a browser would
request for the page's own structure: `href` of `a`, `area` and `link`,
`src` of `img`, `script`, `iframe`, `frame`, `embed`, `source`, `audio`,
`video` and `track`, each candidate of `srcset`, and the target of a
`<meta http-equiv="refresh">`.  `<base href>` changes what relative links
resolve against, as HTML says: only its first occurrence counts.

The caller resolves and filters; this module neither joins URLs nor decides
what to follow, so it can be fuzzed without a network.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from fetcher.errors import LimitExceeded

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
