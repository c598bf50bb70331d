"""What flows on FTP data connections, as pure functions: NLST names and ASCII text.

Names from NLST are data: they become `Entry` names and, through the
`FtpURL` class (never string concatenation), absolute ftp URLs.  Nothing
here uses a name as a local path.  A listing is parsed as it arrives
(`NameParser`), so memory grows with the names kept, never with the raw
bytes, and both caps (`listing_entries`, `listing_bytes`) and the line cap
(`line_bytes`) are enforced chunk by chunk.
"""

from __future__ import annotations

import sys

from fetcher.errors import LimitExceeded
from fetcher.handler import DEFAULT_LIMITS, Entry
from fetcher.url import FtpURL

#: Characters a name cannot carry back to the server in a command line.
_UNSENDABLE = ("\x00", "\r")


class NameParser:
    """The names of an NLST reply, one per line (CRLF or LF), in server order, chunk by chunk.

    Some servers (vsftpd) answer `NLST dir` with "dir/name"; the `listed`
    prefix is removed so every name is relative to the listed directory.
    Empty lines, "." and ".." are dropped.  More than `max_entries` names,
    more than `max_bytes` bytes in all, or one line longer than
    `line_bytes` raise `LimitExceeded`.
    """

    def __init__(
        self,
        listed: str | None = None,
        *,
        max_entries: int = DEFAULT_LIMITS.listing_entries,
        max_bytes: int = DEFAULT_LIMITS.listing_bytes,
        line_bytes: int = DEFAULT_LIMITS.line_bytes,
    ) -> None:
        self.prefix = listed.rstrip("/") + "/" if listed else None
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.line_bytes = line_bytes
        self.count = 0
        self.size = 0
        self._partial = b""

    def feed(self, chunk: bytes) -> list[str]:
        """The names completed by `chunk`."""
        self.size += len(chunk)
        if self.size > self.max_bytes:
            raise LimitExceeded("bytes in one listing", self.max_bytes, "listing_bytes")
        lines = (self._partial + chunk).split(b"\n") if self._partial else chunk.split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > self.line_bytes:
            raise LimitExceeded("bytes in one listing line", self.line_bytes, "line_bytes")
        return self._names(lines)

    def close(self) -> list[str]:
        """The last name, when the listing does not end with a line end."""
        partial, self._partial = self._partial, b""
        return self._names([partial]) if partial else []

    def _names(self, lines: list[bytes]) -> list[str]:
        names = []
        for raw in lines:
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if len(raw) > self.line_bytes:
                raise LimitExceeded("bytes in one listing line", self.line_bytes, "line_bytes")
            name = raw.decode("utf-8", "surrogateescape")
            if self.prefix is not None and name.startswith(self.prefix) and len(name) > len(self.prefix):
                name = name[len(self.prefix) :]
            if name in ("", ".", ".."):
                continue
            self.count += 1
            if self.count > self.max_entries:
                raise LimitExceeded("entries in one listing", self.max_entries, "listing_entries")
            names.append(name)
        return names


def parse_names(
    data: bytes,
    listed: str | None = None,
    *,
    max_entries: int = DEFAULT_LIMITS.listing_entries,
    max_bytes: int = DEFAULT_LIMITS.listing_bytes,
    line_bytes: int = DEFAULT_LIMITS.line_bytes,
) -> list[str]:
    """Every name of a whole NLST reply (see `NameParser`)."""
    parser = NameParser(listed, max_entries=max_entries, max_bytes=max_bytes, line_bytes=line_bytes)
    return parser.feed(data) + parser.close()


def listing_entries(url: FtpURL, directory: tuple[str, ...], names: list[str]) -> list[Entry]:
    """One entry per name, each with an absolute ftp URL in `directory` (login kept).

    NLST does not say what a name is, so entries have type "unknown" and
    URLs without a typecode: opening one guesses (§3.2.3), which lists it
    if it turns out to be a directory.  A name holding NUL or CR could never
    be sent back in a command: it is listed (escaped when shown) without a URL.
    """
    entries = []
    for name in names:
        if any(char in name for char in _UNSENDABLE):
            entries.append(Entry(name=name, url=None, type="unknown"))
            continue
        target = url.replace(
            cwd=directory,
            name=name,
            typecode=None,
            fragment=None,
        )
        entries.append(Entry(name=name, url=str(target), type="unknown"))
    return entries


