"""LIST lines in the dialects real servers send, read into `Listed` entries.

LIST says whatever the server's `ls` (or its imitation) prints, so each
line is matched against the dialects real servers send: Unix `ls -l`
(vsftpd, ProFTPD, Pure-FTPd, GNU inetutils ftpd, pyftpdlib), DOS/IIS, EPLF,
VMS and NetWare.  A line that matches none is kept as a name of unknown
type.  Each dialect is a pattern the whole line matches and a reader of the
match (`_DIALECTS`), tried in turn.

LIST does not name its zone, so its times are read as UTC (what vsftpd and
pyftpdlib send by default).  A Unix "Mon DD HH:MM" date has no year: `ls`
prints that form for the six months before now, so the year is the one that
puts the date at or before `now` (a day of slack for clocks that differ).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from fetcher.schemes.ftp.listed import Kind, Listed, Precision, octal_mode, utc_datetime

MONTHS = {name: number for number, name in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}  # fmt: skip

#: How far in the future a yearless Unix date may lie before it is read as last year's.
CLOCK_SLACK = timedelta(days=1)

#: Longer LIST lines are not matched against the dialects (a real one holds a
#: name of at most 255 bytes, or a link with a path of at most 4096).
MAX_LINE = 8192

#: Headers and summaries ("total 12", VMS "Directory ..."/"Total of ..."), which are not entries.
HEADER = re.compile(r"\s*(total\s+\d+\s*$|directory\s+\S+\s*$|total\s+of\s+\d+\s+files?)", re.IGNORECASE | re.ASCII)


class _Dialect(NamedTuple):
    """A LIST dialect: the pattern a whole line matches, and what reads the match into an entry (or refuses it)."""

    pattern: re.Pattern[str]
    read: Callable[[re.Match[str], datetime], Listed | None]
    #: Matched against the line without the white space around it.
    stripped: bool = False


def parse_list_line(line: str, now: datetime) -> Listed:
    """One LIST line in whichever dialect it matches; otherwise the line as a name of unknown type."""
    if len(line) > MAX_LINE:
        return Listed(name=line)
    for dialect in _DIALECTS:
        match = dialect.pattern.fullmatch(line.strip() if dialect.stripped else line)
        if match is not None:
            entry = dialect.read(match, now)
            if entry is not None:
                return entry
    return Listed(name=line)


def _month(text: str) -> int | None:
    return MONTHS.get(text[:3].lower()) if len(text) == 3 else None


def _yearless(month: int, day: int, hour: int, minute: int, now: datetime) -> datetime | None:
    """The latest date with this month, day and time that is not after now (plus slack).

    The search goes back far enough for a February 29 (its last leap year).
    """
    for year in range(now.year + 1, now.year - 9, -1):
        when = utc_datetime(year, month, day, hour, minute)
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
    return utc_datetime(int(clock), month, day), "day"


# Unix `ls -l`: mode, links, owner [group], size (or "major, minor"), date ("Mon DD HH:MM|YYYY" or ISO), name.
_UNIX_FACTS = r"(?P<mode>[-bcdlpsDnw?][-rwxsStTlL?]{9})[+.@]?(?P<ids>(?:\s+\S+)*?)\s+(?P<size>\d+,\s*\d+|\d+)\s+"
_UNIX = re.compile(
    _UNIX_FACTS + r"(?P<month>[A-Za-z]{3})\s+(?P<day>\d{1,2})\s+(?P<clock>\d{1,2}:\d\d|\d{4}) (?P<name>.*)", re.ASCII
)
_UNIX_ISO = re.compile(
    _UNIX_FACTS + r"(?P<year>\d{4})-(?P<month>\d\d)-(?P<day>\d\d)\s+(?P<hour>\d\d):(?P<minute>\d\d) (?P<name>.*)",
    re.ASCII,
)
_UNIX_TYPES: dict[str, Kind] = {"-": "file", "d": "directory", "l": "link"}


def _unix(match: re.Match[str], now: datetime) -> Listed:
    entry = _unix_facts(match)
    entry.modified, entry.precision = _ls_date(match["month"], match["day"], match["clock"], now)
    return entry


def _unix_iso(match: re.Match[str], now: datetime) -> Listed:
    entry = _unix_facts(match)
    entry.modified = utc_datetime(int(match["year"]), int(match["month"]), int(match["day"]), int(match["hour"]),
                                  int(match["minute"]))  # fmt: skip
    entry.precision = "minute" if entry.modified else None
    return entry


def _unix_facts(match: re.Match[str]) -> Listed:
    """What both Unix forms say before the date: type and mode, links, owner and group, size, and a link's target."""
    mode = match["mode"]
    entry = Listed(name=match["name"], type=_UNIX_TYPES.get(mode[0], "other"), mode=mode)
    if "," in match["size"]:
        major, minor = (part.strip() for part in match["size"].split(","))
        entry.extra["device"] = f"{major},{minor}"
    else:
        entry.size = int(match["size"])
    ids = match["ids"].split()
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


