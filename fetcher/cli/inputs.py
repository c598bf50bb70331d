"""The URLs of an input list (`fetch -i FILE`, `-i -`), read with bounded memory whatever the input holds.

One URL a line; blank lines and `#` comments are skipped.  A `<URL:...>`
wrapper may span lines (RFC 1738's appendix), up to `WRAP_LINES` lines and
`WRAP_CHARS` characters; a blank line, a comment or a line that starts a
new URL ends it too.  A wrapper that ends without its `>` is reported as
its own bad URL at the line that opened it, and the lines after it are read
as they would have been without it: one stray `<` never swallows the list.

A line longer than `MAX_LINE` characters is reported as a bad line and
skipped; one that runs past `RUNAWAY` characters without a line end (`-i
/dev/zero`, a binary file) is not a list of URLs: it is reported and the
rest of the input is not read.

`Inputs` is a bulk run's input: the command line's URLs and -i's list, as
jobs, the file opened at once and read as the run takes URLs on.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Protocol, runtime_checkable

from fetcher.errors import UsageError

if TYPE_CHECKING:
    from fetcher.cli.jobs import Job

#: Characters of one input line (a URL is rarely past 8 KiB; browsers cap near 2 MB; 64 KiB is fetcher's line cap).
MAX_LINE = 64 * 1024
#: A wrapped URL spans at most this many lines and characters (a person's line-wrapped URL, not a file).
WRAP_LINES = 8
WRAP_CHARS = 8 * 1024
#: Characters past which a line without a line end stops the reading.
RUNAWAY = 1024 * 1024
#: Characters read from a file at a time.
CHUNK = 64 * 1024

#: A line that starts a URL of its own: a wrapper, or a scheme name and its colon.
_STARTS_URL = re.compile(r"<|(?:URL:)?[A-Za-z][A-Za-z0-9+.\-]*:")


class BadLine(str):
    """An input line that is not read as a URL, with the reason (`problem`); the text is a short excerpt of it.

    A `str`, so that it travels where URL texts do (`read_url_lines` yields
    it like a URL); `fetch -i` reports it as a failed line, and `parse_url`
    refuses it like any text that is not a URL.
    """

    problem: str
    #: The input is not read past this line.
    last: bool

    def __new__(cls, excerpt: str, problem: str, *, last: bool = False) -> BadLine:
        line = super().__new__(cls, excerpt[:60] + ("..." if len(excerpt) > 60 else ""))
        line.problem = problem
        line.last = last
        return line


class LineCutter:
    """Cuts text, as it arrives in pieces, into lines of at most `MAX_LINE` characters.

    An over-long line comes out as a `BadLine` once its end is found; one
    with no end within `RUNAWAY` characters comes out as a last `BadLine`,
    and `ended` tells the reader to stop.  Memory stays within `MAX_LINE`.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0
        #: Characters of an over-long line skipped so far (None: not skipping).
        self._skipped: int | None = None
        self._excerpt = ""
        self.ended = False

    def feed(self, text: str) -> list[str]:
        lines: list[str] = []
        start = 0
        while start < len(text) and not self.ended:
            end = text.find("\n", start)
            piece = text[start:] if end < 0 else text[start:end]
            start = len(text) if end < 0 else end + 1
            if self._skipped is not None:
                self._skipped += len(piece)
                if end >= 0:
                    lines.append(self._overlong())
                elif self._skipped > RUNAWAY:
                    lines.append(self._runaway())
                continue
            if self._size + len(piece) > MAX_LINE:
                self._excerpt = "".join(self._parts)[:60] or piece[:60]
                self._skipped = self._size + len(piece)
                self._parts, self._size = [], 0
                if end >= 0:
                    lines.append(self._overlong())
                continue
            if end < 0:
                self._parts.append(piece)
                self._size += len(piece)
                continue
            lines.append("".join([*self._parts, piece]) if self._parts else piece)
            self._parts, self._size = [], 0
        return lines

    def close(self) -> list[str]:
        """The end of the input: the last line, if it had no line end."""
        if self.ended:
            return []
        if self._skipped is not None:
            return [self._overlong()]
        if self._parts:
            line, self._parts, self._size = "".join(self._parts), [], 0
            return [line]
        return []

    def _overlong(self) -> BadLine:
        skipped, self._skipped = self._skipped, None
        return BadLine(self._excerpt, f"the line is {skipped} characters long, more than {MAX_LINE}: not read as a URL")

    def _runaway(self) -> BadLine:
        self.ended = True
        self._skipped = None
        return BadLine(
            self._excerpt,
            f"the line runs past {RUNAWAY} characters without a line end: this is not a list of URLs, "
            "and the rest of it is not read",
            last=True,
        )


