"""Writing a document to disk: `NAME.part` first, renamed only when complete.

The file system work runs in a worker thread so the event loop keeps
receiving while the disk writes and SHA-256 hashes (both release the GIL):
a small document (the common case of bulk runs) costs one thread hop for
open + write + rename; a large one is written in batches, each batch
gathering whatever arrived while the previous one was being written.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fetcher.errors import OutputError
from fetcher.net import aio
from fetcher.resource import Resource, check_length
from fetcher.text import TerminalText
from fetcher.url import URL

#: Bodies up to this size are buffered and written with a single thread hop.
SMALL_BODY = 1 << 20
#: Bodies up to this size are written on the event loop itself.
INLINE_BODY = 64 << 10


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


def partial_path(target: Path) -> Path:
    return target.with_name(target.name + ".part")


def partial_size(target: Path) -> int:
    """Bytes of a `.part` file -C can resume: a regular file of fetcher's, never a symlink."""
    try:
        info = os.lstat(partial_path(target))
    except OSError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


#: A new `.part` file: created here and now, never an existing file, never through a symlink.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
#: A `.part` file to resume: an existing regular file, not reached through a symlink.
_RESUME = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
#: A special file named with -o (/dev/null, a FIFO, a terminal): written where it is.
_IN_PLACE = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def output_error(error: OSError, path: Path | str) -> OutputError:
    """One line that says what could not be written and what to do, for any OSError of the sink."""
    reason = error.strerror or str(error)
    where = Path(path)
    full = (
        f"free some space, then run again with -C to resume from {where.name}"
        if where.name.endswith(".part")
        else "free some space, then run again"
    )
    hints = {
        errno.ENOSPC: full,
        errno.EDQUOT: full,
        errno.EACCES: f"check the permissions of {where.parent}",
        errno.EPERM: f"check the permissions of {where.parent}",
        errno.EROFS: "choose a writable place with -o, --output-dir or -d",
        errno.ENOENT: f"create the directory {where.parent} first",
        errno.ENOTDIR: f"something in {where.parent} is not a directory",
        errno.ENAMETOOLONG: "choose a shorter name with -o",
        errno.ELOOP: f"{where.name} is a symlink; fetcher does not write through one: remove it",
        errno.EISDIR: f"{where.name} is a directory; choose another name with -o",
    }
    return OutputError(f"cannot write {where}: {reason}", hint=hints.get(error.errno or 0))


#: os.access can test the name itself (Linux, the BSDs, macOS; not Windows).
_NAME_ONLY_ACCESS = os.access in os.supports_follow_symlinks


def inspect_target(target: Path, at: At | None = None) -> str:
    """What is at `target` now: "missing", "file", "directory" or "special" (symlinks followed).

    With `at`, `target` is looked up as that name in that directory (`Directories`).
    """
    name, directory = (at[1], at[0]) if at is not None else (target, None)
    if _NAME_ONLY_ACCESS and not os.access(name, os.F_OK, dir_fd=directory, follow_symlinks=False):
        # Nothing by that name, not even a symlink (or a directory on the way that stops us, which
        # creating `.part` beside it reports): the common answer of a bulk run, without the cost of
        # stat's exception (0.65 µs of 2.7 here).
        return "missing"
    try:
        info = os.stat(name, dir_fd=directory)
    except FileNotFoundError:
        return "missing"
    except OSError as error:
        raise output_error(error, target) from None
    if stat.S_ISREG(info.st_mode):
        return "file"
    return "directory" if stat.S_ISDIR(info.st_mode) else "special"


