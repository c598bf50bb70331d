"""`fetch --cluster`: the executor `BulkRun` puts in place of `Client.fetch_all`, built from the command line.

What the command asks that a cluster run cannot do is refused here, before
dask is imported; dask is imported here (without numpy) so that the run
starts with it loaded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fetcher.cluster.driver import fetch_all
from fetcher.cluster.output import filesystem, is_url
from fetcher.cluster.scheduler import import_dask, parse_target
from fetcher.errors import UsageError
from fetcher.settings import Settings
from fetcher.text import mask_secrets
from fetcher.url import URL


def executor(args: Any, settings: Settings, client: Any = None) -> Callable[..., Any]:
    """What `fetch --cluster` puts in place of `Client.fetch_all` (same arguments, same outcomes).

    `client` is the run's own Client: its per-URL notes (-N, FTP confinement) go to the workers.
    """
    parse_target(args.cluster)
    output = args.directory if is_url(args.directory) else None
    _check(args, output)
    # dask imports numpy, whose OpenBLAS starts a thread per core that spins for work this
    # process never gives it (about 0.1 s of CPU per run, seen in `perf`): one BLAS thread.
    # The CLI's process only: a program using the library keeps its own choice.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    import_dask(lean=True)

    def run(urls: Any, destination: Callable[[URL], Path] | None = None, **options: Any) -> Any:
        if output is not None and destination is not None:
            root = Path(args.directory)
            named = destination

            def destination(url: URL) -> Path:
                return named(url).relative_to(root)

        return fetch_all(
            urls, args.cluster, settings, destination=destination, output=output, warc_file=args.warc_file,
            warc_max_size=args.warc_max_size, warc_cdx=args.warc_cdx, command_line=list(args.argv or []),
            state=client, **options,
        )  # fmt: skip

    return run


def _check(args: Any, output: str | None) -> None:
    """Refuse what a cluster run does not implement: some options with an fsspec output, --warc-dedup."""
    if output is not None:
        filesystem(output)
        for given, what in ((args.recursive, "-r"), (getattr(args, "no_clobber", False), "--no-clobber"),
                            (args.resume, "-C/--continue")):  # fmt: skip
            if given:
                raise UsageError(
                    f"{what} with an fsspec output URL (-d {mask_secrets(output)}) is not implemented",
                    hint="give a directory every worker reaches under the same path (local, NFS, a mounted bucket)",
                )
    if args.warc_file is not None:
        if args.warc_dedup:
            raise UsageError(
                "--warc-dedup with --cluster is not implemented (a revisit record needs every payload "
                "digest archived so far, and each batch archives on its own worker)",
                hint="archive without --warc-dedup, or run without --cluster",
            )
        try:
            import warcio  # noqa: F401  (the workers need it too: the same environment everywhere)
        except ImportError:
            raise UsageError("--warc-file needs warcio", hint="pip install 'fetcher-rfc1738[warc]'") from None
