"""The benchmark suite's smoke mode must keep running (its numbers are not checked)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, require


@pytest.mark.interop
def test_bench_quick_runs_every_figure(tmp_path: Path) -> None:
    for tool in ("curl", "wget", "nginx", "vsftpd"):
        found = shutil.which(tool) or Path(f"/usr/sbin/{tool}").exists()
        require(bool(found), tool, f"apt-get install {'nginx-light' if tool == 'nginx' else tool}")
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report = json.loads((tmp_path / "latest.json").read_text())
    figures = {row["figure"].split(" ")[0] for row in report["rows"]}
    assert {"http_big", "ftp_big", "http_bulk", "ftp_bulk", "gopher_bulk", "bulk_mixed", "startup", "bulk"} <= figures
    assert all(row["failures"] == 0 for row in report["rows"] if row["tool"] == "fetcher")
    assert "parse_url / urlsplit" in (tmp_path / "latest.md").read_text()
