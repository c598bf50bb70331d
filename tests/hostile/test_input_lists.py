"""Hostile and malformed input lists (`fetch -i`, issue 29 item 15): a stray line costs itself, never the list.

An unclosed `<` wrapper, an over-long line, a file with no line ends at all
(`-i /dev/zero`, on a file and on stdin): each is reported as its own failed
line with its number, every URL after it is still retrieved, and memory
stays bounded (the runs here are held to 512 MiB of data by RLIMIT_DATA, so
reading without a bound dies with a MemoryError instead of filling the
machine).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import trio

from fetcher.cli.inputs import MAX_LINE, RUNAWAY, WRAP_LINES, BadLine, read_url_lines
from tests.conftest import ROOT
from tests.servers.http_server import HTTPTestServer

DATA_LIMIT = 512 * 1024 * 1024


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_DATA, (DATA_LIMIT, DATA_LIMIT))


def run_bounded(*args: str, stdin: int | None = None, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """`fetch ARGS` as a user runs it, with its data memory capped."""
    env = {**os.environ, "NETRC": str(ROOT / "tests" / "no-such-netrc")}
    for name in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "fetcher", *args], stdin=stdin, capture_output=True, timeout=120,
                          env=env, cwd=cwd, preexec_fn=_bounded)  # fmt: skip


async def cli(*args: str, cwd: Path, stdin: int | None = None) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_bounded(*args, stdin=stdin, cwd=cwd))


async def test_a_stray_wrapper_and_a_long_line_cost_only_themselves(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = HTTPTestServer()
    await nursery.start(server.serve)
    for name in "acdfgh":
        server.add(f"/{name}.txt", f"file {name}\n".encode())
    base = server.url("")
    lines = [
        f"{base}/a.txt",  # 1
        f"<{base}/b.txt",  # 2: opens a wrapper and never closes it
        f"{base}/c.txt",  # 3: a URL of its own, which ends that wrapper
        f"<URL:{base}/",  # 4: a wrapped URL, as RFC 1738 allows ...
        "    d.txt>",  # 5: ... closed on its second line
        f"<URL:{base}/e",  # 6: another unclosed one ...
        "  .txt",  # 7: ... whose continuation is read again on its own
        "",  # 8: a blank line ends a wrapper
        f"{base}/f.txt",  # 9
        "x" * (MAX_LINE + 10),  # 10: longer than a line may be
        f"{base}/g.txt",  # 11
        "<" + "y" * 100,  # 12: a wrapper ...
        *(["z"] * (WRAP_LINES + 2)),  # 13-22: ... that runs on past its line cap
        f"{base}/h.txt",  # 23
    ]
    urls = tmp_path / "urls.txt"
    urls.write_text("\n".join(lines) + "\n")
    result = await cli("-i", str(urls), "-d", "out", "--manifest", "run.jsonl", cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "Traceback" not in err
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [f"{name}.txt" for name in "acdfgh"]
    assert (tmp_path / "out" / "d.txt").read_bytes() == b"file d\n"
    assert sorted(request.target for request in server.requests) == [f"/{name}.txt" for name in "acdfgh"]
    records = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    failed = {record["line"]: record["error"] for record in records if record["status"] == "failed"}
    assert set(failed) == {2, 6, 7, 10, 12, *range(13, 13 + WRAP_LINES + 2)}
    assert "the '<' wrapper is not closed by '>'" in failed[2]
    assert "the '<' wrapper is not closed by '>'" in failed[6]
    assert f"more than {MAX_LINE}" in failed[10]
    assert sum(record["status"] == "ok" for record in records) == 6
    assert f"{base}/b.txt (line 2): " in err and "(line 10): the line is" in err
    # the manifest and the messages name an excerpt of the long line, not all of it
    assert max(len(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()) < 1000


async def test_an_endless_input_file_ends_with_one_clear_error(tmp_path: Path) -> None:
    result = await cli("-i", "/dev/zero", "-d", "out", cwd=tmp_path)
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "Traceback" not in err and "MemoryError" not in err
    assert f"(line 1): the line runs past {RUNAWAY} characters without a line end: this is not a list of URLs" in err
    assert "0 retrieved, 1 failed" in err


async def test_an_endless_stdin_ends_with_one_clear_error(tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as zeros:
        result = await cli("-i", "-", "-d", "out", cwd=tmp_path, stdin=zeros.fileno())
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "Traceback" not in err and "MemoryError" not in err
    assert "(line 1): the line runs past" in err and "0 retrieved, 1 failed" in err


def test_read_url_lines_reads_a_file_in_bounded_pieces(tmp_path: Path) -> None:
    """The library reader (examples/bulk.py uses it) follows the same rules on a file object."""
    path = tmp_path / "list.txt"
    path.write_text("http://h/a\n<http://h/b\n\n" + "q" * (MAX_LINE + 1) + "\nhttp://h/c")
    with path.open() as source:
        found = list(read_url_lines(source))
    assert [(text, number) for text, number in found if not isinstance(text, BadLine)] == [
        ("http://h/a", 1),
        ("<http://h/b", 2),
        ("http://h/c", 5),
    ]
    bad = [(number, text.problem) for text, number in found if isinstance(text, BadLine)]
    assert len(bad) == 1 and bad[0][0] == 4 and f"more than {MAX_LINE}" in bad[0][1]
