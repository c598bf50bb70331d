"""WARC files of what fetcher retrieves (`--warc-file`): the recorder of `fetcher.tap`.

The only module that imports warcio (the reference WARC implementation),
and only when a WARC is asked for.  It knows no protocol: a `Capture` is
either wire exchanges (written as `request` and `response` records, linked
by WARC-Concurrent-To) or a payload plus a dialogue (a `resource` record and
a `metadata` record of Content-Type `text/x-SCHEME-control-conversation`,
the form Heritrix and wpull use for FTP: "> " sent, "< " received, "* "
notes), or a dialogue alone (a redirect or resolution hop: `metadata`).

Records are written whole, one gzip member each, by one writer at a time
(an anyio lock; the compression runs in a worker thread so other transfers
keep moving), and only for retrievals that completed: an interrupted run
leaves a file of whole records.  `--warc-max-size` starts a new file
(NAME-00000.warc.gz, NAME-00001.warc.gz, ...) once one passes the size;
each file starts with its own `warcinfo`.  `--warc-cdx` writes NAME.cdxj
(one line per response, resource or revisit record); `--warc-dedup` writes
a `revisit` record for a payload already archived in this run.
"""

from __future__ import annotations

import io
import json
import os
import platform
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import anyio
from warcio.recordbuilder import RecordBuilder
from warcio.warcwriter import WARCWriter

from . import __version__
from .tap import Capture, Spool
from .url import redact

#: zlib level of each record's gzip member: 6 (zlib's default) is wget's
#: choice; warcio's own default (9) costs much more time for little gain.
GZIP_LEVEL = 6
#: A payload whose first SAMPLE bytes deflate to more than STORED_RATIO of
#: their size (random, or already compressed: zip, jpeg, gzip) is stored in
#: its gzip member without compression: deflating it runs at ~40 MB/s for a
#: gain under a few percent, while storing runs at memory speed.
SAMPLE = 256 * 1024
STORED_RATIO = 0.9


#: Captures up to this size are written in the event loop's thread; larger
#: ones in a worker thread, so other transfers keep moving meanwhile.
INLINE_BYTES = 256 * 1024
#: Bytes read from a spool at a time while writing a record (warcio reads 16 KiB).
READ_SIZE = 1 << 20


class _Member:
    """A gzip member around one record (warcio's writer with gzip=False writes into it)."""

    def __init__(self, out: IO[bytes], level: int) -> None:
        self.out = out
        self.compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS + 16)

    def write(self, data: bytes) -> None:
        self.out.write(self.compressor.compress(data))

    def flush(self) -> None:
        pass

    def finish(self) -> None:
        self.out.write(self.compressor.flush())


class _StoredMember:
    """A gzip member of stored deflate blocks (RFC 1951 §3.2.4): for payloads that do not compress.

    zlib at level 0 still copies every byte through its window (~0.5 GB/s);
    framing the bytes as stored blocks ourselves costs a CRC-32 and a write.
    """

    HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # no name, no mtime, OS unknown
    BLOCK = 0xFFFF

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.crc = 0
        self.size = 0
        out.write(self.HEADER)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        self.crc = zlib.crc32(view, self.crc)
        self.size += len(view)
        for start in range(0, len(view), self.BLOCK):
            piece = view[start : start + self.BLOCK]
            length = len(piece)
            self.out.write(b"\x00" + struct.pack("<HH", length, length ^ 0xFFFF))
            self.out.write(piece)

    def flush(self) -> None:
        pass

    def finish(self) -> None:
        self.out.write(b"\x01\x00\x00\xff\xff" + struct.pack("<II", self.crc, self.size & 0xFFFFFFFF))


class _Writer(WARCWriter):  # type: ignore[misc]
    """warcio's writer, reading spools in large pieces."""

    @staticmethod
    def _iter_stream(stream: IO[bytes]) -> Iterator[bytes]:
        while piece := stream.read(READ_SIZE):
            yield piece


class _Redirected:
    """The file object warcio writes to; it forwards to the current record's member."""

    def __init__(self) -> None:
        self.target: _Member | _StoredMember | None = None

    def write(self, data: bytes) -> int:
        assert self.target is not None
        self.target.write(data)
        return len(data)

    def flush(self) -> None:
        pass


@dataclass
class _Seen:
    uri: str
    date: str
    record_id: str


def _surt(uri: str) -> str:
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


