"""MLSD lines (RFC 3659 §7): typed facts in a fixed syntax, read into `Listed` entries.

A line that is not MLSD is kept whole as a name of unknown type: a listing
never fails because one line is strange.  MLSD states its times in UTC.
"""

from __future__ import annotations

import re
from datetime import datetime

from fetcher.schemes.ftp.listed import Kind, Listed, Precision, octal_mode, utc_datetime

_MLSD_TYPES: dict[str, Kind] = {"file": "file", "dir": "directory"}

#: The facts kept in `Listed.extra` as the server wrote them.
_KEPT_FACTS = ("perm", "unique", "unix.owner", "unix.ownername", "unix.group", "unix.groupname", "unix.uid", "unix.gid")


def parse_mlsd_line(line: str) -> Listed | None:
    """One MLSD line: "fact=value;fact=value; name".

    The facts end at the first "; " (the last fact's ";" and the one space
    RFC 3659 puts before the name), so a link target with spaces in an
    OS.unix=slink fact stays whole; a line that starts with the space has no
    facts.  Returns None for the cdir and pdir entries.  A line that is not
    MLSD is kept whole as a name of unknown type.
    """
    end = line.find("; ")
    if line.startswith(" ") or end < 0:
        facts_text, space, name = line.partition(" ")
        if not space:
            return Listed(name=line)
    else:
        facts_text, name = line[:end], line[end + 2 :]
    facts: dict[str, str] = {}
    for fact in facts_text.split(";"):
        key, equals, value = fact.partition("=")
        if equals:
            facts[key.strip().lower()] = value
    entry = Listed(name=name)
    kind = facts.get("type", "")
    lowered = kind.lower()
    if lowered in ("cdir", "pdir"):
        return None
    if lowered in _MLSD_TYPES:
        entry.type = _MLSD_TYPES[lowered]
    elif lowered.startswith("os.unix=slink") or lowered.startswith("os.unix=symlink"):
        entry.type = "link"
        _, colon, target = kind.partition(":")
        entry.target = target if colon and target else None
    elif kind:
        entry.type = "other"
        entry.extra["mlsd_type"] = kind
    size = facts.get("size")
    if size is not None and size.isdigit() and size.isascii():
        entry.size = int(size)
    modify = facts.get("modify")
    if modify is not None:
        entry.modified, entry.precision = _mlsd_time(modify)
    mode = facts.get("unix.mode")
    if mode is not None:
        entry.mode = octal_mode(mode, entry.type)
    for key in _KEPT_FACTS:
        if key in facts:
            entry.extra[key] = facts[key]
    return entry


_MLSD_TIME = re.compile(r"(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(?:\.(\d+))?", re.ASCII)


def _mlsd_time(text: str) -> tuple[datetime | None, Precision | None]:
    match = _MLSD_TIME.fullmatch(text.strip())
    if match is None:
        return None, None
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    fraction = match.group(7)
    micro = int((fraction + "000000")[:6]) if fraction else 0
    when = utc_datetime(year, month, day, hour, minute, second, micro)
    if when is None:
        return None, None
    return when, "microsecond" if fraction else "second"
