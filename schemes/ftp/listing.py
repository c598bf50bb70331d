"""What each entry of an FTP directory is: MLSD facts (RFC 3659) and LIST dialects, as pure functions.

NLST says names only.  MLSD (RFC 3659 §7) says typed facts in a fixed
syntax; LIST says whatever the server's `ls` (or its imitation) prints, so
each line is matched against the dialects real servers send: Unix `ls -l`
(vsftpd, ProFTPD, Pure-FTPd, GNU inetutils ftpd, pyftpdlib), DOS/IIS, EPLF,
VMS and NetWare.  A line that matches none is kept as a name of unknown
type: a listing never fails because one line is strange.

Times come back in UTC with the precision the server gave: MLSD and EPLF
state UTC; LIST does not name its zone, so its times are read as UTC (what
vsftpd and pyftpdlib send by default).  A Unix "Mon DD HH:MM" date has no
year: `ls` prints that form for the six months before now, so the year is
the one that puts the date at or before `now` (a day of slack for clocks
that differ).

Names are data: a name with "/" or NUL is dropped (no directory entry can
hold either, so such a line is an attack or garbage), "." and ".." are
skipped, and nothing here uses a name as a local path.
"""

from __future__ import annotations

import re
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from fetcher.errors import LimitExceeded
from fetcher.handler import Entry
from fetcher.url import FtpURL

Kind = Literal["file", "directory", "link", "other", "unknown"]
Precision = Literal["day", "minute", "second", "microsecond"]

MONTHS = {name: number for number, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}  # fmt: skip

#: How far in the future a yearless Unix date may lie before it is read as last year's.
CLOCK_SLACK = timedelta(days=1)


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


# -- what the handler needs around the parsers ----------------------------------------


def parse_features(lines: Iterable[str]) -> frozenset[str]:
    """The feature names of a FEAT reply (RFC 2389: one per line, each indented by a space), upper case."""
    found = set()
    for line in lines:
        if line.startswith(" ") and line.strip():
            found.add(line.split()[0].upper())
    return frozenset(found)


def offers_mlsd(features: frozenset[str]) -> bool:
    """RFC 3659 §7.8: a server with MLSD lists "MLST" in FEAT (some list "MLSD" too)."""
    return "MLST" in features or "MLSD" in features


#: What one entry costs in memory besides its strings (the objects around them).
ENTRY_COST = 256


def fact_entries(url: FtpURL, directory: tuple[str, ...], listed: Iterable[Listed], *, max_bytes: int) -> list[Entry]:
    """One `Entry` per listed name, with an absolute ftp URL in `directory` (login kept).

    A directory's URL ends in "/" (its name becomes a <cwd> segment), so
    opening it lists it without guessing; every other entry's URL names it
    without a typecode, as NLST entries do.  What the entries hold in
    memory (several times the listing's bytes for names that are not
    UTF-8) is charged against `max_bytes` as well.
    """
    entries = []
    held = 0
    for item in listed:
        is_directory = item.type == "directory"
        target = url.replace(
            cwd=(*directory, item.name) if is_directory else directory,
            name="" if is_directory else item.name,
            typecode=None,
            fragment=None,
        )
        extra = dict(item.extra)
        if item.precision is not None:
            extra["precision"] = item.precision
        entries.append(
            Entry(
                name=item.name,
                url=str(target),
                type=item.type,
                size=item.size,
                extra=extra,
                modified=item.modified,
                target=item.target,
                mode=item.mode,
            )
        )
        held += ENTRY_COST + sum(sys.getsizeof(text) for text in (item.name, entries[-1].url, item.target, item.mode))
        if held > max_bytes:
            raise LimitExceeded("bytes of listing entries (as held in memory)", max_bytes, "listing_bytes")
    return entries


# -- the whole listing ------------------------------------------------------------


def _lines(data: bytes, max_bytes: int) -> Iterator[str]:
    """The lines one at a time (never a list of them: a flood of empty lines stays small)."""
    if len(data) > max_bytes:
        raise LimitExceeded("bytes in one listing", max_bytes, "listing_bytes")
    start = 0
    while start <= len(data):
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        raw = data[start:end]
        start = end + 1
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        yield raw.decode("utf-8", "surrogateescape")


