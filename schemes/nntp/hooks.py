"""What the core asks of nntp: and news: URLs besides retrieving them (the handler's hooks).

An article of `nntp://host/group/N` is saved as `group.N`, and under
--layout tree as `group/N`; a group alone names its listing.  news: URLs
name no server, so they have no tree of their own.
"""

from __future__ import annotations

from fetcher.handler import BaseHandler
from fetcher.url import URL, NntpURL


class Hooks(BaseHandler):
    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        if not isinstance(url, NntpURL):
            return super().local_name(url, index=index)
        return f"{url.group}.{url.article}" if url.article is not None else url.group

    def tree_segments(self, url: URL) -> list[str]:
        if not isinstance(url, NntpURL):
            return []
        return [url.group] + ([str(url.article)] if url.article is not None else [])