def _netware(match: re.Match[str], now: datetime) -> Listed:
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


def _dos(match: re.Match[str], now: datetime) -> Listed | None:
    """None for a 12-hour clock past 12: not DOS after all."""
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
    modified = utc_datetime(year, int(match["month"]), int(match["day"]), hour, int(match["minute"]))
    entry = Listed(name=match["name"], modified=modified, precision="minute" if modified else None)
    if match["dir"]:
        entry.type = "directory"
    else:
        entry.type = "file"
        entry.size = int(match["size"].replace(",", ""))
    return entry


# EPLF (https://cr.yp.to/ftp/list/eplf.html): "+fact,fact,...,\tname".
_EPLF = re.compile(r"\+(?P<facts>[^\t]*)\t(?P<name>.*)", re.DOTALL)


def _eplf(match: re.Match[str], now: datetime) -> Listed:
    entry = Listed(name=match["name"])
    octal = None
    for fact in match["facts"].split(","):
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
        entry.mode = octal_mode(octal, entry.type)
    return entry


# VMS: "NAME.EXT;1  used/alloc  DD-MON-YYYY HH:MM[:SS]  [group,owner]  (RWED,RWED,RE,)".
_VMS = re.compile(
    r"(?P<name>[^\s;]+);(?P<version>\d+)\s+(?:(?P<used>\d+)(?:/\d+)?\s+)?"
    r"(?P<day>\d{1,2})-(?P<month>[A-Za-z]{3})-(?P<year>\d{4})\s+(?P<hour>\d\d?):(?P<minute>\d\d)(?::(?P<second>\d\d))?"
    r"(?:\.\d+)?(?:\s+\[(?P<owner>[^\]]*)\])?(?:\s+(?P<rights>\([^)]*\)))?\s*",
    re.ASCII,
)
#: A VMS name alone on its line: VMS wraps a long name, and its facts follow on the next line.
VMS_NAME_ALONE = re.compile(r"\s*[^\s;]+;\d+\s*", re.ASCII)
VMS_CONTINUED = re.compile(r"\s+\d+(?:/\d+)?\s+\d{1,2}-[A-Za-z]{3}-\d{4}\s", re.ASCII)


def _vms(match: re.Match[str], now: datetime) -> Listed:
    name = match["name"]
    kind: Kind = "file"
    if name.upper().endswith(".DIR"):
        name, kind = name[:-4], "directory"
    month = _month(match["month"])
    second = match["second"]
    modified = (
        None
        if month is None
        else utc_datetime(
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


#: The dialects in the order they are tried (EPLF first: its "+" start is unambiguous).
_DIALECTS = (
    _Dialect(_EPLF, _eplf),
    _Dialect(_UNIX, _unix),
    _Dialect(_UNIX_ISO, _unix_iso),
    _Dialect(_NETWARE, _netware),
    _Dialect(_DOS, _dos),
    _Dialect(_VMS, _vms, stripped=True),
)
