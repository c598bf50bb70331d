"""The WARC files of `--warc-file` and the writing of one record into them.

With `fetcher.archive.cdx` (which reads WARC files back), the only module
that imports warcio (the reference WARC implementation), and only when a
WARC is asked for.  `RecordWriter` opens each file with its
`warcinfo` record, writes one record at a time as one gzip member
(`fetcher.archive.gzip_members`: deflated, or stored blocks when a sample
shows the payload does not compress), from bytes as they arrived (a
`request`, `response`, `resource` or `metadata` block) or through warcio
(`warcinfo`, `revisit`), and writes each record's CDXJ line
(`fetcher.archive.cdx`) after it.  Which capture makes which records, and
when, is the recorder's business (`fetcher.archive.recorder`).

`--warc-max-size` starts a new file
(NAME-00000.warc.gz, NAME-00001.warc.gz, ...) once one passes the size;
each file starts with its own `warcinfo`.  `--warc-cdx` writes NAME.cdxj
(one line per response, resource or revisit record); `--warc-dedup` writes
a `revisit` record for a payload already archived in this run.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import platform
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, TypedDict

from fetcher import __version__
from fetcher.archive.cdx import cdx_line, cdx_text, status_and_type
from fetcher.archive.gzip_members import SAMPLE, Member, StoredMember, incompressible
from fetcher.archive.spool import Spool
from fetcher.archive.warcio_quiet import fsspec_hidden
from fetcher.url import redact

with fsspec_hidden():  # (see fetcher.archive.warcio_quiet)
    from warcio.recordbuilder import RecordBuilder
    from warcio.recordloader import ArcWarcRecordLoader
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter


#: zlib level of each record's gzip member: 6 (zlib's default) is wget's
#: choice; warcio's own default (9) costs much more time for little gain.
GZIP_LEVEL = 6
#: Bytes read from a spool at a time while writing a record (warcio reads 16 KiB).
READ_SIZE = 1 << 20


def new_record_id() -> str:
    """A new WARC-Record-ID, as warcio makes them."""
    return str(RecordBuilder._make_warc_id())


def warc_date() -> str:
    """Now, as a WARC-Date (with microseconds)."""
    return str(RecordBuilder._make_warc_date(use_micros=True))


class _Writer(WARCWriter):  # type: ignore[misc]
    """warcio's writer, reading spools in large pieces."""

    @staticmethod
    def _iter_stream(stream: IO[bytes]) -> Iterator[bytes]:
        while piece := stream.read(READ_SIZE):
            yield piece


class _Redirected:
    """The file object warcio writes to; it forwards to the current record's member."""

    def __init__(self) -> None:
        self.target: Member | StoredMember | None = None

    def write(self, data: bytes) -> int:
        assert self.target is not None
        self.target.write(data)
        return len(data)

    def flush(self) -> None:
        pass


@dataclass
class Seen:
    """Where a payload was first archived in this run (the target of a revisit record)."""

    uri: str
    date: str
    record_id: str


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


class RecordOptions(TypedDict, total=False):
    """`RecordWriter`'s keyword arguments, as a subclass passes them on (`WarcRecorder`)."""

    #: --warc-max-size: a new file once one passes this many bytes.
    max_size: int | None
    #: --warc-cdx, --warc-dedup.
    cdx: bool
    dedup: bool
    #: The command line the warcinfo record names (passwords masked).
    command_line: Sequence[str]
    gzip_level: int


