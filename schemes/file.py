"""file: (RFC 1738 §3.10): local files stream; local directories list.

Only "" and "localhost" name this machine; any other host is refused
(RFC 1738 defines no protocol for reaching it), with a pointer to ftp:.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from fetcher.errors import AuthError, NotFound, UsageError
from fetcher.handler import BaseHandler, Entry, Resource, Session, aio, guess_type
from fetcher.url import URL, FileURL

CHUNK = 1 << 20


def _os_error(error: OSError, path: str) -> Exception:
    if isinstance(error, FileNotFoundError | NotADirectoryError):
        return NotFound(f"no such file or directory: {path}")
    if isinstance(error, PermissionError):
        return AuthError(f"permission denied: {path}", hint="check the file's permissions")
    return UsageError(f"cannot read {path}: {error.strerror or error}")


class Handler(BaseHandler):
    scheme = "file"
    default_port = None

    # -- hooks: a local path names the file and is the tree of --layout tree and -r

    def local_name(self, url: URL, *, index: bool = True) -> str | None:
        if not isinstance(url, FileURL):
            return super().local_name(url, index=index)
        return (url.path if index else url.path.rstrip("/")).rsplit("/", 1)[-1]

    def tree_segments(self, url: URL) -> list[str]:
        return url.path.split("/") if isinstance(url, FileURL) else []

    def tree_path(self, url: URL) -> tuple[str, bool] | None:
        return ("/" + url.path.lstrip("/"), False) if isinstance(url, FileURL) else None

    async def open(self, url: URL, session: Session) -> Resource:
        assert isinstance(url, FileURL)
        if not url.is_local:
            raise UsageError(
                f"file: URL names another host ({url.host}); fetcher reads only this machine's files",
                hint=f"to fetch from that host use ftp://{url.host}/{url.path}",
            )
        path = "/" + url.path
        try:
            info = os.stat(path)
        except OSError as error:
            raise _os_error(error, path) from None
        if stat.S_ISDIR(info.st_mode):
            return self._listing(url, path)
        try:
            handle = open(path, "rb")  # noqa: SIM115 - closed by the body generator
        except OSError as error:
            raise _os_error(error, path) from None
        offset = min(session.offset, info.st_size)
        if offset:
            handle.seek(offset)
        content_type = _content_type(path)
        return Resource(
            url,
            "document",
            content_type=content_type or "application/octet-stream",
            size=info.st_size,
            body=_read(handle),
            offset=offset,
            modified=datetime.fromtimestamp(info.st_mtime, tz=UTC),
        )

    def _listing(self, url: FileURL, path: str) -> Resource:
        try:
            names = sorted(os.listdir(path))
        except OSError as error:
            raise _os_error(error, path) from None
        base = url.path if url.path.endswith("/") or not url.path else url.path + "/"
        entries = []
        for name in names:
            full = os.path.join(path, name)
            try:
                info = os.lstat(full)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(info.st_mode)
            kind = "directory" if is_dir else "link" if stat.S_ISLNK(info.st_mode) else "file"
            if kind == "file" and not stat.S_ISREG(info.st_mode):
                kind = "other"  # a device, FIFO or socket: -r does not read it (a FIFO would block)
            child = FileURL(scheme="file", host=url.host, path=base + name + ("/" if is_dir else ""), fragment=None)
            entries.append(
                Entry(
                    name=name + ("/" if is_dir else ""),
                    url=str(child),
                    type=kind,
                    size=None if is_dir else info.st_size,
                    extra={"modified": datetime.fromtimestamp(info.st_mtime, tz=UTC).isoformat()},
                )
            )
        return Resource(url, "listing", content_type="text/directory", entries=entries)


async def _read(handle: object) -> AsyncIterator[bytes]:
    file = handle  # a binary file object
    try:
        while True:
            chunk = file.read(CHUNK)  # type: ignore[attr-defined]
            if not chunk:
                return
            yield chunk
            await aio.checkpoint()
    finally:
        file.close()  # type: ignore[attr-defined]


def _content_type(path: str) -> str | None:
    """The type the name says (`fetcher.mime`: Python's own table first, the system's for the rest)."""
    return guess_type(path)
