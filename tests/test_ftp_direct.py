"""The direct path of a large plain FTP download (issue 17): `Resource.readinto` into the sink's buffers.

An image-mode RETR larger than the sink's small-body limit (1 MiB) is read
straight into reused buffers and written with os.write (the library, which
hashes what it writes), or, on Linux when nothing hashes (the CLI), moved
socket -> pipe -> file with splice(2); these tests hold both to every rule
of the chunk path: the same bytes, `.part` then rename, what
arrived kept for -C, the SIZE count, --max-size, --timeout and --max-time.
"""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from fetcher import Client
from fetcher.disk.save import save
from fetcher.errors import Timeout, TooLarge, TransientError
from tests.conftest import run_fetch
from tests.servers.ftp_fake import FakeFtpServer, Faults, serving

pytestmark = pytest.mark.usefixtures("no_netrc")

#: 3.5 MiB, no two KiB alike: more than the small-body limit and more than one direct buffer.
LARGE = b"".join(index.to_bytes(4, "big") * 256 for index in range(3584))
FILES = {"/large.bin": LARGE, "/small.bin": b"small\n"}


async def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=timeout))


async def test_an_image_retr_is_direct_and_other_reads_are_not() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            async with client.open(f"{server.url}/large.bin") as resource:
                assert resource.direct
                assert resource.can_splice == hasattr(os, "splice")  # Linux: socket -> pipe -> file (the CLI's path)
                assert await resource.read() == LARGE  # iteration still works; then it is no longer direct
                assert not resource.direct
            async with client.open(f"{server.url}/large.bin;type=a") as resource:
                assert not resource.direct  # ASCII mode decodes line ends
                await resource.read()
        async with Client(limit_rate=1 << 30) as client:
            async with client.open(f"{server.url}/large.bin") as resource:
                assert not resource.direct  # --limit-rate paces each chunk
                await resource.read()


async def test_the_direct_download_writes_the_same_bytes_and_renames_at_the_end(tmp_path: Path) -> None:
    target = tmp_path / "large.bin"
    seen: list[int] = []
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            done = await client.retrieve(f"{server.url}/large.bin", target, on_chunk=seen.append)
        by_cli = await cli("-o", str(tmp_path / "cli.bin"), f"{server.url}/large.bin")
    assert by_cli.returncode == 0, by_cli.stderr
    assert target.read_bytes() == (tmp_path / "cli.bin").read_bytes() == LARGE
    assert not (tmp_path / "large.bin.part").exists()
    assert done.bytes == len(LARGE) and sum(seen) == len(LARGE)  # type: ignore[union-attr]
    assert done.sha256 == hashlib.sha256(LARGE).hexdigest()  # type: ignore[union-attr]