class RecordWriter:
    """The WARC files of a recorder and the writing of one record into them (see module docstring)."""

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
        self._sink = _Redirected()
        self._writer = _Writer(self._sink, gzip=False, warc_version="1.1")
        self._file: IO[bytes] | None = None
        self._index = 0
        self.paths: list[Path] = []
        self._seen: dict[str, Seen] = {}
        self._cdx: IO[str] | None = open(base + ".cdxj", "w", encoding="utf-8") if cdx else None  # noqa: SIM115
        self.records = 0
        #: Set while a record is being written; `_whole` is where the last whole record ends.
        self._writing = False
        self._whole = 0
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
        return 0 if incompressible(sample) else self.gzip_level

    def _write(self, record: Any, level: int | None = None) -> None:
        """One record as one gzip member, written whole; its CDXJ line after it."""
        assert self._file is not None
        offset = self._file.tell()
        level = self.gzip_level if level is None else level
        member = StoredMember(self._file) if level == 0 else Member(self._file, level)
        self._sink.target = member
        self._writing = True
        try:
            self._writer.write_record(record)
            member.finish()
            self._file.flush()
        finally:
            self._sink.target = None
            self._writing = False
        self._whole = self._file.tell()
        self.records += 1
        self._index_record(record, offset, self._file.tell() - offset)

    def _index_record(self, record: Any, offset: int, length: int) -> None:
        if self._cdx is not None:  # (the line is made only for an index)
            self._write_cdx(self._cdx, cdx_line(record, offset, length, self.paths[-1].name))

    def _index_line(
        self, kind: str, uri: str, date: str, mime: str | None, status: str | None, digest: str | None,
        offset: int, length: int,
    ) -> None:  # fmt: skip
        if self._cdx is not None:
            self._write_cdx(self._cdx, cdx_text(kind, uri, date, mime, status, digest, offset, length,
                                                 self.paths[-1].name))  # fmt: skip

    @staticmethod
    def _write_cdx(cdx: IO[str], line: str | None) -> None:
        if line is not None:
            cdx.write(line)
            cdx.flush()

    @staticmethod
    def _head_bytes(
        kind: str, uri: str, date: str, record_id: str, content_type: str, length: int,
        block_digest: str | None, payload_digest: str | None, truncated: str | None,
        extra: Sequence[tuple[str, str]] = (),
    ) -> bytes:  # fmt: skip
        fields = [("WARC-Type", kind), ("WARC-Record-ID", record_id), ("WARC-Target-URI", uri), ("WARC-Date", date)]
        fields += extra
        if block_digest:
            fields.append(("WARC-Block-Digest", block_digest))
        if payload_digest:
            fields.append(("WARC-Payload-Digest", payload_digest))
        if truncated:
            fields.append(("WARC-Truncated", truncated))
        fields += [("Content-Type", content_type), ("Content-Length", str(length))]
        return bytes(StatusAndHeaders("", fields, protocol="WARC/1.1").to_bytes(encoding="utf-8"))

    # -- records written from their bytes -------------------------------------------------
    #
    # warcio parses an HTTP head it is given and writes it back in its own form
    # ("X-Odd:tight" gains a space), so these records are written from the bytes as
    # they arrived, their WARC head made by warcio's StatusAndHeaders, as for a record
    # in place; warcio writes the warcinfo and revisit records.

    def _write_block(
        self, kind: str, uri: str, date: str, content_type: str, block: bytes | IO[bytes], length: int,
        block_digest: str, payload_digest: str | None, fields: Sequence[tuple[str, str]] = (), level: int | None = None,
    ) -> tuple[str, int, int]:  # fmt: skip
        """One record whose block is `block` as it is; its id, offset and length in the file."""
        assert self._file is not None
        record_id = new_record_id()
        head = self._head_bytes(kind, uri, date, record_id, content_type, length, block_digest, payload_digest,
                                None, fields)  # fmt: skip
        offset = self._file.tell()
        level = self.gzip_level if level is None else level
        member = StoredMember(self._file) if level == 0 else Member(self._file, level)
        self._writing = True
        try:
            member.write(head)
            if isinstance(block, bytes):
                member.write(block)
            else:
                while piece := block.read(READ_SIZE):
                    member.write(piece)
            member.write(b"\r\n\r\n")
            member.finish()
            self._file.flush()
        finally:
            self._writing = False
        self._whole = self._file.tell()
        self.records += 1
        return record_id, offset, self._whole - offset

    def _write_response(self, uri: str, date: str, spool: Spool, truncated: str | None) -> str:
        """An HTTP response as it arrived (or a revisit of a payload seen before, with --warc-dedup)."""
        digest = spool.body_digest
        has_body = spool.head_length is not None and spool.size > spool.head_length
        seen = self._seen.get(digest) if self.dedup and digest and has_body else None
        if seen is not None:
            assert digest is not None
            return self._revisit(uri, date, digest, seen, spool.head, "application/http; msgtype=response")
        record_id, offset, length = self._write_block(
            "response", uri, date, "application/http; msgtype=response", spool.rewind(), spool.size,
            spool.digest, digest, [("WARC-Truncated", truncated)] if truncated else [], self._level_for(spool),
        )  # fmt: skip
        if self.dedup and digest and has_body:
            self._seen[digest] = Seen(uri, date, record_id)
        status, mime = status_and_type(spool.head)
        self._index_line("response", uri, date, mime, status, digest, offset, length)
        return record_id

    def _write_resource(self, uri: str, date: str, spool: Spool, content_type: str) -> str:
        digest = spool.digest
        seen = self._seen.get(digest) if self.dedup and spool.size else None
        if seen is not None:
            return self._revisit(uri, date, digest, seen, b"", content_type)
        record_id, offset, length = self._write_block(
            "resource", uri, date, content_type, spool.rewind(), spool.size, digest, digest, (), self._level_for(spool)
        )
        if self.dedup and spool.size:
            self._seen[digest] = Seen(uri, date, record_id)
        self._index_line("resource", uri, date, content_type, None, digest, offset, length)
        return record_id

    def _revisit(self, uri: str, date: str, digest: str, seen: Seen, http_head: bytes, content_type: str) -> str:
        """A revisit record (identical-payload-digest) of a payload archived before in this run."""
        http_headers = None
        if http_head:
            http_headers = ArcWarcRecordLoader().load_http_headers("response", uri, io.BytesIO(http_head),
                                                                  len(http_head))  # fmt: skip
        revisit = self._writer.create_revisit_record(
            uri, digest, seen.uri, seen.date, http_headers=http_headers,
            warc_headers_dict={"WARC-Date": date, "WARC-Refers-To": seen.record_id},
        )  # fmt: skip
        if http_headers is None:
            revisit.content_type = content_type
        self._write(revisit)
        return str(revisit.rec_headers.get_header("WARC-Record-ID"))


def sha1_digest(data: bytes) -> str:
    """The WARC form of the SHA-1 of `data`."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")
