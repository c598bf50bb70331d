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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fetcher.handler.validators import Validators as Validators  # its home; `resume.Validators` still works
from fetcher.text import valid_tag

if TYPE_CHECKING:
    from fetcher.resource import Resource

#: Appended to the `.part` file's name: `NAME.part.resume`.
SUFFIX = ".resume"
#: A record is a few short fields; anything longer is not one of ours.
MAX_RECORD = 4096

trace = logging.getLogger("fetcher.trace")

_READ = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
# No O_TRUNC: a hard link planted at the record's name must be refused before anything is cut (`record`).
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


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
        os.ftruncate(fd, 0)
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
