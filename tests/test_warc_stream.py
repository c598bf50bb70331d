"""Large payloads written in place through the spool's worker threads (fetcher.archive: Spool, InPlace).

Past the first 256 KiB a payload's block digest, payload digest and sink
(CRC-32, deflate or stored blocks, the write) each run in their own thread.
These tests drive the tap in-process with multi-MiB payloads arriving in
reads of uneven sizes, then read the WARC back with warcio, which recomputes
both digests itself (`check_digests="raise"`, `warcio check`), and compare
the digests with SHA-1s taken here.  They also make deflating fall behind
(and switch between deflated and stored blocks inside one record) and make
the sink fail midway: the file is still nothing but whole, valid records.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import random
import subprocess
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("warcio", reason="the 'warc' extra is not installed (pip install '.[warc]')")

from tests.test_warc_failures import whole_records

pytestmark = pytest.mark.usefixtures("no_netrc")

MIB = 1 << 20
#: Incompressible: stored blocks.
NOISE = random.Random(1919).randbytes(6 * MIB + 12345)
#: Compressible (to about 45%), yet not one line repeated: deflated at level 1, like ordinary text.
_pick = random.Random(19)
_WORDS = [bytes(_pick.choices(b"abcdefghijklmnopqrstuvwxyz", k=_pick.randint(2, 9))) for _ in range(3000)]
TEXT = b" ".join(_pick.choices(_WORDS, k=1_000_000))[: 6 * MIB + 777]
LINES = b"one line of text, the same every time\n" * 170_000
DOCUMENT = SimpleNamespace(kind="document", content_type="application/octet-stream")
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n"


def _digest(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def _reads(data: bytes) -> list[bytes]:
    """`data` cut as a socket would hand it over: reads of uneven sizes, some not a multiple of anything."""
    sizes = random.Random(len(data))
    pieces, start = [], 0
    while start < len(data):
        size = sizes.choice([1, 1500, 16_384, 65_535, 65_536, 100_000, 262_144, 1 << 20])
        pieces.append(data[start : start + size])
        start += size
    return pieces


async def _archive(
    tmp_path: Path,
    payload: bytes,
    *,
    http: bool,
    watch: set[str] | None = None,
    tick: Callable[[int], None] | None = None,
    always_deflate: bool = False,
) -> Path:
    """Archive one retrieval of `payload` (an HTTP response, or a resource) fed through the tap; the WARC's path.

    `tick(size)` after each read: a test's transfer clock (`_Pacing`) moves on as a link's pace would.
    """
    from fetcher.archive import tap
    from fetcher.archive.recorder import WarcRecorder

    recorder = WarcRecorder(tmp_path / "w", always_deflate=always_deflate)
    url = "http://example.test/big" if http else "gopher://example.test/9/big"
    with tap.recording(recorder):
        retrieval = tap.start(url, "http" if http else "gopher", keeps_dialogue=not http)
        assert retrieval is not None
        if http:
            retrieval.request(b"GET /big HTTP/1.1\r\nHost: example.test\r\n\r\n")
        for piece in _reads(HEAD % len(payload) + payload if http else payload):
            if http:
                retrieval.response(piece)
            else:
                retrieval.payload(piece)
            if tick is not None:
                tick(len(piece))
            if watch is not None:
                watch.update(t.name for t in threading.enumerate() if t.name.startswith("fetcher-spool"))
        assert recorder._in_place is not None  # streaming into the file, not into a temporary one
        retrieval.complete = True
        await retrieval.commit(DOCUMENT)  # type: ignore[arg-type]
    recorder.close()
    return tmp_path / "w.warc.gz"


@pytest.mark.parametrize("payload", [NOISE, TEXT], ids=["random", "text"])
@pytest.mark.parametrize("http", [True, False], ids=["response", "resource"])
async def test_threaded_digests_equal_warcios_and_sha1(tmp_path: Path, payload: bytes, http: bool) -> None:
    threads: set[str] = set()
    warc = await _archive(tmp_path, payload, http=http, watch=threads)
    # One thread per stage: the block digest, the payload digest (HTTP only), the sink.
    stages = {name.rsplit("_", 1)[0] for name in threads}
    expected = {"fetcher-spool-digest", "fetcher-spool-sink"} | ({"fetcher-spool-payload-digest"} if http else set())
    assert stages == expected
    records = whole_records(warc)  # warcio recomputes and checks both digests; `warcio check` passes
    main = next(r for r in records if r.type == ("response" if http else "resource"))
    block = HEAD % len(payload) + payload if http else payload
    assert main.raw == payload
    assert main.headers["WARC-Block-Digest"] == _digest(block)
    assert main.headers["WARC-Payload-Digest"] == _digest(payload)
    assert int(main.headers["Content-Length"]) == len(block)
    if payload is TEXT:
        assert warc.stat().st_size < len(TEXT) // 2  # deflated while it streamed
    else:
        assert warc.stat().st_size > len(NOISE)  # stored


async def test_deflating_switches_to_stored_blocks_and_back_inside_one_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deflated and stored blocks alternate inside one record's gzip member; every reader still reads it."""
    from fetcher.archive.in_place import InPlace

    write = InPlace.write
    modes: list[bool] = []

    def alternating(self: InPlace, pieces: Any) -> None:
        self.hurry = (len(modes) // 2) % 2 == 1  # two batches deflated, two stored, ...
        modes.append(self.hurry)
        write(self, pieces)

    monkeypatch.setattr(InPlace, "write", alternating)
    monkeypatch.setattr(InPlace, "pace", lambda self, backlog, rate: None)  # the batches alone decide here
    warc = await _archive(tmp_path, TEXT, http=True)
    assert True in modes and modes.count(False) > 2  # switched both ways, more than once
    records = whole_records(warc)
    (response,) = [r for r in records if r.type == "response"]
    assert response.raw == TEXT
    assert len(TEXT) // 4 < warc.stat().st_size < len(TEXT)  # part deflated, part stored
    if (gzip_tool := subprocess.run(["gzip", "-t", str(warc)], capture_output=True)).returncode != 127:
        assert gzip_tool.returncode == 0, gzip_tool.stderr


class _Pacing:
    """The pacing rule's inputs under the test's control: its clocks, and when the sink writes.

    The rule (`InPlace.pace`) compares the pace bytes arrive at (`fetcher.archive.spool.clock`) with the pace
    deflate runs at (`fetcher.archive.in_place.cpu_clock`, the sink thread's CPU time).  Here both clocks are
    virtual: each read moves the transfer clock on by its size at `transfer` bytes/s, each deflate
    call moves the CPU clock on by its size at `deflate` bytes/s.  No sleep, no CPU burnt: the
    outcome is the same on any machine, however loaded.

    With `backlog=True` the sink (a slow disk) writes the first bytes (so deflate's pace is measured),
    then holds every write until the transfer has handed over HURRY_BACKLOG batches more and the rule
    has judged that backlog; `judged` lists the backlogs it judged with deflate's pace known.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, transfer: float, deflate: float, backlog: bool) -> None:
        from fetcher.archive import in_place, spool
        from fetcher.archive.in_place import HURRY_BACKLOG, InPlace

        self.now = 0.0
        self.cpu = 0.0
        self.transfer = transfer
        self.judged: list[int] = []
        measured, opened = threading.Event(), threading.Event()
        if not backlog:
            measured.set()
            opened.set()
        monkeypatch.setattr(spool, "clock", lambda: self.now)
        monkeypatch.setattr(in_place, "cpu_clock", lambda: self.cpu)
        fake = SimpleNamespace(**{name: getattr(zlib, name) for name in dir(zlib) if not name.startswith("__")})
        fake.compressobj = lambda *args: _TimedDeflate(zlib.compressobj(*args), self, deflate)
        monkeypatch.setattr(in_place, "zlib", fake)
        write, pace = InPlace.write, InPlace.pace
        writes = 0

        def held_write(sink: InPlace, pieces: Any) -> None:
            nonlocal writes
            write(sink, pieces)
            writes += 1
            if writes == 1:
                measured.set()
            assert opened.wait(60), "the transfer never handed over a backlog"

        def judged_pace(sink: InPlace, waiting: int, rate: float) -> None:
            assert measured.wait(60), "the sink never wrote"
            pace(sink, waiting, rate)
            if waiting >= HURRY_BACKLOG and sink.deflated:
                self.judged.append(waiting)
                opened.set()

        monkeypatch.setattr(InPlace, "write", held_write)
        monkeypatch.setattr(InPlace, "pace", judged_pace)

    def tick(self, size: int) -> None:
        self.now += size / self.transfer


class _TimedDeflate:
    """A real compressor whose calls take `rate` bytes/s of the test's CPU clock (see `_Pacing`)."""

    def __init__(self, real: Any, pacing: _Pacing, rate: float) -> None:
        self.real = real
        self.pacing = pacing
        self.rate = rate

    def compress(self, data: bytes) -> bytes:
        self.pacing.cpu += len(data) / self.rate
        return bytes(self.real.compress(data))

    def flush(self, *mode: int) -> bytes:
        return bytes(self.real.flush(*mode))


def _count_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """After each batch the sink wrote: how many of the record's batches were stored so far."""
    from fetcher.archive.in_place import InPlace

    write = InPlace.write
    stored: list[int] = []

    def counting(self: InPlace, pieces: Any) -> None:
        write(self, pieces)
        stored.append(self.hurried)

    monkeypatch.setattr(InPlace, "write", counting)
    return stored


async def test_a_deflate_slower_than_the_transfer_stores_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches pile up before a sink whose deflate (by its CPU time) runs slower than they arrive: it stores them."""
    from fetcher.archive import spool
    from fetcher.archive.in_place import DEFLATE_MARGIN, HURRY_BACKLOG

    monkeypatch.setattr(spool, "BATCH", 1 << 16)  # a batch a read: some fifty
    # Deflate at 30 MiB/s of CPU time, bytes arriving at 20 MiB/s: under DEFLATE_MARGIN (2) times as fast.
    pacing = _Pacing(monkeypatch, transfer=20 * MIB, deflate=30 * MIB, backlog=True)
    assert DEFLATE_MARGIN * 20 > 30
    stored = _count_batches(monkeypatch)
    payload = TEXT * 4
    warc = await _archive(tmp_path, payload, http=False, tick=pacing.tick)
    # Stored once HURRY_BACKLOG batches waited and deflate's pace was measured; the first ones were deflated.
    assert pacing.judged and min(pacing.judged) >= HURRY_BACKLOG
    assert len(stored) > 3 * HURRY_BACKLOG and 0 < stored[-1] < len(stored)
    (resource,) = [r for r in whole_records(warc) if r.type == "resource"]
    assert resource.raw == payload


async def test_warc_deflate_always_keeps_a_slow_deflate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--warc-deflate always: the same slow deflate and backlog as above, and not one batch is stored."""
    from fetcher.archive import spool
    from fetcher.archive.in_place import HURRY_BACKLOG

    monkeypatch.setattr(spool, "BATCH", 1 << 16)
    pacing = _Pacing(monkeypatch, transfer=20 * MIB, deflate=30 * MIB, backlog=True)
    stored = _count_batches(monkeypatch)
    payload = TEXT * 4
    warc = await _archive(tmp_path, payload, http=False, tick=pacing.tick, always_deflate=True)
    assert pacing.judged
    assert len(stored) > 3 * HURRY_BACKLOG and stored[-1] == 0
    (resource,) = [r for r in whole_records(warc) if r.type == "resource"]
    assert resource.raw == payload
    assert warc.stat().st_size < len(payload) // 2  # deflated: words of a 26-letter alphabet


async def test_a_backlog_that_is_not_deflates_keeps_deflating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches pile up before a sink that waits for a slow disk, not for deflate: the record stays deflated."""
    from fetcher.archive import spool
    from fetcher.archive.in_place import DEFLATE_MARGIN, HURRY_BACKLOG

    monkeypatch.setattr(spool, "BATCH", 1 << 16)  # a batch a read
    # Bytes at 20 MiB/s; level 1 deflates these words at 200 MiB/s of CPU time: the backlog is the disk's.
    pacing = _Pacing(monkeypatch, transfer=20 * MIB, deflate=200 * MIB, backlog=True)
    assert DEFLATE_MARGIN * 20 < 200
    stored = _count_batches(monkeypatch)
    warc = await _archive(tmp_path, TEXT, http=False, tick=pacing.tick)
    assert pacing.judged and min(pacing.judged) >= HURRY_BACKLOG
    assert len(stored) > 10 and stored[-1] == 0
    assert warc.stat().st_size < len(TEXT) // 2


async def test_a_payload_that_deflates_well_stays_deflated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """However slow deflate is, a payload it shrinks to under KEEP_RATIO is not stored: that would cost the disk."""
    from fetcher.archive import spool
    from fetcher.archive.in_place import HURRY_BACKLOG

    monkeypatch.setattr(spool, "BATCH", 1 << 16)
    pacing = _Pacing(monkeypatch, transfer=20 * MIB, deflate=30 * MIB, backlog=True)
    stored = _count_batches(monkeypatch)
    payload = LINES * 4  # as long as in the test above, where such a deflate is stored
    warc = await _archive(tmp_path, payload, http=False, tick=pacing.tick)
    assert pacing.judged
    assert len(stored) > 3 * HURRY_BACKLOG and stored[-1] == 0
    assert warc.stat().st_size < len(payload) // 50


async def test_a_sink_failing_midway_fails_the_retrieval_and_leaves_whole_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fetcher.archive import tap
    from fetcher.archive.in_place import InPlace
    from fetcher.archive.recorder import WarcRecorder
    from fetcher.errors import OutputError

    write = InPlace.write
    batches: list[int] = []

    def full_disk(self: InPlace, pieces: Any) -> None:
        batches.append(len(pieces))
        if len(batches) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        write(self, pieces)

    monkeypatch.setattr(InPlace, "write", full_disk)
    recorder = WarcRecorder(tmp_path / "w")
    with tap.recording(recorder):
        small = tap.start("gopher://example.test/0/small", "gopher")
        assert small is not None
        small.payload(b"small and whole\n")
        await small.commit(SimpleNamespace(kind="document", content_type="text/plain"))  # type: ignore[arg-type]
        big = tap.start("gopher://example.test/9/big", "gopher")
        assert big is not None
        with pytest.raises(OutputError, match="No space left on device"):
            for piece in _reads(NOISE):
                big.payload(piece)
            await big.commit(DOCUMENT)  # type: ignore[arg-type]
        big.discard()
    recorder.close()
    records = whole_records(tmp_path / "w.warc.gz")
    assert [(r.type, r.url) for r in records[1:]] == [("resource", "gopher://example.test/0/small")]
    assert records[1].raw == b"small and whole\n"


def test_stored_blocks_are_full_across_piece_boundaries() -> None:
    from fetcher.archive.gzip_members import stored_blocks

    pieces = [bytes([n]) * size for n, size in enumerate([1, 70_000, 65_535, 3, 200_000, 0, 12])]
    buffers = stored_blocks(pieces)
    stream = b"".join(bytes(buffer) for buffer in buffers) + b"\x01\x00\x00\xff\xff"  # a final empty block
    assert zlib.decompress(stream, -zlib.MAX_WBITS) == b"".join(pieces)
    lengths, position = [], 0
    while stream[position] == 0:  # non-final stored blocks: BFINAL 0, BTYPE 00, LEN, NLEN, the bytes
        length = int.from_bytes(stream[position + 1 : position + 3], "little")
        assert int.from_bytes(stream[position + 3 : position + 5], "little") == length ^ 0xFFFF
        lengths.append(length)
        position += 5 + length
    assert lengths[:-1] == [0xFFFF] * (len(lengths) - 1) and sum(lengths) == sum(map(len, pieces))