def _keep(found: list[Listed], entry: Listed | None, max_entries: int) -> None:
    if entry is None or entry.name in ("", ".", "..") or "/" in entry.name or "\x00" in entry.name:
        return
    if len(found) >= max_entries:
        raise LimitExceeded("listing entries", max_entries, "listing_entries")
    found.append(entry)


def parse_mlsd(data: bytes, *, max_entries: int, max_bytes: int) -> list[Listed]:
    """The entries of an MLSD reply; cdir and pdir entries (the directory and its parent) are skipped."""
    found: list[Listed] = []
    for line in _lines(data, max_bytes):
        if line.strip():
            _keep(found, parse_mlsd_line(line), max_entries)
    return found


def parse_list(data: bytes, *, now: datetime, max_entries: int, max_bytes: int) -> list[Listed]:
    """The entries of a LIST reply in any dialect this module knows, line by line.

    `now` (aware, UTC) places yearless Unix dates.  Headers and summaries
    ("total 12", VMS "Directory ..."/"Total of ...") are not entries.
    """
    found: list[Listed] = []
    held: str | None = None  # a VMS name alone on its line, waiting for its facts
    for line in _lines(data, max_bytes):
        if held is not None:
            if _VMS_CONTINUED.match(line):
                # VMS wraps a long name: the facts follow on the next line.
                _keep(found, parse_list_line(held.strip() + " " + line.strip(), now), max_entries)
                held = None
                continue
            _keep(found, parse_list_line(held, now), max_entries)
            held = None
        if not line.strip() or _HEADER.match(line):
            continue
        if _VMS_NAME_ALONE.fullmatch(line):
            held = line
            continue
        _keep(found, parse_list_line(line, now), max_entries)
    if held is not None:
        _keep(found, parse_list_line(held, now), max_entries)
    return found


# -- MLSD (RFC 3659 §7) --------------------------------------------------------------

_MLSD_TYPES: dict[str, Kind] = {"file": "file", "dir": "directory"}


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
        entry.mode = _octal_mode(mode, entry.type)
    for key in (
        "perm",
        "unique",
        "unix.owner",
        "unix.ownername",
        "unix.group",
        "unix.groupname",
        "unix.uid",
        "unix.gid",
    ):
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
    when = _datetime(year, month, day, hour, minute, second, micro)
    if when is None:
        return None, None
    return when, "microsecond" if fraction else "second"


def _octal_mode(text: str, kind: Kind) -> str | None:
    text = text.strip()
    if not text or len(text) > 6 or any(char not in "01234567" for char in text):
        return None
    bits = int(text, 8) & 0o7777
    type_bits = {"directory": stat.S_IFDIR, "link": stat.S_IFLNK, "file": stat.S_IFREG}.get(kind, 0)
    shown = stat.filemode(type_bits | bits)
    return shown if type_bits else "?" + shown[1:]


# -- LIST dialects ------------------------------------------------------------------

_HEADER = re.compile(r"\s*(total\s+\d+\s*$|directory\s+\S+\s*$|total\s+of\s+\d+\s+files?)", re.IGNORECASE | re.ASCII)


#: Longer LIST lines are not matched against the dialects (a real one holds a
#: name of at most 255 bytes, or a link with a path of at most 4096).
MAX_LINE = 8192


def parse_list_line(line: str, now: datetime) -> Listed:
    """One LIST line in whichever dialect it matches; otherwise the line as a name of unknown type."""
    if len(line) > MAX_LINE:
        return Listed(name=line)
    for parser in (_eplf, _unix, _netware, _dos, _vms):
        entry = parser(line, now)
        if entry is not None:
            return entry
    return Listed(name=line)


def _datetime(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0,
              micro: int = 0) -> datetime | None:  # fmt: skip
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
    except ValueError:
        return None


def _month(text: str) -> int | None:
    return MONTHS.get(text[:3].lower()) if len(text) == 3 else None


def _yearless(month: int, day: int, hour: int, minute: int, now: datetime) -> datetime | None:
    """The latest date with this month, day and time that is not after now (plus slack).

    The search goes back far enough for a February 29 (its last leap year).
    """
    for year in range(now.year + 1, now.year - 9, -1):
        when = _datetime(year, month, day, hour, minute)
        if when is not None and when <= now + CLOCK_SLACK:
            return when
    return None