async def test_a_cut_transfer_keeps_what_arrived_and_c_resumes_it(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    faults = Faults(reset_after=2_500_000, reset_hard=False, reset_times=1)  # FIN: every byte sent arrives
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        cut = await cli("-o", str(target), f"{server.url}/large.bin")
        assert cut.returncode == 7, cut.stderr
        assert not target.exists()
        assert (tmp_path / "out.bin.part").read_bytes() == LARGE[:2_500_000]
        async with Client() as client:
            done = await client.download(f"{server.url}/large.bin", target, resume=True)
    assert target.read_bytes() == LARGE
    assert done.resumed_from == 2_500_000
    assert done.sha256 == hashlib.sha256(LARGE).hexdigest()  # the digest covers the resumed part too
    assert "REST 2500000" in server.sessions[-1]


async def test_a_transfer_short_of_size_with_226_is_not_complete(tmp_path: Path) -> None:
    async with serving(FakeFtpServer(FILES, faults=Faults(truncate_after=1_500_000))) as server:
        async with Client() as client:
            with pytest.raises(TransientError, match=f"ended after 1500000 of {len(LARGE)} bytes"):
                await client.download(f"{server.url}/large.bin", tmp_path / "large.bin")
    assert not (tmp_path / "large.bin").exists()
    assert (tmp_path / "large.bin.part").read_bytes() == LARGE[:1_500_000]


async def test_max_size_stops_the_direct_path_before_it_writes_past_the_limit(tmp_path: Path) -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client(max_size=2_000_000) as client:
            with pytest.raises(TooLarge, match="larger than the limit of 2000000 bytes"):
                await client.download(f"{server.url}/large.bin", tmp_path / "large.bin")
        by_cli = await cli("--max-size", "2000000", "-o", str(tmp_path / "cli.bin"), f"{server.url}/large.bin")
    assert by_cli.returncode == 7 and b"--max-size" in by_cli.stderr
    assert not (tmp_path / "large.bin").exists() and not (tmp_path / "cli.bin").exists()
    assert len((tmp_path / "large.bin.part").read_bytes()) <= 2_000_000


@pytest.mark.parametrize("rule", ["--timeout", "--max-time"])
async def test_a_stalled_direct_transfer_times_out_and_keeps_what_arrived(tmp_path: Path, rule: str) -> None:
    target = tmp_path / "out.bin"
    async with serving(FakeFtpServer(FILES, faults=Faults(stall_after=300_000))) as server:
        done = await cli(rule, "1", "-o", str(target), f"{server.url}/large.bin")
        async with Client(timeout=0.5) as client:
            with pytest.raises(Timeout):
                await client.download(f"{server.url}/large.bin", tmp_path / "lib.bin")
    assert done.returncode == 8, done.stderr
    assert not target.exists() and not (tmp_path / "lib.bin").exists()
    assert (tmp_path / "out.bin.part").read_bytes() == LARGE[:300_000]
    assert (tmp_path / "lib.bin.part").read_bytes() == LARGE[:300_000]


@pytest.mark.skipif(not hasattr(os, "splice"), reason="splice(2) is Linux only")
async def test_where_splice_is_refused_the_same_bytes_arrive_by_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kernel or file system that refuses splice(2) (EINVAL): the socket is read and the file written instead.
    calls: list[int] = []

    def refused(*args: object, **kwargs: object) -> int:
        calls.append(1)
        raise OSError(errno.EINVAL, "Invalid argument")

    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            async with client.open(f"{server.url}/large.bin") as resource:
                assert resource.can_splice
                monkeypatch.setattr(os, "splice", refused)
                done = await save(resource, tmp_path / "large.bin", digest=False)
    assert calls  # splice was tried, and refused
    assert (tmp_path / "large.bin").read_bytes() == LARGE and done.bytes == len(LARGE)
    assert not (tmp_path / "large.bin.part").exists()


@pytest.mark.skipif(not hasattr(os, "splice"), reason="splice(2) is Linux only")
@pytest.mark.parametrize("slow", [True, False], ids=["slow-file", "fast-file"])
async def test_a_file_that_takes_spliced_bytes_slowly_gets_the_rest_by_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow: bool
) -> None:
    # Splicing into the file blocks the event loop for as long as the file takes the bytes; where
    # that pace falls below SLOW_DRAIN (a throttled disk), the rest of the body goes by reads and
    # a writer thread.  The file gets the same bytes either way, and a fast file keeps splicing.
    import fetcher.disk.direct as direct
    from fetcher.disk.partfile import PartFile

    body = b"".join(index.to_bytes(4, "big") * 256 for index in range(40 * 1024))  # 40 MiB
    real_drain, real_receive = PartFile.drain_pipe, direct.receive_direct
    drained: list[int] = []
    received: list[int] = []

    def drain(self: PartFile, pipe: int, count: int) -> None:
        real_drain(self, pipe, count)
        drained.append(count)
        if slow:
            time.sleep(2 * direct.SLOW_DRAIN * count / (1 << 20))

    async def receive(*args: Any) -> int:
        received.append(await real_receive(*args))
        return received[-1]

    monkeypatch.setattr(PartFile, "drain_pipe", drain)
    monkeypatch.setattr(direct, "receive_direct", receive)
    if not slow:
        monkeypatch.setattr(direct, "SLOW_DRAIN", 1e9)  # whatever this machine's pace, no switch
    async with serving(FakeFtpServer({"/big.bin": body})) as server:
        async with Client() as client:
            async with client.open(f"{server.url}/big.bin") as resource:
                assert resource.can_splice
                done = await save(resource, tmp_path / "big.bin", digest=False)
    assert (tmp_path / "big.bin").read_bytes() == body and done.bytes == len(body)
    assert not (tmp_path / "big.bin.part").exists()
    if slow:
        assert direct.DRAIN_WINDOW <= sum(drained) < direct.DRAIN_WINDOW + (1 << 20)  # one window, then reads
        assert received == [len(body) - sum(drained)]
    else:
        assert sum(drained) == len(body) and received == []
