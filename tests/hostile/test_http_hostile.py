"""`fetch` against the hostile HTTP server: what a user sees when a server attacks.

Each case runs the real command in a subprocess and checks the exit code,
the one-line message (plus its hint), that stderr carries no raw control
byte a terminal would act on, and, where the attack is about memory, the
child's peak RSS (from `os.wait4`) against the 256 MiB promise of issue 14.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from tests.conftest import ROOT
from tests.hostile.http_hostile import SECRET, TARGET_BODY, hostile_server
from tests.servers.http_server import HTTPTestServer

PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "HTTP_PROXY")
RSS_BUDGET_KIB = 256 * 1024
#: Bytes a terminal would act on: C0 controls but LF, DEL, and C1 controls as UTF-8 (U+0080-U+009F).
RAW_CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


@dataclass
class Run:
    code: int
    stdout: bytes
    stderr: bytes
    peak_rss_kib: int

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")


#: Runs a command and writes its peak RSS (KiB) to a file.  The command is started from this small
#: process, not from pytest: on Linux a child's ru_maxrss starts at the RSS of the process it was
#: forked from, and pytest grows past 256 MiB during the whole suite.
MEASURE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.call(sys.argv[2:])\n"
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(code)\n"
)


def fetch(*args: str) -> Run:
    """`python -m fetcher ARGS`: exit code, stdout, stderr and its own peak RSS."""
    env = {**os.environ, "NETRC": str(ROOT / "tests" / "no-such-netrc")}
    for name in PROXY_VARIABLES:
        env.pop(name, None)
    with tempfile.TemporaryDirectory() as directory:
        rss = Path(directory) / "rss"
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, str(rss), sys.executable, "-m", "fetcher", *args],
            capture_output=True,
            env=env,
            timeout=120,
        )
        peak = int(rss.read_text())
    return Run(done.returncode, done.stdout, done.stderr, peak)


async def run(*args: str) -> Run:
    return await trio.to_thread.run_sync(lambda: fetch(*args))


def assert_one_line_error(result: Run, code: int, message: str) -> None:
    """Exit `code`; stderr is `fetch: ...` (matching `message`) and at most a hint; no raw control byte."""
    assert RAW_CONTROL.search(result.stderr) is None, result.stderr[:500]
    lines = result.err.splitlines()
    assert "Traceback" not in result.err
    assert result.code == code, result.err
    assert lines and lines[0].startswith("fetch: "), result.err
    assert re.search(message, lines[0]), lines[0]
    assert all(line.startswith("  hint: ") for line in lines[1:]), result.err


@pytest.fixture
async def server(nursery: trio.Nursery) -> HTTPTestServer:
    instance = hostile_server()
    await nursery.start(instance.serve)
    return instance


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield


# -- heads ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "message", "limit"),
    [
        ("/header-flood", r"more than 262144 bytes of response head \(http:", "header_bytes"),
        ("/huge-header", r"more than 262144 bytes of response head \(http:", "header_bytes"),
        ("/header-count", r"more than 256 response head fields \(http:", "header_count"),
        ("/long-field", r"more than 65536 bytes in one response head field \(X-Long\) \(http:", "line_bytes"),
        ("/interim-flood", r"more than 256 interim \(1xx\) response head fields \(http:", "header_count"),
    ],
)
async def test_head_floods_stop_at_their_cap(server: HTTPTestServer, path: str, message: str, limit: str) -> None:
    result = await run(server.url(path))
    assert_one_line_error(result, 7, "fetch: the server sent " + message)
    assert f"--limit {limit}=N" in result.err
    assert result.stdout == b""
    assert result.peak_rss_kib < RSS_BUDGET_KIB


async def test_raised_caps_let_a_big_but_finite_head_through(server: HTTPTestServer) -> None:
    result = await run("--limit", "header_count=2000", server.url("/header-count"))
    assert (result.code, result.stdout) == (0, b"ok")
    result = await run("--limit", "line_bytes=200000", server.url("/long-field"))
    assert (result.code, result.stdout) == (0, b"ok")


# -- bodies --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/bomb", "/bomb2"])
async def test_gzip_bomb_stops_at_the_decoded_ratio(server: HTTPTestServer, path: str, tmp_path: Path) -> None:
    result = await run("-o", str(tmp_path / "out"), server.url(path))
    assert_one_line_error(result, 7, r"more than 1000 decoded bytes per encoded byte")
    assert "--limit decoded_ratio=N" in result.err
    assert not (tmp_path / "out").exists()
    assert result.peak_rss_kib < RSS_BUDGET_KIB


async def test_gzip_bomb_as_an_error_page_reads_only_its_start(server: HTTPTestServer) -> None:
    result = await run(server.url("/bomb-404"))
    assert_one_line_error(result, 6, r"HTTP 404 Not Found: .*/bomb-404 does not exist")
    assert result.peak_rss_kib < RSS_BUDGET_KIB


async def test_3000_stacked_encodings_are_one_line_exit_7(server: HTTPTestServer) -> None:
    result = await run(server.url("/stacked"))
    assert_one_line_error(result, 7, r"the server sent more than 4 stacked content encodings \(http:")
    assert "--limit encodings=N" in result.err


async def test_stacked_encodings_within_a_raised_cap_decode_without_recursion(server: HTTPTestServer) -> None:
    result = await run("--limit", "encodings=300", server.url("/stacked-300"))
    assert (result.code, result.stdout, result.err) == (0, b"deep\n", "")
    result = await run("--limit", "encodings=10", server.url("/stacked-10"))
    assert (result.code, result.stdout) == (0, b"deep\n")


async def test_endless_one_byte_chunks_end_at_max_size(server: HTTPTestServer, tmp_path: Path) -> None:
    result = await run("--max-size", "100000", "-o", str(tmp_path / "out"), server.url("/drip-chunks"))
    assert_one_line_error(result, 7, r"100000")
    assert not (tmp_path / "out").exists()
    assert result.peak_rss_kib < RSS_BUDGET_KIB


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/chunk-ext", r"more than 65536 bytes in one chunk-size line \(http:"),
        ("/trailer-flood", r"more than 256 trailer fields \(http:"),
        ("/trailer-count", r"more than 256 trailer fields \(http:"),
        ("/trailer-huge", r"more than 65536 bytes in one trailer field \(http:"),
    ],
)
async def test_chunk_lines_and_trailers_are_bounded(
    server: HTTPTestServer, path: str, message: str, tmp_path: Path
) -> None:
    result = await run("-o", str(tmp_path / "out"), server.url(path))
    assert_one_line_error(result, 7, message)
    assert not (tmp_path / "out").exists()
    assert result.peak_rss_kib < RSS_BUDGET_KIB


# -- server text ---------------------------------------------------------------------------------------------


async def test_reason_phrase_with_c1_controls_is_escaped_in_the_error(server: HTTPTestServer) -> None:
    result = await run(server.url("/reason-c1"))
    assert_one_line_error(result, 6, r"^fetch: HTTP 404 Not \\x9b31mFound\\x9b0m \\x9d0;pwned\\x9c: ")


async def test_reason_phrase_with_esc_is_escaped_in_the_error_and_the_trace(server: HTTPTestServer) -> None:
    result = await run(server.url("/reason-esc"))
    assert_one_line_error(result, 6, r"^fetch: HTTP 404 \\x1b\[2J\\x1b\]0;pwned\\x07: ")
    result = await run("-v", server.url("/reason-esc"))
    assert result.code == 6
    assert RAW_CONTROL.search(result.stderr) is None
    assert "< HTTP/1.1 404 \\x1b[2J\\x1b]0;pwned\\x07" in result.err.splitlines()


async def test_trace_escapes_reason_phrases_and_header_values(server: HTTPTestServer) -> None:
    result = await run("-v", server.url("/header-c1"))
    assert (result.code, result.stdout) == (0, b"ok\n")
    assert RAW_CONTROL.search(result.stderr) is None
    assert "< X-Evil: \\x9b2J\\x9d0;pwned\\x9c" in result.err.splitlines()
    result = await run("-v", server.url("/reason-c1"))
    assert RAW_CONTROL.search(result.stderr) is None
    assert "< HTTP/1.1 404 Not \\x9b31mFound\\x9b0m \\x9d0;pwned\\x9c" in result.err.splitlines()


# -- redirects -----------------------------------------------------------------------------------------------


async def test_no_location_says_where_the_redirect_points(server: HTTPTestServer) -> None:
    result = await run("--no-location", server.url("/moved"))
    target = f"http://user:***@127.0.0.1:{server.port}/target"
    assert_one_line_error(
        result, 7, re.escape(f"HTTP 302 Found: {server.url('/moved')} redirects to {target}; not followed")
    )
    assert SECRET not in result.err
    assert result.stdout == b""
    assert [request.path for request in server.requests] == ["/moved"]


async def test_no_location_with_show_error_body_prints_the_redirect_body(server: HTTPTestServer) -> None:
    result = await run("--no-location", "--show-error-body", server.url("/moved"))
    assert result.code == 7
    assert b"moved\n" in result.stdout + result.stderr


async def test_followed_redirect_trace_masks_the_location_password(server: HTTPTestServer) -> None:
    result = await run("-v", server.url("/moved"))
    assert (result.code, result.stdout) == (0, TARGET_BODY)
    assert f"< Location: http://user:***@127.0.0.1:{server.port}/target" in result.err.splitlines()
    assert SECRET not in result.err


# -- the memory bench measures the HTTP cases ------------------------------------------------------------------


async def test_the_hostile_rss_bench_measures_an_http_case(tmp_path: Path) -> None:
    report = tmp_path / "rss.json"
    argv = [sys.executable, "-m", "bench.hostile_rss", "--case", "http_gzip_bomb", "--json", str(report)]
    done = await trio.run_process(argv, cwd=ROOT, capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr
    (outcome,) = json.loads(report.read_text())
    assert (outcome["case"], outcome["exit_code"]) == ("http_gzip_bomb", 7)
    assert 0 < outcome["peak_rss_mib"] < 256
    assert outcome["message"].startswith("fetch: the server sent more than 1000 decoded bytes per encoded byte")