def _ls_date(month_text: str, day_text: str, clock: str, now: datetime) -> tuple[datetime | None, Precision | None]:
    month = _month(month_text)
    if month is None:
        return None, None
    day = int(day_text)
    if ":" in clock:
        hour, minute = (int(part) for part in clock.split(":")[:2])
        return _yearless(month, day, hour, minute, now), "minute"
    return _datetime(int(clock), month, day), "day"


# Unix `ls -l`: mode, links, owner [group], size (or "major, minor"), date, name.
_UNIX = re.compile(
    r"(?P<mode>[-bcdlpsDnw?][-rwxsStTlL?]{9})[+.@]?(?P<ids>(?:\s+\S+)*?)\s+(?P<size>\d+,\s*\d+|\d+)\s+"
    r"(?P<month>[A-Za-z]{3})\s+(?P<day>\d{1,2})\s+(?P<clock>\d{1,2}:\d\d|\d{4}) (?P<name>.*)",
    re.ASCII,
)
_UNIX_ISO = re.compile(
    r"(?P<mode>[-bcdlpsDnw?][-rwxsStTlL?]{9})[+.@]?(?P<ids>(?:\s+\S+)*?)\s+(?P<size>\d+,\s*\d+|\d+)\s+"
    r"(?P<year>\d{4})-(?P<month>\d\d)-(?P<day>\d\d)\s+(?P<hour>\d\d):(?P<minute>\d\d) (?P<name>.*)",
    re.ASCII,
)
_UNIX_TYPES: dict[str, Kind] = {"-": "file", "d": "directory", "l": "link"}


def _unix(line: str, now: datetime) -> Listed | None:
    match = _UNIX.fullmatch(line)
    iso = None if match is not None else _UNIX_ISO.fullmatch(line)
    found = match or iso
    if found is None:
        return None
    mode = found["mode"]
    entry = Listed(name=found["name"], type=_UNIX_TYPES.get(mode[0], "other"), mode=mode)
    if "," in found["size"]:
        major, minor = (part.strip() for part in found["size"].split(","))
        entry.extra["device"] = f"{major},{minor}"
    else:
        entry.size = int(found["size"])
    if match is not None:
        entry.modified, entry.precision = _ls_date(match["month"], match["day"], match["clock"], now)
    elif iso is not None:
        entry.modified = _datetime(int(iso["year"]), int(iso["month"]), int(iso["day"]), int(iso["hour"]),
                                   int(iso["minute"]))  # fmt: skip
        entry.precision = "minute" if entry.modified else None
    ids = found["ids"].split()
    if ids and ids[0].isdigit():
        entry.extra["links"] = int(ids[0])
        ids = ids[1:]
    if ids:
        entry.extra["owner"] = ids[0]
    if len(ids) > 1:
        entry.extra["group"] = " ".join(ids[1:])
    if entry.type == "link":
        name, arrow, target = entry.name.partition(" -> ")
        if arrow:
            entry.name, entry.target = name, target
    return entry


# NetWare: "d [RWCEAFMS] owner size Mon DD HH:MM name".
_NETWARE = re.compile(
    r"(?P<kind>[d-])\s+\[(?P<rights>[A-Z-]{1,8})\]\s+(?P<owner>\S+)\s+(?P<size>\d+)\s+"
    r"(?P<month>[A-Za-z]{3})\s+(?P<day>\d{1,2})\s+(?P<clock>\d{1,2}:\d\d|\d{4})\s+(?P<name>.*)",
    re.ASCII,
)


def _netware(line: str, now: datetime) -> Listed | None:
    match = _NETWARE.fullmatch(line)
    if match is None:
        return None
    entry = Listed(
        name=match["name"],
        type="directory" if match["kind"] == "d" else "file",
        size=int(match["size"]),
        mode=f"[{match['rights']}]",
        extra={"owner": match["owner"]},
    )
    entry.modified, entry.precision = _ls_date(match["month"], match["day"], match["clock"], now)
    return entry


