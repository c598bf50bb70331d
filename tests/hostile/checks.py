"""What the hostile-server tests check of a `fetch` run, in one place."""

from __future__ import annotations

import functools
import subprocess
import time

import trio

from tests.conftest import run_fetch


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    """`fetch ARGS` in a worker thread, so the test's servers keep serving."""
    return await trio.to_thread.run_sync(functools.partial(run_fetch, *args, timeout=60))


async def timed_fetch(*args: str) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """`cli` and the seconds it took."""
    started = time.monotonic()
    done = await cli(*args)
    return done, time.monotonic() - started


def one_error_line(stderr: bytes) -> str:
    """The `fetch:` line; fails unless the error is that line and at most its hint."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    assert lines and lines[0].startswith("fetch: "), stderr
    assert len(lines) <= 2 and all(line.startswith("  hint: ") for line in lines[1:]), stderr
    return lines[0]


def assert_limit_error(result: subprocess.CompletedProcess[bytes], message: str, limit: str) -> None:
    """Exit 7, exactly `fetch: <message> (url)` and a hint line naming --limit LIMIT=N; nothing on stdout."""
    lines = result.stderr.decode().splitlines()
    assert result.returncode == 7, result.stderr
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"fetch: {message}")
    assert lines[1].startswith(f"  hint: raise the cap with --limit {limit}=N")
    assert result.stdout == b""
