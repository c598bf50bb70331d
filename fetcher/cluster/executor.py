"""`fetch --cluster`: the executor `BulkRun` puts in place of `Client.fetch_all`, built from the run's options.

What the command asks that a cluster run cannot do is refused here, before
dask is imported; dask is imported here (without numpy) so that the run
starts with it loaded.  The options come typed (`ExecutorOptions`: the
fields of the command's `RunOptions` this module reads), read once from
the command line; per-URL request notes (-N, FTP confinement) come with
the URLs themselves and travel with their batches (fetcher.cluster.ship).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from fetcher.cluster.driver import fetch_all
from fetcher.cluster.output import filesystem, is_url
from fetcher.cluster.scheduler import import_dask, parse_target
from fetcher.errors import UsageError
from fetcher.settings import Settings
from fetcher.text import mask_secrets
from fetcher.url import URL


class ExecutorOptions(Protocol):
    """What the executor reads of a run's options (fetcher.cli.runoptions.RunOptions has them all)."""

    @property
    def cluster(self) -> str | None: ...
    @property
    def directory(self) -> str | None: ...
    @property
    def recursive(self) -> bool: ...
    @property
    def no_clobber(self) -> bool: ...
    @property
    def resume(self) -> bool: ...
    @property
    def warc_file(self) -> str | None: ...
    @property
    def warc_dedup(self) -> bool: ...
    @property
    def warc_max_size(self) -> int | None: ...
    @property
    def warc_cdx(self) -> bool: ...
    @property
    def argv(self) -> tuple[str, ...]: ...


def executor(options: ExecutorOptions, settings: Settings) -> Callable[..., Any]:
    """What `fetch --cluster` puts in place of `Client.fetch_all` (same arguments, same outcomes)."""
    assert options.cluster is not None
    parse_target(options.cluster)
    output = options.directory if is_url(options.directory) else None
    _check(options, output)
    # dask imports numpy, whose OpenBLAS starts a thread per core that spins for work this
    # process never gives it (about 0.1 s of CPU per run, seen in `perf`): one BLAS thread.
    # The CLI's process only: a program using the library keeps its own choice.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    import_dask(lean=True)

    def run(urls: Any, destination: Callable[[URL], Path] | None = None, **given: Any) -> Any:
        if output is not None and destination is not None:
            root = Path(output)
            named = destination

            def destination(url: URL) -> Path:
                return named(url).relative_to(root)

        return fetch_all(
            urls, options.cluster, settings, destination=destination, output=output, warc_file=options.warc_file,
            warc_max_size=options.warc_max_size, warc_cdx=options.warc_cdx, command_line=list(options.argv),
            **given,
        )  # fmt: skip

    return run


def _check(options: ExecutorOptions, output: str | None) -> None:
    """Refuse what a cluster run does not implement: some options with an fsspec output, --warc-dedup."""
    if output is not None:
        filesystem(output)
        for given, what in ((options.recursive, "-r"), (options.no_clobber, "--no-clobber"),
                            (options.resume, "-C/--continue")):  # fmt: skip
            if given:
                raise UsageError(
                    f"{what} with an fsspec output URL (-d {mask_secrets(output)}) is not implemented",
                    hint="give a directory every worker reaches under the same path (local, NFS, a mounted bucket)",
                )
    if options.warc_file is not None:
        if options.warc_dedup:
            raise UsageError(
                "--warc-dedup with --cluster is not implemented (a revisit record needs every payload "
                "digest archived so far, and each batch archives on its own worker)",
                hint="archive without --warc-dedup, or run without --cluster",
            )
        try:
            import warcio  # noqa: F401  (the workers need it too: the same environment everywhere)
        except ImportError:
            raise UsageError("--warc-file needs warcio", hint="pip install 'fetcher-rfc1738[warc]'") from None
