"""Where a cluster run's files go: a shared directory, or an fsspec URL (`-d s3://bucket/prefix`).

A worker's `Client` writes documents to local paths (`fetcher.disk.save`: `.part`,
then a rename).  For an fsspec output the worker gives it a staging
directory of its own, and once a document is complete, streams it to the
output in 1 MiB blocks and removes the staged copy:

- A file system that renames (the local one, `file://`, and anything
  mounted) gets `NAME.part`, then a rename to `NAME`.
- Any other (object stores: s3, gcs, azure) gets a write that is committed
  only when complete (`autocommit=False`, then `commit()`): an object
  appears under its name whole or not at all.

Either way a file appears under its final name only when complete.  The
batch journal (`fetcher.cluster.worker`) lives beside the output; on an
fsspec output it is one small file per completed URL, since object stores
cannot append.

fsspec is a dependency of dask, so it is there whenever `--cluster` is.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from fetcher.disk.writer import Download
from fetcher.errors import UsageError
from fetcher.text import mask_secrets
from fetcher.url import URL

#: Bytes copied at a time from a staged file to the output.
BLOCK = 1 << 20


def is_url(directory: str | os.PathLike[str] | None) -> bool:
    """True for an output directory given as an fsspec URL (`s3://...`, `file:///...`)."""
    return directory is not None and "://" in str(directory)


def filesystem(url: str) -> tuple[Any, str]:
    """The fsspec file system of `url` and the root path inside it (a clear error when unusable)."""
    try:
        import fsspec
        from fsspec.core import url_to_fs
    except ImportError:
        raise UsageError(
            f"-d {url}: an fsspec URL as the output needs fsspec", hint="pip install 'fetcher-rfc1738[cluster]'"
        ) from None
    try:
        fs, root = url_to_fs(url)
    except (ImportError, ValueError) as error:
        known = ", ".join(sorted(p for p in fsspec.available_protocols() if p.isalpha())[:12])
        raise UsageError(
            f"-d {mask_secrets(url)}: fsspec cannot open this URL ({mask_secrets(str(error))})",
            hint=f"install the file system's package (s3fs for s3://, gcsfs for gs://); fsspec knows {known}, ...",
        ) from None
    return fs, root.rstrip("/")


def parallel_uploads(fs: Any, jobs: int) -> int:
    """How many uploads may share `fs` at once: `jobs` where it is thread-safe, else one.

    The local file system and fsspec's async ones (s3fs, gcsfs, adlfs) are;
    others may hold one connection (fsspec's FTP holds one ftplib session).
    """
    return max(1, jobs) if _renames(fs) or getattr(fs, "async_impl", False) else 1


def _renames(fs: Any) -> bool:
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return "file" in protocols or "local" in protocols


#: Directories made in this process, per file system (object stores need none, FTP and SFTP do).
_made: set[tuple[int, str]] = set()


def make_dirs(fs: Any, path: str) -> None:
    """`fs.makedirs(path, exist_ok=True)`, when another process may be making the same directories."""
    try:
        fs.makedirs(path, exist_ok=True)
    except Exception:
        # Another worker (or this one's journal) made one between the look and the
        # mkdir (FTP says "550 File exists"); look again past fsspec's listing cache.
        fs.invalidate_cache()
        if not fs.isdir(path):
            fs.makedirs(path, exist_ok=True)


def upload(fs: Any, local: Path, remote: str) -> None:
    """Stream the complete file `local` to `remote`, so that it appears there only when whole."""
    parent = remote.rsplit("/", 1)[0]
    if (id(fs), parent) not in _made:
        make_dirs(fs, parent)
        _made.add((id(fs), parent))
    if _renames(fs):
        part = remote + ".part"
        with local.open("rb") as source, fs.open(part, "wb") as target:
            shutil.copyfileobj(source, target, BLOCK)
        fs.mv(part, remote)
        return
    target = fs.open(remote, "wb", autocommit=False)
    try:
        with local.open("rb") as source:
            shutil.copyfileobj(source, target, BLOCK)
        target.close()
        target.commit()
    except BaseException:
        target.discard()
        raise


def journaled_download(entry: dict[str, Any], url: URL, path: Path | None = None) -> Download:
    """The saved file a `Journal` entry stands for; `path`: the caller's name for it (else the entry's)."""
    return Download(
        url=url, path=path if path is not None else Path(entry["path"]), bytes=entry["bytes"],
        sha256=entry["sha256"], content_type=entry["content_type"], resumed_from=entry["resumed_from"],
        filename=entry.get("filename"), etag=entry.get("etag"),
    )  # fmt: skip


class Journal:
    """The files one batch completed, kept where every worker finds them (a rerun reads it back).

    A local or shared directory gets one JSON line per file in
    `DIR/BATCH.jsonl`; an fsspec URL one small file per URL in `DIR/BATCH/`.
    An entry is written only once its file is complete under its final name.
    """

    def __init__(self, directory: str, batch_id: str) -> None:
        self.remote = is_url(directory)
        self._log: Any = None
        self._made = False
        if self.remote:
            self.fs, root = filesystem(directory)
            self.where = f"{root}/{batch_id}"
        else:
            self.where = str(Path(directory) / f"{batch_id}.jsonl")

    def load(self) -> dict[str, dict[str, Any]]:
        """What an earlier run of this batch completed, by URL."""
        lines: list[str] = []
        if self.remote:
            try:
                names = self.fs.ls(self.where, detail=False)
            except FileNotFoundError:
                names = []
            for name in names:
                try:
                    lines.append(self.fs.cat_file(name).decode("utf-8"))
                except (FileNotFoundError, UnicodeDecodeError):
                    continue
        else:
            try:
                lines = Path(self.where).read_text(encoding="utf-8").splitlines()
            except FileNotFoundError:
                pass
        done: dict[str, dict[str, Any]] = {}
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # the last line of a worker killed while writing it
            done[entry["url"]] = entry
        return done

    def add(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry)
        if self.remote:
            if not self._made:
                make_dirs(self.fs, self.where)
                self._made = True
            name = hashlib.sha256(entry["url"].encode("utf-8", "surrogateescape")).hexdigest()[:32]
            self.fs.pipe_file(f"{self.where}/{name}.json", line.encode("utf-8"))
            return
        if self._log is None:
            self._log = open(self.where, "a", encoding="utf-8")  # noqa: SIM115
        self._log.write(line + "\n")
        self._log.flush()

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def remove_tree(directory: str) -> None:
    """Remove a run's journal (or staging) directory, local or fsspec; nothing there is fine."""
    if is_url(directory):
        fs, root = filesystem(directory)
        try:
            fs.rm(root, recursive=True)
        except FileNotFoundError:
            pass
        return
    shutil.rmtree(directory, ignore_errors=True)
