"""What the core asks of ftp: and ftps: URLs besides retrieving them (the handler's hooks).

Pure functions of the URL: the name -O gives a file, the path below the
host for --layout tree and -r's scope.  ftp: trees sit in a directory named
after the host alone (as wget's); ftps: ones carry the scheme.
"""

from __future__ import annotations

from fetcher.handler import BaseHandler
from fetcher.url import URL, FtpURL


class Hooks(BaseHandler):
    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        if not isinstance(url, FtpURL):
            return super().local_name(url, index=index)
        return url.name or (url.cwd[-1] if url.cwd and not index else "")

    def tree_segments(self, url: URL) -> list[str]:
        return [*url.cwd, url.name] if isinstance(url, FtpURL) else []

    def host_directory(self, url: URL, host: str) -> str:
        return host if url.scheme == "ftp" else super().host_directory(url, host)

    def tree_path(self, url: URL) -> tuple[str, bool] | None:
        if not isinstance(url, FtpURL):
            return None
        return "/" + "/".join((*url.cwd, url.name)), False
