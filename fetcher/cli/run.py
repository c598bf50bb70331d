"""One bulk run of the command: its jobs through `fetch_all`, and every outcome told once.

`BulkRun` takes the jobs the input gives (fetcher.cli.feed, a window at a
time), skips duplicates, --skip-done's and --no-clobber's, names each
document's place (fetcher.cli.layout) and hands the URL to `fetch_all` (or
a cluster executor of the same shape).  Each outcome becomes one record
(fetcher.cli.manifest), counted once in the run's tally
(fetcher.cli.tally), written to the manifest, shown by the progress bar
and -w.  With -r, the crawl (fetcher.mirror.crawl) is told of every start
URL, listing and saved page, and feeds back the links to take on.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fetcher.cli.feed import Feeder
from fetcher.cli.inputs import BadLine
from fetcher.cli.jobs import Job, Seen
from fetcher.cli.layout import Layout, load_done, make_dirs
from fetcher.cli.manifest import Manifest, job_record
from fetcher.cli.progress import NoProgress
from fetcher.cli.render import listing_json
from fetcher.cli.tally import Tally
from fetcher.client import Fetched, Outcome
from fetcher.disk.names import partial_path
from fetcher.disk.place import into_place
from fetcher.disk.writer import Download, write_file
from fetcher.errors import OutputError, URLError, UsageError
from fetcher.net import aio
from fetcher.text import escape, mask_secrets
from fetcher.url import URL, parse_url

if TYPE_CHECKING:
    from fetcher.cli.runoptions import RunOptions
    from fetcher.client import Client
    from fetcher.mirror.crawl import Crawl
    from fetcher.resource import Entry


class BulkRun:
    def __init__(self, options: RunOptions, client: Client, manifest: Manifest, progress: Any,
                 *, tally: Tally | None = None) -> None:  # fmt: skip
        self.options = options
        self.client = client
        self.manifest = manifest
        self.progress = progress
        #: Saved files need no record (`handle`): nothing would read it.
        self._quiet_saves = (
            not manifest.path
            and type(progress) is NoProgress
            and not progress.verbose
            and not options.recursive
            and not options.content_disposition
            and options.write_out is None
        )
        #: -w FORMAT: a line on stdout for each record (fetcher.cli.writeout), and the outcome being handled.
        self.write_out = options.write_out
        self._outcome: tuple[Job, Outcome] | None = None
        if self.write_out is not None:
            from fetcher.cli.writeout import needs_peers

            if needs_peers(self.write_out):
                client.peers = {}
        records = load_done(options.skip_done) if options.skip_done else None
        for problem in records.problems if records is not None else []:
            progress.log(problem)
        self.done = records.done if records is not None else set()
        directory = options.directory
        self.layout = Layout(Path(directory or "."), options.layout, owned=records.owned if records else None)
        #: -d as an fsspec URL (--cluster only): paths are named inside it; workers write there.
        self.remote: str | None = directory.rstrip("/") if directory and "://" in directory else None
        #: Every URL's outcome, counted once: the line the run ends with.
        self.tally = tally if tally is not None else Tally()
        #: The jobs taken on and not finished, by URL (finished ones are dropped: memory stays flat).
        self.by_url: dict[str, Job] = {}
        self.visited = Seen()
        #: The input, read a window at a time (the window is what `fetch_all` reads).
        self.feeder = Feeder(self)
        self.window = self.feeder.window
        #: URLs taken on in all (-r's --limit pages=N).
        self.taken = 0
        self.fatal: OutputError | None = None
        #: Ctrl-C: the `.part` files the URLs cut short left (what -C resumes).
        self.parts_kept = 0
        #: The running fetch_all block's outcomes (to stop starting URLs on a fatal error).
        self.outcomes: Any = None
        #: Who runs the URLs: this process, or a cluster executor of the same shape (fetcher/cluster/executor.py).
        self.fetch_all: Any = client.fetch_all
        self.crawl: Crawl[Job] | None = None
        if options.mirror is not None:
            from fetcher.mirror.crawl import Crawl  # -r only (and its HTML parser)

            self.crawl = Crawl(self, options.mirror, opener=client, policy=client.policy,
                               limits=client.settings.limits, root=self.layout.root,
                               user_agent=client.settings.user_agent or "fetcher", log=progress.log)  # fmt: skip
            if self.crawl.state_path is not None:
                self.layout.reserve(self.crawl.state_path)  # no URL is saved over the state file

    @property
    def pending(self) -> int:
        return self.window.pending

    # -- records --------------------------------------------------------------------

    def finish(self, job: Job, record: dict[str, Any], *, queued: bool = True) -> None:
        """Record a job's outcome; `queued` is False for jobs that never reached the queue."""
        if not queued:
            self.progress.url_added()
        status = record["status"]
        self._count(job, status, record.get("bytes"), record.get("change"),
                    record.get("kind") in ("listing", "advisory"))  # fmt: skip
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

    def _count(self, job: Job, status: str, size: int | None, change: str | None = None, listed: bool = False) -> None:
        """The job's outcome in the tally; the job is done and no longer kept by URL."""
        self.tally.count(status, size, change=change, listed=listed)
        job.done = True
        if job.url is not None and self.by_url.get(key := str(job.url)) is job:
            del self.by_url[key]

    def skip(self, job: Job, reason: str, **fields: Any) -> None:
        """Record a job that never reached the queue as skipped, with the reason."""
        self.finish(job, job_record(job, "skipped", reason=reason, **fields), queued=False)

    def unchanged(self, job: Job, path: Path) -> None:
        """-N: record a job whose copy is current as retrieved, unchanged."""
        self.finish(job, job_record(job, "ok", path=str(path), bytes=0, change="unchanged"), queued=False)

    def stop(self, error: OutputError) -> None:
        """The manifest cannot be written (a full disk): start nothing more, end with this error.

        The queue is closed and emptied, so nothing new starts; the
        transfers under way finish (or keep their `.part`), and `run`
        raises the error once the loop is over.
        """
        self.fatal = error
        if self.outcomes is not None and hasattr(self.outcomes, "stop_starting"):
            self.outcomes.stop_starting()  # URLs already taken into a lane
        self.window.stop()

    # -- taking URLs on ---------------------------------------------------------------

    def child(self, parent: Job, text: str, url: URL | None, entry: Entry | None) -> Job:
        """A job for a URL found in `parent`'s listing or page (fetcher.mirror.crawl)."""
        return Job(text=text, line=None, url=url, depth=parent.depth + 1, parent=str(parent.url),
                   suggested=entry.filename if entry is not None else None,
                   immutable=entry.immutable if entry is not None else False)  # fmt: skip

    def document_path(self, job: Job) -> Path:
        assert job.url is not None
        return self.layout.document(job.url, job.suggested)

    def enqueue(self, job: Job) -> None:
        assert job.url is not None
        if self.fatal is not None:
            return
        key = str(job.url)
        new, line = self.visited.first(key, job.line)
        if not new:
            if job.parent is None:
                where = f"line {line}" if line is not None else "the command line"
                self.skip(job, f"duplicate of {where}")
            return
        if self.done and mask_secrets(key) in self.done:
            self.skip(job, "done in --skip-done manifest")
            return
        if self.options.no_clobber and not self.options.recursive and self._kept(job):
            return
        self.by_url[key] = job
        self.taken += 1
        self.progress.url_added()
        self.window.put(job.url if job.notes is None else (job.url, job.notes))

    def _kept(self, job: Job) -> bool:
        """--no-clobber (not with -r): a URL whose file under -d exists is skipped, one line saying so."""
        path = self.document_path(job)
        if not os.path.lexists(path):
            job.path = path  # the name is taken now: `destination` must not draw another
            return False
        self.progress.log(f"fetch: {path} exists; kept it (--no-clobber)")
        self.skip(job, "exists (--no-clobber)", path=str(path))
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
                self.finish(job, job_record(job, "failed", error=UsageError(job.text.problem)), queued=False)
                continue
            try:
                job.url = parse_url(job.text)
            except URLError as error:
                self.finish(job, job_record(job, "failed", error=error), queued=False)
                continue
            if self.crawl is not None:
                self.crawl.start(job)  # its origin is one links may lead to; -N: a saved start page's conditions
            self.enqueue(job)

    # -- outcomes ---------------------------------------------------------------------

    async def handle(self, outcome: Outcome) -> None:
        job = self.by_url[outcome.url]
        self._outcome = (job, outcome)  # for -w's line (`finish`)
        if self._quiet_saves and outcome.error is None and type(outcome.result) is Download:
            # A saved file whose record nobody reads (no manifest, no -v line, no bar, no -r, no -J):
            # `finish`'s counts, without the record.
            self._count(job, "ok", outcome.result.bytes)
            self.window.finished()
            return
        common: dict[str, Any] = {"attempts": outcome.attempts, "seconds": round(outcome.seconds, 4)}
        crawl = self.crawl
        if outcome.error is not None:
            record = job_record(job, "failed", error=outcome.error, **common)
            if job.path is not None:
                record["target"] = self.named(job.path)  # the name stays this URL's in a --skip-done re-run
                if self.remote is None and partial_path(job.path).exists():
                    record["partial"] = str(partial_path(job.path))
            self.finish(job, record)
        elif isinstance(outcome.result, Download):
            result = outcome.result
            if self.options.content_disposition and result.filename:
                result = await self._server_named(job, result)
            if crawl is not None:
                common.update(crawl.saved(job, result.path, result.etag, result.content_type))
            self.finish(job, self._saved(job, result, common))
            if crawl is not None:  # -r (a call the other saves skip: one per URL)
                await crawl.follow_page(job, result.path, result.content_type, str(result.url))
        elif isinstance(outcome.result, Fetched) and crawl is not None and crawl.not_modified(job, outcome.result):
            self.finish(job, job_record(job, "ok", path=str(job.path), bytes=0, change="unchanged", **common))
            await crawl.reread(job)
        elif isinstance(outcome.result, Fetched) and outcome.result.metadata.get("skipped"):
            reason = str(outcome.result.metadata["skipped"])  # -r: a link that leads outside or loops
            name = str(job.url).rstrip("/").rsplit("/", 1)[-1]
            self.finish(job, job_record(job, "skipped", reason=reason, name=name, **common))
        elif isinstance(outcome.result, Fetched):
            self._fetched(job, outcome.result, common)
        self.window.finished()

    def _fetched(self, job: Job, fetched: Fetched, common: dict[str, Any]) -> None:
        """A listing (saved as JSON under -d, followed by -r) or an advisory."""
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
                self.finish(job, job_record(job, "failed", error=error, kind=fetched.kind, **common))
                return
            path = str(target)
        loop = None
        if self.crawl is not None and fetched.kind == "listing":
            loop = self.crawl.listed(job, fetched.entries)
            if loop is not None:
                common["loop_of"] = loop
        self.finish(job, job_record(job, "ok", kind=fetched.kind, path=path, content_type=fetched.content_type,
                                    **common))  # fmt: skip
        if self.crawl is not None and fetched.kind == "listing" and loop is None:
            self.crawl.follow_links(job, fetched.entries)

    async def _server_named(self, job: Job, result: Download) -> Download:
        """--content-disposition: move an HTTP document to the name its server suggested, in the same
        directory (a resumed one keeps its name: its `.part` was the URL's)."""
        assert job.url is not None
        if job.url.scheme not in ("http", "https") or result.resumed_from or result.filename is None:
            return result
        target = self.layout.renamed(job.url, result.path, result.filename)
        if target == result.path:
            return result
        if self.options.no_clobber and os.path.lexists(target):
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

    def _saved(self, job: Job, result: Download, common: dict[str, Any]) -> dict[str, Any]:
        return job_record(job, "ok", bytes=result.bytes, sha256=result.sha256, path=self.named(result.path),
                          content_type=result.content_type, **common)  # fmt: skip

    # -- the run ------------------------------------------------------------------------

    async def run(self, jobs: Iterable[Job], stream: int | None = None) -> None:
        """Retrieve `jobs` (read a window at a time), and with `stream` (-i -) the URLs read
        from that descriptor as they come."""
        reading = self.feeder.begin(jobs, stream)
        if self.fatal is not None:
            raise self.fatal
        if self.window.over:
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
                feeding.start_soon(self.feeder.feed_stream, stream)
            elif reading:
                feeding.start_soon(self.feeder.feed_inputs)
            async with self.fetch_all(
                self.window.receive,
                jobs=self.options.jobs,
                per_host=self.options.per_host,
                destination=destination,
                resume=self.options.resume,
                on_chunk=on_chunk,
                **options,
            ) as outcomes:
                self.outcomes = outcomes
                async for outcome in outcomes:
                    await self.handle(outcome)
            feeding.cancel_scope.cancel()  # stopped early (the manifest's disk is full): stop reading stdin
        if self.fatal is not None:
            raise self.fatal

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
                record = job_record(job, "interrupted", exit_code=130)
                if job.path is not None and self.remote is None and partial_path(job.path).exists():
                    record["partial"] = str(partial_path(job.path))
                    self.parts_kept += 1
                self.finish(job, record)
        try:
            for job in self.feeder.rest():
                self.finish(job, job_record(job, "interrupted", exit_code=130), queued=False)
        except OSError as error:  # the list became unreadable: what was read has its records
            self.progress.log(f"fetch: cannot read -i {self.options.input_file}: {error.strerror or error}")
