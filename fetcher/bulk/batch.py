"""`Client.fetch_all`: many URLs at once, as an async context manager.

The work runs in a nursery that lives exactly as long as the `async with`
block (trio's `open_*` shape), so leaving the block by any route (the end,
`break`, an exception, an enclosing cancel scope) cancels what is still
running and closes its connections before the block is left.  An async
generator that yields inside a nursery cannot promise that, which is why this
is not one.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar, cast

from fetcher.bulk.lanes import Lanes
from fetcher.bulk.outcomes import Outcome, bulk_user_origin
from fetcher.errors import FetchError
from fetcher.handler.context import bulk_run
from fetcher.handler.lanes import LaneItem
from fetcher.handler.notes import NO_NOTES, Request, RequestNotes, split_request
from fetcher.net import aio
from fetcher.url import URL, parse_url

if TYPE_CHECKING:
    from fetcher.bulk.outcomes import Fetched
    from fetcher.client import Client
    from fetcher.disk.writer import Download
    from fetcher.handler.session import Origin

#: Outcomes that may wait for the caller before a worker waits for room.
OUTCOME_BUFFER = 256
#: Outcomes handed out without a checkpoint, at most, in a row.
CHECKPOINT_EVERY = 64
#: URLs of a list taken between two `idle` calls (see `_at_hand`).
BATCH = 256

T = TypeVar("T")


class Outcomes:
    """The outcomes of a `fetch_all` block, in completion order (`async for`)."""

    def __init__(self, channel: aio.ReceiveChannel[Outcome]) -> None:
        self._channel = channel
        self._stoppers: list[Callable[[], None]] = []
        self._taken = 0
        #: Work that completed but whose outcomes never came out because the run was stopped
        #: (Ctrl-C): a cluster's files saved by batches cut short.  Filled once the block is left.
        self.saved_when_stopped: list[Outcome] = []

    def stop_starting(self) -> None:
        """Start no more URLs: those taken from the input but not started get no outcome.

        What is under way finishes.  For a caller that stops feeding (a full
        disk under its manifest): URLs waiting in a lane are dropped, as the
        caller drops what is still in its own channel.
        """
        for stop in self._stoppers:
            stop()

    def __aiter__(self) -> Outcomes:
        return self

    async def __anext__(self) -> Outcome:
        # What is already waiting is taken without a trip through the
        # scheduler (lanes deliver outcomes in bursts), with a checkpoint
        # every CHECKPOINT_EVERY outcomes so a cancellation still lands.
        self._taken += 1
        if self._taken % CHECKPOINT_EVERY:
            try:
                return self._channel.receive_nowait()
            except aio.would_block():
                pass
            except aio.channel_ended():
                raise StopAsyncIteration from None
        try:
            return await self._channel.receive()
        except aio.channel_ended():
            raise StopAsyncIteration from None


class FetchAll:
    """What `Client.fetch_all` returns: enter it with `async with` to get `Outcomes`."""

    def __init__(
        self,
        client: Client,
        urls: Iterable[Request] | AsyncIterable[Request],
        *,
        jobs: int,
        per_host: int,
        destination: Callable[[URL], Path] | None,
        resume: bool,
        retries: int,
        on_chunk: Callable[[URL, int], None] | None,
        digest: bool = True,
    ) -> None:
        self._client = client
        self._urls = urls
        self._jobs = jobs
        self._per_host = per_host
        self._destination = destination
        self._resume = resume
        self._retries = retries
        self._on_chunk = on_chunk
        self._digest = digest
        self._manager: AbstractAsyncContextManager[Outcomes] | None = None

    def __aiter__(self) -> AsyncIterator[Outcome]:
        raise TypeError(
            "Client.fetch_all is an async context manager: "
            "`async with client.fetch_all(urls) as results: async for outcome in results: ...`"
        )

    async def __aenter__(self) -> Outcomes:
        if self._manager is not None:
            raise RuntimeError("a fetch_all(...) value can be entered once")
        self._manager = self._run()
        return await self._manager.__aenter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._manager is not None
        return await self._manager.__aexit__(kind, error, tb)

    @asynccontextmanager
    async def _run(self) -> AsyncIterator[Outcomes]:
        client = self._client
        # Room for a lane's burst of outcomes (lanes.py) without a task switch per URL.
        send, receive = aio.memory_channel(max(self._jobs, OUTCOME_BUFFER))
        job_limit = aio.semaphore(self._jobs)
        host_limits: dict[tuple[str, object], aio.Semaphore] = {}
        # -u credentials belong to the origin of the first URL; later lines and
        # the links a recursion finds get their own netrc entry or nothing.
        bound: list[Origin] = []

        def host_limit(url: URL) -> aio.Semaphore:
            key = host_key(url)
            limit = host_limits.get(key)
            if limit is None:
                limit = host_limits[key] = aio.semaphore(self._per_host)
            return limit

        async def general(
            url: URL,
            outcome: Outcome,
            first_error: FetchError | None = None,
            redirect: URL | None = None,
            notes: RequestNotes = NO_NOTES,
        ) -> Fetched | Download:
            return await client._with_retries(url, outcome, self._destination, self._resume, self._retries,
                                              self._on_chunk, first_error=first_error, redirect=redirect,
                                              digest=self._digest, notes=notes)  # fmt: skip

        lanes = None
        if self._destination is not None:
            lanes = Lanes(client, job_limit=job_limit, host_limit=host_limit, per_host=self._per_host,
                          destination=self._destination, resume=self._resume, retries=self._retries,
                          on_chunk=self._on_chunk, general=general, digest=self._digest)  # fmt: skip

        async def run_one(
            text: URL | str, url: URL | None, notes: RequestNotes | None, results: aio.SendChannel[Outcome]
        ) -> None:
            bulk_run.set(True)
            if bound:
                bulk_user_origin.set(bound[0])
            async with results:
                started = time.monotonic()
                outcome = Outcome(url=str(text))
                try:
                    if url is None:
                        url = parse_url(text) if isinstance(text, str) else text
                    host = host_limit(url)
                    if lanes is not None and host.value == 0:
                        lanes.release_idle_host(host)  # idle lane workers of this host hold its slots
                    async with host:
                        outcome.result = await general(url, outcome, notes=notes or NO_NOTES)
                except FetchError as error:
                    outcome.error = error
                finally:
                    job_limit.release()
                outcome.seconds = time.monotonic() - started
                await results.send(outcome)

        async def dispatch(item: Request, nursery: aio.Nursery) -> None:
            """Send one URL down a lane (lanes.py) or to a task of its own (always, when it has notes)."""
            text, notes = split_request(item)
            url: URL | None = None
            if not bound or lanes is not None:
                try:
                    url = parse_url(text) if isinstance(text, str) else text
                except FetchError:
                    pass  # run_one reports it as this URL's outcome
                if not bound and url is not None:
                    bound.append(url.origin)
            if lanes is not None and url is not None and notes is None and (lane := lanes.key_for(url)):
                key, handler = lane
                await lanes.add(key, handler, LaneItem(str(text), url), nursery, send)
                return
            await (lanes.acquire_job() if lanes is not None else job_limit.acquire())
            nursery.start_soon(run_one, text, url, notes, send.clone())

        async def feed(nursery: aio.Nursery) -> None:
            bulk_run.set(True)  # inherited by the lane workers started here
            idle = lanes.flush if lanes is not None else _nothing
            async with send:
                async for item in _at_hand(self._urls, idle):
                    await dispatch(item, nursery)
                if lanes is not None:
                    lanes.end_of_input()

        try:
            async with outcomes_while(receive, lambda nursery: nursery.start_soon(feed, nursery)) as outcomes:
                if lanes is not None:
                    outcomes._stoppers.append(lanes.abandon)
                yield outcomes
        finally:
            if lanes is not None:
                lanes.close()


def host_key(url: URL) -> tuple[str, object]:
    """What `--per-host` counts by, and what the cluster shards by: host and port."""
    return (str(getattr(url, "host", "") or ""), getattr(url, "port", None))


@asynccontextmanager
async def outcomes_while(
    receive: aio.ReceiveChannel[Outcome], start: Callable[[aio.Nursery], object]
) -> AsyncIterator[Outcomes]:
    """The outcomes arriving on `receive` while the tasks `start` spawns run.

    The tasks live exactly as long as the `async with` block: leaving it by
    any route cancels them before the channel closes, so none fails on a send
    nobody will receive.  What ended the block (an exception in the caller's
    loop body, or a cancellation from outside) is re-raised as itself once
    the nursery has finished, rather than wrapped in an ExceptionGroup by it.
    """
    ended: BaseException | None = None
    with receive:
        async with aio.open_nursery() as nursery:
            start(nursery)
            try:
                yield Outcomes(receive)
            except BaseException as error:
                ended = error
            finally:
                nursery.cancel_scope.cancel()
    if ended is not None:
        try:
            raise ended
        finally:
            ended = None


async def _at_hand(items: Iterable[T] | AsyncIterable[T], idle: Callable[[], None]) -> AsyncIterator[T]:
    """`items` one by one, calling `idle()` whenever the next one is not at hand yet.

    A channel is read without waiting while it holds items, so whoever
    feeds it can still stop the run by draining it; `idle` is when work
    queued so far should start (lanes.py sends requests in batches).
    """
    if aio.is_receive_channel(items):
        channel = cast("aio.ReceiveChannel[T]", items)
        while True:
            try:
                item = channel.receive_nowait()
            except aio.would_block():
                idle()
                try:
                    item = await channel.receive()
                except aio.channel_ended():
                    return
            except aio.channel_ended():
                return
            yield item
    elif isinstance(items, AsyncIterable):
        async for item in items:
            yield item
            idle()
    else:
        for count, item in enumerate(items, 1):
            yield item
            if count % BATCH == 0:
                idle()
                await aio.checkpoint()


async def _as_async(items: Iterable[T] | AsyncIterable[T]) -> AsyncIterator[T]:
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


def _nothing() -> None:
    pass
