"""Blocking calls for scripts and notebooks: `fetch_sync`, `download_sync`, `fetch_all_sync`.

Each call runs its own trio event loop (`aio.run`) for the duration of the
call.  In a thread with no event loop running (a plain script, a worker
thread) that loop runs right there.  Inside a running trio or asyncio loop
(a Jupyter or IPython cell, an async framework's callback) it runs on a
worker thread of its own while the calling thread waits: the call blocks
the loop it was made from, as any blocking call does, but it works.  In
async code `await fetcher.fetch(...)` or a `Client` does not block the loop.

Settings are given as for `fetcher.Client`: keyword arguments
(`timeout=20`, `allow_ports={8021}`, ...), typed by
`fetcher.SettingsOverrides`, or a typed `fetcher.Settings` value as
`settings=`, or both (the keywords override the value).  A misspelt or
mistyped setting raises `fetcher.UsageError` before anything is sent.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar, Unpack

from fetcher.client import Client, Fetched, Outcome
from fetcher.disk.writer import Download
from fetcher.net import aio
from fetcher.net.threads import Token, running_loop
from fetcher.settings import Settings, SettingsOverrides
from fetcher.url import URL

T = TypeVar("T")


def _run(
    name: str, function: Callable[[Client], Awaitable[T]], settings: Settings | None, overrides: SettingsOverrides
) -> T:
    client = Client(settings, **overrides)  # a wrong setting fails here, in the caller's thread
    running: list[tuple[aio.Scope, Token]] = []

    async def main() -> T:
        with aio.cancel_scope() as scope:
            running.append((scope, Token()))
            async with client:
                return await function(client)
        raise KeyboardInterrupt  # cancelled by the waiting thread: the user interrupted the call

    if running_loop() is None:
        return aio.run(main)
    return _on_worker_thread(name, main, running)


def _on_worker_thread(
    name: str, main: Callable[[], Awaitable[T]], running: list[tuple[aio.Scope, Token]]
) -> T:
    """`aio.run(main)` on a thread of its own, waited for here: this thread's loop is running (a
    notebook cell), and a second loop cannot run in the same thread.

    Ctrl-C (a notebook's "interrupt") arrives in this thread: the transfer is
    cancelled on the worker (through its loop's `Token`: cancel scopes are not
    thread-safe), and the KeyboardInterrupt goes on from here.
    """
    outcome: list[tuple[bool, Any]] = []

    def work() -> None:
        try:
            outcome.append((True, aio.run(main)))
        except BaseException as error:  # handed to the waiting thread, which raises it
            outcome.append((False, error))

    # The caller's context variables (a `fetcher.archive.tap.recording` block) hold on the worker too.
    worker = threading.Thread(target=contextvars.copy_context().run, args=(work,), name=f"fetcher.{name}", daemon=True)
    worker.start()
    try:
        worker.join()
    except KeyboardInterrupt:
        while not running and worker.is_alive():  # interrupted before the run began: wait for its scope
            worker.join(0.01)
        if running:
            scope, token = running[0]
            token.call_soon(scope.cancel)  # thread-safe, and allowed from inside another trio run
        worker.join()
        raise
    ok, value = outcome[0]
    if not ok:
        raise value
    result: T = value
    return result


def fetch_sync(url: URL | str, *, settings: Settings | None = None, **overrides: Unpack[SettingsOverrides]) -> Fetched:
    """Retrieve `url` into memory and return it: bytes for documents, entries for listings.

    The blocking form of `await fetcher.fetch(url, **overrides)`; raises the
    same `fetcher.errors.FetchError` subclasses.
    """
    result: Fetched = _run("fetch_sync", lambda client: client.fetch(url), settings, overrides)
    return result


def download_sync(
    url: URL | str,
    path: str | os.PathLike[str],
    *,
    resume: bool = False,
    settings: Settings | None = None,
    **overrides: Unpack[SettingsOverrides],
) -> Download:
    """Save the document at `url` to `path` (written as `path.part`, renamed when complete).

    With `resume=True` an existing `path.part` is continued where the
    protocol allows (FTP REST, HTTP Range, local files).  The blocking form
    of `await Client(settings, **overrides).download(url, path, resume=resume)`.
    """
    result: Download = _run(
        "download_sync", lambda client: client.download(url, path, resume=resume), settings, overrides
    )
    return result


def fetch_all_sync(
    urls: Iterable[URL | str],
    *,
    destination: Callable[[URL], Path] | None = None,
    resume: bool = False,
    on_outcome: Callable[[Outcome], None] | None = None,
    settings: Settings | None = None,
    **overrides: Unpack[SettingsOverrides],
) -> list[Outcome]:
    """Retrieve many URLs concurrently; return one `Outcome` per URL, in the order they completed.

    A failed URL does not stop the others: its outcome has `ok == False` and
    the error in `error`.  `destination(url)` names the file for each
    document (else everything is fetched into memory); `on_outcome` is
    called with each outcome as it completes (for progress output).
    Concurrency and retries come from the settings (`jobs`, `per_host`,
    `retries`), as for `Client.fetch_all`.
    """

    async def collect(client: Client) -> list[Outcome]:
        outcomes: list[Outcome] = []
        async with client.fetch_all(urls, destination=destination, resume=resume) as results:
            async for outcome in results:
                outcomes.append(outcome)
                if on_outcome is not None:
                    on_outcome(outcome)
        return outcomes

    result: list[Outcome] = _run("fetch_all_sync", collect, settings, overrides)
    return result