class _PartFile:
    """The `.part` file (or a special file written in place), touched only from worker threads.

    Every OSError leaves here as an `OutputError` (exit 9), with what did
    arrive still in `.part` for -C.
    """

    def __init__(
        self, partial: Path, start: int, digest: Any, *, in_place: Path | None = None,
        source: Resource | None = None, resumed: bool = False, user_named: bool = False,
    ) -> None:  # fmt: skip
        self.partial = partial
        self.start = start
        self.digest = digest
        self.in_place = in_place
        #: The user typed the target (-o): it may be one of the run's own files (see fetcher.disk.reserved).
        self.user_named = user_named
        self.sink: IO[bytes] | None = None
        self.terminal: TerminalText | None = None
        #: The response whose validators are kept beside a `.part` left for -C (fetcher/disk/resume.py).
        self.source = source
        #: A record may lie beside `.part` (this transfer resumed, or kept it): removed with it.
        self.recorded = resumed

    @property
    def where(self) -> Path:
        return self.in_place or self.partial

    def open(self, keep_record: bool = True) -> None:
        try:
            self._open()
        except OSError as error:
            raise output_error(error, self.where) from None
        if keep_record and self.source is not None and self.in_place is None:
            self._keep_record()

    def _keep_record(self) -> None:
        """What the response said about its document, beside the `.part` a -C may continue."""
        from fetcher.disk import resume

        assert self.source is not None
        if self.start and os.path.lexists(resume.record_path(self.partial)):
            return  # the handler checked the record against this response: it stands
        self.recorded = resume.record(self.partial, resume.Validators.of(self.source)) or self.recorded

    def _open(self) -> None:
        if self.in_place is not None:
            fd = os.open(self.in_place, _IN_PLACE)
            if stat.S_ISREG(os.fstat(fd).st_mode):  # `-o /dev/stdout >> log`: after what is there, as the shell would
                os.lseek(fd, 0, os.SEEK_END)
            if os.isatty(fd):  # -o /dev/tty: a terminal gets escaped text, as on stdout
                self.terminal = TerminalText()
            self.sink = os.fdopen(fd, "wb")
            return
        if not self.start:
            self.sink = os.fdopen(_create_exclusive(self.partial), "wb")
            return
        fd = os.open(self.partial, _RESUME)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            os.close(fd)
            raise OutputError(
                f"{self.partial} is not a regular file of its own (a special file or a hard link); not resuming it",
                hint="remove it and run again",
            )
        sink = os.fdopen(fd, "r+b")
        self.sink = sink
        if self.digest is not None:
            remaining = self.start
            while remaining > 0:
                block = sink.read(min(remaining, 1 << 20))
                if not block:
                    break
                self.digest.update(block)
                remaining -= len(block)
        sink.truncate(self.start)
        sink.seek(self.start)

    def write(self, chunks: list[bytes]) -> None:
        assert self.sink is not None
        try:
            for chunk in chunks:
                self.sink.write(self.terminal.feed(chunk).encode("utf-8") if self.terminal else chunk)
                if self.digest is not None:
                    self.digest.update(chunk)
            self.sink.flush()
        except OSError as error:
            raise output_error(error, self.where) from None

    def write_view(self, view: memoryview, count: int) -> None:
        """The first `count` bytes of a reused buffer, straight to the file descriptor (the direct path)."""
        assert self.sink is not None and self.terminal is None
        data = view[:count]
        try:
            fd = self.sink.fileno()
            while data:
                data = data[os.write(fd, data) :]
        except OSError as error:
            raise output_error(error, self.where) from None
        if self.digest is not None:
            self.digest.update(view[:count])

    def drain_pipe(self, pipe: int, count: int) -> None:
        """Move `count` bytes waiting in `pipe` into the file (splice(2); a read and a write where it cannot)."""
        assert self.sink is not None and self.terminal is None and self.digest is None
        try:
            fd = self.sink.fileno()
            while count:
                try:
                    moved = os.splice(pipe, fd, count, flags=os.SPLICE_F_MOVE)
                except OSError as error:
                    if error.errno != errno.EINVAL:  # EINVAL: this file system takes no splice
                        raise
                    data = os.read(pipe, count)
                    moved = len(data)
                    while data:
                        data = data[os.write(fd, data) :]
                count -= moved
        except OSError as error:
            raise output_error(error, self.where) from None

    def close(self) -> None:
        if self.sink is not None:
            sink, self.sink = self.sink, None
            try:
                if self.terminal is not None:
                    sink.write(self.terminal.close().encode("utf-8"))
                sink.close()
            except OSError as error:
                raise output_error(error, self.where) from None

    def finish(self, target: Path, modified: float | None) -> None:
        """The body is complete: into place under `target`'s name (in place for a special file named with -o).

        The target was checked before the first byte, but a transfer takes
        time: the rename replaces nothing unless the target, checked again,
        is still a regular file (or a symlink to nothing).  Refused, the
        whole body stays in `.part`.
        """
        try:
            if modified is not None and self.sink is not None and self.in_place is None:
                os.utime(self.sink.fileno(), (modified, modified))
            self.close()
            if self.in_place is None:
                _into_place(os.fspath(self.partial), target, check_reserved=not self.user_named)
        except OSError as error:
            raise output_error(error, target) from None
        if self.recorded:
            from fetcher.disk.resume import forget

            forget(self.partial)

    def write_all(self, chunks: list[bytes], target: Path, modified: float | None, complete: bool) -> None:
        self.open(keep_record=not complete)
        try:
            self.write(chunks)
        except BaseException:
            self._quiet_close()
            raise
        if complete:
            self.finish(target, modified)
        else:
            self.close()

    def _quiet_close(self) -> None:
        try:
            self.close()
        except OutputError:
            pass


