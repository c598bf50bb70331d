"""Where the command puts what it retrieves, and what it says about it (issue 29, item 10).

- `-O` on a directory URL saves `index` for every scheme, as for HTTP and as the
  README says (FTP saved `pub` for `ftp://HOST/pub/`); bulk runs and mirrors keep
  naming a directory's listing after the directory (`pub.listing.json`).
- Ctrl-C on a bulk run says ".part files kept" only when there are some, with their number.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import trio

from tests.conftest import ROOT, run_fetch
from tests.hostile.names_hostile import naming_server
from tests.servers.ftp_fake import FakeFtpServer, serving
from tests.servers.gopher import GopherServer
from tests.servers.gopher import serving as gopher_serving

FILES = {"/pub/a.txt": b"alpha\n", "/pub/b.txt": b"beta\n"}


async def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, cwd=cwd))


async def test_dash_o_uppercase_names_a_directory_url_index_for_every_scheme(tmp_path: Path) -> None:
    (tmp_path / "src" / "pub").mkdir(parents=True)
    (tmp_path / "src" / "pub" / "a.txt").write_bytes(b"alpha\n")
    async with serving(FakeFtpServer(FILES)) as ftp, gopher_serving(GopherServer()) as gopher:
        for number, url in enumerate([f"ftp://127.0.0.1:{ftp.port}/pub/", f"gopher://127.0.0.1:{gopher.port}/1/",
                                      f"file://{tmp_path}/src/pub/"]):  # fmt: skip
            here = tmp_path / f"here{number}"
            here.mkdir()
            result = await cli("-O", url, cwd=here)
            assert result.returncode == 0, (url, result.stderr)
            assert [p.name for p in here.iterdir()] == ["index"], url
            assert (here / "index").read_bytes(), url  # the listing, as a table
        # a bulk run names the listing after its directory, as before
        result = await cli("-d", "out", "--no-progress", f"ftp://127.0.0.1:{ftp.port}/pub/", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["pub.listing.json"]
    listed = (tmp_path / "out" / "pub.listing.json").read_text().splitlines()
    assert {json.loads(line)["name"] for line in listed} == {"a.txt", "b.txt"}


def interrupted_run(tmp_path: Path, path: str) -> tuple[int, str, Path]:
    """A bulk run Ctrl-C'd once the server holds its request for `path`: exit code, stderr, the -d directory."""
    out = tmp_path / "out"
    with naming_server() as site:
        child = subprocess.Popen(
            [sys.executable, "-m", "fetcher", "-d", str(out), "--manifest", str(tmp_path / "m.jsonl"),
             "--no-progress", site.url(path)],
            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        try:
            assert site.asked.wait(60)
            child.send_signal(signal.SIGINT)
            _, err = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
    return child.returncode, err, out


def test_ctrl_c_says_part_files_kept_only_when_there_are_some(tmp_path: Path) -> None:
    code, err, out = interrupted_run(tmp_path, "/stall")
    assert code == 130, err
    assert "Traceback" not in err and ".part" not in err
    assert err.endswith(f"fetch: interrupted; rerun with --skip-done {tmp_path / 'm.jsonl'} to retrieve the rest\n")
    assert not out.exists() or not list(out.glob("*.part"))


def test_ctrl_c_counts_the_part_files_it_keeps(tmp_path: Path) -> None:
    code, err, out = interrupted_run(tmp_path, "/stall-body")
    assert code == 130, err
    assert list(out.glob("*.part")) == [out / "stall-body.part"]
    assert err.endswith(f"fetch: interrupted; 1 .part file kept, rerun with -C --skip-done {tmp_path / 'm.jsonl'} "
                        "to resume\n")  # fmt: skip
    row = json.loads((tmp_path / "m.jsonl").read_text())
    assert row["status"] == "interrupted" and row["partial"] == str(out / "stall-body.part")
