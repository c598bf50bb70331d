"""`-o` onto a special file gets the same bytes as `-o` onto a regular file (issue 29, item 9).

A Gopher text item ends with a "." line that is not part of the document
(and `--strict` unstuffs dot lines): whatever the end handling makes of the
reply, a FIFO read by another program, a descriptor reached through /proc
(`-o /dev/stdout` onto a redirected stdout) and stdout itself get exactly
what a regular file gets.  The FIFO is read in a thread, as a reader
process would; the in-repo Gopher server serves the items.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import trio

from tests.conftest import ROOT, run_fetch
from tests.servers.gopher import DOTS_RFC, DOTS_UMN, GopherServer, Reply, serving

#: A text of 42 CRLF lines with its final "." line (the shape of a Motsognir text item).
TEXT = b"".join(b"line %02d of a text item, some words to fill it out\r\n" % i for i in range(42)) + b".\r\n"
ROUTES = {
    b"/crlf.txt": TEXT,
    b"/lf.txt": TEXT.replace(b"\r\n", b"\n"),
    b"/split.txt": Reply(TEXT, chunk=5),  # the final "." line cut across reads
    b"/umn.txt": DOTS_UMN,
    b"/rfc.txt": DOTS_RFC,
}


async def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args))


async def through_fifo(fifo: Path, *args: str) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """`fetch -o FIFO ...` while a thread reads the FIFO to its end."""
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    try:
        result = await cli("-o", str(fifo), *args)
    finally:
        if not received and reader.is_alive():  # fetch never opened it: let the reader go
            with open(fifo, "wb"):
                pass
        reader.join(timeout=30)
    return result, received[0]


@pytest.mark.parametrize("strict", [False, True])
async def test_a_fifo_gets_what_a_regular_file_gets(tmp_path: Path, strict: bool) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    extra = ["--strict"] if strict else []
    async with serving(GopherServer(dict(ROUTES))) as server:
        for selector in ROUTES:
            url = f"gopher://127.0.0.1:{server.port}/0{selector.decode()}"
            regular = tmp_path / "regular"
            done = await cli(*extra, "-o", str(regular), url)
            assert done.returncode == 0, done.stderr
            piped, data = await through_fifo(fifo, *extra, url)
            assert piped.returncode == 0, piped.stderr
            shown = await cli(*extra, url)
            assert data == regular.read_bytes() == shown.stdout, selector
            if selector == b"/crlf.txt":
                assert data == TEXT[: -len(b".\r\n")]  # the final "." line is not part of the document
    assert os.path.exists(fifo) and not (tmp_path / "fifo.part").exists()


async def test_a_descriptor_reached_through_proc_is_written_where_it_is(tmp_path: Path) -> None:
    """`-o /dev/stdout` with stdout on a file: the bytes go to that descriptor (after what is there, as `>>`),
    the link is never renamed over (fetcher once replaced /dev/stdout itself, as root), no .part beside it."""
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("no /proc on this system")
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")  # what /dev/stdout is, in a place the test owns
    captured = tmp_path / "captured"
    captured.write_bytes(b"header\n")
    async with serving(GopherServer(dict(ROUTES))) as server:
        url = f"gopher://127.0.0.1:{server.port}/0/crlf.txt"

        def run() -> subprocess.CompletedProcess[bytes]:
            with open(captured, "ab") as out:
                command = [sys.executable, "-m", "fetcher", "-o", str(link), url]
                environment = {**os.environ, "PYTHONPATH": str(ROOT)}
                return subprocess.run(command, stdout=out, stderr=subprocess.PIPE, timeout=60, env=environment)

        result = await trio.to_thread.run_sync(run)
    assert result.returncode == 0, result.stderr
    assert captured.read_bytes() == b"header\n" + TEXT[: -len(b".\r\n")]
    assert link.is_symlink() and os.readlink(link) == "/proc/self/fd/1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["captured", "stdout"]


async def test_no_retry_once_bytes_went_into_a_fifo(tmp_path: Path) -> None:
    """A FIFO, like stdout, cannot take bytes back: a transfer cut after bytes went out is not started
    again from zero into the same stream (the reader would get the head twice)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    body = bytes(range(256)) * (12 << 10)  # 3 MiB sent of more: written as it arrives, not held until the end
    server = GopherServer({b"/cut.bin": Reply(body, after="stall", chunk=256 << 10)})
    async with serving(server):
        result, received = await through_fifo(fifo, "--retries", "2", "--timeout", "1",
                                              f"gopher://127.0.0.1:{server.port}/9/cut.bin")  # fmt: skip
    assert result.returncode == 8, result.stderr  # timed out, a transient failure that is retried elsewhere
    assert len(server.requests) == 1, "retried into a stream that already had bytes"
    assert 0 < len(received) <= len(body) and body.startswith(received)
