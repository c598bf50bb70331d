"""Placing a complete file under its name: atomically, never through a symlink, never over the wrong thing.

A `.part` is created afresh with O_EXCL|O_NOFOLLOW (an earlier run's
regular `.part` is replaced, anything planted there refused), and renamed
to its target only when complete: with Linux's renameat2(RENAME_NOREPLACE)
where nothing is at the target (one atomic call), else after checking that
what is there is a regular file and not one of the run's own files
(`fetcher.disk.reserved`).  A bulk run keeps the directories it writes into
open (`Directories`), so every name is looked up relative to a directory
that was checked, not walked again from its path.
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path
from typing import Any

from fetcher.disk.names import At, part_at, writable_target
from fetcher.errors import OutputError

#: A new `.part` file: created here and now, never an existing file, never through a symlink.
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def create_exclusive(partial: Path | str, at: At | None = None) -> int:
    """Create `partial` afresh; an old `.part` (a regular file) is replaced, anything else refused.

    With `at` (the target's directory and name), `partial` is that name's `.part` in that directory.
    """
    name, directory = part_at(partial, at)
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


def into_place(partial: str, target: Path, at: At | None = None, *, check_reserved: bool = True) -> None:
    """Rename a complete `.part` (or -J's complete file) to `target`: atomically, or only over a regular file.

    Something at `target` (an old version, or what appeared during the
    transfer) is checked first: a directory or a special file is refused
    (OutputError) and `partial` stays, and so is one of the running
    command's own files (its manifest, input list, ...: `fetcher.disk.reserved`)
    unless `check_reserved` is False (the user typed the name with -o).
    Other failures are OSErrors.  With `at`, both names are looked up in
    that directory (`Directories`).
    """
    source, directory = part_at(partial, at)
    name = at[1] if at is not None else os.fspath(target)
    if not _rename_noreplace(source, name, _AT_FDCWD if directory is None else directory):
        writable_target(target, False, at)
        if check_reserved:
            _refuse_own_file(name, directory, target)
        os.replace(source, name, src_dir_fd=directory, dst_dir_fd=directory)


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


def unlink_quietly(path: str, at: At | None = None) -> None:
    """Remove the `.part` file `path` (with `at`: the `.part` of that name in that directory) if it is there."""
    name, directory = part_at(path, at)
    try:
        os.unlink(name, dir_fd=directory)
    except OSError:
        pass
