"""The run's own files: no name a server or a URL chooses may land on one of them.

A run reads and writes files of its own beside the documents it saves: the
manifest, an earlier manifest (`--skip-done`), the input list, the option
files (`~/.fetchrc`, `-K`), the netrc file, the WARC files and their CDX
index, `--dump-header`'s file, `-N`'s ETag store and a cluster run's journals.
A document named by its server (`-J`) or after its URL (`-O`, `-d`, `-r`)
that would land on one of them would replace what the run itself depends on
(issue 29: a server naming its file like the manifest left 0 of 6 records).

So such a name is never written: `Layout` numbers it (`NAME.1`), `-O` and
`-J` on one URL refuse it with a clear error.  Two checks, because a name
can be spelled many ways:

- by name (`Reserved.hit`): the same directory (symlinks resolved) and the
  same last component, or a name of a family (`crawl-00001.warc.gz`);
- by identity (`owns`): when something already is at the target, is it the
  same file (device and inode) as one of the run's own?  This catches hard
  links and other spellings; the sink asks it only when the target exists.

`reserving(reserved)` makes a run's set the one the sink consults (the
command builds it from its options, `fetcher.cli.own_files.of_run`; a
library caller has none, and nothing is checked).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


class Reserved:
    """Paths of the run's own files (exact), and families of names (a prefix in a directory)."""

    def __init__(self, exact: Iterable[str | os.PathLike[str]] = (),
                 families: Iterable[tuple[str | os.PathLike[str], str, tuple[str, ...]]] = ()) -> None:  # fmt: skip
        #: Exact files: (real directory, name) pairs; and the paths as given, for `owns`.
        self._exact: set[tuple[str, str]] = set()
        self._paths: list[str] = []
        #: Families: (real directory, prefix, suffixes): `crawl-` + anything + `.warc.gz`.
        self._families: list[tuple[str, str, tuple[str, ...]]] = []
        self._names: set[str] = set()
        self._prefixes: tuple[str, ...] = ()
        self._real: dict[str, str] = {}
        #: (device, inode) of the exact files seen so far, and the paths not there yet (looked at again).
        self._identities: set[tuple[int, int]] = set()
        self._unseen: list[str] = []
        for path in exact:
            text = os.fspath(path)
            directory, name = os.path.split(os.path.abspath(text))
            if name:
                self._exact.add((self._real_dir(directory), name))
                self._names.add(name)
                self._paths.append(text)
        self._unseen = list(self._paths)
        for where, prefix, suffixes in families:
            self._families.append((self._real_dir(os.path.abspath(where)), prefix, suffixes))
        self._prefixes = tuple(prefix for _, prefix, _ in self._families)

    def _real_dir(self, directory: str) -> str:
        real = self._real.get(directory)
        if real is None:
            real = self._real[directory] = os.path.realpath(directory)
        return real

    def __bool__(self) -> bool:
        return bool(self._exact or self._families)

    def may_hold(self, name: str) -> bool:
        """The cheap first test of `hit`, on a last component alone (a bulk run asks it of every name)."""
        return name in self._names or (bool(self._prefixes) and name.startswith(self._prefixes))

    def hit(self, path: str | os.PathLike[str]) -> bool:
        """True when `path` names one of the run's own files (or a name of their families).

        The common answer (a name unlike any of them) costs a set lookup and
        a prefix test; only a name that matches is looked at further.
        """
        directory, name = os.path.split(os.fspath(path))
        if name not in self._names and not (self._prefixes and name.startswith(self._prefixes)):
            return False
        real = self._real_dir(os.path.abspath(directory or os.curdir))
        if (real, name) in self._exact:
            return True
        return any(real == where and name.startswith(prefix) and (not suffixes or name.endswith(suffixes))
                   for where, prefix, suffixes in self._families)  # fmt: skip

    def owns(self, info: os.stat_result) -> bool:
        """True when the file `info` describes (what is at a target now) is one of the run's own files."""
        if self._unseen:
            still = []
            for path in self._unseen:
                try:
                    seen = os.stat(path)
                except OSError:
                    still.append(path)
                    continue
                self._identities.add((seen.st_dev, seen.st_ino))
            self._unseen = still
        return (info.st_dev, info.st_ino) in self._identities


#: The set the sink and `Layout` consult: the running command's, or none.
_current: Reserved | None = None


def current() -> Reserved | None:
    return _current


@contextmanager
def reserving(reserved: Reserved) -> Iterator[Reserved]:
    """While the run lasts, `current()` is its set of own files (`reserved`)."""
    global _current
    saved, _current = _current, reserved
    try:
        yield _current
    finally:
        _current = saved


def refuse_reserved(path: Path, why: str) -> None:
    """`path`, named by a server or a URL (`why`), is one of the run's own files: an OutputError."""
    reserved = _current
    if reserved is not None and reserved.hit(path):
        from fetcher.errors import OutputError

        raise OutputError(
            f"{path} ({why}) is one of this run's own files; not writing over it",
            hint="choose the name with -o FILE, or another directory with --output-dir",
        )


def owned_by_run(info: os.stat_result) -> bool:
    """True when the existing file `info` describes is one of the running command's own files."""
    return _current is not None and _current.owns(info)
