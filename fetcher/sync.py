"""Blocking calls for scripts and notebooks: `fetch_sync`, `download_sync`, `fetch_all_sync`.

Each call runs its own trio event loop (`trio.run`) for the duration of the
call, so it works in any thread that has no event loop running: a plain
script, a worker thread, `await asyncio.to_thread(fetcher.fetch_sync, url)`
or `await trio.to_thread.run_sync(fetcher.fetch_sync, url)`.  Called from
inside a running trio or asyncio loop it raises `fetcher.errors.UsageError`
at once: blocking there would freeze every other task of that loop (use
`await fetcher.fetch(...)` or a `Client` instead).

Settings are given as for `fetcher.Client`: keyword arguments
(`timeout=20`, `allow_ports={8021}`, ...), or a typed `fetcher.Settings`
value as `settings=`, or both (the keywords override the value).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import trio

from .client import Client, Fetched, Outcome
from .errors import UsageError
from .settings import Settings
from .sink import Download
from .url import URL


def running_loop() -> str | None:
    """The name of the event loop running in this thread ("trio", "asyncio"), or None."""
    if trio.lowlevel.in_trio_run():
        return "trio"
    asyncio = sys.modules.get("asyncio")  # never imported: no asyncio loop can be running
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return None
        return "asyncio"
    return None


def _run(name: str, function: Callable[[Client], Any], settings: Settings | None, overrides: dict[str, Any]) -> Any:
    loop = running_loop()
    if loop is not None:
        helper = "trio.to_thread.run_sync" if loop == "trio" else "asyncio.to_thread"
        raise UsageError(
            f"fetcher.{name}() was called from inside a running {loop} event loop, where it would block every task",
            hint=f"in async code await the async form (fetcher.fetch, Client.download, Client.fetch_all), "
            f"or run the blocking call in a worker thread: await {helper}(fetcher.{name}, ...)",
        )

    async def main() -> Any:
        async with Client(settings, **overrides) as client:
            return await function(client)

    return trio.run(main)


def fetch_sync(url: URL | str, *, settings: Settings | None = None, **overrides: Any) -> Fetched:
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
    **overrides: Any,
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
    **overrides: Any,
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