# DOS / IIS: "MM-DD-YY  HH:MMAM  <DIR>  name" or "... 1,234 name" (24-hour clocks and 4-digit years too).
_DOS = re.compile(
    r"(?P<month>\d\d)-(?P<day>\d\d)-(?P<year>\d\d(?:\d\d)?)\s+(?P<hour>\d\d?):(?P<minute>\d\d)\s*"
    r"(?P<half>[AaPp][Mm])?\s+(?:(?P<dir><DIR>)|(?P<size>\d[\d,]*))\s+(?P<name>.*)",
    re.ASCII,
)


def _dos(line: str, now: datetime) -> Listed | None:
    match = _DOS.fullmatch(line)
    if match is None:
        return None
    year = int(match["year"])
    if len(match["year"]) == 2:
        year += 1900 if year >= 69 else 2000  # POSIX strptime %y
    hour = int(match["hour"])
    half = (match["half"] or "").lower()
    if half and not 1 <= hour <= 12:
        return None
    if half == "pm" and hour != 12:
        hour += 12
    elif half == "am" and hour == 12:
        hour = 0
    modified = _datetime(year, int(match["month"]), int(match["day"]), hour, int(match["minute"]))
    entry = Listed(name=match["name"], modified=modified, precision="minute" if modified else None)
    if match["dir"]:
        entry.type = "directory"
    else:
        entry.type = "file"
        entry.size = int(match["size"].replace(",", ""))
    return entry


# EPLF (https://cr.yp.to/ftp/list/eplf.html): "+fact,fact,...,\tname".
def _eplf(line: str, now: datetime) -> Listed | None:
    if not line.startswith("+") or "\t" not in line:
        return None
    facts_text, _, name = line[1:].partition("\t")
    entry = Listed(name=name)
    octal = None
    for fact in facts_text.split(","):
        value = fact[1:]
        if fact == "/":
            entry.type = "directory"
        elif fact == "r" and entry.type == "unknown":
            entry.type = "file"
        elif fact.startswith("s") and value.isdigit() and value.isascii():
            entry.size = int(value)
        elif fact.startswith("m") and value.isdigit() and value.isascii():
            try:
                entry.modified = datetime.fromtimestamp(int(value), UTC)
                entry.precision = "second"
            except (OverflowError, OSError, ValueError):
                pass
        elif fact.startswith("up"):
            octal = fact[2:]
        elif fact.startswith("i"):
            entry.extra["unique"] = value
    if octal is not None:
        entry.mode = _octal_mode(octal, entry.type)
    return entry


# VMS: "NAME.EXT;1  used/alloc  DD-MON-YYYY HH:MM[:SS]  [group,owner]  (RWED,RWED,RE,)".
_VMS = re.compile(
    r"(?P<name>[^\s;]+);(?P<version>\d+)\s+(?:(?P<used>\d+)(?:/\d+)?\s+)?"
    r"(?P<day>\d{1,2})-(?P<month>[A-Za-z]{3})-(?P<year>\d{4})\s+(?P<hour>\d\d?):(?P<minute>\d\d)(?::(?P<second>\d\d))?"
    r"(?:\.\d+)?(?:\s+\[(?P<owner>[^\]]*)\])?(?:\s+(?P<rights>\([^)]*\)))?\s*",
    re.ASCII,
)
_VMS_NAME_ALONE = re.compile(r"\s*[^\s;]+;\d+\s*", re.ASCII)
_VMS_CONTINUED = re.compile(r"\s+\d+(?:/\d+)?\s+\d{1,2}-[A-Za-z]{3}-\d{4}\s", re.ASCII)


def _vms(line: str, now: datetime) -> Listed | None:
    match = _VMS.fullmatch(line.strip())
    if match is None:
        return None
    name = match["name"]
    kind: Kind = "file"
    if name.upper().endswith(".DIR"):
        name, kind = name[:-4], "directory"
    month = _month(match["month"])
    second = match["second"]
    modified = (
        None
        if month is None
        else _datetime(
            int(match["year"]), month, int(match["day"]), int(match["hour"]), int(match["minute"]), int(second or 0)
        )
    )
    entry = Listed(name=name, type=kind, modified=modified, mode=match["rights"])
    entry.precision = None if modified is None else "second" if second else "minute"
    entry.extra["version"] = int(match["version"])
    if match["used"] is not None:
        # VMS counts 512-byte blocks; the byte size is not in the listing.
        entry.extra["blocks"] = int(match["used"])
    if match["owner"]:
        entry.extra["owner"] = match["owner"]
    return entry
