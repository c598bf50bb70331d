"""Spools: a payload's bytes on their way to an archive, and their digests taken as they arrive.

A `Spool` keeps the first bytes in memory and past them hands every batch to
worker threads (the block digest, the payload digest, the sink).  Its sink is
where the bytes go once they leave memory: the recorder's record written in
place (`fetcher.archive.in_place`), or a temporary file (`_TempSink`) the
recorder copies from once the retrieval completed.  A spool knows no
protocol beyond finding the end of an HTTP head, and no archive format
beyond the WARC form of a digest.
"""

from __future__ import annotations

import base64
import hashlib
import io
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

#: Bytes of a payload kept in memory before it goes to the archive or to disk.
SPOOL_MEMORY = 256 * 1024
#: Bytes handed to the spool's worker threads at a time (one hand-off per ~1 MiB, not per read).
BATCH = 1 << 20
#: Batches waiting for the spool's worker threads before the transfer waits for them.
PENDING = 16
#: The clock of a transfer's pace, which `Sink.pace` is told (seconds; tests give a clock of their own,
#: so that the pacing rule's outcome does not depend on how fast the machine runs them).
clock: Callable[[], float] = time.perf_counter


def _warc_digest(sha1: Any) -> str:
    """The WARC form of a digest: "sha1:" and base 32."""
    return "sha1:" + base64.b32encode(sha1.digest()).decode("ascii")


class Sink(Protocol):
    """Where a large payload goes once it leaves memory: written in place in the archive by the recorder."""

    def write(self, pieces: Sequence[bytes]) -> None:
        """Append the pieces, in order (called from the spool's sink thread, one batch at a time)."""

    def abandon(self) -> None:
        """The bytes will never make a record: take back what was written."""

    def pace(self, backlog: int, rate: float) -> None:
        """How many batches wait for the sink thread now, and the bytes per second arriving since the
        spool left memory (told before each batch is handed over)."""


class _TempSink:
    """The fallback: a temporary file the recorder copies from once the retrieval completed."""

    def __init__(self) -> None:
        import tempfile  # only when something records: `fetch` without --warc-file never loads it

        self.file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115

    def write(self, pieces: Sequence[bytes]) -> None:
        self.file.writelines(pieces)

    def abandon(self) -> None:
        self.file.close()

    def pace(self, backlog: int, rate: float) -> None:
        pass


class Taker(Protocol):
    """What may take a large payload's bytes as they arrive (the recorder: `fetcher.archive.tap.Recorder`)."""

    def sink(self, spool: Spool, url: str, early: bytes) -> Sink | None:
        """A sink for the spool's bytes from `early` on (None: spool them to a temporary file)."""


class Owner(Protocol):
    """What a spool asks of the retrieval it belongs to (`fetcher.archive.tap.Tap`)."""

    @property
    def recorder(self) -> Taker: ...

    @property
    def url(self) -> str: ...


