"""The recorder of `fetcher.archive.tap` (`--warc-file`): captures become WARC records.

It knows no protocol: a `Capture` is either wire exchanges (written as
`request` and `response` records, linked by WARC-Concurrent-To) or a payload
plus a dialogue (a `resource` record and a `metadata` record of Content-Type
`text/x-SCHEME-control-conversation`, the form Heritrix and wpull use for
FTP: "> " sent, "< " received, "* " notes), or a dialogue alone (a redirect
or resolution hop: `metadata`).  How one record goes into the file is
`fetcher.archive.records`'s job.

Records are written by one writer at a time (a lock of `fetcher.net.aio`; large ones in a
worker thread so other transfers keep moving), one gzip member each, and
only for retrievals that completed or were answered (an HTTP error page, an
FTP 550's dialogue).

A large payload is not copied: past the first 256 KiB (`fetcher.archive.spool.Spool`)
the recorder takes its bytes as they arrive and writes them in place at the
end of the file (`fetcher.archive.in_place`).  One record at a time is
written so; other records that complete meanwhile wait in memory or
temporary files and are written after it.  A retrieval that fails or is
interrupted (Ctrl-C, SIGTERM, a server closing early) has its in-place bytes
cut off the file again: the file ends with whole records.  Only SIGKILL or a
power cut during an in-place record leaves its bytes at the end of the file,
unfinished.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Unpack

from fetcher.archive.cdx import status_and_type
from fetcher.archive.gzip_members import SAMPLE, incompressible
from fetcher.archive.in_place import STREAM_GZIP_LEVEL, InPlace
from fetcher.archive.records import RecordOptions, RecordWriter, Seen, new_record_id, sha1_digest, warc_date
from fetcher.archive.spool import Sink, Spool
from fetcher.archive.tap import Capture
from fetcher.net import aio

#: Captures up to this size are written in the event loop's thread; larger
#: ones in a worker thread, so other transfers keep moving meanwhile.
INLINE_BYTES = 256 * 1024
#: Room kept for the Content-Type of a record written in place (known only at its end).
CONTENT_TYPE_ROOM = 512
#: Most bytes of captures waiting in memory while a record is written in place; past it they go to disk.
WAITING_MEMORY = 16 << 20


class WarcRecorder(RecordWriter):
    """Writes captures as WARC/1.1 records (see module docstring)."""

    def __init__(
        self, name: str | os.PathLike[str], *, always_deflate: bool = False, **options: Unpack[RecordOptions]
    ) -> None:
        #: --warc-deflate always: a record deflated in place stays deflated however fast the bytes
        #: arrive (the smaller archive over the faster transfer; see HURRY_BACKLOG).
        self.always_deflate = always_deflate
        self._lock = aio.Lock()
        #: The record being written in place at the end of the file, if any.
        self._in_place: InPlace | None = None
        #: Captures that completed while a record was written in place: written after it.
        self._waiting: list[Capture] = []
        self._waiting_memory = 0
        #: Set while a worker thread writes records (no record may start in place meanwhile).
        self._threaded = False
        super().__init__(name, **options)

    # -- closing, and SIGTERM ----------------------------------------------

    def close(self) -> None:
        """Cut an unfinished in-place record, write the captures still waiting, close the files."""
        if self._in_place is not None:
            try:
                self._in_place.spool.settle()
            finally:
                self.release(self._in_place)
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
        # writing (the lock's acquire yields, on trio as on asyncio) finds the record in place and waits for it.
        if self._file is None or self._in_place is not None or self._threaded or self._waiting:
            return None
        content_type = "application/http; msgtype=response" if spool.message else "x" * CONTENT_TYPE_ROOM
        widest = self._head_bytes(
            "response" if spool.message else "resource", url, "0" * 27, new_record_id(),
            content_type, 10**20, "sha1:" + "A" * 32, "sha1:" + "A" * 32, "disconnect",
        )  # fmt: skip
        room = len(widest) + InPlace.ROOM_OVERHEAD
        if room - InPlace.ROOM_OVERHEAD > 0xFFFF:  # a head past one stored block (a URL of ~64 KiB): spool it
            return None
        self._rotate_if_full()
        self._file.flush()
        stored = self.gzip_level == 0 or incompressible(early[:SAMPLE])
        level = 0 if stored else min(self.gzip_level, STREAM_GZIP_LEVEL)
        self._in_place = InPlace(self, spool, self._file.fileno(), self._file.tell(), room, level)
        return self._in_place

    def release(self, in_place: InPlace) -> None:
        """An in-place record that makes no record: its bytes leave the file, which is free again."""
        if in_place.cut() and self._file is not None:
            self._file.seek(in_place.offset)
        if self._in_place is in_place:
            self._in_place = None

    def _finish_in_place(self, capture: Capture, spool: Spool, date: str, truncated: str | None) -> str:
        """Close the record written in place (or, a payload seen before with --warc-dedup, make it a revisit)."""
        in_place = spool.sink
        assert isinstance(in_place, InPlace) and self._file is not None
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
            self.release(in_place)
            return self._revisit(uri, date, payload_digest, seen, spool.head, content_type)
        record_id = new_record_id()
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
            self._seen[payload_digest] = Seen(uri, date, record_id)
        status, mime = status_and_type(spool.head) if spool.message else (None, content_type)
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
                await aio.run_sync(self._write_and_close, capture)
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
        date = warc_date()
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
                sha1_digest(request), sha1_digest(body), [("WARC-Concurrent-To", main_id)] if main_id else [],
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
                sha1_digest(text), None, [("WARC-Concurrent-To", main_id)] if main_id else [],
            )  # fmt: skip


def _spools(capture: Capture) -> list[Spool]:
    spools = [exchange.response for exchange in capture.exchanges]
    if capture.payload is not None:
        spools.append(capture.payload)
    return spools
