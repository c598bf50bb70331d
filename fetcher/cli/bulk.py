"""Scripted bulk retrieval: many URLs, every protocol, one manifest record each.

Stands on `Client.fetch_all` (concurrency, per-host limits, retries, resume)
and adds what a run of thousands of URLs needs: input files, where files go
(flat or tree, confined to the output directory), recursion through
listings, the manifest, `--skip-done`, progress and Ctrl-C handling.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import signal
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from fetcher import guard
from fetcher.cli.inputs import BadLine, LineCutter, UrlLines, read_url_lines
from fetcher.cli.layout import Layout, load_done, make_dirs, name_digest
from fetcher.cli.progress import NoProgress
from fetcher.cli.render import listing_json
from fetcher.client import Client, Fetched, Outcome
from fetcher.disk.names import output_error, partial_path
from fetcher.disk.place import into_place
from fetcher.disk.writer import Download, write_file
from fetcher.errors import FetchError, OutputError, UnsafeURL, URLError, UsageError
from fetcher.net import aio
from fetcher.resource import Entry
from fetcher.text import escape, mask_secrets
from fetcher.url import URL, parse_url

if TYPE_CHECKING:
    from fetcher.mirror.rules import Mirror

#: Exit code of a -r run that stopped following links at --limit frontier/pages (LimitExceeded's).
LIMIT_EXIT = 7
#: Input URLs in the run at once (read but not finished): a list of millions is read
#: as the run takes them on, so memory does not grow with the list.
WINDOW = 8192
#: Lines of input read between two checkpoints.
READ_BATCH = 512


@dataclass(slots=True)
class Job:
    """One URL of the run: from the input (with its line) or found by recursion."""

    text: str
    line: int | None
    url: URL | None = None
    depth: int = 0
    parent: str | None = None
    path: Path | None = None
    #: Its record was written (the record itself is not kept: memory stays flat over a long run).
    done: bool = False
    #: From the listing entry that led here (Entry.filename / Entry.immutable).
    suggested: str | None = None
    immutable: bool = False


# -- input ------------------------------------------------------------------


def stdin_stream(args: argparse.Namespace) -> int | None:
    """-i -: the file descriptor to take URLs from as they arrive (None: read stdin up front,
    when it has no descriptor, as inside another program's tests)."""
    if args.input_file != "-":
        return None
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None


class Inputs:
    """The URLs of the command line and -i FILE (and of stdin unless it is `streamed`), in order.

    The file is opened at once (a missing file is a usage error before
    anything runs) but read as the run takes URLs on (`BulkRun`): its jobs
    are made a window at a time, never all up front.  `countable`: the
    number of URLs can be known before the run (`count`, a first pass over
    a regular file); a pipe (`-i <(command)`) is read once, as it comes.
    """

    def __init__(self, args: argparse.Namespace, *, streamed: bool = False) -> None:
        self.jobs = [Job(text=text, line=None) for text in args.urls]
        self.countable = True
        self._name = args.input_file
        self._source: IO[str] | None = None
        if args.input_file == "-" and not streamed:
            self.jobs += [Job(text=text, line=number) for text, number in read_url_lines(sys.stdin)]
        elif args.input_file and args.input_file != "-":
            try:
                self._source = open(args.input_file, encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
                self.countable = stat.S_ISREG(os.fstat(self._source.fileno()).st_mode)
            except OSError as error:
                self.close()
                raise self._unreadable(error) from None

    def count(self) -> int:
        """The number of URLs (a first pass over a regular file; only when `countable`)."""
        if self._source is None:
            return len(self.jobs)
        try:
            total = len(self.jobs) + sum(1 for _ in read_url_lines(self._source))
            self._source.seek(0)
        except OSError as error:
            self.close()
            raise self._unreadable(error) from None
        return total

    def _unreadable(self, error: OSError) -> UsageError:
        return UsageError(
            f"cannot read -i {self._name}: {error.strerror or error}",
            hint="give a file of URLs, one per line ('-' reads them from stdin)",
        )

    def __iter__(self) -> Iterator[Job]:
        yield from self.jobs
        self.jobs = []
        if self._source is not None:
            for text, number in read_url_lines(self._source):
                yield Job(text=text, line=number)

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = None


class Seen:
    """URLs met in the run, for duplicates and -r's loops: a 16-byte digest each, with its input line.

    A run of millions keeps 16 bytes a URL here instead of the URL and its
    job, so memory stays flat (two URLs share a digest with odds of 2**-128).
    """

    def __init__(self) -> None:
        self._lines: dict[bytes, int | None] = {}

    def add(self, key: str, line: int | None = None) -> None:
        self._lines.setdefault(name_digest(key), line)

    def __contains__(self, key: str) -> bool:
        return name_digest(key) in self._lines

    def line(self, key: str) -> int | None:
        """The input line `key` came on first (None: the command line, or found by -r)."""
        return self._lines.get(name_digest(key))

    def first(self, key: str, line: int | None) -> tuple[bool, int | None]:
        """Add `key` (seen on `line`) unless it was met: (whether it is new, the line it first came on)."""
        digest = name_digest(key)
        lines = self._lines
        if digest in lines:
            return False, lines[digest]
        lines[digest] = line
        return True, line


# -- the manifest ---------------------------------------------------------------


class Manifest:
    """One JSON object per URL, written and flushed as each finishes."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._sink: IO[str] | None = None
        if path:
            try:
                self._sink = open(path, "a+", encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
                end = self._sink.tell()
                if end > 0:
                    # A run cut short may have left half a line: end it, so the next record stays whole.
                    self._sink.seek(end - 1)
                    if self._sink.buffer.read(1) != b"\n":
                        self._sink.write("\n")
            except OSError as error:
                raise output_error(error, path) from None

    def write(self, record: dict[str, Any]) -> None:
        if self._sink is not None:
            import json  # --manifest only: a run without one never loads it (issue 17)

            try:
                self._sink.write(json.dumps(masked(record), ensure_ascii=True) + "\n")
                self._sink.flush()
            except OSError as error:
                raise output_error(error, self.path or "manifest") from None

    def close(self) -> None:
        if self._sink is not None:
            try:
                self._sink.close()
            except OSError:
                pass  # already reported by write()


def masked(record: dict[str, Any]) -> dict[str, Any]:
    """The record as the manifest shows it: no password of any URL in any text field."""
    return {key: mask_secrets(value) if isinstance(value, str) else value for key, value in record.items()}


def _record(job: Job, status: str, *, error: FetchError | None = None, **values: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "url": str(job.url) if job.url is not None else job.text,
        "status": status,
        "exit_code": error.exit_code if error is not None else 0,
        "error": error.message if error is not None else None,
        "bytes": None,
        "sha256": None,
        "path": None,
        "content_type": None,
        "attempts": 0,
        "seconds": 0.0,
    }
    if job.line is not None:
        record["line"] = job.line
    if job.parent is not None:
        record["parent"] = job.parent
        record["depth"] = job.depth
    record.update(values)
    return record


# -- the run --------------------------------------------------------------------


@dataclass
class Totals:
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    interrupted: int = 0
    bytes: int = 0


class BulkRun:
    def __init__(self, args: argparse.Namespace, client: Client, manifest: Manifest, progress: Any) -> None:
        self.args = args
        self.client = client
        self.manifest = manifest
        self.progress = progress
        #: Saved files need no record (`handle`): nothing would read it.
        self._quiet_saves = (
            not manifest.path
            and type(progress) is NoProgress
            and not progress.verbose
            and not args.recursive
            and not getattr(args, "content_disposition", False)
            and getattr(args, "write_out", None) is None
        )
        #: -w FORMAT: a line on stdout for each record (fetcher.cli.writeout), and the outcome being handled.
        self.write_out: str | None = getattr(args, "write_out", None)
        self._outcome: tuple[Job, Outcome] | None = None
        if self.write_out is not None:
            from fetcher.cli.writeout import needs_peers

            if needs_peers(self.write_out):
                client.peers = {}
        records = load_done(args.skip_done) if args.skip_done else None
        for problem in records.problems if records is not None else []:
            progress.log(problem)
        self.done = records.done if records is not None else set()
        self.layout = Layout(Path(args.directory or "."), args.layout, owned=records.owned if records else None)
        #: -d as an fsspec URL (--cluster only): paths are named inside it; workers write there.
        self.remote: str | None = args.directory.rstrip("/") if args.directory and "://" in args.directory else None
        self.totals = Totals()
        #: The jobs taken on and not finished, by URL (finished ones are dropped: memory stays flat).
        self.by_url: dict[str, Job] = {}
        self.visited = Seen()
        #: The input not read yet (`Inputs`, taken a window at a time), and a wait for room in the window.
        self._inputs: Iterator[Job] | None = None
        self._room: aio.Event | None = None
        #: -r caps (--limit frontier=N, pages=N): URLs waiting, URLs taken on in all.
        self.limits = client.settings.limits
        self.taken = 0
        self.capped: str | None = None
        self.fatal: OutputError | None = None
        #: Ctrl-C: the `.part` files the URLs cut short left (what -C resumes).
        self.parts_kept = 0
        self.follow_schemes = (
            {s.strip().lower() for s in args.follow_schemes.split(",")} if args.follow_schemes else set()
        )
        self.queue_send, self.queue_receive = aio.memory_channel(math.inf)
        #: The running fetch_all block's outcomes (to stop starting URLs on a fatal error).
        self.outcomes: Any = None
        self.pending = 0
        #: -i -: URLs are still arriving on stdin (the queue stays open while pending is 0).
        self.feeding = False
        #: Who runs the URLs: this process, or a cluster executor of the same shape (fetcher/cluster/executor.py).
        self.fetch_all: Any = client.fetch_all
        self.mirror: Mirror | None = None
        if args.recursive:
            from fetcher.mirror.rules import Mirror  # -r only (and its HTML parser)

            self.mirror = Mirror(
                parent=getattr(args, "parent", False),
                timestamping=getattr(args, "timestamping", False),
                robots=not getattr(args, "no_robots", False),
                follow_schemes=self.follow_schemes,
                user_agent=client.settings.user_agent or "fetcher",
                log=progress.log,
                span_hosts=args.span_hosts,
            )
        if self.mirror is not None and self.mirror.timestamping:
            from fetcher.mirror.etags import EtagStore

            self.mirror.etags = EtagStore(self.layout.root)
            self.layout.reserve(self.mirror.etags.path)  # no URL is saved over the state file
            for problem in self.mirror.etags.load():
                progress.log(problem)

    def finish(self, job: Job, record: dict[str, Any], *, queued: bool = True) -> None:
        """Record a job's outcome; `queued` is False for jobs that never reached the queue."""
        if not queued:
            self.progress.url_added()
        status = record["status"]
        self._count(job, status, record.get("bytes"))
        if self.mirror is not None:
            self.mirror.count(record)
        if self.fatal is None:
            try:
                self.manifest.write(record)
            except OutputError as error:
                self.stop(error)
        self.progress.url_done(record)
        if self.write_out is not None:
            self._write_out(job, record)
        if status == "failed":
            where = f" (line {job.line})" if job.line is not None else ""
            self.progress.log(f"fetch: {escape(record['url'])}{where}: {escape(record['error'] or '')}")

    def _write_out(self, job: Job, record: dict[str, Any]) -> None:
        """-w: the record's line on stdout (with what the outcome being handled adds, if it is this job's)."""
        from fetcher.cli.writeout import from_record, render

        assert self.write_out is not None
        outcome = self._outcome[1] if self._outcome is not None and self._outcome[0] is job else None
        sys.stdout.write(render(self.write_out, from_record(record, outcome, self.client.peers)))
        sys.stdout.flush()

    def _count(self, job: Job, status: str, size: int | None) -> None:
        """The job's outcome in the totals; the job is done and no longer kept by URL."""
        if status == "ok":
            self.totals.ok += 1
            self.totals.bytes += size or 0
        elif status == "failed":
            self.totals.failed += 1
        elif status == "interrupted":
            self.totals.interrupted += 1
        else:
            self.totals.skipped += 1
        job.done = True
        if job.url is not None and self.by_url.get(key := str(job.url)) is job:
            del self.by_url[key]

    def stop(self, error: OutputError) -> None:
        """The manifest cannot be written (a full disk): start nothing more, end with this error.

        The queue is closed and emptied, so nothing new starts; the
        transfers under way finish (or keep their `.part`), and `run`
        raises the error once the loop is over.
        """
        self.fatal = error
        if self.outcomes is not None and hasattr(self.outcomes, "stop_starting"):
            self.outcomes.stop_starting()  # URLs already taken into a lane
        self.queue_send.close()
        while True:
            try:
                self.queue_receive.receive_nowait()
            except aio.would_block() + aio.channel_ended():
                break

    def enqueue(self, job: Job) -> None:
        assert job.url is not None
        if self.fatal is not None:
            return
        key = str(job.url)
        new, line = self.visited.first(key, job.line)
        if not new:
            if job.parent is None:
                where = f"line {line}" if line is not None else "the command line"
                self.finish(job, _record(job, "skipped", reason=f"duplicate of {where}"), queued=False)
            return
        if self.done and mask_secrets(key) in self.done:
            self.finish(job, _record(job, "skipped", reason="done in --skip-done manifest"), queued=False)
            return
        if getattr(self.args, "no_clobber", False) and not self.args.recursive and self._kept(job):
            return
        self.by_url[key] = job
        self.taken += 1
        self.pending += 1
        self.progress.url_added()
        self.queue_send.send_nowait(job.url)

    def _kept(self, job: Job) -> bool:
        """--no-clobber (not with -r): a URL whose file under -d exists is skipped, one line saying so."""
        assert job.url is not None
        path = self.layout.document(job.url, job.suggested)
        if not os.path.lexists(path):
            job.path = path  # the name is taken now: `destination` must not draw another
            return False
        self.progress.log(f"fetch: {path} exists; kept it (--no-clobber)")
        self.finish(job, _record(job, "skipped", reason="exists (--no-clobber)", path=str(path)), queued=False)
        return True

    def named(self, path: Path) -> str:
        """A path as the manifest names it: as laid out, or inside the fsspec URL of -d."""
        if self.remote is None:
            return str(path)
        inside = path.relative_to(self.layout.root) if path.is_relative_to(self.layout.root) else path
        return mask_secrets(f"{self.remote}/{inside.as_posix()}")

    def destination(self, url: URL) -> Path:
        job = self.by_url[str(url)]
        if job.path is None:
            job.path = self.layout.document(url, job.suggested)
        return job.path

    def add_inputs(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            if isinstance(job.text, BadLine):  # an over-long line, or one with no end (fetcher.cli.inputs)
                self.finish(job, _record(job, "failed", error=UsageError(job.text.problem)), queued=False)
                continue
            try:
                job.url = parse_url(job.text)
            except URLError as error:
                self.finish(job, _record(job, "failed", error=error), queued=False)
                continue
            if self.mirror is not None:
                self.mirror.start(job.url)  # its origin is one links may lead to
                if job.url.scheme in ("http", "https"):
                    self._up_to_date(job)  # -N: If-Modified-Since for a start page already saved
            self.enqueue(job)

    def follow_links(self, job: Job, result: Fetched) -> None:
        assert job.url is not None
        if not self.args.recursive or job.depth >= self.args.depth:
            return
        for entry in result.entries:
            child = self._admit(job, entry)
            if child is None:
                continue
            if self._over_cap():
                return
            self._take(job, entry, child)

    def _admit(self, job: Job, entry: Any) -> Job | None:
        """The job for a link -r follows, or None: out of scope, off the run's origins, seen, or refused.

        Everything that decides without a connection is here, so an HTML
        page's links meet it before robots.txt is fetched for their origin.
        """
        assert job.url is not None and self.mirror is not None
        url = None
        if entry.url:
            try:
                url = parse_url(entry.url)
            except URLError:
                return None
        reason = self.mirror.consider(job.url, entry, url)
        if reason is not None or url is None:
            self._mirror_skips(job, entry, url, reason)
            return None
        away = self.mirror.leaves(job.url, url)
        if away == "":  # another host or scheme: not this tree, dropped without a word
            return None
        child = Job(text=str(url), line=None, url=url, depth=job.depth + 1, parent=str(job.url),
                    suggested=entry.filename, immutable=entry.immutable)  # fmt: skip
        if str(url) in self.visited:
            return None
        try:  # before the other-port reason: a refused port is the stronger news
            guard.check(url, self.client.policy)
        except UnsafeURL as refusal:
            self.visited.add(str(url))
            self.finish(child, _record(child, "skipped", reason=f"guard: {refusal.message}"), queued=False)
            return None
        if away is not None:
            self._mirror_skips(job, entry, url, away)
            return None
        return child

    def _take(self, job: Job, entry: Any, child: Job) -> None:
        """Queue an admitted link (unless -N finds its copy current, or another page queued it meanwhile)."""
        assert job.url is not None and child.url is not None and self.mirror is not None
        url = child.url
        if str(url) in self.visited or (child.immutable and self._saved_already(child)):
            return
        self.mirror.adopt(job.url, url, entry)
        if (confined := self.mirror.confinement(job.url, entry, url)) is not None:
            self.client.confine[str(url)] = confined
        if entry.type not in ("directory", "menu") and self._up_to_date(child):
            return
        self.enqueue(child)

    def _saved_already(self, job: Job) -> bool:
        """An immutable entry (a numbered news article) whose file exists is not fetched again."""
        assert job.url is not None
        key = str(job.url)
        if key in self.visited or mask_secrets(key) in self.done:
            return False
        job.path = self.layout.document(job.url, job.suggested)
        if not job.path.is_file():
            return False
        self.visited.add(key)
        self.finish(job, _record(job, "skipped", reason="saved already", path=str(job.path)), queued=False)
        return True

    def _mirror_skips(self, job: Job, entry: Any, url: URL | None, reason: str | None) -> None:
        """A link -r's scope, origin, loop and can't-mirror rules (fetcher.mirror.rules) refused: recorded once."""
        key = str(url) if url is not None else f"{job.url} {entry.name}"
        if reason and key not in self.visited:
            self.visited.add(key)
            child = Job(text=key, line=None, url=url, depth=job.depth + 1, parent=str(job.url))
            self.finish(child, _record(child, "skipped", reason=reason, name=entry.name), queued=False)

    def _up_to_date(self, job: Job) -> bool:
        """-N: a file whose local copy matches its listing is recorded as unchanged, not retrieved."""
        assert job.url is not None and self.mirror is not None
        key = str(job.url)
        if not self.mirror.timestamping or key in self.visited or mask_secrets(key) in self.done:
            return False
        path = self.layout.document(job.url, job.suggested)
        job.path = path
        if self.mirror.up_to_date(job.url, path):
            self.visited.add(key)
            self.finish(job, _record(job, "ok", path=str(path), bytes=0, change="unchanged"), queued=False)
            return True
        when = self.mirror.condition(job.url, path)
        if when is not None:
            self.client.conditions[key] = when
            tag = self.mirror.etag(job.url, path)
            if tag is not None:
                self.client.etags[key] = tag
        return False

    def _over_cap(self) -> bool:
        """True (with a one-line note, once) when -r may take on no more URLs: memory stays bounded."""
        if self.capped is not None:
            return True
        if self.pending >= self.limits.frontier:
            self.capped, value, what = "frontier", self.limits.frontier, "URLs waiting"
        elif self.taken >= self.limits.pages:
            self.capped, value, what = "pages", self.limits.pages, "URLs in this run"
        else:
            return False
        self.progress.log(
            f"fetch: -r stops following links at {value} {what} (--limit {self.capped}={value}); "
            f"what is queued is still retrieved; raise the cap with --limit {self.capped}=N"
        )
        return True

    async def handle(self, outcome: Outcome) -> None:
        job = self.by_url[outcome.url]
        self._outcome = (job, outcome)  # for -w's line (`finish`)
        if self._quiet_saves and outcome.error is None and type(outcome.result) is Download:
            # A saved file whose record nobody reads (no manifest, no -v line, no bar, no -r, no -J):
            # `finish`'s counts, without the record.
            self._count(job, "ok", outcome.result.bytes)
            self._done_one()
            return
        common: dict[str, Any] = {"attempts": outcome.attempts, "seconds": round(outcome.seconds, 4)}
        if outcome.error is not None:
            record = _record(job, "failed", error=outcome.error, **common)
            if job.path is not None:
                record["target"] = self.named(job.path)  # the name stays this URL's in a --skip-done re-run
                if self.remote is None and partial_path(job.path).exists():
                    record["partial"] = str(partial_path(job.path))
            self.finish(job, record)
        elif isinstance(outcome.result, Download):
            result = outcome.result
            if getattr(self.args, "content_disposition", False) and result.filename:
                result = await self._server_named(job, result)
            if self.mirror is not None:
                common["change"] = self.mirror.saved(job.url, result.path, result.etag,  # type: ignore[arg-type]
                                                     result.content_type)  # fmt: skip
                if result.etag is not None:
                    common["etag"] = result.etag
            self.finish(job, self._saved(job, result, common))
            if self.mirror is not None:  # -r (a call the other saves skip: one per URL)
                await self._follow_page(job, result.path, result.content_type, str(result.url))
        elif isinstance(outcome.result, Fetched) and self._not_modified(job, outcome.result):
            self.finish(job, _record(job, "ok", path=str(job.path), bytes=0, change="unchanged", **common))
            assert self.mirror is not None and job.url is not None and job.path is not None
            # The copy is the page: its links are checked as a fresh page's (with the type it was saved with).
            await self._follow_page(job, job.path, self.mirror.page_type(job.url, job.path), str(job.url))
        elif isinstance(outcome.result, Fetched) and outcome.result.metadata.get("skipped"):
            reason = str(outcome.result.metadata["skipped"])  # -r: a link that leads outside or loops
            name = str(job.url).rstrip("/").rsplit("/", 1)[-1]
            self.finish(job, _record(job, "skipped", reason=reason, name=name, **common))
        elif isinstance(outcome.result, Fetched):
            fetched = outcome.result
            path = None
            if job.path is not None:  # named as a document before its kind was known; nothing was written
                self.layout.release(job.path)
                job.path = None
            if fetched.kind == "listing":
                assert job.url is not None
                target = self.layout.listing(job.url)
                try:
                    make_dirs(self.layout.root, target.parent)
                    write_file(target, listing_json(fetched.entries).encode("utf-8"))
                except OutputError as error:
                    record = _record(job, "failed", error=error, kind=fetched.kind, **common)
                    self.finish(job, record)
                    self._done_one()
                    return
                path = str(target)
            loop = None
            if self.mirror is not None and fetched.kind == "listing":
                assert job.url is not None
                if job.parent is None:
                    self.mirror.started(job.url, listing=True)
                loop = self.mirror.looped(job.url, fetched.entries)
                if loop is not None:
                    common["loop_of"] = loop
                    self.progress.log(f"fetch: {escape(str(job.url))}: a loop (lists what {escape(loop)} lists); "
                                      "not followed further")  # fmt: skip
            self.finish(
                job, _record(job, "ok", kind=fetched.kind, path=path, content_type=fetched.content_type, **common)
            )
            if fetched.kind == "listing" and loop is None:
                self.follow_links(job, fetched)
        self._done_one()

    async def _server_named(self, job: Job, result: Download) -> Download:
        """--content-disposition: move an HTTP document to the name its server suggested, in the same
        directory (a resumed one keeps its name: its `.part` was the URL's)."""
        assert job.url is not None
        if job.url.scheme not in ("http", "https") or result.resumed_from or result.filename is None:
            return result
        target = self.layout.renamed(job.url, result.path, result.filename)
        if target == result.path:
            return result
        if getattr(self.args, "no_clobber", False) and os.path.lexists(target):
            self.progress.log(f"fetch: {target} exists; kept it (--no-clobber), the document stays {result.path}")
            return result
        try:  # as a document is put in place: a special file, a directory or the run's own file is refused
            await aio.run_sync(into_place, os.fspath(result.path), target)
        except OutputError as error:
            self.progress.log(f"fetch: not renaming {result.path} to {target}: {error.message}; kept it")
            return result
        except OSError as error:
            self.progress.log(f"fetch: cannot rename {result.path} to {target}: {error.strerror or error}; kept it")
            return result
        job.path = target
        return dataclasses.replace(result, path=target)

    async def _follow_page(self, job: Job, path: Path | None, content_type: str | None, page_url: str) -> None:
        """-r over HTTP: the links of a saved HTML page (fetcher.mirror.rules), under robots.txt, as a listing's."""
        if self.mirror is None or job.url is None or job.url.scheme not in ("http", "https"):
            return
        if job.parent is None:
            self.mirror.started(job.url, listing=False)
        from fetcher.mirror.rules import is_html, page_links

        if job.depth >= self.args.depth or path is None or (content_type and not is_html(content_type, None)):
            return
        links, note = await aio.run_sync(  # without a type, is_html reads the first bytes: in the thread too
            lambda: page_links(path, page_url, content_type, max_links=self.limits.frontier)
            if is_html(content_type, path) else ([], None)
        )  # fmt: skip
        if note:
            self.progress.log(f"fetch: {escape(page_url)}: {escape(note)}; the links found first are followed")
        admitted = []
        for link in links:
            entry = Entry(name=link, url=link)
            child = self._admit(job, entry)  # scope and origin first: robots.txt only of origins crawled
            if child is None or child.url is None:
                continue
            if not await self.mirror.robots_allow(self.client, child.url):
                self.visited.add(str(child.url))
                self.finish(child, _record(child, "skipped", reason="robots.txt disallows it (--no-robots ignores it)"),
                            queued=False)  # fmt: skip
                continue
            admitted.append((entry, child))
        for entry, child in admitted:
            if self._over_cap():
                return
            self._take(job, entry, child)

    def _not_modified(self, job: Job, fetched: Fetched) -> bool:
        """-N over HTTP: the server answered 304 to If-Modified-Since; the local copy stays."""
        return self.mirror is not None and fetched.metadata.get("status") == 304 and job.path is not None

    def _done_one(self) -> None:
        self.pending -= 1
        if self._room is not None and self.pending <= WINDOW // 2:
            self._room.set()
            self._room = None
        if self.pending == 0 and not self.feeding:
            self.queue_send.close()

    async def _wait_for_room(self) -> None:
        """Until the window has room again (half of it free)."""
        while self.pending >= WINDOW and self.fatal is None:
            self._room = self._room or aio.event()
            await self._room.wait()

    def _take_inputs(self, lines: int) -> bool:
        """Up to `lines` more URLs of the input, while the window has room; False once it is read."""
        assert self._inputs is not None
        try:
            for _ in range(lines):
                if self.pending >= WINDOW or self.fatal is not None:
                    return True
                job = next(self._inputs, None)
                if job is None:
                    break
                self.add_inputs((job,))
            else:
                return True
        except OSError as error:
            self.progress.log(f"fetch: cannot read -i {self.args.input_file}: {error.strerror or error}; "
                              "the URLs read so far are retrieved")  # fmt: skip
        self._inputs = None
        return False

    def _input_ended(self) -> None:
        """The whole input is read: the total is known (unless -r keeps finding URLs), and a run
        with nothing under way ends."""
        self.feeding = False
        if not self.args.recursive:
            self.progress.total_known()
        if self.pending == 0:
            self.queue_send.close()

    async def _feed_inputs(self) -> None:
        """-i FILE: the rest of the list, a window at a time as URLs finish."""
        try:
            while self._inputs is not None and self.fatal is None:
                await self._wait_for_room()
                if not self._take_inputs(READ_BATCH):
                    break
                await aio.checkpoint()
        finally:
            self._input_ended()

    async def _feed(self, fd: int) -> None:
        """-i -: take URLs on as stdin delivers them, so a producer can still be writing
        (`find ... | fetch -i - -d out`); one thread hop per read of up to 64 KiB, and
        no line held past fetcher.cli.inputs' caps (`-i - < /dev/zero` ends)."""
        import codecs

        reader, cutter = UrlLines(), LineCutter()
        decode = codecs.getincrementaldecoder("utf-8")("surrogateescape").decode
        try:
            while not cutter.ended:
                data = await aio.run_sync(os.read, fd, 1 << 16, abandon_on_cancel=True)
                lines = cutter.feed(decode(data, final=not data))
                if not data:
                    lines += cutter.close()
                found = [item for line in lines for item in reader.feed(line)]
                if not data or cutter.ended:
                    found += reader.close()
                self.add_inputs([Job(text=text, line=number) for text, number in found])
                if not data:
                    break
                await self._wait_for_room()
        except OSError as error:
            self.progress.log(f"fetch: cannot read -i -: {error.strerror or error}; the URLs read so far are retrieved")
        finally:
            self._input_ended()

    async def run(self, jobs: Iterable[Job], stream: int | None = None) -> None:
        """Retrieve `jobs` (read a window at a time), and with `stream` (-i -) the URLs read
        from that descriptor as they come."""
        self._inputs = iter(jobs)
        self.feeding = True
        reading = self._take_inputs(WINDOW)
        if not reading and stream is None:
            self._input_ended()  # it fit in one window
        if self.fatal is not None:
            raise self.fatal
        if self.pending == 0 and not self.feeding:
            return

        def on_chunk(url: URL, count: int) -> None:
            self.progress.advance(count)

        made: set[str] = set()

        def destination(url: URL) -> Path:
            path = self.destination(url)
            parent = os.fspath(path).rpartition(os.sep)[0]  # str, not Path: once per URL
            if self.remote is None and parent not in made:
                make_dirs(self.layout.root, path.parent)
                made.add(parent)
            return path

        options: dict[str, Any] = {}
        if self.fetch_all == self.client.fetch_all and not self.manifest.path:
            options["digest"] = False  # only the manifest shows a file's SHA-256: none is computed for nothing
        async with aio.open_nursery() as feeding:
            if stream is not None:
                feeding.start_soon(self._feed, stream)
            elif reading:
                feeding.start_soon(self._feed_inputs)
            async with self.fetch_all(
                self.queue_receive,
                jobs=self.args.jobs,
                per_host=self.args.per_host,
                destination=destination,
                resume=self.args.resume,
                on_chunk=on_chunk,
                **options,
            ) as outcomes:
                self.outcomes = outcomes
                async for outcome in outcomes:
                    await self.handle(outcome)
            feeding.cancel_scope.cancel()  # stopped early (the manifest's disk is full): stop reading stdin
        if self.fatal is not None:
            raise self.fatal

    def _saved(self, job: Job, result: Download, common: dict[str, Any]) -> dict[str, Any]:
        return _record(job, "ok", bytes=result.bytes, sha256=result.sha256, path=self.named(result.path),
                       content_type=result.content_type, **common)  # fmt: skip

    def mark_interrupted(self) -> None:
        """Ctrl-C: every URL not finished gets its record, those of the input not read yet too.

        Files the executor completed but could not report (a cluster's batches cut short) are saved ones.
        """
        for outcome in getattr(self.outcomes, "saved_when_stopped", ()):
            job = self.by_url.get(outcome.url)
            if job is not None and not job.done and isinstance(outcome.result, Download):
                common = {"attempts": outcome.attempts, "seconds": round(outcome.seconds, 4)}
                self.finish(job, self._saved(job, outcome.result, common))
        for job in list(self.by_url.values()):
            if not job.done:
                record = _record(job, "interrupted", exit_code=130)
                if job.path is not None and self.remote is None and partial_path(job.path).exists():
                    record["partial"] = str(partial_path(job.path))
                    self.parts_kept += 1
                self.finish(job, record)
        rest, self._inputs = self._inputs, None
        try:
            for job in rest or ():
                self.finish(job, _record(job, "interrupted", exit_code=130), queued=False)
        except OSError as error:  # the list became unreadable: what was read has its records
            self.progress.log(f"fetch: cannot read -i {self.args.input_file}: {error.strerror or error}")


def _summary(totals: Totals, seconds: float) -> str:
    parts = [f"{totals.ok} retrieved", f"{totals.failed} failed"]
    if totals.skipped:
        parts.append(f"{totals.skipped} skipped")
    if totals.interrupted:
        parts.append(f"{totals.interrupted} interrupted")
    return f"fetch: {', '.join(parts)}; {totals.bytes} bytes in {seconds:.2f} s\n"


def _interrupted_line(parts: int, manifest: str | None) -> str:
    """What Ctrl-C left and how to go on: `.part` files only when there are some, the manifest by its name."""
    again = f"--skip-done {manifest}" if manifest else "--manifest FILE next time, then --skip-done FILE,"
    if not parts:
        return f"fetch: interrupted; rerun with {again} to retrieve the rest\n"
    kept = "1 .part file" if parts == 1 else f"{parts} .part files"
    return f"fetch: interrupted; {kept} kept, rerun with -C {again} to resume\n"


async def run_bulk(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """The bulk mode of `fetch` (-i, -d, -r, --manifest, --skip-done)."""
    from fetcher.cli.progress import make_progress

    started = time.monotonic()
    stream = stdin_stream(args)
    jobs = Inputs(args, streamed=stream is not None)
    growing = bool(args.recursive) or stream is not None or not jobs.countable
    progress = make_progress(args.progress, verbose=args.verbose, growing=growing)
    if progress.shows_total and not growing:
        progress.expect(jobs.count())
    interrupted = False
    try:
        manifest = Manifest(args.manifest)
    except BaseException:
        jobs.close()
        raise
    try:
        async with Client(**settings) as client:
            run = BulkRun(args, client, manifest, progress)
            if getattr(args, "cluster", None):
                from fetcher.cluster import executor

                run.fetch_all = executor(args, client.settings, client)
            elif run.remote is not None:
                raise UsageError(
                    f"-d {mask_secrets(args.directory)}: an fsspec URL as output is implemented for --cluster only",
                    hint="add --cluster local (one machine) or give a local directory",
                )
            with progress:
                async with aio.open_nursery() as nursery:

                    async def watch_interrupt() -> None:
                        nonlocal interrupted
                        with aio.open_signal_receiver(signal.SIGINT) as signals:
                            async for _ in signals:
                                interrupted = True
                                nursery.cancel_scope.cancel()
                                return

                    nursery.start_soon(watch_interrupt)
                    await run.run(jobs, stream)
                    nursery.cancel_scope.cancel()
            if interrupted:
                run.mark_interrupted()
    finally:
        manifest.close()
        jobs.close()
    if run.mirror is not None:
        if run.mirror.etags is not None and (problem := run.mirror.etags.save()) is not None:
            sys.stderr.write(problem + "\n")
        sys.stderr.write(run.mirror.summary.line())
    else:
        sys.stderr.write(_summary(run.totals, time.monotonic() - started))
    if interrupted:
        sys.stderr.write(_interrupted_line(run.parts_kept, args.manifest))
        return 130
    if run.totals.failed:
        return 1
    return LIMIT_EXIT if run.capped else 0