def _create_exclusive(partial: Path | str, at: At | None = None) -> int:
    """Create `partial` afresh; an old `.part` (a regular file) is replaced, anything else refused.

    With `at` (the target's directory and name), `partial` is that name's `.part` in that directory.
    """
    name, directory = _part_at(partial, at)
    for _ in range(2):
        try:
            return os.open(name, _CREATE, 0o666, dir_fd=directory)
        except FileExistsError:
            info = os.lstat(name, dir_fd=directory)
            if not stat.S_ISREG(info.st_mode):
                kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a regular file"
                raise OutputError(
                    f"{partial} is {kind}; fetcher does not write through it",
                    hint="remove it (someone else put it there), or choose another name",
                ) from None
            os.unlink(name, dir_fd=directory)  # an earlier run's .part, restarted (without -C)
            _forget_record(name, directory)
    raise OutputError(f"{partial} keeps reappearing; another program is writing there", hint="choose another name")


def _forget_record(partial: str | Path, directory: int | None) -> None:
    """The validators kept for an earlier `.part` (fetcher/disk/resume.py) go with it."""
    from fetcher.disk.resume import record_path

    try:
        os.unlink(record_path(partial), dir_fd=directory)
    except OSError:
        pass


def _writable_target(target: Path, in_place_ok: bool, at: At | None = None) -> str:
    """What is at `target` (see `inspect_target`), refusing a directory, and a special file unless `in_place_ok`."""
    kind = inspect_target(target, at)
    if kind == "directory":
        raise OutputError(f"{target} is a directory", hint="choose a file name with -o, or use -d DIR")
    if kind == "special" and not in_place_ok:
        raise OutputError(
            f"{target} exists and is not a regular file; fetcher does not replace it",
            hint="remove it, or choose another name",
        )
    return kind


_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
#: `_rename_noreplace`'s libc function: None until first asked, False where there is none.
_renameat2: Any = None


def _rename_noreplace(source: str | Path, target: str, directory: int = _AT_FDCWD) -> bool:
    """Rename `source` to `target` only if nothing is there, atomically (Linux renameat2 RENAME_NOREPLACE).

    Relative names are looked up in `directory` (a descriptor), by default the working directory.

    False, with nothing renamed, when something is at `target` or this system
    or file system cannot promise it (not Linux, an old libc, EINVAL): the
    caller then checks the target and replaces.  Other failures are OSErrors.
    """
    global _renameat2
    if _renameat2 is None:
        _renameat2 = _load_renameat2()
    if _renameat2 is False:
        return False
    if _renameat2(directory, os.fsencode(source), directory, os.fsencode(target), _RENAME_NOREPLACE) == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in (errno.EEXIST, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), target)


