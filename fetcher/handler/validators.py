"""What identifies one version of a document: the validators a resume (-C) and -N compare.

A handler reads them from a reply (HTTP's ETag and Last-Modified, FTP's SIZE
and MDTM) and compares them with what was recorded when a `.part` was begun
(`Session.validators`, recorded by fetcher/disk/resume.py), so a changed
document is fetched whole rather than spliced.  Pure values and checks, no
I/O: the disk room keeps the record, the mirror room keeps ETags between
runs, and both read entity-tags through `valid_tag` here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from fetcher.text import MAX_TAG as MAX_TAG
from fetcher.text import valid_tag as valid_tag

if TYPE_CHECKING:
    from fetcher.resource import Resource

@dataclass(frozen=True)
class Validators:
    """What identifies one version of a document: any field may be unknown (None)."""

    #: An entity-tag, weak or strong, as the server wrote it (checked by `valid_tag`).
    etag: str | None = None
    #: Last-Modified (HTTP) or MDTM (FTP), whole seconds since the epoch.
    modified: int | None = None
    #: The whole document's length in bytes.
    length: int | None = None

    @classmethod
    def of(cls, resource: Resource) -> Validators:
        """What a response says about its document.  A content-coded body's ETag names the coded
        bytes, not the decoded ones the `.part` holds (a resume asks for identity): not kept."""
        coded = bool(resource.metadata.get("content_encoding"))
        return cls(
            etag=None if coded else valid_tag(resource.metadata.get("etag")),
            modified=seconds(resource.modified),
            length=None if coded else resource.size,
        )

    def __bool__(self) -> bool:
        return self.etag is not None or self.modified is not None or self.length is not None

    def if_range(self) -> str | None:
        """The `If-Range` value (RFC 9110 §13.1.5): a strong ETag; the date only when there is no ETag."""
        if self.etag is not None:
            return None if self.etag.startswith("W/") else self.etag
        if self.modified is not None:
            from email.utils import formatdate

            return formatdate(self.modified, usegmt=True)
        return None

    def changes(self, now: Validators) -> list[str]:
        """What differs between this record and `now` (fields either side does not know are skipped)."""
        found = []
        if self.etag is not None and now.etag is not None and _opaque(self.etag) != _opaque(now.etag):
            found.append(f"ETag {self.etag} is now {now.etag}")
        if self.modified is not None and now.modified is not None and self.modified != now.modified:
            found.append(f"modified {_when(self.modified)} is now {_when(now.modified)}")
        if self.length is not None and now.length is not None and self.length != now.length:
            found.append(f"size {self.length} is now {now.length} bytes")
        return found

    def changed(self, now: Validators) -> str | None:
        """The restart reason when the document changed, else None."""
        found = self.changes(now)
        return f"the document changed on the server ({'; '.join(found)})" if found else None


def seconds(when: datetime | None) -> int | None:
    return int(when.timestamp()) if when is not None else None


def _opaque(tag: str) -> str:
    """The weak comparison of RFC 9110 §8.8.3.2: W/ does not make a tag another one."""
    return tag[2:] if tag.startswith("W/") else tag


def _when(stamp: int) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
