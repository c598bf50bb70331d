"""Peak memory of `fetch` against hostile servers that try to bloat it (issue 14).

    python -m bench.hostile_rss [--case NAME ...] [--limit-mib 256] [--json FILE]

Each case starts its hostile server on loopback (in this process, on trio),
runs the real `fetch` command with default settings against it in a child
process, and reports the child's peak RSS (VmHWM of its own address space,
read as it exits: ru_maxrss would also count what this process held when
it started the child), its exit code and the first line of its stderr.  The
run fails (exit 1) when any case passes --limit-mib.

To add a protocol, add an entry to CASES: a name, an async factory that
starts the server in the given nursery and returns the URL to fetch, and
the extra command-line arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: Starts a hostile server in the nursery; returns the URL that makes it misbehave.
Factory = Callable[[trio.Nursery], Awaitable[str]]


@dataclass(frozen=True)
class Case:
    factory: Factory
    #: What the server does, for the report.
    about: str
    #: Extra `fetch` arguments.
    args: tuple[str, ...] = ()


# -- FTP ------------------------------------------------------------------------


async def ftp_nlst_flood(nursery: trio.Nursery) -> str:
    """NLST of /dir/ streams 6-character names (8 bytes a line) until fetch hangs up, 512 MiB at most."""
    from tests.hostile.ftp_hostile import Hostile, HostileFtpServer

    server = HostileFtpServer(directories=("/dir",), hostile=Hostile(nlst_flood=512 * 1024 * 1024))
    await nursery.start(server.serve)
    return f"{server.url}/dir/"


async def ftp_nlst_long_names(nursery: trio.Nursery) -> str:
    """NLST of /dir/ streams 400-byte names: the listing_bytes cap (64 MiB) is reached before the count cap."""
    from tests.hostile.ftp_hostile import Hostile, HostileFtpServer

    hostile = Hostile(nlst_flood=512 * 1024 * 1024, flood_name=400)
    server = HostileFtpServer(directories=("/dir",), hostile=hostile)
    await nursery.start(server.serve)
    return f"{server.url}/dir/"


async def ftp_nlst_encoded_names(nursery: trio.Nursery) -> str:
    """NLST of /dir/ streams 400-byte names of bytes that are not UTF-8 (each percent-encoded in its URL)."""
    from tests.hostile.ftp_hostile import Hostile, HostileFtpServer

    hostile = Hostile(nlst_flood=512 * 1024 * 1024, flood_name=400, flood_fill=b"\xff")
    server = HostileFtpServer(directories=("/dir",), hostile=hostile)
    await nursery.start(server.serve)
    return f"{server.url}/dir/"


async def ftp_nlst_encoded_under_cap(nursery: trio.Nursery) -> str:
    """NLST of /dir/ sends 10 MB of 400-byte non-UTF-8 names and ends well: held, then printed (escaped)."""
    from tests.hostile.ftp_hostile import Hostile, HostileFtpServer

    hostile = Hostile(nlst_flood=10 * 1000 * 1000, flood_name=400, flood_fill=b"\xff")
    server = HostileFtpServer(directories=("/dir",), hostile=hostile)
    await nursery.start(server.serve)
    return f"{server.url}/dir/"


MLSD_FEAT = [b"211-Features:", b" MLST type*;size*;modify*;", b" EPSV", b"211 End"]


async def _ftp_facts(nursery: trio.Nursery, flood: int, *, mlsd: bool, width: int = 8) -> str:
    from tests.hostile.ftp_hostile import Hostile, HostileFtpServer

    hostile = Hostile(nlst_flood=flood, flood_name=width, facts="flood", feat=MLSD_FEAT if mlsd else None)
    server = HostileFtpServer(directories=("/dir",), hostile=hostile)
    await nursery.start(server.serve)
    return f"{server.url}/dir/"


async def ftp_list_flood(nursery: trio.Nursery) -> str:
    """LIST of /dir/ streams `ls -l` lines until fetch hangs up (512 MiB at most)."""
    return await _ftp_facts(nursery, 512 * 1024 * 1024, mlsd=False)


async def ftp_mlsd_flood(nursery: trio.Nursery) -> str:
    """FEAT offers MLST; MLSD of /dir/ streams fact lines until fetch hangs up (512 MiB at most)."""
    return await _ftp_facts(nursery, 512 * 1024 * 1024, mlsd=True)


async def ftp_list_under_cap(nursery: trio.Nursery) -> str:
    """LIST of /dir/ sends 10 MB of `ls -l` lines with 100-byte names (just under the caps), then 226: printed."""
    return await _ftp_facts(nursery, 10 * 1000 * 1000, mlsd=False, width=100)


async def ftp_endless_reply(nursery: trio.Nursery) -> str:
    """The greeting is a multi-line reply that never ends."""
    from tests.hostile.ftp_hostile import Hostile, HostileFtpServer

    server = HostileFtpServer(hostile=Hostile(endless_reply=""))
    await nursery.start(server.serve)
    return f"{server.url}/file"


# -- HTTP -----------------------------------------------------------------------


def http_route(path: str) -> Factory:
    """A route of the hostile HTTP server (tests/hostile/http_hostile.py, one server per case)."""

    async def start(nursery: trio.Nursery) -> str:
        from tests.hostile.http_hostile import hostile_server

        server = hostile_server()
        await nursery.start(server.serve)
        return server.url(path)

    return start


HTTP_CASES: dict[str, Case] = {
    "http_header_flood": Case(http_route("/header-flood"), "HTTP head: header lines without end"),
    "http_huge_header": Case(http_route("/huge-header"), "HTTP head: one header value without end"),
    "http_interim_flood": Case(http_route("/interim-flood"), "HTTP: 103 Early Hints without end"),
    "http_gzip_bomb": Case(http_route("/bomb"), "HTTP body: gzip of endless zeros"),
    "http_gzip_bomb2": Case(http_route("/bomb2"), "HTTP body: gzip of gzip of endless zeros"),
    "http_gzip_bomb_404": Case(http_route("/bomb-404"), "HTTP 404 whose error page is a gzip bomb"),
    "http_stacked_encodings": Case(http_route("/stacked"), "HTTP body: Content-Encoding gzip applied 3000 times"),
    "http_drip_chunks": Case(
        http_route("/drip-chunks"),
        "HTTP body: endless 1-byte chunks, stopped by --max-size 1 MB",
        ("--max-size", "1000000"),
    ),
    "http_chunk_extension": Case(http_route("/chunk-ext"), "HTTP body: a chunk extension without end"),
    "http_trailer_flood": Case(http_route("/trailer-flood"), "HTTP body: trailer lines without end"),
}


CASES: dict[str, Case] = {
    "ftp_nlst_flood": Case(ftp_nlst_flood, "FTP NLST of endless short names (60 MB+ offered)"),
    "ftp_nlst_long_names": Case(ftp_nlst_long_names, "FTP NLST of endless 400-byte names"),
    "ftp_nlst_encoded_names": Case(ftp_nlst_encoded_names, "FTP NLST of endless 400-byte non-UTF-8 names"),
    "ftp_nlst_encoded_under_cap": Case(
        ftp_nlst_encoded_under_cap, "FTP NLST of 10 MB of 400-byte non-UTF-8 names, then 226"
    ),
    "ftp_list_flood": Case(ftp_list_flood, "FTP LIST of endless ls -l lines"),
    "ftp_mlsd_flood": Case(ftp_mlsd_flood, "FTP MLSD of endless fact lines"),
    "ftp_list_under_cap": Case(ftp_list_under_cap, "FTP LIST of 10 MB of ls -l lines (100-byte names), then 226"),
    "ftp_endless_reply": Case(ftp_endless_reply, "FTP greeting: a multi-line reply that never ends"),
}
CASES.update(HTTP_CASES)


# -- Gopher and NNTP (tests/hostile/gopher_hostile.py, nntp_hostile.py) ----------


async def _serve(nursery: trio.Nursery, server: Any) -> int:
    """Run a trio server with `handle` and `port` (the test servers' shape) on a free loopback port."""
    listeners = await nursery.start(partial(trio.serve_tcp, server.handle, 0, host="127.0.0.1"))
    server.port = listeners[0].socket.getsockname()[1]
    return int(server.port)


def gopher(path: str) -> Factory:
    async def factory(nursery: trio.Nursery) -> str:
        from tests.hostile.gopher_hostile import HostileGopher

        return f"gopher://127.0.0.1:{await _serve(nursery, HostileGopher())}{path}"

    return factory


def nntp(case: str, path: str = "/hostile.group", count: int = 100_000) -> Factory:
    async def factory(nursery: trio.Nursery) -> str:
        from tests.hostile.nntp_hostile import HostileNntp

        port = await _serve(nursery, HostileNntp(case, count))
        return f"news://127.0.0.1:{port}/*" if path == "*" else f"nntp://127.0.0.1:{port}{path}"

    return factory


_ALL = ("--range", "1-1000000000")
CASES.update({
    "gopher_endless_menu": Case(gopher("/1/endless-menu"), "Gopher menu of endless plausible lines"),
    "gopher_fat_menu": Case(gopher("/1/fat-menu"), "Gopher menu of endless 250-byte high-bit names and selectors"),
    "gopher_endless_line": Case(gopher("/1/endless-line"), "Gopher menu: one line that never ends"),
    "gopher_menu_at_cap": Case(gopher("/1/menu-of/140000"), "Gopher menu of 140 000 lines (under the cap), listed"),
    "gopher_menu_at_cap_json": Case(gopher("/1/menu-of/140000"), "the same, listed as --json", ("--json",)),
    "gopher_fat_menu_at_cap": Case(gopher("/1/fat-menu-of/34000"), "34 000 fat menu lines (under the cap), listed"),
    "gopher_fat_menu_at_cap_json": Case(gopher("/1/fat-menu-of/34000"), "the same, listed as --json", ("--json",)),
    "gopher_plus_huge_dollar": Case(gopher("/1/huge-dollar%09%09$"), "Gopher+ $ reply of endless item groups"),
    "gopher_plus_huge_bang": Case(gopher("/0/huge-bang%09%09!"), "Gopher+ ! reply: an abstract that never ends"),
    "gopher_plus_tiny_lines": Case(gopher("/0/tiny-lines%09%09!"), "Gopher+ ! reply of endless empty lines"),
    "nntp_endless_capabilities": Case(nntp("endless-caps"), "NNTP CAPABILITIES that never ends"),
    "nntp_endless_line": Case(nntp("endless-line"), "NNTP greeting: one line that never ends"),
    "nntp_endless_list": Case(nntp("endless-list", "*"), "NNTP LIST ACTIVE that never ends"),
    "nntp_endless_over": Case(nntp("endless-over"), "NNTP OVER that never ends (--range all)", _ALL),
    "nntp_fat_over": Case(nntp("fat-over"), "NNTP OVER of endless 2 KiB subjects (--range all)", _ALL),
    "nntp_endless_head": Case(nntp("endless-head"), "NNTP HEAD (no OVER) that never ends"),
    "nntp_list_at_cap": Case(nntp("big-list", "*", 89_000), "NNTP LIST ACTIVE of 89 000 groups (just under the cap)"),
    "nntp_list_at_cap_json": Case(nntp("big-list", "*", 89_000), "the same, listed as --json", ("--json",)),
    "nntp_over_at_cap": Case(nntp("big-over", count=64_000), "NNTP OVER of 64 000 articles (just under the cap)", _ALL),
    "nntp_over_at_cap_json": Case(nntp("big-over", count=64_000), "the same, as --json", ("--json", *_ALL)),
})  # fmt: skip


# -- WAIS and Prospero ------------------------------------------------------------


def wais_route(kind: str, **options: Any) -> Factory:
    """A tests/hostile/wais_hostile.py server of that kind; the URL is a search."""

    async def start(nursery: trio.Nursery) -> str:
        from tests.hostile.wais_hostile import HostileWais

        return f"wais://127.0.0.1:{await _serve(nursery, HostileWais(kind, **options))}/db?x"

    return start


def prospero_route(kind: str, **options: Any) -> Factory:
    """A tests/hostile/prospero_hostile.py server (ARDP over UDP) of that kind; the URL is a listing."""

    async def start(nursery: trio.Nursery) -> str:
        from tests.hostile.prospero_hostile import HostileProspero

        port = await nursery.start(HostileProspero(kind, **options).serve)
        return f"prospero://127.0.0.1:{port}//pub"

    return start


# --wais-chunk only lets the client offer a reply size the attack fits in; no cap is changed.
WAIS_PROSPERO_CASES: dict[str, Case] = {
    "wais_declared_2gib": Case(wais_route("declared", length=2**31), "WAIS: a reply header announcing 2 GiB"),
    "wais_hit_flood": Case(wais_route("hits", count=2_400_000), "WAIS: 2.4 million hits (15 MB) in one reply",
                           ("--wais-chunk", "15000000")),
    "wais_huge_field": Case(wais_route("field", size=15_000_000), "WAIS: one 15 MB headline",
                            ("--wais-chunk", "15500000")),
    "prospero_endless_listing": Case(prospero_route("endless"), "Prospero: a listing without end (no packet total)"),
    "prospero_fat_datagrams": Case(prospero_route("endless", pad=140, size=60_000, window=2),
                                   "Prospero: an endless listing of long names in 60000-octet datagrams"),
    "prospero_packet_count": Case(prospero_route("packets", total=60_000), "Prospero: a reply of 60000 packets"),
}  # fmt: skip
CASES.update(WAIS_PROSPERO_CASES)


# -- the harness ------------------------------------------------------------------


@dataclass
class Outcome:
    case: str
    about: str
    peak_rss_mib: float
    exit_code: int
    message: str


#: Runs `python -m fetcher ARGS` and, as it exits, writes the high-water mark of
#: its own memory (VmHWM, KiB) to the file named by the first argument.  Linux
#: carries a parent's RSS into a child's ru_maxrss across fork and exec, so
#: ru_maxrss of a child started from a big process reads high; VmHWM belongs
#: to the address space exec created.
LAUNCH = """
import atexit, runpy, sys
report = sys.argv.pop(1)
def write_peak():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                with open(report, "w") as out:
                    out.write(line.split()[1])
atexit.register(write_peak)
sys.argv[0] = "fetch"
runpy.run_module("fetcher", run_name="__main__", alter_sys=True)
"""


def run_measured(argv: list[str], cwd: str) -> tuple[int, float, str]:
    """Run `fetch ARGS`; its exit code, its own peak RSS in MiB, the first line of its stderr."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["NETRC"] = str(Path(cwd) / "no-netrc")
    report = Path(cwd) / "peak-rss-kib"
    command = [sys.executable, "-c", LAUNCH, str(report), *argv]
    with tempfile.TemporaryFile() as errors:
        code = subprocess.call(command, stdout=subprocess.DEVNULL, stderr=errors, cwd=cwd, env=env)
        errors.seek(0)
        first = errors.read(4096).decode("utf-8", "replace").splitlines()
    peak = int(report.read_text()) / 1024 if report.exists() else float("nan")
    return code, peak, first[0] if first else ""


async def measure(name: str, case: Case, timeout: float) -> Outcome:
    async with trio.open_nursery() as nursery:
        url = await case.factory(nursery)
        with tempfile.TemporaryDirectory() as directory:
            argv = [*case.args, url]
            with trio.fail_after(timeout):
                code, peak, message = await trio.to_thread.run_sync(run_measured, argv, directory)
        nursery.cancel_scope.cancel()
    return Outcome(name, case.about, round(peak, 1), code, message)


def main(arguments: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="run only these (default: all)")
    parser.add_argument("--limit-mib", type=float, default=256.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    args = parser.parse_args(arguments)
    outcomes = [trio.run(measure, name, CASES[name], args.timeout) for name in (args.case or sorted(CASES))]
    print("| case | peak RSS (MiB) | exit | message |\n|---|---:|---:|---|")
    for item in outcomes:
        print(f"| {item.case} | {item.peak_rss_mib:.1f} | {item.exit_code} | {item.message} |")
    if args.json is not None:
        args.json.write_text(json.dumps([vars(item) for item in outcomes], indent=2) + "\n")
    over = [item.case for item in outcomes if item.peak_rss_mib > args.limit_mib]
    if over:
        print(f"over {args.limit_mib:g} MiB: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