class UrlLines:
    """The URLs of an input list, line by line (see the module docstring for the rules).

    `feed` takes one line (a `LineCutter` line, or a `BadLine`) and returns
    what it completes: (text, line number) pairs, a `BadLine` among them as
    its own item.
    """

    def __init__(self) -> None:
        self.number = 0
        #: An open wrapper: its lines (the first stripped, the others as they came) and their numbers.
        self._pending: list[tuple[str, int]] = []
        self._chars = 0

    def feed(self, raw: str) -> list[tuple[str, int]]:
        self.number += 1
        if isinstance(raw, BadLine):
            return [*self._abandon(), (raw, self.number)]
        line = raw.rstrip("\r\n")
        stripped = line.strip()
        if self._pending:
            ends_wrapper = not stripped or stripped.startswith("#") or _STARTS_URL.match(stripped) is not None
            too_long = len(self._pending) >= WRAP_LINES or self._chars + len(line) > WRAP_CHARS
            if ">" in line and not too_long and not stripped.startswith("<"):
                self._pending.append((line, self.number))
                return [self._close()]
            if not (ends_wrapper or too_long):
                self._pending.append((line, self.number))
                self._chars += len(line)
                return []
            return [*self._abandon(), *self._plain(stripped)]
        return self._plain(stripped)

    def _plain(self, stripped: str) -> list[tuple[str, int]]:
        """A line outside a wrapper: a URL, nothing, or the start of a wrapper."""
        if not stripped or stripped.startswith("#"):
            return []
        if stripped.startswith("<") and ">" not in stripped:
            self._pending, self._chars = [(stripped, self.number)], len(stripped)
            return []
        return [(stripped, self.number)]

    def _close(self) -> tuple[str, int]:
        lines, self._pending = self._pending, []
        return "\n".join(line for line, _ in lines), lines[0][1]

    def _abandon(self) -> list[tuple[str, int]]:
        """A wrapper that ended without its `>`: its first line is a bad URL of its own (parse_url says
        why), and the lines taken into it are read again as plain lines."""
        if not self._pending:
            return []
        (opened, start), *rest = self._pending
        self._pending = []
        found = [(opened, start)]
        for line, number in rest:
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                found.append((stripped, number))
        return found

    def close(self) -> list[tuple[str, int]]:
        """The end of the input: a wrapper still open is abandoned."""
        return self._abandon()


@runtime_checkable
class Readable(Protocol):
    def read(self, size: int = ..., /) -> str: ...


def read_url_lines(lines: Iterable[str] | Readable) -> Iterator[tuple[str, int]]:
    """URLs of an input list with their line numbers; a `BadLine` (a `str`) for a line that is not one.

    `lines` is a text file (read `CHUNK` characters at a time: no line is held
    whole past `MAX_LINE`) or lines already in memory (each still capped).
    """
    reader = UrlLines()
    cutter = LineCutter()
    for piece in _pieces(lines):
        for line in cutter.feed(piece):
            yield from reader.feed(line)
        if cutter.ended:
            return
    for line in cutter.close():
        yield from reader.feed(line)
    yield from reader.close()


def _pieces(lines: Iterable[str] | Readable) -> Iterator[str]:
    if isinstance(lines, Readable):
        while piece := lines.read(CHUNK):
            yield piece
        return
    for line in lines:
        yield line if line.endswith("\n") else line + "\n"


# -- a bulk run's input ---------------------------------------------------------------


def stdin_stream(input_file: str | None) -> int | None:
    """-i -: the file descriptor to take URLs from as they arrive (None: read stdin up front,
    when it has no descriptor, as inside another program's tests)."""
    if input_file != "-":
        return None
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None


class Inputs:
    """The URLs of the command line and -i FILE (and of stdin unless it is `streamed`), in order.

    The file is opened at once (a missing file is a usage error before
    anything runs) but read as the run takes URLs on (fetcher.cli.feed):
    its jobs are made a window at a time, never all up front.  `countable`:
    the number of URLs can be known before the run (`count`, a first pass
    over a regular file); a pipe (`-i <(command)`) is read once, as it comes.
    """

    def __init__(self, urls: Iterable[str], input_file: str | None, *, streamed: bool = False) -> None:
        # Jobs name their files (fetcher.cli.layout): loaded by a bulk run, not by `fetch URL`'s line reader.
        from fetcher.cli.jobs import Job

        self.jobs = [Job(text=text, line=None) for text in urls]
        self.countable = True
        self._name = input_file
        self._source: IO[str] | None = None
        if input_file == "-" and not streamed:
            self.jobs += [Job(text=text, line=number) for text, number in read_url_lines(sys.stdin)]
        elif input_file and input_file != "-":
            try:
                self._source = open(input_file, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
                self.countable = stat.S_ISREG(os.fstat(self._source.fileno()).st_mode)
            except OSError as error:
                self.close()
                raise self._unreadable(error) from None

    def count(self) -> int:
        """The number of URLs (a first pass over a regular file; only when `countable`)."""
        if self._source is None:
            return len(self.jobs)
        try:
            total = len(self.jobs) + sum(1 for _ in read_url_lines(self._source))
            self._source.seek(0)
        except OSError as error:
            self.close()
            raise self._unreadable(error) from None
        return total

    def _unreadable(self, error: OSError) -> UsageError:
        return UsageError(
            f"cannot read -i {self._name}: {error.strerror or error}",
            hint="give a file of URLs, one per line ('-' reads them from stdin)",
        )

    def __iter__(self) -> Iterator[Job]:
        from fetcher.cli.jobs import Job

        yield from self.jobs
        self.jobs = []
        if self._source is not None:
            for text, number in read_url_lines(self._source):
                yield Job(text=text, line=number)

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None
