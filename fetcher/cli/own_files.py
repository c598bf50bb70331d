"""The files a `fetch` command reads or writes besides its documents, from its options.

The manifest, an earlier manifest (`--skip-done`), the input list, the
option files, the netrc file, `--dump-header`'s file, the WARC files and
their CDX index, `-N`'s ETag store and a cluster run's journals: which of
the command's options name them is the command's knowledge, so it is here;
the disk layer only keeps the set (`fetcher.disk.reserved.Reserved`) and
refuses to write a document over one of them.
"""

from __future__ import annotations

import argparse
import os

from fetcher.cli.config import default_path
from fetcher.disk.reserved import Reserved

#: `fetcher.mirror.etags.STATE_NAME`, spelled here so a run need not import that module (and json) to know it.
_ETAG_STORE = ".fetch-etags.jsonl"
#: The name of a cluster run's journal directories and WARC staging beside the output (fetcher.cluster).
_CLUSTER_PREFIXES = (".fetch-cluster-", ".fetch-warc-")


def of_run(args: argparse.Namespace) -> Reserved:
    """The files a `fetch` run with these arguments reads or writes besides its documents."""
    exact: list[str] = []
    families: list[tuple[str, str, tuple[str, ...]]] = []
    for name in ("manifest", "skip_done", "input_file", "netrc_file", "dump_header"):
        value = getattr(args, name, None)
        if isinstance(value, str) and value and value != "-":
            exact.append(value)
    exact += [path for path in getattr(args, "config", None) or [] if isinstance(path, str)]
    if not getattr(args, "no_config", False):
        exact.append(str(default_path()))
    if not getattr(args, "no_netrc", False) and not getattr(args, "netrc_file", None):
        exact.append(os.environ.get("NETRC") or os.path.expanduser("~/.netrc"))
    warc = getattr(args, "warc_file", None)
    if isinstance(warc, str) and warc:
        base = warc
        for suffix in (".warc.gz", ".warc"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
        exact += [base + ".warc.gz", base + ".cdxj"]
        directory, stem = os.path.split(base)
        families.append((directory or os.curdir, stem + "-", (".warc.gz", ".cdxj")))
        families += [(directory or os.curdir, prefix, ()) for prefix in _CLUSTER_PREFIXES]
    output = getattr(args, "directory", None)
    if isinstance(output, str) and output and "://" not in output:
        # -N's ETag store and a cluster run's journals start with "." there, which no name a server or a
        # URL gives ever does (`safe_filename`): the store is also reserved by the run itself (`Layout.reserve`).
        exact.append(os.path.join(output, _ETAG_STORE))
        families += [(output, prefix, ()) for prefix in _CLUSTER_PREFIXES]
    return Reserved(exact, families)
