"""Where bulk and recursive runs put files, and what an earlier manifest says they own.

Rules (docs/safety.md says them to users):

- Every path component comes from `fetcher.text.safe_filename`: no `..`,
  no absolute path, no device name, no control or format character, at
  most 239 bytes of the file system encoding (room for `.part` and a number).
- Equal names are numbered `NAME.1`, `NAME.2`, ... in the order URLs are
  assigned (input order, then discovery order); a counter per name keeps
  this linear however many equal names arrive.
- First come keeps the name: a directory needed where a document already
  is becomes `NAME.d/`; a document whose name is already a directory is
  numbered.  So a mirror holding both `/x` and `/x/y` keeps both.
- A path deeper or longer than the system allows is replaced by
  `HOST/_long/<hash of the URL>-<tail of the name>`.
- With `--skip-done`, a URL keeps the name an earlier record gave it, and a
  new URL never takes a name an earlier record owns.
- Directories are created one component at a time below the output
  directory, and a symlink or non-directory met on the way is refused, so
  nothing is written outside it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

from fetcher.cli.render import remote_name, tree_parts
from fetcher.disk.reserved import Reserved
from fetcher.disk.reserved import current as current_reserved
from fetcher.errors import OutputError, UnsafeURL, UsageError
from fetcher.text import NAME_MAX, fit_name, hashed_name, mask_secrets, safe_text

#: Longest path the system opens (PATH_MAX): 4096 on Linux, 1024 on the BSDs and macOS.
PATH_MAX = 4096 if sys.platform.startswith("linux") else 1024
#: Bytes kept free for what is appended to a name (`.part`, `.12345`).
_TAIL_ROOM = 16


def _name(url: object, suggested: str | None = None) -> str:
    """A document's or listing's name: as -O names it, except that a directory is named after itself (`pub`)."""
    return remote_name(url, suggested, index=False)  # type: ignore[arg-type]


class Layout:
    """Assigns each URL a path inside `root`; names are sanitized, confined and unique."""

    def __init__(self, root: Path, mode: str, *, owned: dict[str, str] | None = None,
                 reserved: Reserved | None = None) -> None:  # fmt: skip
        self.root = root
        self.mode = mode
        #: The run's own files (manifest, input list, WARC, ...): no document gets one of their names.
        reserved = reserved if reserved is not None else current_reserved()
        self._reserved = reserved if reserved else None
        self._resolved_root = os.path.abspath(root)
        self._root_prefix = self._resolved_root.rstrip(os.sep) + os.sep
        self._cwd = os.getcwd()
        #: Document names taken, as `name_digest`s: a run of millions keeps 16 bytes a name, not a Path.
        self._files = NameSet()
        self._dirs: set[Path] = set()
        self._dir_alias: dict[Path, Path] = {}
        self._counters: dict[Path, int] = {}
        self._known: dict[str, Path] = {}
        # A flat name is one safe_filename component of at most NAME_MAX - _TAIL_ROOM bytes: when
        # even the longest fits under PATH_MAX, `document` takes the short way (`_flat`).
        root_text = str(root)
        self._flat_prefix = "" if root_text == "." else root_text.rstrip(os.sep) + os.sep
        self._flat_fits = len(os.fsencode(self._resolved_root)) + 1 + NAME_MAX + _TAIL_ROOM < PATH_MAX
        for url, recorded in (owned or {}).items():
            if self._inside(Path(recorded)):
                # The same spelling as this run's paths (root as the user gave it), so names compare.
                path = root / os.path.relpath(os.path.abspath(recorded), self._resolved_root)
                self._known[url] = path
                self._take(path)

    def _inside(self, path: Path) -> bool:
        # abspath() without its getcwd() per call: the working directory of
        # the run, read once (fetcher never changes it).
        absolute = os.path.normpath(os.path.join(self._cwd, path))
        return absolute.startswith(self._root_prefix)

    def _take(self, path: Path) -> None:
        self._files.add(path)
        parent = path.parent
        while parent != self.root and parent not in self._dirs and len(parent.parts) > len(self.root.parts):
            self._dirs.add(parent)
            parent = parent.parent

    def _free(self, path: Path) -> bool:
        if path in self._files or path in self._dirs:
            return False
        return self._reserved is None or not self._reserved.hit(path)

    def _unique(self, path: Path) -> Path:
        if self._free(path):
            return path
        counter = self._counters.get(path, 0)
        while True:
            counter += 1
            candidate = path.with_name(fit_name(f"{path.name}.{counter}", NAME_MAX - 6))
            if self._free(candidate):
                self._counters[path] = counter
                return candidate

    def _too_long(self, parts: list[str]) -> bool:
        size = len(os.fsencode(self._resolved_root)) + sum(len(os.fsencode(part)) + 1 for part in parts)
        return size + _TAIL_ROOM >= PATH_MAX

    def _place(self, parts: list[str], key: str) -> Path:
        known = self._known.get(key)
        if known is not None:
            return known
        parts = [fit_name(part, NAME_MAX - _TAIL_ROOM) for part in parts]
        if self._too_long(parts):
            head = parts[:1] if self.mode == "tree" else []
            parts = [*head, "_long", hashed_name(key, parts[-1])]
        directory = self.root
        for part in parts[:-1]:
            wanted = directory / part
            candidate = self._dir_alias.get(wanted, wanted)
            if candidate in self._files:  # a document has this name: the directory becomes NAME.d
                number = 0
                alias = candidate.with_name(candidate.name + ".d")
                while alias in self._files:
                    number += 1
                    alias = candidate.with_name(f"{candidate.name}.d{number}")
                self._dir_alias[wanted] = alias
                candidate = alias
            self._dirs.add(candidate)
            directory = candidate
        path = self._unique(directory / parts[-1])
        self._files.add(path)
        return self._confined(path)

    def reserve(self, path: Path) -> None:
        """A file of fetcher's own in the output directory (-N's ETag state): no URL gets its name."""
        self._take(path)

    def release(self, path: Path) -> None:
        """Give back a document name that was never written (the URL turned out to be a listing)."""
        self._files.discard(path)

    def _confined(self, path: Path) -> Path:
        # Every component went through safe_filename, so a lexical check is
        # enough here; make_dirs refuses symlinks met on the way.
        if not self._inside(path):
            raise UnsafeURL(
                f"{path} would be outside {self.root}", part="path", rule="confinement", hint="this is a bug"
            )
        return path

    def document(self, url: object, suggested: str | None = None) -> Path:
        """The path for a document; `suggested` (a name from the listing, Entry.filename) replaces
        the name the URL gives, sanitized the same way."""
        if self.mode != "tree" and self._flat_fits and not self._known and not self._dirs:
            found = self._flat(fit_name(_name(url, suggested), NAME_MAX - _TAIL_ROOM))
            if found is not None:
                return found
        key = mask_secrets(str(url))
        parts = tree_parts(url) if self.mode == "tree" else [_name(url, suggested)]  # type: ignore[arg-type]
        if suggested and self.mode == "tree":
            parts[-1] = _name(url, suggested)
        return self._place(parts, key)

    def _flat(self, name: str) -> Path | None:
        """`_place([name])` for a name not taken yet, in fewer steps (a bulk run names every URL).

        None when the short way does not apply (the name is taken, or is not
        one plain component), and `_place` decides.  What it returns, and
        records, is what `_place` would have.
        """
        if not name or name in (".", "..") or os.sep in name:
            return None
        reserved = self._reserved
        if reserved is not None and reserved.may_hold(name) and reserved.hit(self._flat_prefix + name):
            return None  # one of the run's own files: `_place` numbers it
        if not self._files.take(self._flat_prefix + name):
            return None
        return self.root / name

    def renamed(self, url: object, path: Path, suggested: str) -> Path:
        """The server's name for a document saved at `path` (--content-disposition): beside it,
        sanitized like every name, unique in the run; `path` is given back."""
        name = fit_name(_name(url, suggested), NAME_MAX - _TAIL_ROOM)
        if name == path.name:
            return path
        candidate = self._unique(path.with_name(name))
        self._files.add(candidate)
        self._files.discard(path)
        return self._confined(candidate)

    def listing(self, url: object) -> Path:
        key = mask_secrets(str(url)) + "#listing"
        if self.mode == "tree":
            parts = [*tree_parts(url, directory=True), "index.listing.json"]  # type: ignore[arg-type]
        else:
            name = _name(url)
            parts = [fit_name(f"{name}.listing.json", NAME_MAX - _TAIL_ROOM)]
        return self._place(parts, key)


def name_digest(text: str) -> bytes:
    """16 bytes standing for `text` in a set of millions (two texts share them with odds of 2**-128)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class NameSet:
    """A set of paths kept as `name_digest`s of their text."""

    def __init__(self) -> None:
        self._digests: set[bytes] = set()

    def add(self, path: Path) -> None:
        self._digests.add(name_digest(os.fspath(path)))

    def discard(self, path: Path) -> None:
        self._digests.discard(name_digest(os.fspath(path)))

    def __contains__(self, path: object) -> bool:
        return isinstance(path, Path) and name_digest(os.fspath(path)) in self._digests

    def take(self, text: str) -> bool:
        """Add the path spelled `text` (as `os.fspath` spells it); False when it was there already."""
        digest = name_digest(text)
        if digest in self._digests:
            return False
        self._digests.add(digest)
        return True