class Spool:
    """Bytes on their way to an archive, and their SHA-1 taken as they arrive.

    With `head=True` (an HTTP message) it also hashes what follows the first
    empty line (the body), so the recorder need not read a large payload
    again to compute its payload digest.

    The first SPOOL_MEMORY bytes stay in memory (most captures are small).
    Past them the recorder may take the bytes as they come (`Recorder.sink`:
    written once, in place in the archive), else they go to a temporary
    file.  From then on the work per byte runs in worker threads, fed in
    batches of BATCH bytes, each batch handed to every stage in turn: one
    thread takes the SHA-1 of every byte (the block digest), one the SHA-1
    of an HTTP message's body (the payload digest), one the sink (CRC-32,
    deflate or stored framing, the write).  hashlib, zlib and file writes
    release the GIL, so the stages run beside each other and beside the
    transfer instead of one after another.  (The two digests cannot share
    work: the body is a suffix of the block, and SHA-1 only extends a
    prefix.  A `resource` record's block is its payload: one SHA-1.)
    At most PENDING batches wait for the stages (back-pressure on a fast
    network; at most PENDING * BATCH bytes in memory), and every reader
    waits for them.
    """

    def __init__(self, *, head: bool = False, owner: Owner | None = None) -> None:
        self.size = 0
        #: An HTTP message (a head, then a body), archived as a `response` record.
        self.message = head
        self._sha1 = hashlib.sha1()
        #: Length of the head (through its empty line) once seen; None before.
        self.head_length: int | None = None if head else 0
        #: The head itself once seen (an HTTP status line and fields).
        self.head = b""
        self._head = bytearray() if head else None
        self._body_sha1 = hashlib.sha1() if head else None
        self._digest: str | None = None
        self._body_digest: str | None = None
        self._owner = owner
        self._memory: list[bytes] | None = []
        #: Where the bytes went past SPOOL_MEMORY: the recorder's sink, or a temporary file.
        self.sink: Sink | None = None
        #: The worker threads past SPOOL_MEMORY, each with the work it does on every batch.
        self._stages: list[tuple[ThreadPoolExecutor, Callable[[list[bytes]], None]]] = []
        #: Each batch's futures, one per stage, oldest first.
        self._pending: deque[tuple[Future[None], ...]] = deque()
        self._batch: list[bytes] = []
        self._batch_size = 0
        self._left_memory = 0.0

    @property
    def in_place(self) -> bool:
        """True when the recorder took the bytes as they came (nothing to copy once complete)."""
        return self.sink is not None and not isinstance(self.sink, _TempSink)

    def write(self, data: bytes) -> None:
        if not data:
            return
        self.size += len(data)
        if self._memory is not None:
            data = bytes(data)
            self._memory.append(data)
            self._hash(data)
            if self.size > SPOOL_MEMORY:
                self._leave_memory()
            return
        self._batch.append(data)
        self._batch_size += len(data)
        if self._batch_size >= BATCH:
            self._submit()

    def _leave_memory(self) -> None:
        """Past SPOOL_MEMORY: hand what is in memory to a sink, and start the worker threads."""
        from concurrent.futures import ThreadPoolExecutor

        assert self._memory is not None
        early = b"".join(self._memory)
        self._memory = None
        sink: Sink | None = None
        if self._owner is not None:
            sink = self._owner.recorder.sink(self, self._owner.url, early)
        self.sink = sink if sink is not None else _TempSink()
        self._left_memory = clock()
        work: list[tuple[str, Callable[[list[bytes]], None]]] = [("digest", self._hash_block)]
        if self._head is not None or self._body_sha1 is not None:
            work.append(("payload-digest", self._hash_body))
        work.append(("sink", self._store))
        self._stages = [
            (ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"fetcher-spool-{name}"), job) for name, job in work
        ]
        # What was in memory is hashed already: the sink alone takes it.
        sink_stage = self._stages[-1][0]
        self._pending.append((sink_stage.submit(self._store, [early]),))

    def _submit(self) -> None:
        assert self._stages and self.sink is not None
        batch, self._batch, self._batch_size = self._batch, [], 0
        backlog = sum(1 for futures in self._pending if not futures[-1].done())
        self.sink.pace(backlog, (self.size - SPOOL_MEMORY) / max(clock() - self._left_memory, 1e-6))
        self._pending.append(tuple(stage.submit(job, batch) for stage, job in self._stages))
        while self._pending and (len(self._pending) > PENDING or all(f.done() for f in self._pending[0])):
            for future in self._pending.popleft():
                future.result()

    def _hash_block(self, batch: list[bytes]) -> None:
        sha1 = self._sha1
        for data in batch:
            sha1.update(data)

    def _hash_body(self, batch: list[bytes]) -> None:
        for data in batch:
            if self._head is not None:
                self._find_head(data)
            elif self._body_sha1 is not None:
                self._body_sha1.update(data)

    def _store(self, batch: list[bytes]) -> None:
        assert self.sink is not None
        try:
            self.sink.write(batch)
        except OSError as error:
            from fetcher.errors import OutputError

            raise OutputError(
                f"cannot write a payload for the WARC file: {error.strerror or error}",
                hint="free space where the WARC file and the temporary directory ($TMPDIR) are",
            ) from None

    def _hash(self, data: bytes) -> None:
        self._sha1.update(data)
        if self._head is not None:
            self._find_head(data)
        elif self._body_sha1 is not None:
            self._body_sha1.update(data)

    def settle(self) -> None:
        """Wait for the worker threads to take every byte written so far (the first failure is raised)."""
        if self._batch and self._stages:
            self._submit()
        failure: BaseException | None = None
        while self._pending:
            for future in self._pending.popleft():
                error = future.exception()
                if failure is None:
                    failure = error
        for stage, _ in self._stages:
            stage.shutdown(wait=True)
        self._stages = []
        if failure is not None:
            raise failure

    def _find_head(self, data: bytes) -> None:
        assert self._head is not None and self._body_sha1 is not None
        start = len(self._head)
        self._head += data
        end = self._head.find(b"\r\n\r\n", max(0, start - 3))
        if end < 0:
            if len(self._head) > 1 << 20:  # no head to speak of: let the recorder work it out
                self._head = None
                self._body_sha1 = None
            return
        self.head_length = end + 4
        self.head = bytes(self._head[: end + 4])
        self._body_sha1.update(self._head[end + 4 :])
        self._head = None

    @property
    def digest(self) -> str:
        """The WARC form of the digest of every byte (asked once the bytes are all in)."""
        self.settle()
        if self._digest is None:
            self._digest = _warc_digest(self._sha1)
        return self._digest

    @property
    def body_digest(self) -> str | None:
        """The digest of what followed the head (None when no head was seen)."""
        self.settle()
        if self._body_sha1 is None or self._head is not None:
            return None
        if self._body_digest is None:
            self._body_digest = _warc_digest(self._body_sha1)
        return self._body_digest

    def rewind(self) -> IO[bytes]:
        """The bytes from the start (not for a spool whose bytes went in place into the archive)."""
        self.settle()
        if self._memory is not None:
            return io.BytesIO(b"".join(self._memory))
        assert isinstance(self.sink, _TempSink), "the bytes are in the archive already"
        self.sink.file.seek(0)
        return self.sink.file

    def to_disk(self) -> None:
        """Move bytes held in memory to a temporary file (a capture waiting its turn to be written)."""
        if self._memory is None:
            return
        sink = _TempSink()
        sink.write(self._memory)
        self._memory = None
        self.sink = sink

    def close(self) -> None:
        try:
            self.settle()
        except Exception:  # the retrieval is over either way; the spool only has to go
            pass
        self._memory = None
        if self.sink is not None:
            self.sink.abandon()  # a no-op for an in-place record the recorder finished
