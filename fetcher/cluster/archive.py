"""`--warc-file NAME` on a cluster: each run of a batch writes WARC files of its own.

Records never travel to the driver: a worker archives what it retrieves,
with the same recorder (`fetcher.archive.recorder.WarcRecorder`) as a local run.  Each
run of a batch writes into a staging directory beside NAME
(`.fetch-warc-RUN/BATCH/ATTEMPT/`), and its files move to their final names
beside NAME when the batch completes:

    NAME-RUN-BATCH-ATTEMPT.warc.gz                  (one per batch run)
    NAME-RUN-BATCH-ATTEMPT-00000.warc.gz, ...        (with --warc-max-size)

RUN is the run's id, BATCH the input number of the batch's first URL,
ATTEMPT 0 unless a worker died under the batch.  So a file under its final
name is always whole, as in a local run, and archivists get what Heritrix
gives them: many WARC files of one crawl, named by crawl and serial.

A worker that dies mid-batch leaves its run's files in staging.  The run
that replaces it copies every whole record of them into a file of the dead
run's name, except the records of the URLs it fetches again (those not in
the batch journal), so each URL's records are archived once.  Records are
gzip members written whole, one capture's records one after another, so a
member cut off by the kill, and the capture it belongs to, are dropped.
"""

from __future__ import annotations

import contextlib
import glob
import heapq
import os
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from fetcher.url import parse_url

#: A recorder installs a process-wide trace handler (fetcher.archive.tap.recording):
#: a worker with several threads records one batch at a time.
_ONE_RECORDING = threading.Lock()
#: Bytes of a record's start read for its WARC headers.
_HEAD = 64 * 1024


@dataclass
class WarcTask:
    """What a worker needs to archive a batch (all paths on storage every worker reaches)."""

    base: str  # NAME, absolute, without .warc.gz
    run_id: str
    staging: str
    max_size: int | None = None
    command_line: list[str] = field(default_factory=list)
    #: --warc-cdx: each published file is indexed beside it in staging, and the driver merges the indexes.
    cdx: bool = False


class BatchArchive:
    """One run of one batch: its recorder, its staging directory, and the salvage of earlier runs."""

    def __init__(self, task: WarcTask, batch_id: str) -> None:
        from fetcher.archive.recorder import WarcRecorder

        self.task = task
        self.final = Path(task.base).parent
        batch_dir = Path(task.staging) / batch_id
        batch_dir.mkdir(parents=True, exist_ok=True)
        attempt = 0
        while True:  # the first free attempt number (a rerun finds its predecessors' directories)
            try:
                (batch_dir / str(attempt)).mkdir()
                break
            except FileExistsError:
                attempt += 1
        self.earlier = [batch_dir / str(n) for n in range(attempt)]
        self.dir = batch_dir / str(attempt)
        serial = batch_id.rsplit("-", 1)[-1]
        name = f"{Path(task.base).name}-{task.run_id}-{int(serial):06d}-{attempt}"
        self.recorder = WarcRecorder(self.dir / name, max_size=task.max_size, command_line=task.command_line)

    def __enter__(self) -> BatchArchive:
        return self

    def __exit__(self, kind: object, error: object, traceback: object) -> None:
        self.recorder.close()
        if kind is None:
            self._publish(self.dir)

    @contextmanager
    def recording(self) -> Iterator[None]:
        from fetcher.archive.tap import recording

        with _ONE_RECORDING, recording(self.recorder):
            yield

    def salvage(self, refetched: list[str]) -> None:
        """Keep what earlier (dead) runs of this batch archived, less the records of `refetched` URLs."""
        dropped = {str(parse_url(text).redacted()) for text in refetched}
        for earlier in self.earlier:
            for path in sorted(earlier.glob("*.warc.gz")):
                _copy_whole_captures(path, path.with_name(path.name + ".salvaged"), dropped)
                path.with_name(path.name + ".salvaged").replace(path)
            self._publish(earlier)

    def _publish(self, directory: Path) -> None:
        # The directory stays (empty) until the driver removes the staging
        # tree: its number is taken, so a later run of the batch never
        # reuses a name already published.
        for path in sorted(directory.glob("*.warc.gz")):
            os.replace(path, self.final / path.name)
            if self.task.cdx:
                _index_beside(self.final / path.name, Path(self.task.staging) / "cdx")


