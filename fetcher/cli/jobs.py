"""The unit of a bulk run, a `Job` (one URL, from the input or found by -r), and the URLs a run met.

A run of millions keeps little per URL: a job lives while its URL is
taken on and unfinished (fetcher.cli.run), and what stays for the whole
run is a 16-byte digest per URL met (`Seen`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fetcher.cli.layout import name_digest

if TYPE_CHECKING:
    from pathlib import Path

    from fetcher.handler.notes import RequestNotes
    from fetcher.url import URL


@dataclass(slots=True)
class Job:
    """One URL of the run: from the input (with its line) or found by recursion."""

    text: str
    line: int | None
    url: URL | None = None
    depth: int = 0
    parent: str | None = None
    path: Path | None = None
    #: Its record was written (the record itself is not kept: memory stays flat over a long run).
    done: bool = False
    #: From the listing entry that led here (Entry.filename / Entry.immutable).
    suggested: str | None = None
    immutable: bool = False
    #: What -r knows of it (fetcher.handler.notes), sent with it to `fetch_all`.
    notes: RequestNotes | None = None


class Seen:
    """URLs met in the run, for duplicates and -r's loops: a 16-byte digest each, with its input line.

    A run of millions keeps 16 bytes a URL here instead of the URL and its
    job, so memory stays flat (two URLs share a digest with odds of 2**-128).
    """

    def __init__(self) -> None:
        self._lines: dict[bytes, int | None] = {}

    def add(self, key: str, line: int | None = None) -> None:
        self._lines.setdefault(name_digest(key), line)

    def __contains__(self, key: str) -> bool:
        return name_digest(key) in self._lines

    def line(self, key: str) -> int | None:
        """The input line `key` came on first (None: the command line, or found by -r)."""
        return self._lines.get(name_digest(key))

    def first(self, key: str, line: int | None) -> tuple[bool, int | None]:
        """Add `key` (seen on `line`) unless it was met: (whether it is new, the line it first came on)."""
        digest = name_digest(key)
        lines = self._lines
        if digest in lines:
            return False, lines[digest]
        lines[digest] = line
        return True, line
