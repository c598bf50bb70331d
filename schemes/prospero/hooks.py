"""What the core asks of prospero: URLs besides retrieving them (the handler's hooks).

The hsoname is a path on the Prospero server: its last segment names a
file, and it is the tree for --layout tree and -r's scope.
"""

from __future__ import annotations

from fetcher.handler import BaseHandler
from fetcher.url import URL, ProsperoURL


class Hooks(BaseHandler):
    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        if not isinstance(url, ProsperoURL):
            return super().local_name(url, index=index)
        return (url.hsoname if index else url.hsoname.rstrip("/")).rsplit("/", 1)[-1]

    def tree_segments(self, url: URL) -> list[str]:
        return url.hsoname.split("/") if isinstance(url, ProsperoURL) else []

    def tree_path(self, url: URL) -> tuple[str, bool] | None:
        return (url.hsoname, False) if isinstance(url, ProsperoURL) else None
