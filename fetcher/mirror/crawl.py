"""The -r side of a bulk run: which links of a listing or a page are taken on, and with what notes.

The run (fetcher.cli.run) owns the jobs, the manifest and the window of
URLs in flight; it tells this module of every start URL, listing and
saved page, and this module applies the mirror's rules to what they lead
to (fetcher.mirror.rules: scope, origins, loops, robots.txt, -N) and
answers through the run's `CrawlRun` methods: a job to enqueue, or one to
record as skipped or unchanged.  What it learns about a URL that changes
how it is asked for (-N's If-Modified-Since and ETag, the directory an FTP
name of unknown target must stay in) goes on the job as request notes
(fetcher.handler.notes), which travel with it to the handler.

It knows the run only through `CrawlRun` and `CrawlJob`, so the mirror
stays below the command and the bulk engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from fetcher import guard
from fetcher.errors import UnsafeURL, URLError
from fetcher.handler.notes import NO_NOTES, Confinement, RequestNotes
from fetcher.mirror.etags import EtagStore
from fetcher.mirror.links import is_html, page_links
from fetcher.mirror.rules import Mirror, MirrorOptions
from fetcher.net import aio
from fetcher.resource import Entry
from fetcher.text import escape, mask_secrets
from fetcher.url import URL, parse_url

if TYPE_CHECKING:
    from fetcher.guard import Policy
    from fetcher.settings import Limits


class CrawlJob(Protocol):
    """What the crawl reads and sets of a run's job."""

    text: str
    url: URL | None
    depth: int
    parent: str | None
    path: Path | None
    suggested: str | None
    immutable: bool
    notes: RequestNotes | None


J = TypeVar("J", bound=CrawlJob)


class Visited(Protocol):
    def add(self, key: str) -> None: ...

    def __contains__(self, key: str) -> bool: ...


class CrawlRun(Protocol[J]):
    """What the crawl asks of the run it serves (fetcher.cli.run.BulkRun)."""

    @property
    def visited(self) -> Visited: ...

    @property
    def done(self) -> set[str]:
        """URLs (masked) a --skip-done manifest records as done."""

    @property
    def pending(self) -> int:
        """URLs taken on and not finished."""

    @property
    def taken(self) -> int:
        """URLs taken on in all."""

    def child(self, parent: J, text: str, url: URL | None, entry: Entry | None) -> J:
        """A job for a URL found in `parent`'s listing or page (`entry`: the row that named it)."""

    def enqueue(self, job: J) -> None: ...

    def skip(self, job: J, reason: str, **fields: Any) -> None:
        """Record `job` as skipped (it never reached the queue)."""

    def unchanged(self, job: J, path: Path) -> None:
        """Record `job` as retrieved already: its copy at `path` is current (-N)."""

    def document_path(self, job: J) -> Path:
        """Where `job`'s document goes (its name is taken now)."""


def _note(job: CrawlJob, **fields: Any) -> None:
    job.notes = dataclasses.replace(job.notes or NO_NOTES, **fields)


