"""What the core asks of http: and https: URLs besides retrieving them (the handler's hooks).

Pure functions of the URL: the name -O gives a file (the last path segment,
percent-decoded), the path below the host for --layout tree and -r's scope
(compared still encoded, since `%2e` spells a dot to many servers), and
the archive's choice: HTTP's wire records say it all, so its trace lines
are not kept as a dialogue.
"""

from __future__ import annotations

from urllib.parse import unquote  # already loaded by pathlib

from fetcher.handler import BaseHandler
from fetcher.url import URL, HttpURL


class Hooks(BaseHandler):
    keeps_dialogue = False

    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        if not isinstance(url, HttpURL):
            return super().local_name(url, index=index)
        candidate = url.path.rsplit("/", 1)[-1]
        return unquote(candidate, errors="surrogateescape") if "%" in candidate else candidate

    def tree_segments(self, url: URL) -> list[str]:
        if not isinstance(url, HttpURL):
            return []
        return [unquote(part, errors="surrogateescape") for part in url.path.split("/")]

    def host_directory(self, url: URL, host: str) -> str:
        return host

    def tree_path(self, url: URL) -> tuple[str, bool] | None:
        return (url.path or "/", True) if isinstance(url, HttpURL) else None
