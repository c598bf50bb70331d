"""`Client`: settings, pools, credentials and concurrency; the library's front door.

The client builds a `Session` (fetcher.handler.session) for each retrieval
and hands it to the scheme's handler, found by name in fetcher.registry;
handlers never see the Client, only what `SessionHost` names of it.
`fetch_all` is the door to the bulk engine (fetcher.bulk), which stands
below the client and gets it handed in.
"""

from __future__ import annotations

import logging
import os
import random
import ssl
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, Unpack

from fetcher import guard
from fetcher.bulk.outcomes import Fetched as Fetched
from fetcher.bulk.outcomes import Outcome as Outcome
from fetcher.bulk.outcomes import bulk_user_origin
from fetcher.disk.names import partial_path, partial_size
from fetcher.disk.save import save
from fetcher.disk.writer import Download
from fetcher.errors import AuthError, FetchError, NotFound, UsageError
from fetcher.handler.context import in_bulk_run, start_tap
from fetcher.handler.notes import NO_NOTES, Request, RequestNotes
from fetcher.handler.session import Session as Session
from fetcher.net import aio
from fetcher.net.budget import Budget, current_budget
from fetcher.net.connection import Connection
from fetcher.net.pool import Pool
from fetcher.registry import get_handler, hooks
from fetcher.resource import Resource
from fetcher.settings import BULK_SPEED_LIMIT, Settings, SettingsOverrides
from fetcher.url import URL, parse_url

if TYPE_CHECKING:
    import netrc

    from fetcher.archive import tap
    from fetcher.bulk.batch import FetchAll
    from fetcher.handler.validators import Validators
    from fetcher.net.ratelimit import RateLimiter

log = logging.getLogger("fetcher")
T = TypeVar("T")


async def _settle_failed_tap(failed: tap.Tap, error: BaseException) -> None:
    """A retrieval the server refused is archived (an HTTP error page; the dialogue of an FTP 550); others are not."""
    if isinstance(error, FetchError) and (failed.answered or isinstance(error, (NotFound, AuthError))):
        with aio.cancel_scope(shield=True):
            await failed.commit()
    else:
        failed.discard()


