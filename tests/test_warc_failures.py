"""--warc-file when things go wrong: error answers are archived, cut and interrupted transfers leave whole records.

The large payloads here are written in place at the end of the WARC file
while they stream (fetcher.archive.in_place.InPlace); these tests cut them every way a
run can end early (a server closing, Ctrl-C, SIGTERM) and check with warcio
that the file still ends with whole records only.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio

pytest.importorskip("warcio", reason="the 'warc' extra is not installed (pip install '.[warc]')")

from tests.conftest import ROOT
from tests.servers.ftp_fake import FakeFtpServer, serving
from tests.servers.http_server import HTTPTestServer
from tests.test_warc import cli, dialogue, read_warc

pytestmark = pytest.mark.usefixtures("no_netrc")

#: Incompressible, so the record is stored blocks; and well past the 256 KiB kept in memory.
BIG = os.urandom(3 << 20)
TEXT = b"a line of text that compresses well, archived as a deflated record\n" * 60_000


def whole_records(path: Path) -> list[Any]:
    """The records, after checking that the file is nothing but whole gzip members (no bytes after the last)."""
    data = path.read_bytes()
    position = 0
    while position < len(data):
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        member.decompress(data[position:])
        assert member.eof, f"a gzip member at offset {position} is cut short"
        position = len(data) - len(member.unused_data)
    return read_warc(path)


@pytest.fixture
async def http(nursery: trio.Nursery) -> HTTPTestServer:
    server = HTTPTestServer()
    server.add("/small.txt", b"small and whole\n")
    server.add("/big.bin", BIG, content_type="application/octet-stream")
    server.add("/text.txt", TEXT, content_type="text/plain")
    server.stalled = trio.Event()  # type: ignore[attr-defined]

    async def closes_early(request: Any, exchange: Any) -> None:
        # Promises 4 MiB, sends 1 MiB, hangs up: the client has 1 MiB in place when it fails.
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 4194304\r\n\r\n" + BIG[: 1 << 20])
        await exchange.close()

    async def stalls(request: Any, exchange: Any) -> None:
        # Sends 2 MiB of 4 MiB, then nothing: the test interrupts the client meanwhile.
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 4194304\r\n\r\n" + BIG[: 2 << 20])
        await trio.sleep(60)

    async def error_page(request: Any, exchange: Any) -> None:
        await exchange.respond(503, b"<h1>down for maintenance</h1>\n", [("Content-Type", "text/html")])

    server.routes["/closes-early"] = closes_early
    server.routes["/stalls"] = stalls
    server.routes["/error-page"] = error_page
    await nursery.start(server.serve)
    return server


# -- answers that are failures ------------------------------------------------------------


async def test_http_error_responses_are_archived(http: HTTPTestServer, tmp_path: Path) -> None:
    """A 404 or 503 is a response: request and response records, as wget and Heritrix write them."""
    done = await cli("--warc-file", "out", "-d", "got", http.url("/small.txt"), http.url("/missing"),
                     http.url("/error-page"), cwd=tmp_path)  # fmt: skip
    assert done.returncode != 0
    assert b"404" in done.stderr and b"503" in done.stderr
    records = whole_records(tmp_path / "out.warc.gz")
    responses = {r.url: r for r in records if r.type == "response"}
    assert responses[http.url("/missing")].http.get_statuscode() == "404"
    assert responses[http.url("/missing")].raw == b"no such page: /missing\n"
    assert responses[http.url("/error-page")].http.get_statuscode() == "503"
    assert responses[http.url("/error-page")].raw == b"<h1>down for maintenance</h1>\n"
    assert responses[http.url("/small.txt")].raw == b"small and whole\n"
    # Each attempt at the 503 (retried as a transient failure) is a response of its own, with its request.
    kinds = [(r.type, r.url) for r in records[1:]]
    assert {url for kind, url in kinds if kind == "request"} == set(responses)
    assert kinds.count(("request", http.url("/error-page"))) == kinds.count(("response", http.url("/error-page")))
    assert not (tmp_path / "got" / "missing").exists()


async def test_ftp_550_leaves_its_control_conversation(tmp_path: Path) -> None:
    async with serving(FakeFtpServer({"/pub/a.txt": b"here\n"})) as server:
        done = await cli("--warc-file", "out", f"{server.url}/pub/absent.txt", cwd=tmp_path)
    assert done.returncode != 0
    assert b"550" in done.stderr
    records = whole_records(tmp_path / "out.warc.gz")
    assert [r.type for r in records] == ["warcinfo", "metadata"]
    text = dialogue(records, "absent.txt")
    assert "> RETR absent.txt" in text and "< 550" in text
    assert "WARC-Concurrent-To" not in records[1].headers  # nothing was retrieved for it to accompany


# -- cut and interrupted transfers --------------------------------------------------------


async def test_a_server_closing_early_leaves_only_whole_records(http: HTTPTestServer, tmp_path: Path) -> None:
    done = await cli("--warc-file", "out", "-d", "got", http.url("/small.txt"), http.url("/closes-early"),
                     http.url("/big.bin"), cwd=tmp_path)  # fmt: skip
    assert done.returncode != 0
    assert b"closed the connection before the end of the body" in done.stderr
    records = whole_records(tmp_path / "out.warc.gz")
    assert sorted((r.type, r.url) for r in records[1:]) == sorted(
        (kind, http.url(path)) for path in ("/small.txt", "/big.bin") for kind in ("response", "request")
    )
    assert next(r for r in records if r.type == "response" and r.url.endswith("/big.bin")).raw == BIG


def _spawn(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, NETRC=str(tmp_path / "absent-netrc"), PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "fetcher", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


async def _interrupt_midway(http: HTTPTestServer, tmp_path: Path, how: signal.Signals) -> subprocess.Popen[bytes]:
    """Fetch a small file and then the stalling one; signal the client once the stalled payload is in the WARC."""
    process = _spawn(tmp_path, "--warc-file", "out", "-d", "got", http.url("/small.txt"), http.url("/stalls"))
    warc = tmp_path / "out.warc.gz"
    with trio.fail_after(30):
        # 2 MiB sent: most of it is in place at the end of the file before the client waits for more.
        while not (warc.exists() and warc.stat().st_size > 1 << 20):
            await trio.sleep(0.05)
    process.send_signal(how)
    await trio.to_thread.run_sync(lambda: process.wait(timeout=30))
    return process


async def test_ctrl_c_midway_leaves_only_whole_records(http: HTTPTestServer, tmp_path: Path) -> None:
    process = await _interrupt_midway(http, tmp_path, signal.SIGINT)
    assert process.returncode == 130
    records = whole_records(tmp_path / "out.warc.gz")
    assert [(r.type, r.url) for r in records[1:]] == [("response", http.url("/small.txt")),
                                                      ("request", http.url("/small.txt"))]  # fmt: skip
    assert (tmp_path / "out.warc.gz").stat().st_size < 1 << 16  # the 2 MiB in place are gone again


async def test_sigterm_midway_leaves_only_whole_records(http: HTTPTestServer, tmp_path: Path) -> None:
    process = await _interrupt_midway(http, tmp_path, signal.SIGTERM)
    assert process.returncode == -signal.SIGTERM  # it still ends as SIGTERM ends a process
    records = whole_records(tmp_path / "out.warc.gz")
    assert [(r.type, r.url) for r in records[1:]] == [("response", http.url("/small.txt")),
                                                      ("request", http.url("/small.txt"))]  # fmt: skip


# -- records written in place ----------------------------------------------------------------


async def test_big_records_are_single_gzip_members_readable_by_gzip_tools(http: HTTPTestServer, tmp_path: Path) -> None:
    done = await cli("--warc-file", "out", "--warc-cdx", "-d", "got", http.url("/big.bin"), http.url("/text.txt"),
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    warc = tmp_path / "out.warc.gz"
    records = whole_records(warc)
    responses = {r.url: r for r in records if r.type == "response"}
    assert responses[http.url("/big.bin")].raw == BIG == (tmp_path / "got" / "big.bin").read_bytes()
    assert responses[http.url("/text.txt")].raw == TEXT
    assert warc.stat().st_size < len(BIG) + len(TEXT) // 4  # the text was deflated, the noise stored
    assert gzip.decompress(warc.read_bytes()).count(b"WARC/1.1\r\n") == len(records)
    # Records written in place are indexed at the offsets and lengths a reader finds.
    from fetcher.archive.cdx import index_warc

    assert list(index_warc(warc)) == (tmp_path / "out.cdxj").read_text().splitlines(keepends=True)
    if (gzip_tool := subprocess.run(["gzip", "-t", str(warc)], capture_output=True)).returncode != 127:
        assert gzip_tool.returncode == 0, gzip_tool.stderr


async def test_a_capture_completing_meanwhile_waits_for_the_record_in_place(tmp_path: Path) -> None:
    """Captures that complete while a record is written in place are written after it, whole."""
    from fetcher.archive import tap
    from fetcher.archive.recorder import WarcRecorder

    recorder = WarcRecorder(tmp_path / "u")
    document = SimpleNamespace(kind="document", content_type="application/octet-stream")
    with tap.recording(recorder):
        big = tap.start("ftp://example.test/big.bin", "ftp")
        assert big is not None
        for start in range(0, len(BIG), 1 << 16):
            big.payload(BIG[start : start + (1 << 16)])
        assert recorder._in_place is not None  # the big payload is streaming into the file
        small = tap.start("ftp://example.test/small.txt", "ftp")
        assert small is not None
        small.payload(b"small\n")
        await small.commit(document)  # type: ignore[arg-type]
        assert [c.url for c in recorder._waiting] == ["ftp://example.test/small.txt"]
        await big.commit(document)  # type: ignore[arg-type]
    recorder.close()
    records = whole_records(tmp_path / "u.warc.gz")
    assert [(r.type, r.url) for r in records[1:]] == [("resource", "ftp://example.test/big.bin"),
                                                      ("resource", "ftp://example.test/small.txt")]  # fmt: skip
    assert records[1].raw == BIG and records[2].raw == b"small\n"


def test_crc32_combine_agrees_with_zlib() -> None:
    from fetcher.archive.gzip_members import crc32_combine

    for first, second in [(b"", b""), (b"head", b""), (b"", b"body"), (os.urandom(999), os.urandom(70_000))]:
        assert crc32_combine(zlib.crc32(first), zlib.crc32(second), len(second)) == zlib.crc32(first + second)
