"""The few header fields the HTTP bulk lane (lane.py) reads, taken from a head's raw pairs in one pass."""

from __future__ import annotations

from schemes.http.reader import FIELD_OVERHEAD


class Fields:
    """The few header values the lane needs, read from the raw pairs (names compared case-insensitively)."""

    __slots__ = ("codings", "content_type", "count", "disposition", "etag", "last_modified", "location", "longest",
                 "size")  # fmt: skip

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
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
            else:
                self.etag = value.decode("latin-1")
        self.count = len(raw)
        self.size = size + FIELD_OVERHEAD * len(raw)
        self.longest = longest + FIELD_OVERHEAD if raw else 0


#: The fields `Fields` reads, by lower-cased name.
_WANTED = {b"content-type": 0, b"last-modified": 1, b"content-encoding": 2, b"location": 3,
           b"content-disposition": 4, b"etag": 5}  # fmt: skip
