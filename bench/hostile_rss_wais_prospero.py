"""Peak RSS of `fetch` against the hostile WAIS and Prospero servers, with default limits (run by hand).

    python -m bench.hostile_rss_wais_prospero [--case NAME ...] [--budget-mib 256]

Each case starts one server of tests/hostile/ (wais_hostile.py,
prospero_hostile.py) in a process of its own, runs `python -m fetcher`
against it as a child of this (small) process and reads the child's peak
RSS from rusage.  A child's figure includes what its parent held when it
started, so the server must not live in the measuring process: the
default-limit cases are also rows of bench/hostile_rss.py, which runs its
servers in-process, and there they are upper bounds.

It prints one row per case (exit code, seconds, peak RSS) and exits 1 if a
case ends with another exit code than expected, or a case run with the
default limits is over the budget.  Cases marked "raised" lift a cap
(--limit ardp_packets=65535, to reach the caps behind it) and show how
memory follows the caps; they are not held to the budget.  No case lowers a
cap; a larger --wais-chunk only lets the client offer a reply size that
fits the attack.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from bench.harness import fetch_command, measure


@dataclass(frozen=True)
class Case:
    name: str
    what: str
    #: The server: "wais" or "prospero", its kind and options (tests/hostile/*_hostile.py).
    protocol: str
    kind: str
    options: dict[str, Any] = field(default_factory=dict)
    #: Fetch arguments before the URL (only ones that let the server's bytes in).
    flags: tuple[str, ...] = ()
    expected_exit: int = 7
    #: False when `flags` raise a cap: reported, but not held to the budget (memory follows the caps).
    default_limits: bool = True

    def url(self, port: int) -> str:
        return f"wais://127.0.0.1:{port}/db?x" if self.protocol == "wais" else f"prospero://127.0.0.1:{port}//pub"


CASES = [
    Case("wais-declared-2gib", "a message header announcing 2 GiB, then 3 bytes and silence",
         "wais", "declared", {"length": 2**31}),
    Case("wais-hits-15mib", "2.4 million hits (15 MB) in one reply; --wais-chunk raised so it is accepted",
         "wais", "hits", {"count": 2_400_000}, ("--wais-chunk", "15000000")),
    Case("wais-hits-offered", "the same hit list at the default --wais-chunk (past the negotiated size)",
         "wais", "hits", {"count": 2_400_000}),
    Case("wais-field-15mib", "one 15 MB headline; --wais-chunk raised so it is accepted",
         "wais", "field", {"size": 15_000_000}, ("--wais-chunk", "15500000")),
    Case("prospero-endless", "an endless listing (LINK lines, no packet total)", "prospero", "endless"),
    Case("prospero-endless-65535", "the endless listing with --limit ardp_packets=65535 (the listing caps end it)",
         "prospero", "endless", {}, ("--limit", "ardp_packets=65535"), default_limits=False),
    Case("prospero-listing-170k", "a listing of 170,000 links that ends, just under the caps: read, kept and "
         "printed", "prospero", "endless", {"count": 170_000},
         ("--limit", "ardp_packets=65535", "-o", "/dev/null"), 0, default_limits=False),
    Case("prospero-listing-long-names", "60,000 links with 150-octet names and hsonames that end: read, kept "
         "and printed", "prospero", "endless", {"count": 60_000, "pad": 140},
         ("--limit", "ardp_packets=65535", "-o", "/dev/null"), 0, default_limits=False),
    Case("prospero-endless-long-names", "an endless listing of 150-octet names (the listing_bytes cap ends it)",
         "prospero", "endless", {"pad": 140}, ("--limit", "ardp_packets=65535"), default_limits=False),
    Case("prospero-big-datagrams", "the endless listing of long names in 60000-octet datagrams",
         "prospero", "endless", {"pad": 140, "size": 60_000, "window": 2}),
    Case("prospero-packets", "a first packet announcing 60000 packets", "prospero", "packets", {"total": 60_000}),
]  # fmt: skip


def serve(protocol: str, kind: str, options: dict[str, Any]) -> None:
    """The server side, in its own process so its memory never counts for the measured fetch."""
    import trio

    from tests.hostile import prospero_hostile, wais_hostile

    async def main() -> None:
        if protocol == "wais":
            context: Any = wais_hostile.serving(wais_hostile.HostileWais(kind, **options))
        else:
            context = prospero_hostile.serving(prospero_hostile.HostileProspero(kind, **options))
        async with context as server:
            print(server.port, flush=True)
            await trio.to_thread.run_sync(sys.stdin.read)  # until the driver closes our stdin

    trio.run(main)


def run_case(case: Case) -> dict[str, Any]:
    spec = json.dumps([case.protocol, case.kind, case.options])
    server = subprocess.Popen([sys.executable, "-m", "bench.hostile_rss_wais_prospero", "--serve", spec],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    try:
        port = int(server.stdout.readline())
        started = time.monotonic()
        sample = measure([*fetch_command(), "--timeout", "10", *case.flags, case.url(port)])
        elapsed = time.monotonic() - started
    finally:
        server.stdin.close()
        server.wait(10)
    return {"case": case.name, "exit": sample.returncode, "expected": case.expected_exit,
            "seconds": round(elapsed, 2), "peak_rss_mib": round(sample.peak_rss_kib / 1024, 1)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", action="append", choices=[case.name for case in CASES])
    parser.add_argument("--budget-mib", type=float, default=256)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(*json.loads(args.serve))
        return 0
    chosen = [case for case in CASES if not args.case or case.name in args.case]
    failed = False
    print(f"{'case':<28} {'exit':>4} {'seconds':>8} {'peak RSS MiB':>13} {'limits':>8}  what")
    for case in chosen:
        row = run_case(case)
        over = case.default_limits and row["peak_rss_mib"] >= args.budget_mib
        bad = row["exit"] != case.expected_exit or over
        failed |= bad
        limits = "default" if case.default_limits else "raised"
        print(f"{case.name:<28} {row['exit']:>4} {row['seconds']:>8} {row['peak_rss_mib']:>13} {limits:>8}  {case.what}"
              + ("  <-- FAIL" if bad else ""))  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
