"""What flows on FTP data connections, as pure functions: NLST names and ASCII text.

Names from NLST are data: they become `Entry` names and, through the
`FtpURL` class (never string concatenation), absolute ftp URLs.  Nothing
here uses a name as a local path.
"""

from __future__ import annotations

from fetcher.resource import Entry
from fetcher.url import FtpURL

#: A directory listing larger than this is refused (names are held in memory).
MAX_LISTING_BYTES = 64 * 1024 * 1024


def parse_names(data: bytes, listed: str | None = None) -> list[str]:
    """The names of an NLST reply, one per line (CRLF or LF), in server order.

    Some servers (vsftpd) answer `NLST dir` with "dir/name"; the `listed`
    prefix is removed so every name is relative to the listed directory.
    Empty lines, "." and ".." are dropped.
    """
    prefix = listed.rstrip("/") + "/" if listed else None
    names = []
    for raw in data.split(b"\n"):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        name = raw.decode("utf-8", "surrogateescape")
        if prefix is not None and name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix) :]
        if name in ("", ".", ".."):
            continue
        names.append(name)
    return names


def listing_entries(url: FtpURL, directory: tuple[str, ...], names: list[str]) -> list[Entry]:
    """One entry per name, each with an absolute ftp URL in `directory` (login kept).

    NLST does not say what a name is, so entries have type "unknown" and
    URLs without a typecode: opening one guesses (§3.2.3), which lists it
    if it turns out to be a directory.
    """
    entries = []
    for name in names:
        target = FtpURL(
            scheme=url.scheme,
            user=url.user,
            password=url.password,
            host=url.host,
            port=url.port,
            cwd=directory,
            name=name,
            typecode=None,
            fragment=None,
        )
        entries.append(Entry(name=name, url=str(target), type="unknown"))
    return entries


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
