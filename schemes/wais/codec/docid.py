"""The DocID: opaque on the wire, a list of tagged records inside (wais.md §6, §8).

Clients must send a DocID back byte for byte, so the URL form must round
trip exactly.  The form Lynx and W3C libwww wrote (and this module writes) is
`tag=value;` per internal record, each value byte outside `A-Za-z0-9./-_$`
written as `%XX`.  A DocID that is not a canonical record list (a server
with its own opaque ids) is written as one record with tag 0, `0=<bytes>;`,
an extension of this client: real DocIDs use tags 1 to 7, so the two never
collide.  `%XX` is decoded exactly once, here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fetcher.schemes.wais.codec.wire import Reader, WaisDecodeError, as_text, element

ORIGINAL_SERVER, ORIGINAL_DATABASE, ORIGINAL_LOCAL_ID = 1, 2, 3
DISTRIBUTOR_SERVER, DISTRIBUTOR_DATABASE, DISTRIBUTOR_LOCAL_ID = 4, 5, 6
COPYRIGHT_DISPOSITION = 7
#: Tag of this client's "whole DocID verbatim" record.
RAW = 0

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789./-_$")
_LENGTH_PREFIX = re.compile(r"([0-9]+)/")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
#: DocIDs are short; a longer string is not a DocID.
MAX_DOCID_STRING = 64 * 1024


@dataclass(frozen=True)
class DocID:
    """The internal records of a freeWAIS-style DocID, in wire order."""

    records: tuple[tuple[int, bytes], ...]

    def encode(self) -> bytes:
        return b"".join(element(tag, value) for tag, value in self.records)

    @classmethod
    def decode(cls, data: bytes) -> DocID:
        reader = Reader(data)
        records = []
        while not reader.at_end():
            records.append(reader.element())
        return cls(tuple(records))

    def get(self, tag: int) -> bytes | None:
        for found, value in self.records:
            if found == tag:
                return value
        return None

    def _address(self, distributor: int, original: int) -> str | None:
        value = self.get(distributor)
        value = self.get(original) if value is None else value
        return None if value is None else as_text(value)

    @property
    def server(self) -> str | None:
        """The DocID's address: the distributor's triple when present, else the original's."""
        return self._address(DISTRIBUTOR_SERVER, ORIGINAL_SERVER)

    @property
    def database(self) -> str | None:
        return self._address(DISTRIBUTOR_DATABASE, ORIGINAL_DATABASE)

    @property
    def local_id(self) -> str | None:
        return self._address(DISTRIBUTOR_LOCAL_ID, ORIGINAL_LOCAL_ID)


def freewais_docid(server: str, database: str, local_id: str, copyright: int = 0) -> bytes:
    """The DocID freeWAIS-sf writes for a hit: original and distributor triples, then the disposition."""
    triple = ((1, server), (2, database), (3, local_id))
    records = [(tag, value.encode("utf-8", "surrogateescape")) for tag, value in triple]
    records += [(tag + 3, value) for tag, value in records]
    records.append((COPYRIGHT_DISPOSITION, bytes([copyright])))
    return DocID(tuple(records)).encode()


def _escape(value: bytes) -> str:
    return "".join(chr(byte) if byte in _SAFE else f"%{byte:02X}" for byte in value)


def docid_to_string(docid: bytes) -> str:
    """The URL form of a DocID (the Lynx form when it is a canonical record list)."""
    try:
        parsed = DocID.decode(docid)
    except WaisDecodeError:
        parsed = None
    if parsed is None or not parsed.records or parsed.encode() != docid or parsed.get(RAW) is not None:
        return f"{RAW}={_escape(docid)};"
    return "".join(f"{tag}={_escape(value)};" for tag, value in parsed.records)


def _unescape(text: str) -> bytes:
    if "%" in _ESCAPE.sub("", text):
        raise WaisDecodeError(f"a '%' that does not start an escape in the DocID string {text!r}")
    raw = text.encode("utf-8", "surrogateescape")
    return re.sub(rb"%([0-9A-Fa-f]{2})", lambda match: bytes([int(match.group(1), 16)]), raw)


def docid_from_string(text: str) -> bytes:
    """The DocID bytes of a docid-string (`%XX` decoded here, once)."""
    if len(text) > MAX_DOCID_STRING:
        raise WaisDecodeError(f"a DocID string of {len(text)} characters is too long")
    records: list[tuple[int, bytes]] = []
    for piece in text.split(";"):
        if not piece:
            continue
        tag_text, equals, value = piece.partition("=")
        if not equals or not tag_text.isascii() or not tag_text.isdigit() or len(tag_text) > 8:
            raise WaisDecodeError(f"a DocID record is not TAG=VALUE: {piece[:40]!r}")
        records.append((int(tag_text), _unescape(value)))
    if not records:
        raise WaisDecodeError("the DocID string holds no record")
    if any(tag == RAW for tag, _ in records):
        if len(records) != 1:
            raise WaisDecodeError("a verbatim DocID record (tag 0) must stand alone")
        return records[0][1]
    if any(tag >= 1 << 28 for tag, _ in records):
        raise WaisDecodeError("a DocID record tag is too large")
    return DocID(tuple(records)).encode()


def split_wpath(wpath: str) -> tuple[int | None, bytes]:
    """(document length or None, DocID bytes) of a URL's wpath, with or without the `<length>/` prefix."""
    match = _LENGTH_PREFIX.match(wpath)
    length = None
    if match:
        if len(match.group(1)) > 15:
            raise WaisDecodeError("the document length in the URL is absurdly long")
        length = int(match.group(1))
        wpath = wpath[match.end() :]
    return length, docid_from_string(wpath)


_MEDIA_TYPES = {
    "WSRC": "application/x-wais-source",
    "TEXT": "text/plain",
    "HTML": "text/html",
    "GIF": "image/gif",
}


def media_type(wtype: str) -> str:
    """The media type browsers gave a WAIS type; anything unknown is binary."""
    return _MEDIA_TYPES.get(wtype.strip().upper(), "application/octet-stream")
