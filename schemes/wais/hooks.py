"""What the core asks of wais: URLs besides retrieving them (the handler's hooks).

A document URL (`wais://host/db/wtype/wpath`) is saved under the file name
in its DocID when the DocID carries one (freeWAIS-sf's local ids), else
under the database's name; under --layout tree it lies below the database
and its type.
"""

from __future__ import annotations

from fetcher.handler import BaseHandler
from fetcher.schemes.wais.codec import DocID, WaisDecodeError, split_wpath
from fetcher.text import safe_filename
from fetcher.url import URL, WaisURL


def file_name(docid: bytes) -> str | None:
    """The file name in a freeWAIS-sf local id ("<start> <end> <path>"), as a suggestion only."""
    try:
        local_id = DocID.decode(docid).local_id
    except WaisDecodeError:
        return None
    parts = (local_id or "").split(" ", 2)
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return parts[2].rstrip("/").rsplit("/", 1)[-1] or None


def docid_name(url: WaisURL) -> str | None:
    """The file name in a document URL's DocID, or None (not a document URL, or no name in it)."""
    if url.wtype is None or not url.wpath:
        return None
    try:
        _, docid = split_wpath(url.wpath)
    except WaisDecodeError:
        return None
    return file_name(docid)


class Hooks(BaseHandler):
    def not_mirrored_url(self, url: URL) -> str | None:
        if isinstance(url, WaisURL) and url.wtype is None and url.search is None:
            return "a WAIS database to search needs words (fetch --query WORDS URL); not mirrored"
        return None

    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        if not isinstance(url, WaisURL):
            return super().local_name(url, index=index)
        return docid_name(url) or url.database

    def tree_segments(self, url: URL) -> list[str]:
        if not isinstance(url, WaisURL):
            return []
        if not url.wpath:
            return [url.database]
        return [url.database, url.wtype or "", safe_filename(self.local_name(url) or "", fallback="index")]
