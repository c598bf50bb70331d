"""Bulk runs on a Dask cluster: every core of this machine, or many machines.

The command (fetcher.cli.run) stays the one place that knows jobs and the manifest.
This package is only an executor with the shape of `Client.fetch_all`: it
cuts the URLs into host shards, ships each shard as a batch to a Dask
worker, where the same `fetch_all` code runs in the worker's own trio loop
with the same `Settings`, and brings the outcomes back.

- Sharding: the key is the one `--per-host` counts by, (host, port).  A key
  is leased to at most one batch at a time, and its next batch is sent only
  once the previous one has come back, so one host's URLs never run on two
  workers at once and `--per-host` holds across the whole cluster.
- Retries: a URL's transient errors are retried inside its batch, as in a
  local run.  A worker that dies mid-batch is handled by Dask, which runs
  the task again on another worker; each batch keeps a journal of the files
  it completed (beside the output, removed at the end of the run), so the
  rerun returns those from the journal and fetches only the rest.
- One outcome per URL: the driver keeps the URLs it is waiting for and drops
  any second outcome for one of them.

Modules, by job: `shards` (URLs cut into host shards), `ship` (what a batch
carries), `driver` (`fetch_all`: batches out, outcomes back), `records`
(outcomes brought back, journals read), `scheduler` (importing dask,
reaching or starting a cluster), `forkgate` (forks of local workers between
trio's steps), `executor` (`fetch --cluster`); on the worker's side,
`worker`, `plugin`, `output` (fsspec targets, journals) and `archive` (WARC).

Dask is imported by this package only, and this package only with
`--cluster` or `fetcher.cluster.fetch_all`.
"""

from __future__ import annotations

from fetcher.cluster.driver import fetch_all
from fetcher.cluster.executor import executor
from fetcher.cluster.records import ClusterOutcome
from fetcher.cluster.scheduler import connect, exit_now, parse_target
from fetcher.cluster.shards import HOST_CHUNK
from fetcher.cluster.ship import worker_settings

__all__ = [
    "HOST_CHUNK",
    "ClusterOutcome",
    "connect",
    "executor",
    "exit_now",
    "fetch_all",
    "parse_target",
    "worker_settings",
]
