"""Open files for a bulk run of the `fetch` command: as many as the system allows, and -j within them.

Every transfer holds descriptors: a connection, an FTP data connection, the
file being written.  Past the process's limit (`ulimit -n`, often 1,024,
sometimes far less) each new one fails with EMFILE, and so does anything
else that opens a file then, such as the import of a module not loaded yet.
So the command first raises its soft limit to the hard one, as a server
does, and if that is still too few for -j transfers it runs fewer at once
and says so, rather than failing URLs or the run.  Library callers keep
their process's limits: changing them is the program's decision.
"""

from __future__ import annotations

import sys

#: Descriptors one transfer may hold at once: an FTP control and data connection and the file written.
PER_TRANSFER = 3
#: Descriptors the run holds besides its transfers: standard streams, the event loop's, the -i list,
#: the manifest, the directories written into (`fetcher.disk.place.Directories`), a WARC file, modules imported late.
RESERVED = 48


def raise_soft_limit() -> int | None:
    """Raise this process's soft limit on open files to its hard limit; the soft limit now (None: unknown)."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    if hard == resource.RLIM_INFINITY or hard > soft:
        # An unlimited hard limit is not a number setrlimit takes everywhere (macOS wants OPEN_MAX).
        wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        for limit in (wanted, 10_240):
            if limit <= soft:
                break
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
            except (OSError, ValueError):
                continue
            return limit
    return soft


def transfers_within(limit: int, jobs: int) -> int:
    """How many of `jobs` transfers fit in `limit` open files (at least one)."""
    return max(1, min(jobs, (limit - RESERVED) // PER_TRANSFER))


def fit_jobs(jobs: int, per_host: int) -> tuple[int, int]:
    """-j and --per-host for this process's open-file limit (raised first), saying on stderr when -j was lowered."""
    limit = raise_soft_limit()
    if limit is None:
        return jobs, per_host
    fitted = transfers_within(limit, jobs)
    if fitted < jobs:
        sys.stderr.write(
            f"fetch: -j {jobs} needs up to {jobs * PER_TRANSFER + RESERVED} open files and this process may "
            f"have {limit} (ulimit -n): running {fitted} at once\n"
        )
    return fitted, min(per_host, fitted)
