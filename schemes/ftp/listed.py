"""One entry of an FTP directory listing, and the fact readers that MLSD and the LIST dialects share.

Times are aware and in UTC, with the precision the server gave; modes read
as `ls -l` writes them.  Nothing here knows a listing's syntax (`mlsd`,
`dialects`) or what a whole listing is (`listing`).
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Kind = Literal["file", "directory", "link", "other", "unknown"]
Precision = Literal["day", "minute", "second", "microsecond"]


@dataclass
class Listed:
    """One directory entry with the facts its listing line gave (None: not said)."""

    name: str
    type: Kind = "unknown"
    size: int | None = None
    modified: datetime | None = None
    precision: Precision | None = None
    #: Where a symbolic link points, as the server wrote it.
    target: str | None = None
    #: Permissions as `ls -l` writes them ("-rw-r--r--"), or the dialect's own
    #: notation where it has no Unix mode (NetWare "[RWCEAFMS]", VMS "(RWED,RWED,RE,)").
    mode: str | None = None
    #: Further facts (MLSD perm/unique, owner, group, device numbers, VMS blocks...).
    extra: dict[str, Any] = field(default_factory=dict)


def utc_datetime(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
                 micro: int = 0) -> datetime | None:  # fmt: skip
    """The moment in UTC, or None when the listing named no such date (a February 30)."""
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
    except ValueError:
        return None


def octal_mode(text: str, kind: Kind) -> str | None:
    """An octal mode (MLSD UNIX.mode, EPLF "up") as `ls -l` writes it; "?" for a type it cannot say."""
    text = text.strip()
    if not text or len(text) > 6 or any(char not in "01234567" for char in text):
        return None
    bits = int(text, 8) & 0o7777
    type_bits = {"directory": stat.S_IFDIR, "link": stat.S_IFLNK, "file": stat.S_IFREG}.get(kind, 0)
    shown = stat.filemode(type_bits | bits)
    return shown if type_bits else "?" + shown[1:]
