"""Startup cost: `fetch` imports only what the URL's scheme needs (issue 17).

Python's own import log (`python -X importtime`) of
the real `fetch` process names every module it loaded; a heavy module that a
command does not need fails the test, whatever the machine's speed (no timing
is asserted).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

#: Never needed to print the version or copy a file: URL.
HEAVY = ("rich", "h11", "httptools", "dask", "distributed", "warcio", "hypothesis", "pytest", "pyftpdlib",
         "OpenSSL", "trustme", "numpy", "schemes.http", "schemes.ftp", "fetcher.progress")  # fmt: skip


def run_logged(*args: str) -> subprocess.CompletedProcess[bytes]:
    """The real `fetch` command under `python -X importtime`."""
    env = dict(os.environ, NETRC=str(ROOT / "tests" / "no-such-netrc"))
    argv = [sys.executable, "-X", "importtime", "-m", "fetcher", *args]
    return subprocess.run(argv, capture_output=True, timeout=60, env=env)


def imported(stderr: bytes) -> set[str]:
    """Every module named in an import-time log."""
    names = set()
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":  # the header line
                names.add(name)
    return names


def heavy_in(names: set[str]) -> list[str]:
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in HEAVY))


def test_import_log_is_parsed() -> None:
    # The oracle itself: a log line names its module, and a submodule of a heavy package counts.
    log = b"import time: self [us] | cumulative | imported package\nimport time:  5 |  9 |   h11._util\n"
    assert imported(log) == {"h11._util"}
    assert heavy_in({"h11._util", "trio", "richer"}) == ["h11._util"]


def test_version_imports_nothing_heavy() -> None:
    result = run_logged("--version")
    assert result.returncode == 0, result.stderr[-500:]
    names = imported(result.stderr)
    assert "fetcher.cli" in names or "fetcher" in names  # the log is really there
    assert heavy_in(names) == []
    assert "trio" not in names  # --version needs no event loop


@pytest.mark.parametrize("output", ["-o", "-"])
def test_file_fetch_imports_nothing_heavy(tmp_path: Path, output: str) -> None:
    source = tmp_path / "source.txt"
    source.write_bytes(b"startup\n")
    target = tmp_path / "copy.txt"
    args = ["-o", str(target)] if output == "-o" else []
    result = run_logged(*args, f"file://{source}")
    assert result.returncode == 0, result.stderr[-500:]
    if output == "-o":
        assert target.read_bytes() == b"startup\n"
    else:
        assert result.stdout == b"startup\n"
    names = imported(result.stderr)
    assert "fetcher.client" in names  # the log covers the retrieval itself
    assert heavy_in(names) == []