def _into_place(partial: str, target: Path, at: At | None = None, *, check_reserved: bool = True) -> None:
    """Rename a complete `.part` to `target`: atomically where nothing is there, else only over a regular file.

    Something at `target` (an old version, or what appeared during the
    transfer) is checked first: a directory or a special file is refused
    (OutputError) and `partial` stays, and so is one of the running
    command's own files (its manifest, input list, ...: `fetcher.disk.reserved`)
    unless `check_reserved` is False (the user typed the name with -o).
    Other failures are OSErrors.  With `at`, both names are looked up in
    that directory (`Directories`).
    """
    source, directory = _part_at(partial, at)
    name = at[1] if at is not None else os.fspath(target)
    if not _rename_noreplace(source, name, _AT_FDCWD if directory is None else directory):
        _writable_target(target, False, at)
        if check_reserved:
            _refuse_own_file(name, directory, target)
        os.replace(source, name, src_dir_fd=directory, dst_dir_fd=directory)


def into_place(source: str, target: Path) -> None:
    """A complete file of this run (`source`) renamed to `target` under the rules of a `.part` (-J's rename)."""
    _into_place(source, target)


def _refuse_own_file(name: str, directory: int | None, target: Path) -> None:
    """The file at `name` is one of the run's own (by device and inode, however it is spelled): refused."""
    from fetcher.disk.reserved import owned_by_run

    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
    except OSError:
        return  # gone meanwhile: the rename below creates it
    if owned_by_run(info):
        raise OutputError(
            f"{target} is one of this run's own files (its manifest, input list, ...); not writing over it",
            hint="choose another name or another directory for the documents",
        )


def _part_at(partial: str | Path, at: At | None) -> tuple[str | Path, int | None]:
    """The `.part` file's name and the directory descriptor it is looked up in: `partial` itself without `at`."""
    return (at[1] + ".part", at[0]) if at is not None else (partial, None)


def _load_renameat2() -> Any:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes  # already loaded by trio (its thread cache names threads through libc)

        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # a libc without it (glibc < 2.28, some others)
        return False
    function.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    function.restype = ctypes.c_int
    return function


#: Where a name is looked up: a directory's descriptor (from `Directories`) and the name in it.
At = tuple[int, str]
_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class Directories:
    """The directories a bulk run writes small bodies into, each opened once (at most LIMIT at a time).

    `BodyWriter` creates, checks and renames a small body relative to its
    directory's descriptor.  The path to the directory is not walked again
    for every file (1.5 of 14 µs per file here), and a directory that is
    swapped for a symlink after `make_dirs` checked it cannot redirect a
    write: the file goes into the directory that was checked, or, if that
    was removed, the write fails.  `close()` when the run ends.
    """

    LIMIT = 16
    #: This system can open, stat, rename and unlink relative to a directory descriptor.
    available = {os.open, os.stat, os.access, os.replace, os.unlink} <= os.supports_dir_fd

    def __init__(self) -> None:
        self._open: dict[str, int] = {}

    def at(self, target: str) -> At:
        """The descriptor of `target`'s directory, opened now if it is not open yet, and its name."""
        directory, separator, name = target.rpartition(os.sep)
        if not separator:
            directory = os.curdir
        elif not directory:
            directory = os.sep
        descriptor = self._open.get(directory)
        if descriptor is None:
            if len(self._open) >= self.LIMIT:
                os.close(self._open.pop(next(iter(self._open))))  # the one opened first
            descriptor = self._open[directory] = os.open(directory, _DIRECTORY)
        return descriptor, name

    def close(self) -> None:
        while self._open:
            os.close(self._open.popitem()[1])


class BodyWriter:
    """A document written synchronously as its bytes arrive, under the rules of `save`.

    For the bulk lane (fetcher/bulk/lanes.py), whose worker reads many small
    replies back to back: a body is kept in memory up to SMALL_BODY and
    written with one open, write, rename; a larger one goes through the
    `.part` file as it arrives.  `.part` is created with O_EXCL|O_NOFOLLOW
    and the rename happens only in `finish`; `abandon` keeps what arrived in
    `.part` for -C.  The target is checked before a `.part` is streamed to;
    a small body is renamed into place only if nothing is at the target
    (one atomic call, `_rename_noreplace`), and otherwise only after the
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
        self.part: _PartFile | None = None

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.part is not None:
            self.part.write([chunk])
            return
        self._buffered.append(chunk)
        if self.size > SMALL_BODY:
            _writable_target(self.target, False)
            self.part = _PartFile(partial_path(self.target), 0, self.digest)
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
        """The whole body in one go on the raw descriptor: `_PartFile.write_all`'s rules, fewer calls."""
        target = os.fspath(self.target)
        partial = target + ".part"
        try:
            at = self.directories.at(target) if self.directories is not None else None
            fd = _create_exclusive(partial, at)
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
            _into_place(partial, self.target, at)
        except OutputError:
            self._buffered = []  # refused for where it goes, not cut short: no .part to resume from
            _unlink_quietly(partial, at)
            raise
        except OSError as error:
            raise output_error(error, target) from None

    def abandon(self) -> None:
        """The transfer failed: what arrived stays in `.part` (for -C), never under the target's name."""
        try:
            if self.part is not None:
                self.part._quiet_close()
            elif self._buffered:
                _PartFile(partial_path(self.target), 0, None).write_all(self._buffered, self.target, None, False)
        except OutputError:
            pass


