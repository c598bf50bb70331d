"""What the core asks of gopher: and gophers: URLs besides retrieving them (the handler's hooks).

Pure functions: the name -O gives a file (the selector's last segment), the
path below the host for --layout tree and -r's scope (the selector), and
the terminal view of a menu (view.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fetcher.handler import BaseHandler
from fetcher.schemes.gopher.view import menu_view
from fetcher.url import URL, GopherURL

if TYPE_CHECKING:
    from fetcher.handler import Entry


#: Menu item types that name something a mirror cannot save, with the reason.
_NOT_MIRRORED = {
    "search": "a Gopher search item needs words to query (not mirrored)",
    "cso": "a CSO phone-book item is interactive (not mirrored)",
    "telnet": "a telnet item is an interactive session (not mirrored)",
    "tn3270": "a tn3270 item is an interactive session (not mirrored)",
}


class Hooks(BaseHandler):
    def not_mirrored(self, entry: Entry, follow_schemes: frozenset[str]) -> str | None:
        return _NOT_MIRRORED.get(entry.type) or super().not_mirrored(entry, follow_schemes)

    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        if not isinstance(url, GopherURL):
            return super().local_name(url, index=index)
        return (url.selector if index else url.selector.rstrip("/")).rsplit("/", 1)[-1]

    def tree_segments(self, url: URL) -> list[str]:
        if not isinstance(url, GopherURL):
            return []
        segments = url.selector.split("/")
        if url.gtype == "1" and segments[-1] != "":
            # A menu is a directory, slash or not (Motsognir and many servers name `/a/b`, not `/a/b/`):
            # as a document it would be `b/index`, so `b` stays free for what lies below it.
            segments.append("")
        return segments

    def tree_path(self, url: URL) -> tuple[str, bool] | None:
        return (url.selector, False) if isinstance(url, GopherURL) else None

    def listing_view(self, entries: list[Entry]) -> Iterator[str] | None:
        return menu_view(entries)
