"""The Dask worker plugin that closes a worker's `Runner` (fetcher.cluster.worker) when the worker closes.

A module of its own: it imports distributed, which `fetcher.cluster` imports
only once it has chosen how a local cluster starts its workers.
"""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from fetcher.cluster.worker import close_runner


class RunnerPlugin(WorkerPlugin):  # type: ignore[misc]
    """Closes the worker's kept Clients (politely: FTP QUIT, TLS close) when the worker closes."""

    name = "fetcher-runner"
    #: Registered again by every run: a no-op then (not a teardown of the running one).
    idempotent = True

    def teardown(self, worker: Any) -> None:
        close_runner()
