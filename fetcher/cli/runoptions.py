"""The options of a bulk run, typed and read once from the command line.

`run_bulk` turns the parsed command line into a `RunOptions` before
anything else runs; the run (fetcher.cli.run), the input reader, the
cluster executor (fetcher.cluster.executor, which reads the fields of its
`ExecutorOptions`) and the mirror (its own `MirrorOptions`, inside) take
that value, never the `argparse.Namespace`.  An option added to the parser
for bulk runs gets its field here, so every reader sees the same,
checked value: `from_args` reads each field from the option of its name.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from fetcher.mirror.rules import MirrorOptions


@dataclass(frozen=True)
class RunOptions:
    """What a bulk run (-i, -d, -r, --manifest, --skip-done, --cluster) was asked to do."""

    #: The URLs of the command line, and -i FILE ('-': stdin).
    urls: tuple[str, ...] = ()
    input_file: str | None = None
    #: -d DIR (or, with --cluster, an fsspec URL) and --layout flat|tree.
    directory: str | None = None
    layout: str = "flat"
    #: -j and --per-host.
    jobs: int = 8
    per_host: int = 2
    #: -C: `.part` files are continued.
    resume: bool = False
    #: --manifest FILE and --skip-done MANIFEST.
    manifest: str | None = None
    skip_done: str | None = None
    #: --progress / --no-progress (None: when stderr is a terminal), and -v.
    progress: bool | None = None
    verbose: bool = False
    #: --no-clobber, -J (--content-disposition), -w FORMAT.
    no_clobber: bool = False
    content_disposition: bool = False
    write_out: str | None = None
    #: --cluster TARGET.
    cluster: str | None = None
    #: --warc-file NAME and its companions (a cluster run archives on its workers).
    warc_file: str | None = None
    warc_dedup: bool = False
    warc_max_size: int | None = None
    warc_cdx: bool = False
    #: The command line as typed (the WARC's warcinfo record names it).
    argv: tuple[str, ...] = ()
    #: -r and its options; None without -r.
    mirror: MirrorOptions | None = None

    @property
    def recursive(self) -> bool:
        """-r: listings and pages are followed (`mirror` holds how)."""
        return self.mirror is not None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunOptions:
        """The options of the parsed command line (`fetcher.cli.options.build_parser`)."""
        mirror = None
        if args.recursive:
            from fetcher.mirror.rules import MirrorOptions  # -r only: a plain bulk run never loads the mirror

            schemes = args.follow_schemes
            mirror = MirrorOptions(
                depth=args.depth,
                parent=getattr(args, "parent", False),
                timestamping=getattr(args, "timestamping", False),
                robots=not getattr(args, "no_robots", False),
                span_hosts=args.span_hosts,
                follow_schemes=frozenset(s.strip().lower() for s in schemes.split(",")) if schemes else frozenset(),
            )
        # Every field is the option of its name (the parser's `dest`); one the parser does not
        # define keeps the field's default.  Three are converted: the URLs and the command line
        # to tuples, and -r's options into their own value.
        given: dict[str, Any] = {option.name: getattr(args, option.name, option.default) for option in fields(cls)}
        given.update(urls=tuple(args.urls), argv=tuple(given["argv"] or ()), mirror=mirror)
        return cls(**given)