class Crawl(Generic[J]):
    """The mirror's rules applied to one run's links (see the module docstring)."""

    def __init__(
        self,
        run: CrawlRun[J],
        options: MirrorOptions,
        *,
        opener: Any,
        policy: Policy,
        limits: Limits,
        root: Path,
        user_agent: str,
        log: Callable[[str], None],
    ) -> None:
        self.run = run
        self.options = options
        #: What robots.txt is read with (the run's Client: `opener.open(url)`).
        self.opener = opener
        self.policy = policy
        self.limits = limits
        self.log = log
        self.mirror = Mirror(options, user_agent=user_agent, log=log)
        #: The --limit cap that stopped the following of links ("frontier" or "pages"), once one did.
        self.capped: str | None = None
        if options.timestamping:
            self.mirror.etags = EtagStore(root)
            for problem in self.mirror.etags.load():
                log(problem)

    @property
    def state_path(self) -> Path | None:
        """The state file -N keeps in the output directory (no URL may be saved under its name)."""
        return self.mirror.etags.path if self.mirror.etags is not None else None

    def close(self) -> str | None:
        """The run is over: -N's state is written; a line saying why it could not be, or None."""
        return self.mirror.etags.save() if self.mirror.etags is not None else None

    # -- what the run tells ---------------------------------------------------------

    def start(self, job: J) -> None:
        """A start URL: its origin is one links may lead to; -N asks whether a saved start page changed."""
        assert job.url is not None
        self.mirror.start(job.url)
        if job.url.scheme in ("http", "https"):
            self._up_to_date(job)

    def listed(self, job: J, entries: list[Entry]) -> str | None:
        """A listing arrived: the URL whose listing it repeats (a loop, reported here once), or None."""
        assert job.url is not None
        if job.parent is None:
            self.mirror.started(job.url, listing=True)
        loop = self.mirror.looped(job.url, entries)
        if loop is not None:
            self.log(f"fetch: {escape(str(job.url))}: a loop (lists what {escape(loop)} lists); not followed further")
        return loop

    def follow_links(self, job: J, entries: list[Entry]) -> None:
        """Take on what a listing leads to, as far as scope, origins, loops and the caps allow."""
        assert job.url is not None
        if job.depth >= self.options.depth:
            return
        for entry in entries:
            child = self._admit(job, entry)
            if child is None:
                continue
            if self._over_cap():
                return
            self._take(job, entry, child)

    def saved(self, job: J, path: Path, etag: str | None, content_type: str | None) -> dict[str, Any]:
        """A document was saved: what its record adds (`change`: new or updated; its `etag`)."""
        assert job.url is not None
        extra: dict[str, Any] = {"change": self.mirror.saved(job.url, path, etag, content_type)}
        if etag is not None:
            extra["etag"] = etag
        return extra

    def not_modified(self, job: J, fetched: Any) -> bool:
        """-N over HTTP: the server answered 304 to If-Modified-Since (`fetched`: the `Fetched` advisory);
        the local copy stays."""
        return bool(fetched.metadata.get("status") == 304 and job.path is not None)

    async def reread(self, job: J) -> None:
        """A page answered 304: its copy is the page, and its links are checked as a fresh page's
        (with the type it was saved with)."""
        assert job.url is not None and job.path is not None
        await self.follow_page(job, job.path, self.mirror.page_type(job.url, job.path), str(job.url))

    async def follow_page(self, job: J, path: Path | None, content_type: str | None, page_url: str) -> None:
        """-r over HTTP: the links of a saved HTML page, under robots.txt, as a listing's."""
        if job.url is None or job.url.scheme not in ("http", "https"):
            return
        if job.parent is None:
            self.mirror.started(job.url, listing=False)
        if job.depth >= self.options.depth or path is None or (content_type and not is_html(content_type, None)):
            return
        links, note = await aio.run_sync(  # without a type, is_html reads the first bytes: in the thread too
            lambda: page_links(path, page_url, content_type, max_links=self.limits.frontier)
            if is_html(content_type, path) else ([], None)
        )  # fmt: skip
        if note:
            self.log(f"fetch: {escape(page_url)}: {escape(note)}; the links found first are followed")
        admitted = []
        for link in links:
            entry = Entry(name=link, url=link)
            child = self._admit(job, entry)  # scope and origin first: robots.txt only of origins crawled
            if child is None or child.url is None:
                continue
            if not await self.mirror.robots_allow(self.opener, child.url):
                self.run.visited.add(str(child.url))
                self.run.skip(child, "robots.txt disallows it (--no-robots ignores it)")
                continue
            admitted.append((entry, child))
        for entry, child in admitted:
            if self._over_cap():
                return
            self._take(job, entry, child)

    # -- the rules, link by link ------------------------------------------------------

    def _admit(self, job: J, entry: Entry) -> J | None:
        """The job for a link -r follows, or None: out of scope, off the run's origins, seen, or refused.

        Everything that decides without a connection is here, so an HTML
        page's links meet it before robots.txt is fetched for their origin.
        """
        assert job.url is not None
        url = None
        if entry.url:
            try:
                url = parse_url(entry.url)
            except URLError:
                return None
        reason = self.mirror.consider(job.url, entry, url)
        if reason is not None or url is None:
            self._skips(job, entry, url, reason)
            return None
        away = self.mirror.leaves(job.url, url)
        if away == "":  # another host or scheme: not this tree, dropped without a word
            return None
        child = self.run.child(job, str(url), url, entry)
        if str(url) in self.run.visited:
            return None
        try:  # before the other-port reason: a refused port is the stronger news
            guard.check(url, self.policy)
        except UnsafeURL as refusal:
            self.run.visited.add(str(url))
            self.run.skip(child, f"guard: {refusal.message}")
            return None
        if away is not None:
            self._skips(job, entry, url, away)
            return None
        return child

    def _take(self, job: J, entry: Entry, child: J) -> None:
        """Queue an admitted link (unless -N finds its copy current, or another page queued it meanwhile)."""
        assert job.url is not None and child.url is not None
        url = child.url
        if str(url) in self.run.visited or (child.immutable and self._saved_already(child)):
            return
        self.mirror.adopt(job.url, url, entry)
        if (confined := self.mirror.confinement(job.url, entry, url)) is not None:
            _note(child, confinement=Confinement(confined))
        if entry.type not in ("directory", "menu") and self._up_to_date(child):
            return
        self.run.enqueue(child)

    def _saved_already(self, job: J) -> bool:
        """An immutable entry (a numbered news article) whose file exists is not fetched again."""
        assert job.url is not None
        key = str(job.url)
        if key in self.run.visited or mask_secrets(key) in self.run.done:
            return False
        job.path = self.run.document_path(job)
        if not job.path.is_file():
            return False
        self.run.visited.add(key)
        self.run.skip(job, "saved already", path=str(job.path))
        return True

    def _skips(self, job: J, entry: Entry, url: URL | None, reason: str | None) -> None:
        """A link the scope, origin, loop and can't-mirror rules refused: recorded once (silently dropped for "")."""
        key = str(url) if url is not None else f"{job.url} {entry.name}"
        if reason and key not in self.run.visited:
            self.run.visited.add(key)
            self.run.skip(self.run.child(job, key, url, None), reason, name=entry.name)

    def _up_to_date(self, job: J) -> bool:
        """-N: a file whose local copy matches its listing is recorded as unchanged, not retrieved;
        else an HTTP copy's time (and ETag) go on the job as its conditions."""
        assert job.url is not None
        key = str(job.url)
        if not self.mirror.options.timestamping or key in self.run.visited or mask_secrets(key) in self.run.done:
            return False
        path = self.run.document_path(job)
        job.path = path
        if self.mirror.up_to_date(job.url, path):
            self.run.visited.add(key)
            self.run.unchanged(job, path)
            return True
        when = self.mirror.condition(job.url, path)
        if when is not None:
            _note(job, modified_since=when, etag=self.mirror.etag(job.url, path))
        return False

    def _over_cap(self) -> bool:
        """True (with a one-line note, once) when -r may take on no more URLs: memory stays bounded."""
        if self.capped is not None:
            return True
        if self.run.pending >= self.limits.frontier:
            self.capped, value, what = "frontier", self.limits.frontier, "URLs waiting"
        elif self.run.taken >= self.limits.pages:
            self.capped, value, what = "pages", self.limits.pages, "URLs in this run"
        else:
            return False
        self.log(
            f"fetch: -r stops following links at {value} {what} (--limit {self.capped}={value}); "
            f"what is queued is still retrieved; raise the cap with --limit {self.capped}=N"
        )
        return True