def _unlink_quietly(path: str, at: At | None = None) -> None:
    """Remove the `.part` file `path` (with `at`: the `.part` of that name in that directory) if it is there."""
    name, directory = _part_at(path, at)
    try:
        os.unlink(name, dir_fd=directory)
    except OSError:
        pass


async def save(
    resource: Resource,
    target: Path,
    *,
    resumed: bool = False,
    on_chunk: Callable[[int], None] | None = None,
    digest: bool = True,
    in_place_ok: bool = False,
    in_place_always: bool = False,
) -> Download:
    """Write an open document to `target` through `target.part`.

    The body is appended to the `.part` file when the handler honoured the
    resume offset (`resource.offset` > 0), else the file is restarted.  The
    rename happens only after the whole body arrived and its length matches
    what the server announced, so a failure never leaves a complete-looking
    file; what did arrive stays in `.part` for a later resume.

    `.part` is created with O_EXCL|O_NOFOLLOW, so nothing planted there (a
    symlink, a FIFO) is ever written through.  A `target` that exists and
    is not a regular file (/dev/null, a FIFO, a terminal) is never renamed
    over: with `in_place_ok` (the user named it, as with -o) it is written
    where it is, else refused.  `in_place_always`: the user named a
    descriptor the shell opened (`-o /dev/stdout` onto a file), written where
    it is whatever it is.  Every failure to write is an `OutputError`.
    """
    start = resource.offset if resumed else 0
    in_place = None
    if _writable_target(target, in_place_ok) == "special" or in_place_always:
        in_place, start = target, 0
    part = _PartFile(partial_path(target), start, hashlib.sha256() if digest else None, in_place=in_place,
                     source=resource, resumed=resumed, user_named=in_place_ok)  # fmt: skip
    modified = resource.modified.timestamp() if resource.modified is not None else None
    written = start
    buffered: list[bytes] = []
    buffered_size = 0
    opened = False
    if resource.direct and in_place is None and resource.size is not None and resource.size - start > SMALL_BODY:
        # A large plain download: straight into reused buffers (see _receive_direct).
        try:
            await aio.run_sync(part.open)
            opened = True
            ended = False
            if resource.can_splice and part.digest is None:
                moved, ended = await _splice_direct(resource, part, on_chunk)
                written += moved
            if not ended:
                written += await _receive_direct(resource, part, on_chunk)
            check_length(resource, written)
            await aio.run_sync(part.finish, target, modified)
            opened = False
            return _download(resource, target, written, part, start)
        finally:
            if opened:
                with aio.cancel_scope(shield=True):
                    await aio.run_sync(part._quiet_close)
    body = resource.__aiter__()
    try:
        # Small bodies: gather everything, then one thread hop does it all.
        async for chunk in body:
            buffered.append(chunk)
            buffered_size += len(chunk)
            if on_chunk is not None:
                on_chunk(len(chunk))
            if buffered_size > SMALL_BODY:
                break
        else:
            written += buffered_size
            check_length(resource, written)
            if buffered_size <= INLINE_BODY and not start:
                # A thread hop costs more than writing a few KiB (measured:
                # 2000 x 4 KiB bulk, 1.4 s with a hop per file).
                part.write_all(buffered, target, modified, True)
                await aio.checkpoint()
            else:
                await aio.run_sync(part.write_all, buffered, target, modified, True)
            return _download(resource, target, written, part, start)
        # Large bodies: a writer task drains batches while the loop receives.
        await aio.run_sync(part.open)
        opened = True
        written += await _stream(body, part, buffered, on_chunk)
        check_length(resource, written)
        await aio.run_sync(part.finish, target, modified)
        opened = False
        return _download(resource, target, written, part, start)
    except BaseException as error:
        if buffered and not opened and not isinstance(error, OutputError) and in_place is None:
            # Keep what arrived, for -C/--continue (unless the disk is what failed).
            with aio.cancel_scope(shield=True):
                try:
                    await aio.run_sync(part.write_all, buffered, target, modified, False)
                except OutputError:
                    pass
        raise
    finally:
        if opened:
            with aio.cancel_scope(shield=True):
                await aio.run_sync(part._quiet_close)


