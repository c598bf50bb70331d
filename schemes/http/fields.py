"""A response head's fields, read once: what the response rules (verdict.py) and both paths read of a head.

The task path (handler.py, h11's or the fast head's raw pairs) and the bulk
lane (lane.py, the fast head's) read a head through this one class, so the
two cannot read a header two ways.  One pass over the raw pairs takes the
few values every reply needs (names compared case-insensitively, the last
of a repeated field, Content-Encoding's items of all of them) and counts
what ReplyReader's caps count; the whole list decoded as latin-1 (one char
per octet, never failing) is built only when asked for (`headers`: an
error's Retry-After, a range's Content-Range, the metadata of a resource).
"""

from __future__ import annotations

from fetcher.schemes.http.reader import FIELD_OVERHEAD
from fetcher.schemes.http.response import Headers, decode_headers, length_value


class Fields:
    """The header values the response rules read, from the raw pairs (names compared case-insensitively)."""

    __slots__ = ("_headers", "_length", "codings", "content_type", "count", "disposition", "etag", "last_modified",
                 "location", "longest", "raw", "size")  # fmt: skip

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw
        self._headers: Headers | None = None
        self._length: bytes | None = None
        self.codings: list[str] = []
        self.content_type: str | None = None
        self.last_modified: bytes | None = None
        self.location: str | None = None
        self.disposition: str | None = None
        self.etag: str | None = None
        # What ReplyReader's caps count, in the same pass: fields, their bytes, the longest line.
        size = longest = 0
        for name, value in raw:
            line = len(name) + len(value)
            size += line
            if line > longest:
                longest = line
            kind = _WANTED.get(name.lower())
            if kind is None:
                continue
            if kind == 0:
                self.content_type = value.decode("latin-1")
            elif kind == 1:
                self.last_modified = value
            elif kind == 2:
                self.codings += [c.strip().lower() for c in value.decode("latin-1").split(",") if c.strip()]
            elif kind == 3:
                self.location = value.decode("latin-1")
            elif kind == 4:
                self.disposition = value.decode("latin-1")
            elif kind == 5:
                self.etag = value.decode("latin-1")
            else:
                self._length = value
        self.count = len(raw)
        self.size = size + FIELD_OVERHEAD * len(raw)
        self.longest = longest + FIELD_OVERHEAD if raw else 0

    @property
    def length(self) -> int | None:
        """Content-Length as `response.content_length` reads it (None when absent or not digits)."""
        return None if self._length is None else length_value(self._length.decode("latin-1"))

    @property
    def headers(self) -> Headers:
        """Every field as str pairs in the order received (decoded on first use)."""
        if self._headers is None:
            self._headers = decode_headers(self.raw)
        return self._headers


#: The fields `Fields` reads, by lower-cased name.
_WANTED = {b"content-type": 0, b"last-modified": 1, b"content-encoding": 2, b"location": 3,
           b"content-disposition": 4, b"etag": 5, b"content-length": 6}  # fmt: skip
