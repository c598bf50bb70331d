"""http bodies read past h11 (Content-Length and chunked) still reach the WARC tap byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trio
from warcio.archiveiterator import ArchiveIterator

from tests.conftest import run_fetch
from tests.servers.http_server import HTTPTestServer

pytestmark = pytest.mark.usefixtures("no_netrc")

#: Several reads' worth, so most of the body arrives after the head (past h11).
BODY = bytes(range(256)) * 12 * 1024


async def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, cwd=cwd, timeout=60))


def dechunk(raw: bytes) -> bytes:
    out, rest = [], raw
    while True:
        line, _, rest = rest.partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(rest[:size])
        rest = rest[size + 2 :]


@pytest.mark.parametrize("chunked", [True, False])
async def test_a_multi_read_body_is_archived_whole(nursery: trio.Nursery, tmp_path: Path, chunked: bool) -> None:
    server = HTTPTestServer()
    server.add("/big.bin", BODY, content_type="application/octet-stream", chunked=chunked)
    await nursery.start(server.serve)
    done = await cli("--warc-file", "out", "-o", "got.bin", server.url("/big.bin"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "got.bin").read_bytes() == BODY
    with open(tmp_path / "out.warc.gz", "rb") as stream:
        responses = [
            record.raw_stream.read()
            for record in ArchiveIterator(stream, check_digests="raise")
            if record.rec_type == "response"
        ]
    (raw,) = responses
    assert (dechunk(raw) if chunked else raw) == BODY
