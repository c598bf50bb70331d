"""WARC files of what fetcher retrieves (`--warc-file`): the recorder of `fetcher.archive.tap`.

The only module that imports warcio (the reference WARC implementation),
and only when a WARC is asked for.  It knows no protocol: a `Capture` is
either wire exchanges (written as `request` and `response` records, linked
by WARC-Concurrent-To) or a payload plus a dialogue (a `resource` record and
a `metadata` record of Content-Type `text/x-SCHEME-control-conversation`,
the form Heritrix and wpull use for FTP: "> " sent, "< " received, "* "
notes), or a dialogue alone (a redirect or resolution hop: `metadata`).

Records are written by one writer at a time (an anyio lock; large ones in a
worker thread so other transfers keep moving), one gzip member each, and
only for retrievals that completed or were answered (an HTTP error page, an
FTP 550's dialogue).

A large payload is not copied: past the first 256 KiB (`fetcher.archive.spool.Spool`)
the recorder takes its bytes as they arrive and writes them in place at the
end of the file (`_InPlace`, in the spool's sink thread, beside the two
digest threads), deflated at level 1, or as stored deflate blocks when a
sample shows they do not compress, and for as long as deflate runs slower
than the bytes arrive (HURRY_BACKLOG).  The record's head (its
length and digests are known only at the end) goes into room reserved
before the payload: the member's gzip header carries an "extra" field
(RFC 1952 2.3.1.1) that takes up whatever room the head leaves, so the
member stays one ordinary gzip member.  Its CRC-32 is the CRC of the head
combined with the CRC of the payload taken while it streamed.  One record
at a time is written so; other records that complete meanwhile wait in
memory or temporary files and are written after it.  A retrieval that fails
or is interrupted (Ctrl-C, SIGTERM, a server closing early) has its
in-place bytes cut off the file again: the file ends with whole records.
Only SIGKILL or a power cut during an in-place record leaves its bytes at
the end of the file, unfinished.

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
import json
import os
import platform
import signal
import struct
import sys
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import anyio

from .. import __version__
from ..url import redact
from .spool import Sink, Spool
from .tap import Capture

# warcio imports fsspec when it is installed (the --cluster extra), for file opening fetcher never
# asks of it: a fifth of the time --warc-file adds to a start.  Hidden while warcio loads, unless
# something loaded it before; whoever imports it later gets it as usual.
_HIDE_FSSPEC = "fsspec" not in sys.modules
if _HIDE_FSSPEC:
    sys.modules["fsspec"] = None  # type: ignore[assignment]
try:
    from warcio.recordbuilder import RecordBuilder
    from warcio.recordloader import ArcWarcRecordLoader
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter
finally:
    if _HIDE_FSSPEC:
        del sys.modules["fsspec"]

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
#: zlib level of a record written in place while it streams: level 1 deflates
#: text at several hundred MB/s, level 6 at a fraction of a network's speed.
STREAM_GZIP_LEVEL = 1
#: Room kept for the Content-Type of a record written in place (known only at its end).
CONTENT_TYPE_ROOM = 512
#: Most bytes of captures waiting in memory while a record is written in place; past it they go to disk.
WAITING_MEMORY = 16 << 20
#: A record deflated in place while it streams is stored instead while deflating falls behind the
#: transfer: this many batches wait for its writer and deflate (by the CPU time it took) runs
#: under DEFLATE_MARGIN times as fast as the bytes arrive.  Ordinary text deflates at 120-180
#: MiB/s at level 1 on the 2-core build machine: slower than loopback, about 1 Gbit/s's pace, so
#: a busy machine's other work makes it lag there.  A payload that deflates much faster than it
#: arrives, or to less than KEEP_RATIO of its size (one line repeated: ~1.4 GiB/s, 150:1), stays
#: deflated even on a busy machine: storing it would trade a little CPU for many times the bytes
#: on disk.  It is deflated again once at most CALM_BACKLOG batches wait.
HURRY_BACKLOG = 6
CALM_BACKLOG = 1
DEFLATE_MARGIN = 2.0
KEEP_RATIO = 1 / 8


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


_CRC_POLY = 0xEDB88320


def _multiply_mod_p(a: int, b: int) -> int:
    """a * b modulo the CRC-32 polynomial (bit-reflected, as zlib's multmodp)."""
    m = 1 << 31
    product = 0
    while m:
        if a & m:
            product ^= b
        b = (b >> 1) ^ _CRC_POLY if b & 1 else b >> 1
        m >>= 1
    return product


def _x_to_the_8n(n: int) -> int:
    """x**(8n) modulo the CRC-32 polynomial."""
    power = 1 << 31  # x**0
    square = 1 << 30  # x**1, squared as the bits of 8n are walked
    n *= 8
    while n:
        if n & 1:
            power = _multiply_mod_p(square, power)
        square = _multiply_mod_p(square, square)
        n >>= 1
    return power


def crc32_combine(crc1: int, crc2: int, length2: int) -> int:
    """The CRC-32 of A+B from the CRC of A, the CRC of B and B's length (zlib's crc32_combine)."""
    return _multiply_mod_p(_x_to_the_8n(length2), crc1) ^ crc2


_FULL_STORED_BLOCK = b"\x00" + struct.pack("<HH", 0xFFFF, 0)


def _stored_blocks(pieces: Sequence[bytes]) -> list[bytes | memoryview]:
    """The pieces framed as non-final stored deflate blocks (RFC 1951 3.2.4), as buffers for writev.

    Blocks are full (65535 bytes) across the pieces' boundaries, so nothing is copied.
    """
    buffers: list[bytes | memoryview] = []
    remaining = sum(len(piece) for piece in pieces)
    room = 0  # bytes the current block still takes
    for piece in pieces:
        view = memoryview(piece)
        start = 0
        while start < len(view):
            if not room:
                room = min(0xFFFF, remaining)
                header = b"\x00" + struct.pack("<HH", room, room ^ 0xFFFF) if room < 0xFFFF else _FULL_STORED_BLOCK
                buffers.append(header)
            take = min(room, len(view) - start)
            buffers.append(view[start : start + take] if take < len(view) else view)
            start += take
            room -= take
            remaining -= take
    return buffers


class _InPlace:
    """One record written in place at the end of the WARC file while its bytes arrive (see module docstring).

    Layout of its gzip member: a gzip header with an extra field, the WARC
    head in a stored deflate block, the payload (deflated, or stored
    blocks), the record's closing CRLF CRLF in the final block, CRC-32 and
    size.  Everything from the gzip header to the WARC head is the reserved
    room, written at the end; the extra field's length absorbs the slack.
    """

    GZIP_HEADER = b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff"  # FLG.FEXTRA; no name, no mtime, OS unknown
    ROOM_OVERHEAD = len(GZIP_HEADER) + 2 + 4 + 5  # XLEN, one extra subfield's header, the stored block's header

    def __init__(self, recorder: WarcRecorder, spool: Spool, fd: int, offset: int, room: int, level: int) -> None:
        self.recorder = recorder
        self.spool = spool
        self.fd = fd
        self.offset = offset
        self.room = room
        self.position = offset + room
        self.crc = 0
        self.length = 0
        self.level = level
        self.compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS) if level else None
        #: Set while deflating falls behind the transfer: batches are stored until it catches up.
        self.hurry = False
        #: Bytes deflated, what they deflated to, and the sink thread's CPU seconds it took (deflate's own pace).
        self.deflated = 0
        self.deflated_to = 0
        self.deflate_seconds = 0.0
        #: Batches stored because deflating fell behind (for the tests and the bench).
        self.hurried = 0
        #: Held while bytes go to the file, so an abort (SIGTERM) never races a write.
        self.lock = threading.Lock()
        self.done = False

    def write(self, pieces: Sequence[bytes]) -> None:
        """Append one batch of the payload (from the spool's sink thread): its CRC, then deflated or stored."""
        with self.lock:
            if self.done:
                return
            crc, length = self.crc, self.length
            for piece in pieces:
                crc = zlib.crc32(piece, crc)
                self.length += len(piece)
            self.crc = crc
            if self.level and self.hurry != (self.compressor is None):
                self._switch()
            if self.compressor is None:
                self._put(_stored_blocks(pieces))
                if self.level:
                    self.hurried += 1
            else:
                compress = self.compressor.compress
                started = time.thread_time()
                out = [out for out in map(compress, pieces) if out]
                self.deflate_seconds += time.thread_time() - started
                self.deflated += self.length - length
                self.deflated_to += sum(map(len, out))
                self._put(out)

    def _switch(self) -> None:
        """From deflated to stored blocks or back, mid-record (the deflate stream stays one stream).

        A sync flush ends the deflated blocks on a byte boundary, where stored
        blocks may follow; a new raw deflate stream's blocks may follow stored
        ones (its back references never reach before its own start).
        """
        if self.compressor is not None:
            self._put([self.compressor.flush(zlib.Z_SYNC_FLUSH)])
            self.compressor = None
        else:
            self.compressor = zlib.compressobj(self.level, zlib.DEFLATED, -zlib.MAX_WBITS)

    def pace(self, backlog: int, rate: float) -> None:
        """Store while deflating falls behind the transfer; deflate again once it keeps up (see HURRY_BACKLOG)."""
        if self.recorder.always_deflate:
            return
        if backlog >= HURRY_BACKLOG:
            if (
                not self.deflated  # nothing measured yet
                or self.deflated > DEFLATE_MARGIN * rate * self.deflate_seconds  # the backlog is not deflate's
                or self.deflated_to < KEEP_RATIO * self.deflated  # worth its CPU however busy the machine
            ):
                return
            self.hurry = True
        elif backlog <= CALM_BACKLOG:
            self.hurry = False

    def _put(self, buffers: Sequence[bytes | memoryview]) -> None:
        for start in range(0, len(buffers), 512):  # under IOV_MAX
            group = buffers[start : start + 512]
            total = sum(len(buffer) for buffer in group)
            written = os.pwritev(self.fd, group, self.position)
            if written < total:  # a short write: the rest one piece at a time
                rest = b"".join(group)[written:]
                while rest:
                    count = os.pwrite(self.fd, rest, self.position + written)
                    written += count
                    rest = rest[count:]
            self.position += total

    def fits(self, head: bytes) -> bool:
        return len(head) + self.ROOM_OVERHEAD <= self.room

    def finish(self, head: bytes) -> int:
        """Close the member around `head` and the payload written; the file offset after it."""
        with self.lock:
            assert not self.done and self.fits(head)
            self.done = True
            if self.compressor is None:
                tail = b"\x01" + struct.pack("<HH", 4, 4 ^ 0xFFFF) + b"\r\n\r\n"
            else:
                tail = self.compressor.compress(b"\r\n\r\n") + self.compressor.flush()
            rest_crc = zlib.crc32(b"\r\n\r\n", self.crc)
            rest_length = self.length + 4
            crc = crc32_combine(zlib.crc32(head), rest_crc, rest_length)
            size = (len(head) + rest_length) & 0xFFFFFFFF
            self._put([tail, struct.pack("<II", crc, size)])
            extra = self.room - self.ROOM_OVERHEAD - len(head)  # padding bytes of the extra subfield
            reserved = b"".join([
                self.GZIP_HEADER,
                struct.pack("<H", extra + 4),
                b"FP" + struct.pack("<H", extra) + bytes(extra),  # subfield "FP": fetcher's padding
                b"\x00" + struct.pack("<HH", len(head), len(head) ^ 0xFFFF),
                head,
            ])  # fmt: skip
            assert len(reserved) == self.room
            os.pwrite(self.fd, reserved, self.offset)
            return self.position

    def abandon(self) -> None:
        """The payload makes no record after all (the retrieval failed): cut it off the file."""
        self.recorder._release(self)

    def cut(self) -> bool:
        """Take the member's bytes off the end of the file (False if it was finished or cut before)."""
        with self.lock:
            if self.done:
                return False
            self.done = True
            os.ftruncate(self.fd, self.offset)
            return True


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
    return _cdx_text(kind, headers.get_header("WARC-Target-URI"), headers.get_header("WARC-Date") or "", mime,
                     status, headers.get_header("WARC-Payload-Digest"), offset, length, filename)  # fmt: skip