class HeldEntries:
    """Entries of one listing and what they hold in memory, against `listing_bytes`.

    The raw bytes of a listing are capped as they arrive (`NameParser`,
    `LineBatches`); this caps what the entries made from them hold, which
    can be several times more (a name of bytes that are not UTF-8 is stored
    as two bytes a character and percent-encoded in its URL, three bytes
    each), and counts them against `listing_entries` across batches.  Each
    entry costs `ENTRY_COST` (the objects around its strings) plus its
    strings, facts and extras as Python stores them (so at the default caps
    a listing of short names meets `listing_entries` about where it meets
    this cap).
    """

    #: Measured on CPython 3.11: an Entry, its __dict__, an empty `extra` dict and its list slot.
    ENTRY_COST = 224

    def __init__(
        self,
        url: FtpURL,
        directory: tuple[str, ...],
        *,
        max_bytes: int = DEFAULT_LIMITS.listing_bytes,
        max_entries: int = DEFAULT_LIMITS.listing_entries,
    ) -> None:
        self.url = url
        self.directory = directory
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self.held = 0
        self.entries: list[Entry] = []

    def add(self, names: list[str]) -> None:
        """Entries for NLST names (see `listing_entries`)."""
        self.add_entries(listing_entries(self.url, self.directory, names))

    def add_entries(self, entries: list[Entry]) -> None:
        for entry in entries:
            if len(self.entries) >= self.max_entries:
                raise LimitExceeded("entries in one listing", self.max_entries, "listing_entries")
            self.held += self.cost(entry)
            if self.held > self.max_bytes:
                raise LimitExceeded("bytes of listing entries (as held in memory)", self.max_bytes, "listing_bytes")
            self.entries.append(entry)

    @classmethod
    def cost(cls, entry: Entry) -> int:
        size = cls.ENTRY_COST + sys.getsizeof(entry.name) + sys.getsizeof(entry.url or "")
        if entry.description:
            size += sys.getsizeof(entry.description)
        if entry.extra:
            size += sys.getsizeof(entry.extra) + sum(sys.getsizeof(value) for value in entry.extra.values())
        for fact in (getattr(entry, "modified", None), getattr(entry, "target", None), getattr(entry, "mode", None)):
            if fact is not None:
                size += sys.getsizeof(fact)
        return size


class LineBatches:
    """The complete lines of a listing as it arrives, a batch per chunk, under the listing caps.

    `feed(chunk)` returns the lines that chunk completed (joined by LF,
    ready for a whole-listing parser such as `listing.parse_list`), holding
    back the last complete line too when `hold_last` is set, so a parser
    that reads one line ahead (VMS wraps a long name onto a second line)
    sees both.  More than `max_bytes` in all or one line longer than
    `line_bytes` raise `LimitExceeded`.
    """

    def __init__(
        self,
        *,
        max_bytes: int = DEFAULT_LIMITS.listing_bytes,
        line_bytes: int = DEFAULT_LIMITS.line_bytes,
        hold_last: bool = False,
    ) -> None:
        self.max_bytes = max_bytes
        self.line_bytes = line_bytes
        self.hold_last = hold_last
        self.size = 0
        self._held = b""

    def feed(self, chunk: bytes) -> bytes:
        self.size += len(chunk)
        if self.size > self.max_bytes:
            raise LimitExceeded("bytes in one listing", self.max_bytes, "listing_bytes")
        data = self._held + chunk if self._held else chunk
        cut = data.rfind(b"\n")
        if cut >= 0 and self.hold_last:
            cut = data.rfind(b"\n", 0, cut)
        self._held = data[cut + 1 :]
        if cut < 0:
            self._check(self._held)
            return b""
        batch = data[: cut + 1]
        self._check(batch)
        self._check(self._held)
        return batch

    def close(self) -> bytes:
        """Whatever is held: the last lines, with or without a final line end."""
        held, self._held = self._held, b""
        return held

    def _check(self, data: bytes) -> None:
        if not data or max(map(len, data.split(b"\n"))) <= self.line_bytes:
            return
        for line in data.split(b"\n"):
            if len(line) - line.endswith(b"\r") > self.line_bytes:  # a CR before the LF is not counted
                raise LimitExceeded("bytes in one listing line", self.line_bytes, "line_bytes")


class AsciiDecoder:
    """CRLF (the NVT line end of TYPE A) to local "\\n", across chunk boundaries.

    A lone CR is kept, as the servers keep it; a CR at the end of a chunk
    waits for the next chunk to see whether an LF follows.
    """

    def __init__(self) -> None:
        self._held_cr = False

    def feed(self, chunk: bytes) -> bytes:
        if not chunk:
            return b""
        if self._held_cr:
            chunk = b"\r" + chunk
            self._held_cr = False
        if chunk.endswith(b"\r"):
            self._held_cr = True
            chunk = chunk[:-1]
        return chunk.replace(b"\r\n", b"\n")

    def flush(self) -> bytes:
        held, self._held_cr = self._held_cr, False
        return b"\r" if held else b""
