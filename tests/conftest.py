"""Shared test helpers.

Interop tests (marked `interop`) need a real server from Debian or PyPI.
On a user's machine without it they skip and say what to install; CI sets
FETCHER_REQUIRE_INTEROP=1, which turns such a skip into a failure so CI never
passes by skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

ROOT = Path(__file__).resolve().parent.parent

# `fetch` reads ~/.fetchrc (or $FETCHRC): none of the tester's options may leak into a test run.
os.environ["FETCHRC"] = str(ROOT / "tests" / "no-such-fetchrc")

# Under CI (FETCHER_REQUIRE_INTEROP=1) the property tests draw the same examples
# every run, so a green main stays green and a failure reproduces; a hunt for new
# failures explores freshly: FETCHER_FUZZ_HUNT=1 python -m pytest tests/hostile -k fuzz.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("FETCHER_REQUIRE_INTEROP") == "1" and os.environ.get("FETCHER_FUZZ_HUNT") != "1":
    hypothesis_settings.load_profile("ci")


def require(condition: bool, what: str, install: str) -> None:
    """Skip (or fail under CI) when a real server or tool is missing."""
    if condition:
        return
    message = f"{what} is not available; install it with: {install}"
    if os.environ.get("FETCHER_REQUIRE_INTEROP") == "1":
        pytest.fail(message + " (FETCHER_REQUIRE_INTEROP=1 forbids skipping)")
    pytest.skip(message)


def require_program(program: str, package: str) -> str:
    path = shutil.which(program) or (f"/usr/sbin/{program}" if os.path.exists(f"/usr/sbin/{program}") else None)
    require(path is not None, program, f"apt-get install {package}")
    assert path is not None
    return path


def read_pty(leader: int) -> bytes:
    """Everything a child wrote to the pty until it closed its side; closes `leader`."""
    received = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    return received


def run_fetch(*args: str, input: bytes | None = None, timeout: float = 60, env: dict[str, str] | None = None,
              cwd: str | Path | None = None) -> subprocess.CompletedProcess[bytes]:  # fmt: skip
    """Run the real `fetch` command (python -m fetcher) and capture what a user sees."""
    full_env = dict(os.environ)
    full_env.pop("NNTPSERVER", None)
    full_env.pop("FETCH_EMAIL", None)
    full_env["NETRC"] = str(ROOT / "tests" / "no-such-netrc")
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "fetcher", *args],
        input=input,
        capture_output=True,
        timeout=timeout,
        env=full_env,
        cwd=cwd,
    )


@pytest.fixture
def no_netrc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("NETRC", str(tmp_path / "absent-netrc"))
    yield


@pytest.fixture
def x_test() -> Iterator[None]:
    """Register the x-test line protocol of tests/plugin_scheme.py for one test."""
    from fetcher import registry

    registry.register("x-test", "tests.plugin_scheme:Handler")
    yield
    registry.unregister("x-test")


@pytest.fixture(scope="session")
def content_tree() -> Iterator[Path]:
    """The shared content tree (tests/interop/content.py), world-readable under /tmp."""
    from tests.interop.content import make_content, public_tempdir, remove_tree

    base = public_tempdir("fetcher-content-")
    root = make_content(base / "content")
    yield root
    remove_tree(base)
