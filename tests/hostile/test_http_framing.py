"""Pipelined bulk runs and reused connections against servers that frame replies ambiguously,
end connections after N replies, or send replies nobody asked for (issue 29, items 11 and 12).

Each test runs `fetch -i LIST -d DIR` as a user would, as a subprocess with
a timeout (a run that spins for ever fails here instead of hanging the
suite), and checks every URL's outcome: a file with exactly its bytes, or
a clear error naming that URL; the exit code; and what the server answered.
"""

from __future__ import annotations

import functools
import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trustme

from tests.conftest import run_fetch
from tests.hostile.http_framing_hostile import AMBIGUOUS, UNSOLICITED_BODY, FramingServer, body

#: The run gets this long; a spinning lane (the defect) never ends, so the test fails on the timeout.
RUN_TIMEOUT = 60
COUNT = 200
NO_PROXY_ENV = {"http_proxy": "", "https_proxy": "", "HTTPS_PROXY": "", "no_proxy": "", "NO_PROXY": ""}


async def bulk(tmp_path: Path, urls: list[str], *options: str) -> subprocess.CompletedProcess[bytes]:
    """`fetch -i LIST -d DIR OPTIONS` in a worker thread (the server keeps serving); fails past RUN_TIMEOUT."""
    listing = tmp_path / "urls.txt"
    listing.write_text("".join(url + "\n" for url in urls))
    call = functools.partial(run_fetch, "-i", str(listing), "-d", str(tmp_path / "out"), *options,
                             timeout=RUN_TIMEOUT, env=NO_PROXY_ENV)  # fmt: skip
    try:
        return await trio.to_thread.run_sync(call)
    except subprocess.TimeoutExpired:
        done = sorted(os.listdir(tmp_path / "out")) if (tmp_path / "out").exists() else []
        pytest.fail(f"the run did not end within {RUN_TIMEOUT} s ({len(done)} files written)")


def assert_files(out: Path, names: list[str]) -> None:
    """Exactly these files in `out` (no .part left beside them), each with its own bytes."""
    assert sorted(os.listdir(out)) == sorted(names)
    for name in names:
        assert (out / name).read_bytes() == body(name), name


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("two-lengths", "conflicting Content-Length"),
        ("length-and-chunked", "ambiguous: both Content-Length and Transfer-Encoding: chunked"),
        ("unasked-206", "a part nobody asked for"),
    ],
)
async def test_ambiguous_framing_fails_that_url_and_the_run_ends(
    nursery: trio.Nursery, tmp_path: Path, kind: str, message: str
) -> None:
    """One worker disables the lane for the origin while the other has requests in flight (it spun)."""
    assert kind in AMBIGUOUS
    server = await nursery.start(FramingServer().serve)
    names = [f"f{index}" for index in range(COUNT)]
    urls = [server.url(f"/{name}") for name in names]
    bad = server.url(f"/ambiguous/{kind}/bad")
    urls.insert(COUNT // 2, bad)
    result = await bulk(tmp_path, urls)
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.decode().splitlines() if line.startswith("fetch: http")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"fetch: {bad} (line {COUNT // 2 + 1}): ") and message in errors[0], errors
    assert f"{COUNT} retrieved, 1 failed" in result.stderr.decode()
    assert_files(tmp_path / "out", names)


@pytest.mark.parametrize("how", ["header", "silent", "reset"])
async def test_a_server_that_ends_each_connection_after_n_replies_gets_every_request_once(
    nursery: trio.Nursery, tmp_path: Path, how: str
) -> None:
    """nginx's keepalive_requests: replies past the Nth were never sent; their requests go on a new connection."""
    server = await nursery.start(FramingServer(close_after=40, close_how=how).serve)
    names = [f"f{index}" for index in range(COUNT)]
    result = await bulk(tmp_path, [server.url(f"/{name}") for name in names])
    assert result.returncode == 0, result.stderr
    assert_files(tmp_path / "out", names)
    if how != "reset":  # an abortive close may overtake replies already sent: those are asked again
        assert set(server.answered.values()) == {1}, server.answered
    assert server.connections >= COUNT // 40
    # Pipelining went on over the new connections (the origin was not handed to the task path).
    assert server.pipelined >= COUNT // 2, server.pipelined