async def _stream(body: Any, part: _PartFile, first: list[bytes], on_chunk: Callable[[int], None] | None) -> int:
    """Receive the rest of the body while a writer task writes earlier batches.

    When the transfer fails (or is cancelled), whatever arrived is still
    written to the `.part` file before the failure propagates, so -C resumes
    from the last byte received.
    """
    import anyio  # task groups and channels: only large bodies need them

    send, receive = anyio.create_memory_object_stream[list[bytes]](2)
    total = sum(len(chunk) for chunk in first)
    failure: BaseException | None = None
    broken: list[OutputError] = []

    async def writer() -> None:
        with anyio.CancelScope(shield=True):  # the disk always gets what arrived
            async with receive:
                async for batch in receive:
                    if broken:
                        continue  # drain, so the receiving side never blocks
                    try:
                        await anyio.to_thread.run_sync(part.write, batch)
                    except OutputError as error:  # disk full: stop receiving, report it
                        broken.append(error)

    async with anyio.create_task_group() as nursery:
        nursery.start_soon(writer)
        async with send:
            batch: list[bytes] = first
            batch_size = total
            try:
                async for chunk in body:
                    batch.append(chunk)
                    batch_size += len(chunk)
                    total += len(chunk)
                    if on_chunk is not None:
                        on_chunk(len(chunk))
                    if batch_size >= SMALL_BODY:
                        await send.send(batch)
                        batch, batch_size = [], 0
                        if broken:
                            break
            except BaseException as error:
                failure = error
            with anyio.CancelScope(shield=True):
                if batch and not broken:
                    await send.send(batch)
    if broken:
        raise broken[0]
    if failure is not None:
        raise failure
    return total


#: The direct path's buffers: one being filled from the socket while the others wait for or are in the writer thread.
DIRECT_BUFFER = 1 << 20
DIRECT_BUFFERS = 3
#: Spliced bytes between two looks at how fast the file takes them, and the slowest pace kept (seconds a MiB).
DRAIN_WINDOW = 16 << 20
SLOW_DRAIN = 1e-3


async def _receive_direct(resource: Resource, part: _PartFile, on_chunk: Callable[[int], None] | None) -> int:
    """Read the body into preallocated buffers (`Resource.readinto`) while a writer task writes the full ones.

    No bytes object, list or generator step per read: the socket fills a
    buffer, a worker thread writes it with os.write, and the buffer comes
    back for the next read.  As in `_stream`, whatever arrived before a
    failure or a cancellation is written to the `.part` file first.
    """
    import anyio  # task groups and channels: only large bodies need them

    free_send, free_receive = anyio.create_memory_object_stream[memoryview](DIRECT_BUFFERS)
    full_send, full_receive = anyio.create_memory_object_stream[tuple[memoryview, int]](DIRECT_BUFFERS)
    for _ in range(DIRECT_BUFFERS):
        free_send.send_nowait(memoryview(bytearray(DIRECT_BUFFER)))
    total = 0
    failure: BaseException | None = None
    broken: list[OutputError] = []

    async def writer() -> None:
        with anyio.CancelScope(shield=True):  # the disk always gets what arrived
            async with full_receive:
                async for view, count in full_receive:
                    if not broken:
                        try:
                            await aio.run_sync(part.write_view, view, count)
                        except OutputError as error:  # disk full: stop receiving, report it
                            broken.append(error)
                    free_send.send_nowait(view)

    async with anyio.create_task_group() as nursery:
        nursery.start_soon(writer)
        async with full_send:
            filled = 0
            buffer: memoryview | None = None
            try:
                while not broken:
                    buffer, filled = await free_receive.receive(), 0
                    while filled < DIRECT_BUFFER:
                        count = await resource.readinto(buffer[filled:])
                        if not count:
                            break
                        filled += count
                        total += count
                        if on_chunk is not None:
                            on_chunk(count)
                    # Never blocks (as many places as buffers) and is no cancellation point: no buffer is lost.
                    full_send.send_nowait((buffer, filled))
                    buffer = None
                    if filled < DIRECT_BUFFER:
                        break  # the end of the body
            except BaseException as error:
                failure = error
            if buffer is not None and filled and not broken:
                full_send.send_nowait((buffer, filled))
    if broken:
        raise broken[0]
    if failure is not None:
        raise failure
    return total