def _members(source: IO[bytes]) -> Iterator[tuple[int, int, bytes]]:
    """(offset, length, first bytes) of each whole gzip member; stops at a member cut short."""
    offset = 0
    while True:
        source.seek(offset)
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
        head = b""
        length = 0
        while not inflate.eof:
            block = source.read(1 << 20)
            if not block:
                return  # the end of the file inside a member (or after the last one)
            data = block
            try:
                while data and not inflate.eof:
                    out = inflate.decompress(data, 1 << 20)
                    if len(head) < _HEAD:
                        head += out[: _HEAD - len(head)]
                    data = inflate.unconsumed_tail
            except zlib.error:
                return
            # What follows the member's end in this block belongs to the next member.
            length += len(block) - len(inflate.unused_data)
        yield offset, length, head
        offset += length


def _target(head: bytes) -> str | None:
    headers = head.split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace")
    for line in headers.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "warc-target-uri":
            return value.strip()
    return None


def _copy_whole_captures(path: Path, out: Path, dropped: set[str]) -> None:
    """Copy `path`'s whole records to `out`, without the captures of `dropped` URLs or a capture cut short."""
    with path.open("rb") as source:
        members = list(_members(source))
        source.seek(0, os.SEEK_END)
        cut = sum(length for _, length, _ in members) < source.tell()
        # One capture's records are consecutive members with one target URI.
        groups: list[tuple[str | None, list[tuple[int, int]]]] = []
        for offset, length, head in members:
            target = _target(head)
            if groups and target is not None and groups[-1][0] == target:
                groups[-1][1].append((offset, length))
            else:
                groups.append((target, [(offset, length)]))
        if cut and groups and groups[-1][0] is not None:
            groups.pop()  # its last record is the one the kill cut short
        with out.open("wb") as sink:
            for target, spans in groups:
                if target in dropped:
                    continue
                for offset, length in spans:
                    source.seek(offset)
                    _copy(source, sink, length)


def _copy(source: IO[bytes], sink: IO[bytes], length: int) -> None:
    while length > 0:
        block = source.read(min(length, 1 << 20))
        if not block:
            raise OSError("the WARC file shrank while it was copied")
        sink.write(block)
        length -= len(block)


def warc_task(name: str, run_id: str, max_size: int | None, command_line: list[str], cdx: bool = False) -> WarcTask:
    """The archive settings of a cluster run writing NAME (a path every worker reaches)."""
    base = os.path.abspath(name)
    for suffix in (".warc.gz", ".warc"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
    staging = os.path.join(os.path.dirname(base), f".fetch-warc-{run_id}")
    return WarcTask(base=base, run_id=run_id, staging=staging, max_size=max_size, command_line=command_line,
                    cdx=cdx)  # fmt: skip


# -- --warc-cdx: one index for the run ----------------------------------------------------------

#: Indexes merged at once (each an open file).
_FAN_IN = 128


def _index_beside(warc: Path, folder: Path) -> None:
    """`warc`'s CDXJ lines, sorted, in folder/NAME.cdxj (whole or not at all: written aside, then renamed)."""
    from fetcher.archive.cdx import index_warc

    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"{warc.name}.cdxj.part"
    part.write_text("".join(sorted(index_warc(warc))), encoding="utf-8")
    part.replace(folder / f"{warc.name}.cdxj")


def write_index(task: WarcTask) -> Path:
    """NAME.cdxj for the run: the indexes of every file it published, merged in sort order (as pywb
    looks lines up).  A file whose worker died before indexing it is indexed now."""
    final = Path(task.base).parent
    folder = Path(task.staging) / "cdx"
    indexes = []
    for warc in sorted(final.glob(f"{glob.escape(Path(task.base).name)}-{task.run_id}-*.warc.gz")):
        index = folder / f"{warc.name}.cdxj"
        if not index.is_file():
            _index_beside(warc, folder)
        indexes.append(index)
    round_number = 0
    while len(indexes) > _FAN_IN:  # merged a group at a time: never more than _FAN_IN files open
        round_number += 1
        merged = []
        for start in range(0, len(indexes), _FAN_IN):
            into = folder / f"merge-{round_number}-{start}.cdxj"
            _merge(indexes[start : start + _FAN_IN], into)
            merged.append(into)
        indexes = merged
    target = Path(task.base + ".cdxj")
    part = target.with_name(target.name + ".part")
    _merge(indexes, part)
    part.replace(target)
    return target


def _merge(indexes: list[Path], into: Path) -> None:
    with contextlib.ExitStack() as stack:
        sources = [stack.enter_context(path.open(encoding="utf-8")) for path in indexes]
        with into.open("w", encoding="utf-8") as out:
            out.writelines(heapq.merge(*sources))
