"""`-r -N` over HTTP: the entity tag of every saved file, kept between runs.

A mirror run saves, beside the files, one state file in the output
directory: `DIR/.fetch-etags.jsonl`, one JSON object a line
(`url`, `etag`, `path`, `size`, `mtime`, and `type`, the Content-Type).
The next `-N` run sends the stored tag as `If-None-Match` (with
`If-Modified-Since` as before), and a 304 is "unchanged".  A 304 names no
type, so the stored one says whether the local copy is a page whose links
are followed again (a directory's page is saved as `index`, without a
suffix to tell).  A file saved without a tag keeps a record for its type.

Why one state file, not extended attributes: it works on every file system
(tmpfs and many network or FAT mounts have no `user.` attributes), survives
`cp -r` and archiving, and can be read or deleted by hand (deleting it only
costs the ETags: the next run falls back to If-Modified-Since).

A tag is sent only while the local file still has the size and time it had
when the tag was stored: a file changed or replaced locally is fetched again
rather than declared current by a server that never saw the change.  Tags
are checked before they are stored (RFC 9110's entity-tag syntax, at most
`fetcher.handler.validators.MAX_TAG` characters), so no server text reaches a request header unchecked.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fetcher.handler.validators import valid_tag

#: The state file's name in the output directory (reserved: no URL is saved under it).
STATE_NAME = ".fetch-etags.jsonl"
#: Longest Content-Type kept (a media type and its parameters).
_MAX_TYPE = 256


class EtagStore:
    """URL -> (tag, the local file it describes, that file's size and time)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / STATE_NAME
        self.tags: dict[str, dict[str, Any]] = {}
        self.changed = False

    def load(self) -> list[str]:
        """Read the state an earlier run left; returns notes on lines that were not usable (ignored)."""
        problems: list[str] = []
        try:
            source = open(self.path, encoding="utf-8", errors="replace")  # noqa: SIM115
        except FileNotFoundError:
            return problems
        except OSError as error:
            return [f"fetch: cannot read {self.path}: {error.strerror or error}; ETags are not used this run"]
        with source:
            for number, line in enumerate(source, 1):
                row = _record(line)
                if row is None:
                    problems.append(f"fetch: {self.path} line {number}: not an ETag record; ignored")
                    continue
                self.tags[row["url"]] = row
        return problems

    def lookup(self, url: str, path: Path) -> str | None:
        """The stored tag for `url`, if `path` is still the file it was stored with (same size and time)."""
        row = self.tags.get(url)
        if row is None or row["etag"] is None or not self._same(row, path):
            return None
        return str(row["etag"])

    def content_type(self, url: str, path: Path) -> str | None:
        """The Content-Type `url` was saved with, if `path` is still that file (same size and time)."""
        row = self.tags.get(url)
        if row is None or row.get("type") is None or not self._same(row, path):
            return None
        return str(row["type"])

    def _same(self, row: dict[str, Any], path: Path) -> bool:
        if row["path"] != self._relative(path):
            return False
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError:
            return False
        return bool(info.st_size == row["size"] and info.st_mtime == row["mtime"])

    def remember(self, url: str, path: Path, tag: str | None, content_type: str | None = None) -> None:
        """`path` was just saved from `url` with this ETag and type (None: the server sent none, forget the old)."""
        tag = valid_tag(tag)
        kind = valid_type(content_type)
        if tag is None and kind is None:
            if self.tags.pop(url, None) is not None:
                self.changed = True
            return
        try:
            info = os.stat(path, follow_symlinks=False)
        except OSError:
            return
        self.tags[url] = {"url": url, "etag": tag, "path": self._relative(path), "size": info.st_size,
                          "mtime": info.st_mtime, "type": kind}  # fmt: skip
        self.changed = True

    def save(self) -> str | None:
        """Write the state (a new file renamed over the old one); an error note, or None."""
        if not self.changed:
            return None
        part = self.path.with_name(self.path.name + f".{os.getpid()}.part")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with os.fdopen(os.open(part, flags, 0o644), "w", encoding="utf-8") as sink:
                for row in self.tags.values():
                    sink.write(json.dumps(row, ensure_ascii=True) + "\n")
            os.replace(part, self.path)
        except OSError as error:
            try:
                os.unlink(part)
            except OSError:
                pass
            return f"fetch: cannot write {self.path}: {error.strerror or error}; the next -N run uses If-Modified-Since"
        self.changed = False
        return None

    def _relative(self, path: Path) -> str:
        return os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))


def valid_type(value: object) -> str | None:
    """A Content-Type worth keeping (printable ASCII, short), else None."""
    if not isinstance(value, str) or not 0 < len(value) <= _MAX_TYPE or not value.isascii() or not value.isprintable():
        return None
    return value


def _record(line: str) -> dict[str, Any] | None:
    """One line of the state file as a record, or None when it is not a whole, valid one."""
    try:
        row = json.loads(line)
        url, tag, path = row["url"], valid_tag(row["etag"]), row["path"]
        size, mtime = int(row["size"]), float(row["mtime"])
        kind = valid_type(row.get("type"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if (tag is None and kind is None) or not isinstance(url, str) or not isinstance(path, str):
        return None
    return {"url": url, "etag": tag, "path": path, "size": size, "mtime": mtime, "type": kind}
