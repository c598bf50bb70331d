"""Replay with pywb: what fetcher archived is served back by the replay tool web archives use, byte for byte.

pywb (Webrecorder's wayback machine) indexes the WARC with its own CDX
indexer (`wb-manager add`) and replays each URL from it in "id_" mode (the
archived payload, unmodified).  HTTP responses are replayed as such; FTP and
Gopher `resource` records too.  The big payloads were written in place while
they streamed (stored and deflated gzip members with an extra field), so this
is also the check that a replay tool reads those members.

pywb pulls in gevent and a dozen other packages, so it lives in a venv of its
own, made once by .ci/run in ~/.cache/fetcher/pywb (FETCHER_PYWB names another
bin directory); else `wb-manager` and `wayback` are looked up on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import trio

pytest.importorskip("warcio", reason="the 'warc' extra is not installed (pip install '.[warc]')")

from tests.conftest import require
from tests.interop.processes import Server, free_port
from tests.servers.ftp_fake import FakeFtpServer, serving
from tests.servers.gopher import BINARY, GopherServer
from tests.servers.gopher import serving as gopher_serving
from tests.servers.http_server import HTTPTestServer
from tests.test_warc import cli, read_warc

pytestmark = pytest.mark.usefixtures("no_netrc")

INSTALL = "python3 -m venv ~/.cache/fetcher/pywb && ~/.cache/fetcher/pywb/bin/pip install pywb (as .ci/run does)"
NOISE = os.urandom(2 << 20)
TEXT = b"replayed text, deflated while it streamed into the WARC\n" * 40_000


def _pywb(program: str) -> str | None:
    """FETCHER_PYWB's bin directory, else the venv .ci/run makes in the cache, else PATH."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fetcher" / "pywb" / "bin"
    directory = Path(os.environ.get("FETCHER_PYWB") or cache)
    path = directory / program
    return str(path) if path.exists() else shutil.which(program)


def _replay(port: int, stamp: str, url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/coll/{stamp}id_/{url}", timeout=30) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


async def test_pywb_replays_http_ftp_and_gopher_records(nursery: trio.Nursery, tmp_path: Path) -> None:
    manager, wayback = _pywb("wb-manager"), _pywb("wayback")
    require(manager is not None and wayback is not None, "pywb", INSTALL)
    assert manager is not None and wayback is not None
    http = HTTPTestServer()
    http.add("/noise.bin", NOISE, content_type="application/octet-stream")
    http.add("/text.txt", TEXT, content_type="text/plain")
    http.add("/small.html", b"<p>small</p>\n", content_type="text/html")
    await nursery.start(http.serve)
    async with serving(FakeFtpServer({"/pub/noise.bin": NOISE})) as ftp, gopher_serving(GopherServer()) as gopher:
        urls = {
            "http-noise": http.url("/noise.bin"),
            "http-text": http.url("/text.txt"),
            "http-small": http.url("/small.html"),
            "http-404": http.url("/missing"),
            "ftp": f"{ftp.url}/pub/noise.bin",
            "gopher": f"gopher://127.0.0.1:{gopher.port}/9/binary.bin",
        }
        done = await cli("--warc-file", "out", "--warc-cdx", "-d", "got", *urls.values(), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # the 404
    read_warc(tmp_path / "out.warc.gz")
    stamp = (tmp_path / "out.cdxj").read_text().split(" ", 2)[1]  # the run's time, as a replay URL gives it

    def index() -> None:
        for argv in ([manager, "init", "coll"], [manager, "add", "coll", str(tmp_path / "out.warc.gz")]):
            ran = subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=120)
            assert ran.returncode == 0, ran.stdout + ran.stderr

    await trio.to_thread.run_sync(index)
    port = free_port()
    server = await trio.to_thread.run_sync(
        lambda: Server([wayback, "-p", str(port), "-b", "127.0.0.1"], port, log=tmp_path / "wayback.log", cwd=tmp_path)
    )
    try:
        replayed = {}
        for name, url in urls.items():
            replayed[name] = await trio.to_thread.run_sync(_replay, port, stamp, url)
    finally:
        server.stop()
    assert replayed["http-noise"] == (200, NOISE)
    assert replayed["http-text"] == (200, TEXT)
    assert replayed["http-small"] == (200, b"<p>small</p>\n")
    assert replayed["http-404"] == (404, b"no such page: /missing\n")
    assert replayed["ftp"] == (200, NOISE)
    assert replayed["gopher"] == (200, BINARY)
    assert (tmp_path / "got" / "binary.bin").read_bytes() == BINARY
