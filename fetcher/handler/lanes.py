"""The lane protocol: what a handler's bulk lane is given and may call (the scheduler is fetcher/bulk/lanes.py).

`fetch_all` gives every URL its own task.  A handler that offers a lane
(`lane_key`, `run_lane`: `LaneHandler`) gets the URLs of one key (an
origin, a login) grouped instead, and a worker that serves many of them
over one connection: it takes `LaneItem`s from its `LaneWork`, reports each
outcome (`done`, `failed`), and hands whatever it cannot do itself to the
task path (`general`), which applies every rule (guard, credentials,
retries, resume, limits) as for any URL.

Documents go to disk through the writer the bulk room injects
(`LaneWork.writer`): this module knows no file and no scheduler.  The
sequential lane (`sequential_key`, `run_sequential`) serves handlers whose
URLs each need an exchange of their own (Gopher): it saves the task path's
frame around each exchange, nothing more.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fetcher import guard
from fetcher.errors import FetchError
from fetcher.resource import check_length
from fetcher.url import URL

if TYPE_CHECKING:
    from fetcher.handler.session import SessionHost
    from fetcher.resource import Resource

#: URLs a sequential lane worker takes from the queue at once (it runs them one by one).
SEQUENTIAL_BATCH = 16


@dataclass(slots=True)
class LaneItem:
    """One URL on a lane: the text it came as (the outcome's `url`) and its parsed form."""

    text: str
    url: URL
    started: float = 0.0
    #: Where its document goes, once asked (`LaneWork.path`).
    path: Path | None = None


class LaneWriter(Protocol):
    """A document written as its bytes arrive, under the run's rules (fetcher.disk.writer.BodyWriter)."""

    #: Bytes written so far.
    size: int

    def write(self, chunk: bytes) -> None: ...

    def finish(
        self, modified: float | None, filename: str | None = None, etag: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Any:  # fmt: skip
        """Put the document in place; the value is the URL's result (`LaneWork.done`)."""

    def abandon(self) -> None:
        """The transfer failed: keep what arrived for a resume, never the target."""


class LaneWork(Protocol):
    """One lane worker's view of its lane: take URLs, report outcomes, hand URLs to the task path."""

    @property
    def key(self) -> Hashable:
        """What the lane's URLs share (the handler's `lane_key`)."""

    @property
    def client(self) -> SessionHost:
        """The client the run belongs to: settings, pool, budgets (what a Session is built on)."""

    @property
    def on_chunk(self) -> Callable[[URL, int], None] | None:
        """`fetch_all`'s progress callback, per chunk of a document (None: nobody counts)."""

    @property
    def retired(self) -> bool:
        """True once the worker takes no more URLs."""

    @property
    def disabled(self) -> bool:
        """The lane's key was disabled (`disable`): its URLs take the task path from now on."""

    def take(self, count: int) -> list[LaneItem]:
        """Up to `count` queued URLs, without waiting (an empty list when none are queued)."""

    async def wait(self, count: int) -> list[LaneItem]:
        """Up to `count` URLs, waiting for more while there may be some; an empty list retires the worker."""

    def writer(self, item: LaneItem, content_type: str | None) -> LaneWriter:
        """Where `item`'s document is written (named now if it was not yet)."""

    def disable(self) -> None:
        """This origin showed something the lane does not handle: its URLs take the task path from now on."""

    async def open(self, url: URL) -> Resource:
        """Open `url` as the task path does (guard, handler), without its retries or resume."""

    async def done(self, item: LaneItem, result: Any) -> None:
        """`item` succeeded: `result` is what its writer's `finish` returned."""

    async def kept(self, item: LaneItem, resource: Resource) -> None:
        """`item` was a listing or an advisory: its facts are the outcome (no body is saved)."""

    async def failed(self, item: LaneItem, error: FetchError) -> None:
        """The lane's attempt failed: a transient error is retried on the task path."""

    async def general(
        self, item: LaneItem, *, first_error: FetchError | None = None, redirect: URL | None = None
    ) -> None:
        """Retrieve `item` on the task path (retries, resume and all), inline."""


class LaneHandler(Protocol):
    """What a handler provides to offer a lane (optional: handlers without it take the task path)."""

    def lane_key(self, url: URL, client: SessionHost, *, resume: bool) -> Hashable | None: ...

    async def run_lane(self, work: LaneWork) -> None: ...


_trace = logging.getLogger("fetcher.trace")


def admits(url: URL, client: SessionHost, *, resume: bool, own_exchange: bool = False) -> bool:
    """True unless something applied per URL by the task path keeps `url` off every lane.

    The one admission check of every lane.  Refused: a resume, an archive
    tap, --max-time, --max-filesize, --limit-rate (each is applied by the
    task path's `Client.open`), -I, -u credentials (bound to the first URL's
    origin there), a URL the guard refuses (the task path reports it).
    `own_exchange`: the lane speaks to the server itself rather than through
    the handler's `open` (HTTP's pipelined requests, FTP's kept login), so a
    URL's own login (userinfo) and -v, whose trace such a lane does not
    write, keep it off too.  Each handler's `lane_key` adds only what is its
    protocol's own.
    """
    settings = client.settings
    # No archive records unless fetcher.archive.tap was loaded (its `recording` starts every recorder).
    tap = sys.modules.get("fetcher.archive.tap")
    if (
        resume
        or (own_exchange and (getattr(url, "user", None) is not None or _trace.isEnabledFor(logging.DEBUG)))
        or settings.max_time
        or settings.max_size is not None
        or settings.limit_rate
        or settings.head
        or settings.user is not None
        or (tap is not None and tap.active_recorder() is not None)
    ):
        return False
    try:
        guard.check(url, client.policy)
    except FetchError:
        return False
    return True


def sequential_key(url: URL, client: SessionHost, *, resume: bool) -> Hashable | None:
    """The lane key of a handler that opts into `run_sequential`: the host, when `admits` lets it."""
    if not admits(url, client, resume=resume):
        return None
    return (url.scheme, getattr(url, "host", None), getattr(url, "port", None))


async def run_sequential(work: LaneWork) -> None:
    """Open each URL as the task path does (guard, handler) and deliver it (`deliver`).

    What this saves is the task path's frame around the exchange: a task, a
    per-host acquisition, a budget scope and retry frame, and `save`'s
    thread hops, per URL.  Failures are retried on the task path, as there.
    """
    from fetcher.net.budget import current_budget

    client = work.client
    while items := (work.take(SEQUENTIAL_BATCH) or await work.wait(SEQUENTIAL_BATCH)):
        for item in items:
            current_budget.set(client.budget(item.url))
            try:
                resource = await work.open(item.url)
            except FetchError as error:
                await work.failed(item, error)
                continue
            await deliver(work, item, resource)


async def deliver(
    work: LaneWork, item: LaneItem, resource: Resource, *, settle: Callable[[], Awaitable[None]] | None = None
) -> None:
    """Report `resource` as `item`'s outcome: a document written through `work.writer`, else its facts.

    The resource is closed in every case; the caller's connection state is
    what the handler's closer left.  `settle` runs after a failure's close
    and before the failure is reported (and perhaps retried on the task
    path): a lane gives back a connection there that the retry can reuse.
    """
    if resource.kind != "document":
        await resource.aclose()
        await work.kept(item, resource)
        return
    url = item.url
    on_chunk = work.on_chunk
    try:
        writer = work.writer(item, resource.content_type)
    except FetchError as error:
        await resource.aclose()
        if settle is not None:
            await settle()
        await work.failed(item, error)
        return
    try:
        async for chunk in resource:
            writer.write(chunk)
            if on_chunk is not None:
                on_chunk(url, len(chunk))
        check_length(resource, writer.size)
        modified = resource.modified.timestamp() if resource.modified is not None else None
        result = writer.finish(modified, resource.filename, resource.metadata.get("etag"), resource.metadata)
    except FetchError as error:
        writer.abandon()
        await resource.aclose()
        if settle is not None:
            await settle()
        await work.failed(item, error)
        return
    except BaseException:
        writer.abandon()
        await resource.aclose()
        raise
    await resource.aclose()
    await work.done(item, result)