def _cdx_text(
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
    return f"{_surt(uri)} {stamp} {json.dumps(fields, separators=(', ', ': '))}\n"


def index_warc(path: Path) -> Iterator[str]:
    """The CDXJ lines of a WARC file's records, read back (what `--warc-cdx` writes while recording)."""
    from warcio.archiveiterator import ArchiveIterator

    with path.open("rb") as source:
        records = ArchiveIterator(source)
        for record in records:
            offset = records.get_record_offset()
            record.content_stream().read()  # to the record's end: its length is known then
            line = cdx_line(record, offset, records.get_record_length(), path.name)
            if line is not None:
                yield line


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
        always_deflate: bool = False,
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
        #: --warc-deflate always: a record deflated in place stays deflated however fast the bytes
        #: arrive (the smaller archive over the faster transfer; see HURRY_BACKLOG).
        self.always_deflate = always_deflate
        self._lock = anyio.Lock()
        self._sink = _Redirected()
        self._writer = _Writer(self._sink, gzip=False, warc_version="1.1")
        self._file: IO[bytes] | None = None
        self._index = 0
        self.paths: list[Path] = []
        self._seen: dict[str, _Seen] = {}
        self._cdx: IO[str] | None = open(base + ".cdxj", "w", encoding="utf-8") if cdx else None  # noqa: SIM115
        self.records = 0
        #: The record being written in place at the end of the file, if any.
        self._in_place: _InPlace | None = None
        #: Captures that completed while a record was written in place: written after it.
        self._waiting: list[Capture] = []
        self._waiting_memory = 0
        #: Set while a worker thread writes records (no record may start in place meanwhile).
        self._threaded = False
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
        return 0 if _incompressible(sample) else self.gzip_level

    def _write(self, record: Any, level: int | None = None) -> None:
        """One record as one gzip member, written whole; its CDXJ line after it."""
        assert self._file is not None
        offset = self._file.tell()
        level = self.gzip_level if level is None else level
        member = _StoredMember(self._file) if level == 0 else _Member(self._file, level)
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
            self._write_cdx(self._cdx, _cdx_text(kind, uri, date, mime, status, digest, offset, length,
                                                 self.paths[-1].name))  # fmt: skip

    @staticmethod
    def _write_cdx(cdx: IO[str], line: str | None) -> None:
        if line is not None:
            cdx.write(line)
            cdx.flush()

    def close(self) -> None:
        """Cut an unfinished in-place record, write the captures still waiting, close the files."""
        if self._in_place is not None:
            try:
                self._in_place.spool.settle()
            finally:
                self._release(self._in_place)
        while self._waiting and self._file is not None:
            capture = self._waiting.pop(0)
            try:
                self._write_capture(capture)
            finally:
                capture.close()
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._cdx is not None:
            self._cdx.close()
            self._cdx = None

    def guard_termination(self) -> None:
        """On SIGTERM, cut an unfinished in-place record off the file before the process ends as it would have.

        Only from the main thread, and not when SIGTERM is ignored or
        already handled by someone else (a library's caller decides then).
        """
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def on_terminate(signum: int, frame: Any) -> None:
            try:
                self._terminate()
            finally:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)

        signal.signal(signal.SIGTERM, on_terminate)

    def _terminate(self) -> None:
        """SIGTERM: cut what is unfinished, write the captures that waited for it, in the handler."""
        if self._file is None:
            return
        in_place = self._in_place
        if in_place is not None and in_place.lock.acquire(timeout=5):
            in_place.lock.release()
            if in_place.cut():
                self._in_place = None
                self._file.seek(in_place.offset)
        if self._writing or self._threaded or self._in_place is not None:
            # A record was being written (interrupted in this thread, or going on in another):
            # the file ends with the last whole one.
            os.ftruncate(self._file.fileno(), self._whole)
            return
        while self._waiting:
            self._write_capture(self._waiting.pop(0))
        self._file.flush()

    # -- records written in place -----------------------------------------------

    def sink(self, spool: Spool, url: str, early: bytes) -> Sink | None:
        """Take a large payload's bytes as they arrive, in place at the end of the file, if it is free."""
        # Not while a worker thread appends to the file; a task holding the lock but not yet
        # writing (anyio's acquire yields) finds the record in place and waits for it.
        if self._file is None or self._in_place is not None or self._threaded or self._waiting:
            return None
        content_type = "application/http; msgtype=response" if spool.message else "x" * CONTENT_TYPE_ROOM
        widest = self._head_bytes(
            "response" if spool.message else "resource", url, "0" * 27, RecordBuilder._make_warc_id(),
            content_type, 10**20, "sha1:" + "A" * 32, "sha1:" + "A" * 32, "disconnect",
        )  # fmt: skip
        room = len(widest) + _InPlace.ROOM_OVERHEAD
        if room - _InPlace.ROOM_OVERHEAD > 0xFFFF:  # a head past one stored block (a URL of ~64 KiB): spool it
            return None
        self._rotate_if_full()
        self._file.flush()
        stored = self.gzip_level == 0 or _incompressible(early[:SAMPLE])
        level = 0 if stored else min(self.gzip_level, STREAM_GZIP_LEVEL)
        self._in_place = _InPlace(self, spool, self._file.fileno(), self._file.tell(), room, level)
        return self._in_place

    def _release(self, in_place: _InPlace) -> None:
        """An in-place record that makes no record: its bytes leave the file, which is free again."""
        if in_place.cut() and self._file is not None:
            self._file.seek(in_place.offset)
        if self._in_place is in_place:
            self._in_place = None

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

    def _finish_in_place(self, capture: Capture, spool: Spool, date: str, truncated: str | None) -> str:
        """Close the record written in place (or, a payload seen before with --warc-dedup, make it a revisit)."""
        in_place = spool.sink
        assert isinstance(in_place, _InPlace) and self._file is not None
        uri = capture.url
        spool.settle()
        if spool.message:
            kind, content_type, payload_digest = "response", "application/http; msgtype=response", spool.body_digest
        else:
            kind, payload_digest = "resource", spool.digest
            content_type = capture.content_type or "application/octet-stream"
        seen = self._seen.get(payload_digest) if self.dedup and payload_digest else None
        if seen is not None:
            assert payload_digest is not None
            self._release(in_place)
            return self._revisit(uri, date, payload_digest, seen, spool.head, content_type)
        record_id = RecordBuilder._make_warc_id()
        content_type = content_type[:CONTENT_TYPE_ROOM]
        head = self._head_bytes(
            kind, uri, date, record_id, content_type, spool.size, spool.digest, payload_digest, truncated
        )
        self._writing = True
        try:
            end = in_place.finish(head)
        finally:
            self._writing = False
        self._in_place = None
        self._file.seek(end)
        self._whole = end
        self.records += 1
        if self.dedup and payload_digest:
            self._seen[payload_digest] = _Seen(uri, date, record_id)
        status, mime = _status_and_type(spool.head) if spool.message else (None, content_type)
        self._index_line(kind, uri, date, mime, status, payload_digest, in_place.offset, end - in_place.offset)
        return str(record_id)

    # -- captures ----------------------------------------------------------

    def _owns_in_place(self, capture: Capture) -> bool:
        return self._in_place is not None and any(spool is self._in_place.spool for spool in _spools(capture))

    def _wait(self, capture: Capture) -> None:
        """Keep a capture until the record written in place is finished (in memory up to WAITING_MEMORY)."""
        for spool in _spools(capture):
            if spool.sink is None:
                if self._waiting_memory + spool.size > WAITING_MEMORY:
                    spool.to_disk()
                else:
                    self._waiting_memory += spool.size
        self._waiting.append(capture)

    async def record(self, capture: Capture) -> None:
        """Write one completed retrieval's records (whole, under the lock, large ones in a worker thread)."""
        if self._in_place is not None and not self._owns_in_place(capture):
            self._wait(capture)
            return
        async with self._lock:
            if self._in_place is not None and not self._owns_in_place(capture):
                self._wait(capture)
                return
            size = sum(spool.size for spool in _spools(capture) if not spool.in_place)
            if self._waiting:
                size += INLINE_BYTES + 1  # whatever waited is written too: in the thread
            if size <= INLINE_BYTES and not self._owns_in_place(capture):
                # A small capture costs less to write than a hand-off to a thread.
                self._write_and_close(capture)
                return
            self._threaded = True
            try:
                await anyio.to_thread.run_sync(self._write_and_close, capture)
            finally:
                self._threaded = False

    def _write_and_close(self, capture: Capture) -> None:
        """Write a capture, then (once nothing is written in place) those that waited for it."""
        try:
            self._write_capture(capture)
        finally:
            capture.close()
        while self._waiting and self._in_place is None:
            waiting = self._waiting.pop(0)
            try:
                self._write_capture(waiting)
            finally:
                waiting.close()
        if not self._waiting:
            self._waiting_memory = 0

    def _write_capture(self, capture: Capture) -> None:
        if self._file is None:
            return
        date = RecordBuilder._make_warc_date(use_micros=True)
        uri = capture.url
        main_id: str | None = None
        last = capture.exchanges[-1] if capture.exchanges else None
        # A record written in place ends the file: it is finished before anything else is written.
        finished: dict[int, str] = {}
        for spool in _spools(capture):
            if spool.in_place:
                truncated = capture.truncated if last is not None and spool is last.response else None
                finished[id(spool)] = self._finish_in_place(capture, spool, date, truncated)
        if not finished:
            self._rotate_if_full()  # a new file only when something is to be written in it
        for exchange in capture.exchanges:
            spool = exchange.response
            if spool.size == 0:
                continue
            if id(spool) in finished:
                main_id = finished[id(spool)]
            else:
                truncated = capture.truncated if exchange is last else None
                main_id = self._write_response(uri, date, spool, truncated)
            request = exchange.request
            head_end = request.find(b"\r\n\r\n")
            body = request[head_end + 4 :] if head_end >= 0 else b""
            self._write_block(
                "request", uri, date, "application/http; msgtype=request", request, len(request),
                _digest(request), _digest(body), [("WARC-Concurrent-To", main_id)] if main_id else [],
            )  # fmt: skip
        if capture.payload is not None:
            payload = capture.payload
            if id(payload) in finished:
                main_id = finished[id(payload)]
            else:
                main_id = self._write_resource(uri, date, payload, capture.content_type or "application/octet-stream")
        if capture.dialogue:
            text = "".join(line + "\r\n" for line in capture.dialogue).encode("utf-8", "surrogateescape")
            self._write_block(
                "metadata", uri, date, f"text/x-{capture.scheme}-control-conversation", text, len(text),
                _digest(text), None, [("WARC-Concurrent-To", main_id)] if main_id else [],
            )  # fmt: skip

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
        record_id = str(RecordBuilder._make_warc_id())
        head = self._head_bytes(kind, uri, date, record_id, content_type, length, block_digest, payload_digest,
                                None, fields)  # fmt: skip
        offset = self._file.tell()
        level = self.gzip_level if level is None else level
        member = _StoredMember(self._file) if level == 0 else _Member(self._file, level)
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
            self._seen[digest] = _Seen(uri, date, record_id)
        status, mime = _status_and_type(spool.head)
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
            self._seen[digest] = _Seen(uri, date, record_id)
        self._index_line("resource", uri, date, content_type, None, digest, offset, length)
        return record_id

    def _revisit(self, uri: str, date: str, digest: str, seen: _Seen, http_head: bytes, content_type: str) -> str:
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


def _digest(data: bytes) -> str:
    """The WARC form of the SHA-1 of `data`."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def _status_and_type(head: bytes) -> tuple[str | None, str | None]:
    """The status code and Content-Type of an HTTP response head (for its CDXJ line)."""
    lines = head.split(b"\r\n")
    words = lines[0].split(None, 2)
    status = words[1].decode("latin-1") if len(words) > 1 else None
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if colon and name.strip().lower() == b"content-type":
            return status, value.strip().decode("latin-1")
    return status, None


def _spools(capture: Capture) -> list[Spool]:
    spools = [exchange.response for exchange in capture.exchanges]
    if capture.payload is not None:
        spools.append(capture.payload)
    return spools


def _incompressible(sample: bytes) -> bool:
    """True when a sample deflates to more than STORED_RATIO of its size (random, or compressed already)."""
    return len(sample) >= 4096 and len(zlib.compress(sample, 1)) > STORED_RATIO * len(sample)