async def test_a_server_that_ends_each_connection_after_n_replies_over_tls(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    cacert = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(cacert))
    server = await nursery.start(FramingServer(close_after=40, tls=context).serve)
    names = [f"f{index}" for index in range(COUNT)]
    result = await bulk(tmp_path, [server.url(f"/{name}") for name in names], "--cacert", str(cacert))
    assert result.returncode == 0, result.stderr
    assert_files(tmp_path / "out", names)
    assert set(server.answered.values()) == {1}, server.answered
    assert server.pipelined >= COUNT // 2, server.pipelined


async def test_a_connection_cut_mid_reply_fails_that_url_and_no_other(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = await nursery.start(FramingServer(close_after=40, close_how="mid-body").serve)
    names = [f"f{index}" for index in range(COUNT)]
    result = await bulk(tmp_path, [server.url(f"/{name}") for name in names])
    assert result.returncode == 1, result.stderr
    cut = sorted(path.lstrip("/") for path in server.cut)
    assert cut
    errors = [line for line in result.stderr.decode().splitlines() if line.startswith("fetch: http")]
    assert sorted(line.split()[1].rsplit("/", 1)[1] for line in errors) == cut, result.stderr
    assert all("closed the connection before the end of the body" in line for line in errors), errors
    # What was cut off is kept as NAME.part, a prefix of its bytes (for -C); every other URL has its file.
    out = tmp_path / "out"
    for name in cut:
        part = (out / f"{name}.part").read_bytes()
        assert body(name).startswith(part) and len(part) < len(body(name))
        (out / f"{name}.part").unlink()
        # The task path keeps what the reply said of its document beside the .part (fetcher.disk.resume): -C's record.
        (out / f"{name}.part.resume").unlink(missing_ok=True)
    assert_files(out, [name for name in names if name not in cut])


@pytest.mark.parametrize("pipeline", [True, False], ids=["lane", "task-path"])
async def test_a_reply_nobody_asked_for_is_never_taken_for_the_next_one(
    nursery: trio.Nursery, tmp_path: Path, pipeline: bool
) -> None:
    """Two URLs on one host, the second sent once an unasked reply arrived on the idle connection.

    The URLs come on stdin (`-i -`), so the second is asked only after the
    first is on disk and the server has sent its extra reply: the kept-alive
    connection (held by the lane worker, or in the pool) then has unread
    bytes, and must be dropped rather than asked again.
    """
    server = await nursery.start(FramingServer(unsolicited=frozenset({"/first"})).serve)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "fetcher", "-i", "-", "-d", str(out), *([] if pipeline else ["--no-pipeline"])]
    environment = {**os.environ, **NO_PROXY_ENV, "NETRC": str(tmp_path / "no-netrc")}
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=environment)  # fmt: skip
    try:
        assert process.stdin is not None
        process.stdin.write((server.url("/first") + "\n").encode())
        process.stdin.flush()
        with trio.fail_after(RUN_TIMEOUT):
            while not (out / "first").exists():  # the first reply was read whole
                await trio.sleep(0.01)
            sent = server.sent_unsolicited
            server.gate.set()
            await sent.wait()
        second = (server.url("/second") + "\n").encode()
        ask = functools.partial(process.communicate, input=second, timeout=RUN_TIMEOUT)
        _, stderr = await trio.to_thread.run_sync(ask)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert (out / "first").read_bytes() == body("first")
    second_bytes = (out / "second").read_bytes()
    assert UNSOLICITED_BODY not in second_bytes, "the second URL got the reply nobody asked for"
    assert second_bytes == body("second")
    assert server.unsolicited_sent == 1
    assert server.connections == 2
    assert [path for _, path in server.requests] == ["/first", "/second"]
