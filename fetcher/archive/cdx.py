"""The CDXJ index of WARC records (`--warc-cdx`): SURT keys, index lines, a WARC file read back.

One line per record a replay looks up (`response`, `resource`, `revisit`),
as pywb reads them: the SURT sort key, a 14-digit timestamp and a JSON
object (url, mime, status, digest, length, offset, filename).  Lines are
made while recording (`cdx_text`, `cdx_line`) or from a WARC file read back
(`index_warc`, which a cluster run uses for its batches' files).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


def surt(uri: str) -> str:
    """The sort key of a CDXJ line: host labels reversed, then the path (scheme dropped, as pywb does for http)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return uri
    host = (parts.hostname or "").lower()
    if host.startswith("www."):
        host = host[4:]
    numeric = ":" in host or host.replace(".", "").isdigit()
    labels = host if numeric else ",".join(reversed(host.split(".")))
    port = parts.port
    default = {"http": 80, "https": 443}.get(parts.scheme)
    if port is not None and port != default:
        labels += f":{port}"
    path = parts.path or "/"
    key = f"{labels}){path}"
    if parts.query:
        key += "?" + parts.query
    if parts.scheme not in ("http", "https"):
        key = f"{parts.scheme}:{key}"
    return key


def cdx_line(record: Any, offset: int, length: int, filename: str) -> str | None:
    """The CDXJ line (with its newline) of a warcio record at `offset` of `filename`; None for a record
    a replay never looks up (warcinfo, request, metadata)."""
    kind = record.rec_type
    headers = record.rec_headers
    if kind == "response" and record.http_headers is not None:
        mime = record.http_headers.get_header("Content-Type")
    else:
        mime = record.content_type
    http = record.http_headers if kind != "resource" else None
    status = http.get_statuscode() if http is not None else None
    return cdx_text(kind, headers.get_header("WARC-Target-URI"), headers.get_header("WARC-Date") or "", mime,
                     status, headers.get_header("WARC-Payload-Digest"), offset, length, filename)  # fmt: skip


def cdx_text(
    kind: str, uri: str, date: str, mime: str | None, status: str | None, digest: str | None, offset: int,
    length: int, filename: str,
) -> str | None:  # fmt: skip
    if kind not in ("response", "resource", "revisit"):
        return None
    stamp = "".join(ch for ch in date if ch.isdigit())[:14]
    fields: dict[str, Any] = {"url": uri}
    fields["mime"] = "warc/revisit" if kind == "revisit" else (mime or "unk").split(";")[0].strip()
    if status is not None:
        fields["status"] = status
    if digest:
        fields["digest"] = digest
    fields.update(length=str(length), offset=str(offset), filename=filename)
    return f"{surt(uri)} {stamp} {json.dumps(fields, separators=(', ', ': '))}\n"


def index_warc(path: Path) -> Iterator[str]:
    """The CDXJ lines of a WARC file's records, read back (what `--warc-cdx` writes while recording)."""
    from fetcher.archive.warcio_quiet import fsspec_hidden

    with fsspec_hidden():
        from warcio.archiveiterator import ArchiveIterator

    with path.open("rb") as source:
        records = ArchiveIterator(source)
        for record in records:
            offset = records.get_record_offset()
            record.content_stream().read()  # to the record's end: its length is known then
            line = cdx_line(record, offset, records.get_record_length(), path.name)
            if line is not None:
                yield line


def status_and_type(head: bytes) -> tuple[str | None, str | None]:
    """The status code and Content-Type of an HTTP response head (for its CDXJ line)."""
    lines = head.split(b"\r\n")
    words = lines[0].split(None, 2)
    status = words[1].decode("latin-1") if len(words) > 1 else None
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if colon and name.strip().lower() == b"content-type":
            return status, value.strip().decode("latin-1")
    return status, None
