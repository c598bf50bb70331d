"""What the core asks of prospero: URLs besides retrieving them (the handler's hooks).

The hsoname is a path on the Prospero server: its last segment names a
file, and it is the tree for --layout tree and -r's scope.
"""

from __future__ import annotations

from fetcher.handler import BaseHandler, Entry
from fetcher.url import URL, ProsperoURL


class Hooks(BaseHandler):
    def not_mirrored(self, entry: Entry, follow_schemes: frozenset[str]) -> str | None:
        """An EXTERNAL link is followed only to a scheme -r may cross into (--follow-schemes)."""
        if entry.extra.get("target") == "EXTERNAL":
            scheme = (entry.url or "").split(":", 1)[0].lower()
            if not entry.url:
                return f"a Prospero external link with {entry.description or 'no usable access method'} (not mirrored)"
            if scheme not in follow_schemes:
                method = entry.extra.get("method") or scheme
                return f"a Prospero external link (access method {method}); add --follow-schemes {scheme} to follow it"
        return super().not_mirrored(entry, follow_schemes)

    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        if not isinstance(url, ProsperoURL):
            return super().local_name(url, index=index)
        return (url.hsoname if index else url.hsoname.rstrip("/")).rsplit("/", 1)[-1]

    def tree_segments(self, url: URL) -> list[str]:
        return url.hsoname.split("/") if isinstance(url, ProsperoURL) else []

    def tree_path(self, url: URL) -> tuple[str, bool] | None:
        return (url.hsoname, False) if isinstance(url, ProsperoURL) else None
