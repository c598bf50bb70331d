"""-C/--continue: continue a partial file only while the server still has the document it is part of.

A `.part` is the head of one version of a document.  Appending the tail of
another version splices two files into one that exists nowhere (issue 29,
item 14), so a resume carries what the first response said about its
document: HTTP's ETag and Last-Modified (sent as `If-Range`, and compared
with the `206`), the whole length (HTTP's Content-Range total, FTP's SIZE)
and FTP's MDTM.  A handler that finds them changed starts over from byte 0
and says why in `Resource.metadata["restart"]`; the caller prints it
(`restart_note`), since nothing re-downloads silently (item 7).

Where they are kept: `NAME.part.resume`, one small JSON object beside the
`.part`, written when the `.part` is opened for a transfer that streams (or
kept after a failure) and removed when the file is renamed into place.
A sidecar rather than an extended attribute for the reasons of etags.py:
every file system has files, few network or FAT mounts have `user.`
attributes, and macOS has no `os.setxattr`.  A `.part` without one (left
by an older fetcher, or killed between creating the two) is resumed as
curl and wget resume: by `Range` alone, with the Content-Range checked.

What is read back is checked as server text would be (entity-tag syntax,
integers), since it goes into a request header.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fetcher.text import valid_tag

if TYPE_CHECKING:
    from fetcher.resource import Resource

#: Appended to the `.part` file's name: `NAME.part.resume`.
SUFFIX = ".resume"
#: A record is a few short fields; anything longer is not one of ours.
MAX_RECORD = 4096

trace = logging.getLogger("fetcher.trace")

_READ = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_WRITE = (
    os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


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


# -- the record beside the .part ---------------------------------------------------------------------


def record_path(partial: Path | str) -> str:
    return os.fspath(partial) + SUFFIX


def record(partial: Path | str, validators: Validators) -> bool:
    """Keep `validators` beside `partial`; best effort (a resume without them is checked less, not wrong)."""
    if not validators:
        return False
    import json  # only when a record is written: a plain fetch never loads json (issue 17)

    data = json.dumps({"etag": validators.etag, "modified": validators.modified, "length": validators.length})
    try:
        fd = os.open(record_path(partial), _WRITE, 0o666)
    except OSError as error:  # a symlink or FIFO planted there, a read-only directory
        trace.debug("* cannot record the validators of %s: %s", partial, error.strerror)
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return False
        os.write(fd, data.encode("ascii"))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def recorded(partial: Path | str) -> Validators | None:
    """The validators kept beside `partial`, or None (none kept, or not a record of ours)."""
    try:
        fd = os.open(record_path(partial), _READ)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        raw = os.read(fd, MAX_RECORD + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        import json

        data = json.loads(raw) if len(raw) <= MAX_RECORD else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None
    found = Validators(etag=valid_tag(data.get("etag")), modified=_count(data.get("modified")),
                       length=_count(data.get("length")))  # fmt: skip
    return found or None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def forget(partial: Path | str) -> None:
    """Remove the record beside `partial` (the `.part` was renamed into place, or restarted)."""
    try:
        os.unlink(record_path(partial))
    except OSError:
        pass


# -- what the caller says ------------------------------------------------------------------------------


def restart_note(resource: Resource, offset: int) -> str | None:
    """Why a resume from `offset` starts over from byte 0 instead, or None when it does not."""
    if offset <= 0 or resource.kind != "document" or resource.offset:
        return None
    reason = resource.metadata.get("restart") or "the server sent the whole document, not the rest of it"
    return f"{reason}; starting over from 0"