def make_dirs(root: Path, directory: Path) -> None:
    """Create `directory` below `root`, one component at a time, never through a symlink.

    `root` itself (the user's -d) is created as given.  Below it, an
    existing component must be a real directory: a symlink or a file in
    the way is refused (`OutputError`), so no write lands outside `root`.
    """
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        from fetcher.disk.names import output_error

        raise output_error(error, root) from None
    current = root
    for part in directory.relative_to(root).parts:
        current = current / part
        try:
            os.mkdir(current)
            continue
        except FileExistsError:
            pass
        except OSError as error:
            from fetcher.disk.names import output_error

            raise output_error(error, current) from None
        info = os.lstat(current)
        if not stat.S_ISDIR(info.st_mode):
            kind = "a symlink" if stat.S_ISLNK(info.st_mode) else "not a directory"
            raise OutputError(
                f"{current} is {kind}; fetcher does not write through it",
                hint=f"remove it, or choose another output directory than {root}",
            )


# -- what an earlier manifest says ---------------------------------------------------


class DoneRecords:
    """`--skip-done MANIFEST`: URLs retrieved already, and the file name every recorded URL owns."""

    def __init__(self) -> None:
        self.done: set[str] = set()
        self.owned: dict[str, str] = {}
        self.problems: list[str] = []


def load_done(manifest: str) -> DoneRecords:
    """Read an earlier manifest; a truncated or corrupt line is reported (with its number) and ignored."""
    import json  # --skip-done only (issue 17)

    records = DoneRecords()
    try:
        source = open(manifest, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
    except FileNotFoundError:
        return records  # the first run of a resumable job
    except OSError as error:
        raise UsageError(f"cannot read --skip-done {manifest}: {error.strerror}") from None
    with source:
        for number, line in enumerate(source, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                url = record["url"]
                if not isinstance(url, str):
                    raise TypeError(url)
            except (ValueError, KeyError, TypeError, IndexError):
                problem = "truncated" if not line.endswith("\n") else "not a manifest record"
                records.problems.append(f"fetch: --skip-done {safe_text(manifest)} line {number}: {problem}; ignored")
                continue
            url = mask_secrets(url)
            path = record.get("path") or record.get("target")
            if isinstance(path, str):
                records.owned.setdefault(url + "#listing" if record.get("kind") == "listing" else url, path)
            # A path inside an fsspec URL (a --cluster run's -d s3://...) is taken on the record's word.
            present = not isinstance(path, str) or "://" in path or os.path.exists(path)
            if record.get("status") == "ok" and present:
                records.done.add(url)
    return records
