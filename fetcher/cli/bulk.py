"""Scripted bulk retrieval, the command's entry: `fetch -i`, `-d`, `-r`, `--manifest`, `--skip-done`, `--cluster`.

Stands on `Client.fetch_all` (concurrency, per-host limits, retries, resume)
and adds what a run of thousands of URLs needs.  `run_bulk` reads the
command line once into `RunOptions` (fetcher.cli.runoptions), opens the
input (fetcher.cli.inputs) and the manifest (fetcher.cli.manifest), runs
one `BulkRun` (fetcher.cli.run: jobs, records, the window of
fetcher.cli.feed; with -r the crawl of fetcher.mirror.crawl) in this
process or on a cluster, handles Ctrl-C, and ends with the tally's line
(fetcher.cli.tally) and the exit code.
"""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING, Any

from fetcher.cli.inputs import Inputs, stdin_stream
from fetcher.cli.manifest import Manifest
from fetcher.cli.run import BulkRun
from fetcher.cli.runoptions import RunOptions
from fetcher.cli.tally import Tally, interrupted_line
from fetcher.client import Client
from fetcher.errors import UsageError
from fetcher.net import aio
from fetcher.text import mask_secrets

if TYPE_CHECKING:
    import argparse

#: Exit code of a -r run that stopped following links at --limit frontier/pages (LimitExceeded's).
LIMIT_EXIT = 7


async def run_bulk(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """The bulk mode of `fetch` (-i, -d, -r, --manifest, --skip-done)."""
    from fetcher.cli.progress import make_progress

    tally = Tally()
    options = RunOptions.from_args(args)
    stream = stdin_stream(options.input_file)
    jobs = Inputs(options.urls, options.input_file, streamed=stream is not None)
    growing = options.recursive or stream is not None or not jobs.countable
    progress = make_progress(options.progress, verbose=options.verbose, growing=growing)
    if progress.shows_total and not growing:
        progress.expect(jobs.count())
    interrupted = False
    try:
        manifest = Manifest(options.manifest)
    except BaseException:
        jobs.close()
        raise
    try:
        async with Client(**settings) as client:
            run = BulkRun(options, client, manifest, progress, tally=tally)
            if options.cluster:
                from fetcher.cluster import executor

                run.fetch_all = executor(options, client.settings)
            elif run.remote is not None:
                raise UsageError(
                    f"-d {mask_secrets(options.directory or '')}: an fsspec URL as output is implemented "
                    "for --cluster only",
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
    if run.crawl is not None and (problem := run.crawl.close()) is not None:
        sys.stderr.write(problem + "\n")
    sys.stderr.write(tally.line(mirror=run.crawl is not None))
    if interrupted:
        sys.stderr.write(interrupted_line(run.parts_kept, options.manifest))
        return 130
    if tally.failed:
        return 1
    return LIMIT_EXIT if run.crawl is not None and run.crawl.capped else 0