def safe_command_line(argv: Sequence[str]) -> str:
    """The command line as a warcinfo shows it: URL passwords masked, -u's password dropped."""
    shown: list[str] = []
    hide_next = False
    for word in argv:
        if hide_next:
            user, sep, _ = word.partition(":")
            shown.append(user + (":****" if sep else ""))
            hide_next = False
            continue
        if word in ("-u", "--user"):
            hide_next = True
        elif word.startswith("--user="):
            user, sep, _ = word[len("--user=") :].partition(":")
            word = "--user=" + user + (":****" if sep else "")
        shown.append(redact(word))
    return " ".join(shown)


class WarcRecorder:
    """Writes captures as WARC/1.1 records (see module docstring)."""

    def __init__(
        self,
        name: str | os.PathLike[str],
        *,
        max_size: int | None = None,
        cdx: bool = False,
        dedup: bool = False,
        command_line: Sequence[str] = (),
        gzip_level: int = GZIP_LEVEL,
    ) -> None:
        base = str(name)
        for suffix in (".warc.gz", ".warc"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
        self.base = base
        self.max_size = max_size
        self.dedup = dedup
        self.command_line = safe_command_line(command_line)
        self.gzip_level = gzip_level
        self._lock = anyio.Lock()
        self._sink = _Redirected()
        self._writer = _Writer(self._sink, gzip=False, warc_version="1.1")
        self._file: IO[bytes] | None = None
        self._index = 0
        self.paths: list[Path] = []
        self._seen: dict[str, _Seen] = {}
        self._cdx: IO[str] | None = open(base + ".cdxj", "w", encoding="utf-8") if cdx else None  # noqa: SIM115
        self._cdx_lines: list[str] = []
        self.records = 0
        self._open_file()

    # -- files -------------------------------------------------------------

    def _path(self, index: int) -> Path:
        if self.max_size is None:
            return Path(self.base + ".warc.gz")
        return Path(f"{self.base}-{index:05d}.warc.gz")

    def _open_file(self) -> None:
        path = self._path(self._index)
        self._file = open(path, "wb")  # noqa: SIM115
        self.paths.append(path)
        info = {
            "software": f"fetcher {__version__} (warcio; Python {platform.python_version()})",
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "command-line": self.command_line,
            "datetime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        record = self._writer.create_warcinfo_record(path.name, info)
        self._write(record)

    def _rotate_if_full(self) -> None:
        assert self._file is not None
        if self.max_size is not None and self._file.tell() >= self.max_size:
            self._file.close()
            self._index += 1
            self._open_file()

    def _level_for(self, spool: Spool) -> int:
        """The gzip level for a payload: stored (0) when a sample shows it does not compress."""
        if spool.size < SAMPLE or self.gzip_level == 0:
            return self.gzip_level
        sample = spool.rewind().read(SAMPLE)
        spool.rewind()
        return 0 if len(zlib.compress(sample, 1)) > STORED_RATIO * len(sample) else self.gzip_level

    def _write(self, record: Any, level: int | None = None) -> None:
        """One record as one gzip member, written whole; its CDXJ line after it."""
        assert self._file is not None
        offset = self._file.tell()
        level = self.gzip_level if level is None else level
        member = _StoredMember(self._file) if level == 0 else _Member(self._file, level)
        self._sink.target = member
        try:
            self._writer.write_record(record)
            member.finish()
        finally:
            self._sink.target = None
        self._file.flush()
        self.records += 1
        if self._cdx is not None:
            self._index_line(record, offset, self._file.tell() - offset)

    def _index_line(self, record: Any, offset: int, length: int) -> None:
        assert self._cdx is not None
        kind = record.rec_type
        if kind not in ("response", "resource", "revisit"):
            return
        headers = record.rec_headers
        uri = headers.get_header("WARC-Target-URI")
        date = headers.get_header("WARC-Date") or ""
        stamp = "".join(ch for ch in date if ch.isdigit())[:14]
        fields: dict[str, Any] = {"url": uri}
        if kind == "revisit":
            fields["mime"] = "warc/revisit"
        elif record.http_headers is not None and kind == "response":
            fields["mime"] = (record.http_headers.get_header("Content-Type") or "unk").split(";")[0].strip()
        else:
            fields["mime"] = (record.content_type or "unk").split(";")[0].strip()
        if record.http_headers is not None and kind != "resource":
            fields["status"] = record.http_headers.get_statuscode()
        digest = headers.get_header("WARC-Payload-Digest")
        if digest:
            fields["digest"] = digest
        fields.update(length=str(length), offset=str(offset), filename=self.paths[-1].name)
        self._cdx.write(f"{_surt(uri)} {stamp} {json.dumps(fields, separators=(', ', ': '))}\n")
        self._cdx.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._cdx is not None:
            self._cdx.close()
            self._cdx = None

    # -- captures ----------------------------------------------------------

    async def record(self, capture: Capture) -> None:
        """Write one completed retrieval's records (whole, under the lock, in a worker thread)."""
        size = sum(exchange.response.size for exchange in capture.exchanges)
        size += capture.payload.size if capture.payload is not None else 0
        async with self._lock:
            if size <= INLINE_BYTES:
                # A small capture costs less to write than a hand-off to a thread.
                self._write_capture(capture)
            else:
                await anyio.to_thread.run_sync(self._write_capture, capture)

    def _write_capture(self, capture: Capture) -> None:
        if self._file is None:
            return
        self._rotate_if_full()  # a new file only when something is to be written in it
        date = RecordBuilder._make_warc_date(use_micros=True)
        uri = capture.url
        main_id: str | None = None
        for exchange in capture.exchanges:
            if exchange.response.size == 0:
                continue
            spool = exchange.response
            level = self._level_for(spool)
            headers = {"WARC-Date": date}
            if spool.body_digest is not None:
                # Digests taken as the bytes arrived; checked below against the head warcio parses.
                headers.update({"WARC-Block-Digest": spool.digest, "WARC-Payload-Digest": spool.body_digest})
            response = self._writer.create_warc_record(
                uri, "response", payload=spool.rewind(), length=spool.size, warc_headers_dict=headers
            )
            self._check_digests(response, spool)
            response = self._deduplicated(response, uri, date)
            main_id = response.rec_headers.get_header("WARC-Record-ID")
            request = self._writer.create_warc_record(
                uri,
                "request",
                payload=io.BytesIO(exchange.request),
                length=len(exchange.request),
                warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": main_id},
            )
            self._write(response, level)
            self._write(request)
        if capture.payload is not None:
            payload = capture.payload
            level = self._level_for(payload)
            headers = {
                "WARC-Date": date,
                "WARC-Block-Digest": payload.digest,
                "WARC-Payload-Digest": payload.digest,
            }
            resource = self._writer.create_warc_record(
                uri,
                "resource",
                payload=payload.rewind(),
                length=payload.size,
                warc_content_type=capture.content_type or "application/octet-stream",
                warc_headers_dict=headers,
            )
            resource = self._deduplicated(resource, uri, date)
            main_id = resource.rec_headers.get_header("WARC-Record-ID")
            self._write(resource, level)
        if capture.dialogue:
            text = "".join(line + "\r\n" for line in capture.dialogue).encode("utf-8", "surrogateescape")
            headers = {"WARC-Date": date}
            if main_id is not None:
                headers["WARC-Concurrent-To"] = main_id
            metadata = self._writer.create_warc_record(
                uri,
                "metadata",
                payload=io.BytesIO(text),
                length=len(text),
                warc_content_type=f"text/x-{capture.scheme}-control-conversation",
                warc_headers_dict=headers,
            )
            self._write(metadata)

    def _check_digests(self, record: Any, spool: Spool) -> None:
        """Keep the digests taken on arrival only if warcio writes the head exactly as it arrived."""
        if record.rec_headers.get_header("WARC-Block-Digest") is None:
            return
        head_length = record.raw_stream.tell()
        exact = False
        if record.http_headers is not None and head_length == spool.head_length:
            record.http_headers.compute_headers_buffer(self._writer.header_filter)
            record.raw_stream.seek(0)
            exact = record.http_headers.headers_buff == record.raw_stream.read(head_length)
            record.raw_stream.seek(head_length)
        if not exact:
            record.rec_headers.remove_header("WARC-Block-Digest")
            record.rec_headers.remove_header("WARC-Payload-Digest")
            self._writer.ensure_digest(record, block=True, payload=True)

    def _deduplicated(self, record: Any, uri: str, date: str) -> Any:
        """With --warc-dedup, a payload seen before in this run becomes a revisit record."""
        digest = record.rec_headers.get_header("WARC-Payload-Digest")
        if not self.dedup or not digest or record.length == 0 or record.payload_length == 0:
            return record
        seen = self._seen.get(digest)
        if seen is None:
            self._seen[digest] = _Seen(uri, date, record.rec_headers.get_header("WARC-Record-ID"))
            return record
        revisit = self._writer.create_revisit_record(
            uri,
            digest,
            seen.uri,
            seen.date,
            http_headers=record.http_headers,
            warc_headers_dict={"WARC-Date": date, "WARC-Refers-To": seen.record_id},
        )
        if record.http_headers is None:
            revisit.content_type = record.content_type or "application/octet-stream"
        return revisit