class Client:
    """`async with Client(...) as client:` then `open`, `fetch`, `download`, `fetch_all`."""

    def __init__(self, settings: Settings | None = None, **overrides: Unpack[SettingsOverrides]) -> None:
        self.settings = Settings.build(settings, **overrides)
        self.policy = self.settings.policy
        self.pool = Pool(idle_timeout=self.settings.idle_timeout)
        self._ssl_context: ssl.SSLContext | None = None
        self._netrc: netrc.netrc | bool | None = False
        #: --limit-rate: one bucket for every transfer of this client (a whole bulk run or mirror).
        self.rate: RateLimiter | None = None
        if self.settings.limit_rate:
            from fetcher.net.ratelimit import RateLimiter  # only --limit-rate needs it: not at start-up

            self.rate = RateLimiter(self.settings.limit_rate)
        #: (host, port) of a URL -> the address and port its last connection reached (through a proxy:
        #: the proxy's), for -w's remote_ip/remote_port; None (nothing kept) unless the caller sets a dict.
        self.peers: dict[tuple[str, int], tuple[str, int]] | None = None

    def __repr__(self) -> str:
        return f"<Client {self.settings!r}>"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        with aio.cancel_scope(shield=True):
            await self.pool.aclose()

    # -- shared resources -------------------------------------------------

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            context = ssl.create_default_context(cafile=self.settings.cacert)
            if self.settings.insecure:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            self._ssl_context = context
        return self._ssl_context

    def remember_peer(self, url: URL, connection: Connection, port: int) -> None:
        """Where a connection for `url` went (see `peers`)."""
        host, url_port = getattr(url, "host", None), getattr(url, "port", None)
        if self.peers is not None and host is not None and url_port is not None:
            self.peers[(host, url_port)] = (connection.peer_address() or connection.host, port)

    def netrc_credentials(self, host: str) -> tuple[str, str | None] | None:
        if not self.settings.use_netrc:
            return None
        if self._netrc is False:
            path = self.settings.netrc_file or os.environ.get("NETRC") or os.path.expanduser("~/.netrc")
            self._netrc = None
            if os.path.isfile(path):  # most machines have none: no netrc (and shlex) import then
                import netrc

                try:
                    self._netrc = netrc.netrc(path)
                except (OSError, netrc.NetrcParseError):
                    pass
        if self._netrc is None or isinstance(self._netrc, bool):
            return None
        entry = self._netrc.authenticators(host)
        if entry is None:
            return None
        login, _, password = entry
        return login, password

    # -- retrieval ----------------------------------------------------------

    def _session(self, url: URL, *, offset: int = 0, validators: Validators | None = None,
                 notes: RequestNotes = NO_NOTES) -> Session:  # fmt: skip
        """The session of a retrieval the caller starts (not a redirect's): -u belongs to a bulk run's first URL."""
        return Session(self, url, offset=offset, user_origin=bulk_user_origin.get(), validators=validators,
                       notes=notes)  # fmt: skip

    async def _open(self, session: Session) -> Resource:
        """Run one retrieval: the guard, then `session.url`'s handler, with the archive tap around it."""
        url = session.url
        guard.check(url, self.policy)
        handler = get_handler(url.scheme)
        session.tap = start_tap(url.redacted(), url.scheme, keeps_dialogue=hooks(url.scheme).keeps_dialogue)
        try:
            resource = await handler.open(url, session)
        except BaseException as error:
            if session.tap is not None:
                await _settle_failed_tap(session.tap, error)
            raise
        if session.hops and "redirects" not in resource.metadata:  # the last hop's count (-w %{num_redirects})
            resource.metadata["redirects"] = session.hops
        if session.tap is not None and resource.tap is None and not session.tap.closed:
            resource.tap = session.tap
        if resource.max_size is None:
            resource.max_size = self.settings.max_size
        return resource

    def budget(self, url: URL) -> Budget:
        """The time rules for one URL (see `fetcher.net.budget.Budget`)."""
        speed = self.settings.speed_limit
        if speed is None:
            speed = BULK_SPEED_LIMIT if in_bulk_run() else 0
        return Budget(
            url.redacted(), max_time=self.settings.max_time, speed_limit=speed, speed_time=self.settings.speed_time
        )

    @asynccontextmanager
    async def open(
        self,
        url: URL | str,
        *,
        offset: int = 0,
        redirect: URL | None = None,
        validators: Validators | None = None,
        notes: RequestNotes = NO_NOTES,
    ) -> AsyncIterator[Resource]:
        """The resource, streaming; closed (or its connection pooled) on exit.

        `redirect`: `url` answered with a redirect to there (read by a bulk
        lane, fetcher/bulk/lanes.py); it is followed under the redirect policy.
        `validators`: what was recorded about the document a resume from
        `offset` continues (fetcher/disk/resume.py); a handler that finds it
        changed starts over and says why in `metadata["restart"]`.
        `notes`: what the caller knows about `url` (fetcher.handler.notes:
        -N's If-Modified-Since and ETag, FTP confinement); the handler reads them.

        Everything fetcher does for this URL inside the block (connecting,
        the dialogue, reading the body) is bounded by --max-time and the
        low-speed rule; the caller's own work between reads is not.
        """
        if isinstance(url, str):
            url = parse_url(url)
        budget = self.budget(url)
        token = current_budget.set(budget)
        try:
            # The scope is the backstop for waits outside `Connection` reads
            # (name lookup, UDP exchanges); those raise the same Timeout themselves.
            with aio.cancel_scope(deadline=budget.deadline) as scope:
                if redirect is None:
                    resource = await self._open(self._session(url, offset=offset, validators=validators, notes=notes))
                else:  # the lane read the redirect; follow it as the handler would have
                    resource = await Session(self, url, offset=offset, validators=validators).follow(redirect)
            if scope.cancelled_caught:
                raise budget.expired()
            resource.budget = budget
            resource.rate = self.rate
            try:
                yield resource
            finally:
                await resource.aclose()
        finally:
            try:
                current_budget.reset(token)
            except ValueError:  # left in another context than it was entered in
                pass

    async def fetch(self, url: URL | str, *, notes: RequestNotes = NO_NOTES) -> Fetched:
        """Retrieve into memory: bytes for documents, entries for listings."""
        async with self.open(url, notes=notes) as resource:
            content = await resource.read() if resource.kind == "document" else b""
            return Fetched.with_body(resource, content)

    async def download(self, url: URL | str, path: str | os.PathLike[str], *, resume: bool = False) -> Download:
        """Stream a document to `path`, written as `path.part` and renamed when complete.

        With `resume`, an existing `.part` file is continued where the
        protocol allows (FTP REST, HTTP Range); otherwise it is restarted.
        A failure leaves the `.part` file (for a later resume), never `path`.
        """
        result = await self.retrieve(url, Path(path), resume=resume)
        if not isinstance(result, Download):
            raise UsageError(
                f"{result.url} is a {result.kind}, not a document",
                hint="print it without -o, or use --json/--links",
            )
        return result

    async def retrieve(
        self,
        url: URL | str,
        path: Path,
        *,
        resume: bool = False,
        on_chunk: Callable[[int], None] | None = None,
        redirect: URL | None = None,
        digest: bool = True,
        notes: RequestNotes = NO_NOTES,
    ) -> Fetched | Download:
        """Save a document to `path` (see `download`); return listings and advisories as `Fetched`.

        `digest=False`: no SHA-256 is computed (`Download.sha256` is None).
        """
        from fetcher.disk.resume import recorded, restart_note

        offset = partial_size(path) if resume else 0
        validators = recorded(partial_path(path)) if offset else None
        async with self.open(url, offset=offset, redirect=redirect, validators=validators, notes=notes) as resource:
            if resource.kind != "document":
                return Fetched.without_body(resource)
            note = restart_note(resource, offset)
            if note is not None:  # bytes are fetched again: never silently (issue 29)
                log.warning("fetch: %s: %s", path, note)
            return await save(resource, path, resumed=offset > 0, on_chunk=on_chunk, digest=digest)

    def fetch_all(
        self,
        urls: Iterable[Request] | AsyncIterable[Request],
        *,
        jobs: int | None = None,
        per_host: int | None = None,
        destination: Callable[[URL], Path] | None = None,
        resume: bool = False,
        retries: int | None = None,
        on_chunk: Callable[[URL, int], None] | None = None,
        digest: bool = True,
    ) -> FetchAll:
        """Retrieve many URLs concurrently, as an async context manager::

            async with client.fetch_all(urls) as results:
                async for outcome in results:
                    ...

        An item is a URL, or a URL with its notes: `(url, RequestNotes(...))`
        (fetcher.handler.notes: what a mirror knows of it); the outcome's
        `url` is the URL's text either way.

        Outcomes (one per URL) arrive as retrievals complete.  At most `jobs`
        run at once and at most `per_host` per (host, port).  With
        `destination`, documents are saved to the path it returns (listings
        and advisories come back in memory); otherwise everything is fetched
        into memory.  Transient errors are retried with exponential backoff
        and jitter, resuming `.part` files.  Leaving the block, by reaching
        the end, `break`, an exception or a cancellation, cancels the work
        still running and closes its connections (structured concurrency: no
        task outlives the block).

        Each URL is bounded by `max_time` (per attempt) and, unless the user
        chose otherwise, by a low-speed rule (see `Settings.speed_limit`).
        -u credentials belong to the origin of the first URL; other origins
        get their own netrc entry or none (`location_trusted` lifts this).

        `digest=False` skips the SHA-256 of each saved document
        (`Download.sha256` is then None): for a caller that does not use it,
        as the command without --manifest, a few µs less per small file.
        """
        from fetcher.bulk.batch import FetchAll  # only bulk runs need it (and anyio's memory streams): not at startup

        return FetchAll(
            self,
            urls,
            jobs=jobs or self.settings.jobs,
            per_host=per_host or self.settings.per_host,
            destination=destination,
            resume=resume,
            retries=self.settings.retries if retries is None else retries,
            on_chunk=on_chunk,
            digest=digest,
        )

    async def _with_retries(
        self,
        url: URL,
        outcome: Outcome,
        destination: Callable[[URL], Path] | None,
        resume: bool,
        retries: int,
        on_chunk: Callable[[URL, int], None] | None,
        *,
        first_error: FetchError | None = None,
        redirect: URL | None = None,
        digest: bool = True,
        notes: RequestNotes = NO_NOTES,
    ) -> Fetched | Download:
        """`retrieve` or `fetch` with retries.

        A bulk lane (fetcher/bulk/lanes.py) that made the first attempt itself
        passes how it ended: `first_error`, or the `redirect` it read (the
        first attempt then goes on from there; a retry starts over at `url`).
        """
        chunk_hook = (lambda count: on_chunk(url, count)) if on_chunk is not None else None

        async def attempt(number: int) -> Fetched | Download:
            outcome.attempts = number
            if number == 1 and first_error is not None:
                raise first_error
            if destination is not None:
                return await self.retrieve(url, destination(url), resume=resume or number > 1, on_chunk=chunk_hook,
                                           redirect=redirect if number == 1 else None, digest=digest,
                                           notes=notes)  # fmt: skip
            return await self.fetch(url, notes=notes)

        return await self.with_retries(url, attempt, retries)

    async def with_retries(
        self,
        url: URL,
        attempt: Callable[[int], Awaitable[T]],
        retries: int,
        retryable: Callable[[FetchError], bool] | None = None,
    ) -> T:
        """`await attempt(1)`, then again after each transient failure, at most `retries` more times.

        Exponential backoff with jitter (0.25 s doubling, capped at 8 s, times
        0.5-1.5), at least the server's Retry-After, never past
        `retry_max_time` from the start.  `retryable` can veto a retry (the
        CLI does once bytes went to stdout).  Used by bulk runs and by
        `fetch URL` alike.
        """
        deadline = time.monotonic() + self.settings.retry_max_time
        number = 0
        while True:
            number += 1
            try:
                return await attempt(number)
            except FetchError as error:
                if not error.transient or number > retries or (retryable is not None and not retryable(error)):
                    raise
                delay = min(0.25 * 2 ** (number - 1), 8.0) * (0.5 + random.random())
                delay = max(delay, getattr(error, "retry_after", None) or 0.0)
                if time.monotonic() + delay > deadline:
                    raise
                log.info("retrying %s in %.2f s after: %s", url, delay, error)
                await aio.sleep(delay)


async def fetch(url: URL | str, **settings: Unpack[SettingsOverrides]) -> Fetched:
    """One-off retrieval: `await fetcher.fetch("ftp://host/file")`."""
    async with Client(**settings) as client:
        return await client.fetch(url)
