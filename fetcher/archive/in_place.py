"""A WARC record written in place at the end of the file while its payload streams in.

Past the first 256 KiB of a payload (`fetcher.archive.spool.Spool`) the
recorder takes its bytes as they arrive and `InPlace` writes them at the
end of the file, in the spool's sink thread, beside the two digest threads:
deflated at level 1, or as stored deflate blocks when a sample shows they do
not compress, and for as long as deflate runs slower than the bytes arrive
(HURRY_BACKLOG).  The record's head (its length and digests are known only
at the end) goes into room reserved before the payload: the member's gzip
header carries an "extra" field (RFC 1952 2.3.1.1) that takes up whatever
room the head leaves, so the member stays one ordinary gzip member.  Its
CRC-32 is the CRC of the head combined with the CRC of the payload taken
while it streamed (`fetcher.archive.gzip_members.crc32_combine`).  A record
that makes no record after all is cut off the file again (`cut`).
"""

from __future__ import annotations

import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Protocol

from fetcher.archive.gzip_members import crc32_combine, stored_blocks
from fetcher.archive.spool import Spool

#: zlib level of a record written in place while it streams: level 1 deflates
#: text at several hundred MB/s, level 6 at a fraction of a network's speed.
STREAM_GZIP_LEVEL = 1
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
#: The CPU clock deflate's pace is measured by (the sink thread's own CPU time, which another
#: process's load does not inflate); the transfer's pace comes with `pace` (fetcher.archive.spool.clock).
#: Tests give both clocks of their own, so the rule's outcome does not depend on the machine.
cpu_clock: Callable[[], float] = time.thread_time


class Owner(Protocol):
    """What a record in place asks of the recorder that started it (`fetcher.archive.recorder.WarcRecorder`)."""

    @property
    def always_deflate(self) -> bool: ...

    def release(self, in_place: InPlace) -> None:
        """The record makes no record: its bytes leave the file, which is free again."""


class InPlace:
    """One record written in place at the end of the WARC file while its bytes arrive (see module docstring).

    Layout of its gzip member: a gzip header with an extra field, the WARC
    head in a stored deflate block, the payload (deflated, or stored
    blocks), the record's closing CRLF CRLF in the final block, CRC-32 and
    size.  Everything from the gzip header to the WARC head is the reserved
    room, written at the end; the extra field's length absorbs the slack.
    """

    GZIP_HEADER = b"\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff"  # FLG.FEXTRA; no name, no mtime, OS unknown
    ROOM_OVERHEAD = len(GZIP_HEADER) + 2 + 4 + 5  # XLEN, one extra subfield's header, the stored block's header

    def __init__(self, recorder: Owner, spool: Spool, fd: int, offset: int, room: int, level: int) -> None:
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
                self._put(stored_blocks(pieces))
                if self.level:
                    self.hurried += 1
            else:
                compress = self.compressor.compress
                started = cpu_clock()
                out = [out for out in map(compress, pieces) if out]
                self.deflate_seconds += cpu_clock() - started
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
        self.recorder.release(self)

    def cut(self) -> bool:
        """Take the member's bytes off the end of the file (False if it was finished or cut before)."""
        with self.lock:
            if self.done:
                return False
            self.done = True
            os.ftruncate(self.fd, self.offset)
            return True
