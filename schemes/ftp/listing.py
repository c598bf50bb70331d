"""What each entry of an FTP directory is: whole MLSD (RFC 3659) and LIST listings, as pure functions.

NLST says names only.  MLSD (RFC 3659 §7) says typed facts in a fixed
syntax (`mlsd`); LIST says whatever the server's `ls` prints (`dialects`).
This module reads a whole listing line by line under its caps, keeps the
entries that can be names, and turns them into `Entry` values with ftp
URLs; it also reads FEAT, which says whether MLSD is there.  A line that
matches nothing is kept as a name of unknown type: a listing never fails
because one line is strange.

Names are data: a name with "/" or NUL is dropped (no directory entry can
hold either, so such a line is an attack or garbage), "." and ".." are
skipped, and nothing here uses a name as a local path.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from datetime import datetime

from fetcher.errors import LimitExceeded
from fetcher.handler import Entry
from fetcher.schemes.ftp.dialects import HEADER, VMS_CONTINUED, VMS_NAME_ALONE, parse_list_line
from fetcher.schemes.ftp.listed import Listed
from fetcher.schemes.ftp.mlsd import parse_mlsd_line
from fetcher.url import FtpURL

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
    """The entries of a LIST reply in any dialect `dialects` knows, line by line.

    `now` (aware, UTC) places yearless Unix dates.  Headers and summaries
    ("total 12", VMS "Directory ..."/"Total of ...") are not entries.
    """
    found: list[Listed] = []
    held: str | None = None  # a VMS name alone on its line, waiting for its facts
    for line in _lines(data, max_bytes):
        if held is not None:
            if VMS_CONTINUED.match(line):
                # VMS wraps a long name: the facts follow on the next line.
                _keep(found, parse_list_line(held.strip() + " " + line.strip(), now), max_entries)
                held = None
                continue
            _keep(found, parse_list_line(held, now), max_entries)
            held = None
        if not line.strip() or HEADER.match(line):
            continue
        if VMS_NAME_ALONE.fullmatch(line):
            held = line
            continue
        _keep(found, parse_list_line(line, now), max_entries)
    if held is not None:
        _keep(found, parse_list_line(held, now), max_entries)
    return found