async def _splice_direct(
    resource: Resource, part: _PartFile, on_chunk: Callable[[int], None] | None
) -> tuple[int, bool]:
    """Move the body socket -> pipe -> file inside the kernel (Linux splice(2)): no copy through Python at all.

    Each step moves what the socket has (up to the pipe's size) into an
    empty pipe and then all of it into the `.part` file, so a failure or a
    cancellation between steps has lost nothing that arrived: the pipe is
    empty whenever the read can fail.  The file is written on the event loop
    (the pipe's bytes are already in the kernel; the write is a page-cache copy).

    That copy is not always cheap: a disk that throttles writers, or memory
    that must be faulted in page by page (seen on this project's VM, whose
    host takes freed memory back: ~3 ms per MiB instead of ~0.3).  So the
    pace is measured every DRAIN_WINDOW bytes, and below SLOW_DRAIN the rest
    of the body is left to `_receive_direct` (a writer thread beside the
    reads), and the loop runs on.  Returns the bytes moved and whether the
    body ended here.
    """
    import fcntl  # Linux only, as splice(2)
    from time import perf_counter

    reader, writer = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        try:
            capacity = fcntl.fcntl(writer, getattr(fcntl, "F_SETPIPE_SZ", 1031), DIRECT_BUFFER)
        except OSError:  # over the user's pipe quota: the default size (64 KiB) still works
            capacity = fcntl.fcntl(writer, getattr(fcntl, "F_GETPIPE_SZ", 1032))
        total = 0
        window_bytes = 0
        window_seconds = 0.0
        while True:
            count = await resource.splice_into(writer, capacity)
            if not count:
                return total, True
            started = perf_counter()
            part.drain_pipe(reader, count)
            window_seconds += perf_counter() - started
            window_bytes += count
            total += count
            if on_chunk is not None:
                on_chunk(count)
            if window_bytes >= DRAIN_WINDOW:
                if window_seconds > SLOW_DRAIN * window_bytes / (1 << 20):
                    return total, False  # the pipe is empty: the reads go on where the splices stopped
                window_bytes, window_seconds = 0, 0.0
    finally:
        os.close(reader)
        os.close(writer)


def _download(resource: Resource, target: Path, written: int, part: _PartFile, start: int) -> Download:
    return Download(
        url=resource.url,
        path=target,
        bytes=written,
        sha256=part.digest.hexdigest() if part.digest is not None else None,
        content_type=resource.content_type,
        resumed_from=start,
        filename=resource.filename,
        etag=resource.metadata.get("etag"),
        metadata=resource.metadata,
    )


def write_file(target: Path, data: bytes, *, user_named: bool = False) -> None:
    """A small file fetcher makes itself (a listing's JSON): the same `.part`, no-follow, rename rules.

    `user_named`: the user typed `target` (-o), so it may be one of the run's own files.
    """
    kind = inspect_target(target)
    if kind in ("directory", "special"):
        raise OutputError(f"{target} exists and is not a regular file; fetcher does not replace it",
                          hint="remove it, or choose another output directory")  # fmt: skip
    part = _PartFile(partial_path(target), 0, None, user_named=user_named)
    part.write_all([data], target, None, True)
