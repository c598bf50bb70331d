"""What a transfer wrote (`Download`), and the writers that run without the event loop.

`BodyWriter` is the bulk lane's: its worker reads many small replies back
to back and writes each as it arrives, under the rules of
`fetcher.disk.save.save` (which writes a document from the event loop).
`write_file` is for the small files fetcher makes itself (a listing's
JSON).  Both go through a `.part` and a checked rename (`fetcher.disk.place`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fetcher.disk.names import inspect_target, output_error, partial_path, writable_target
from fetcher.disk.partfile import PartFile
from fetcher.disk.place import Directories, create_exclusive, into_place, unlink_quietly
from fetcher.errors import OutputError
from fetcher.url import URL

if TYPE_CHECKING:
    pass

#: Bodies up to this size are buffered and written with a single thread hop (one open, write, rename).
SMALL_BODY = 1 << 20


@dataclass
class Download:
    """What `Client.download` wrote."""

    url: URL
    path: Path
    bytes: int
    sha256: str | None
    content_type: str | None
    resumed_from: int = 0
    #: The file name the server suggested (Resource.filename, already one safe path component).
    filename: str | None = None
    #: The server's validator for these bytes (an HTTP ETag), when it sent one.
    etag: str | None = None
    #: What the handler said of the retrieval (`Resource.metadata`: an HTTP status, the redirects followed).
    metadata: dict[str, Any] = field(default_factory=dict)


class BodyWriter:
    """A document written synchronously as its bytes arrive, under the rules of `save`.

    For the bulk lane (fetcher/bulk/lanes.py), whose worker reads many small
    replies back to back: a body is kept in memory up to SMALL_BODY and
    written with one open, write, rename; a larger one goes through the
    `.part` file as it arrives.  `.part` is created with O_EXCL|O_NOFOLLOW
    and the rename happens only in `finish`; `abandon` keeps what arrived in
    `.part` for -C.  The target is checked before a `.part` is streamed to;
    a small body is renamed into place only if nothing is at the target
    (one atomic call: `fetcher.disk.place.into_place`), and otherwise only after the
    same check (a directory or a special file is refused, its `.part` removed).
    """

    def __init__(
        self,
        url: URL,
        target: Path,
        content_type: str | None,
        *,
        digest: bool = True,
        directories: Directories | None = None,
    ) -> None:
        self.url = url
        self.target = target
        self.content_type = content_type
        #: The run's open directories, for a small body (see `Directories`).
        self.directories = directories
        #: SHA-256 of the body as written (None when the caller does not want `Download.sha256`).
        self.digest = hashlib.sha256() if digest else None
        self.size = 0
        self._buffered: list[bytes] = []
        #: The `.part` file, once the body outgrew SMALL_BODY.
        self.part: PartFile | None = None

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.part is not None:
            self.part.write([chunk])
            return
        self._buffered.append(chunk)
        if self.size > SMALL_BODY:
            writable_target(self.target, False)
            self.part = PartFile(partial_path(self.target), 0, self.digest)
            self.part.open()
            chunks, self._buffered = self._buffered, []
            self.part.write(chunks)

    def finish(
        self, modified: float | None, filename: str | None = None, etag: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Download:  # fmt: skip
        """Rename into place; `filename`, `etag` and `metadata` are what the server said (Download's fields)."""
        if self.part is not None:
            self.part.finish(self.target, modified)
        else:
            self._write_small(modified)
        sha256 = self.digest.hexdigest() if self.digest is not None else None
        return Download(self.url, self.target, self.size, sha256, self.content_type,
                        filename=filename, etag=etag, metadata=metadata or {})  # fmt: skip

    def _write_small(self, modified: float | None) -> None:
        """The whole body in one go on the raw descriptor: `PartFile.write_all`'s rules, fewer calls."""
        target = os.fspath(self.target)
        partial = target + ".part"
        try:
            at = self.directories.at(target) if self.directories is not None else None
            fd = create_exclusive(partial, at)
        except OSError as error:  # no directory, no permission, no descriptor left (EMFILE)
            raise output_error(error, partial) from None
        digest = self.digest
        try:
            for chunk in self._buffered:
                written = os.write(fd, chunk)
                if written < len(chunk):  # a short write (a signal, a nearly full disk): the rest
                    view = memoryview(chunk)[written:]
                    while view:
                        view = view[os.write(fd, view) :]
                if digest is not None:
                    digest.update(chunk)
            if modified is not None:
                os.utime(fd, (modified, modified))
        except OSError as error:
            os.close(fd)
            raise output_error(error, partial) from None
        try:
            os.close(fd)
            into_place(partial, self.target, at)
        except OutputError:
            self._buffered = []  # refused for where it goes, not cut short: no .part to resume from
            unlink_quietly(partial, at)
            raise
        except OSError as error:
            raise output_error(error, target) from None

    def abandon(self) -> None:
        """The transfer failed: what arrived stays in `.part` (for -C), never under the target's name."""
        try:
            if self.part is not None:
                self.part.quiet_close()
            elif self._buffered:
                PartFile(partial_path(self.target), 0, None).write_all(self._buffered, self.target, None, False)
        except OutputError:
            pass


def write_file(target: Path, data: bytes, *, user_named: bool = False) -> None:
    """A small file fetcher makes itself (a listing's JSON): the same `.part`, no-follow, rename rules.

    `user_named`: the user typed `target` (-o), so it may be one of the run's own files.
    """
    kind = inspect_target(target)
    if kind in ("directory", "special"):
        raise OutputError(f"{target} exists and is not a regular file; fetcher does not replace it",
                          hint="remove it, or choose another output directory")  # fmt: skip
    part = PartFile(partial_path(target), 0, None, user_named=user_named)
    part.write_all([data], target, None, True)
