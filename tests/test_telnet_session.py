"""The interactive session against an in-repo trio telnet server: pipes, a pty, the CLI and the guard."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator

import pytest
import trio

from fetcher import Client
from fetcher.errors import ProtocolError
from fetcher.handler import Session
from fetcher.schemes.telnet.protocol import ECHO, IAC, LINEMODE, NAWS, SGA, TTYPE
from fetcher.schemes.telnet.session import run_interactive
from fetcher.url import TelnetURL, parse_url
from tests.conftest import ROOT, run_fetch
from tests.servers.telnet import ASK_TTYPE, BANNER, OFFER, open_fake_telnetd

pytestmark = pytest.mark.usefixtures("no_netrc")

@contextlib.contextmanager
def pipe_with(data: bytes) -> Iterator[int]:
    """The read end of a pipe that holds `data` and then ends."""
    read, write = os.pipe()
    os.write(write, data)
    os.close(write)
    try:
        yield read
    finally:
        os.close(read)


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


async def session_for(url: str, **settings: object) -> tuple[TelnetURL, Session, Client]:
    client = Client(**settings)
    parsed = parse_url(url)
    assert isinstance(parsed, TelnetURL)
    return parsed, Session(client, parsed), client


async def test_session_over_pipes() -> None:
    async with open_fake_telnetd() as server:
        url, session, client = await session_for(f"telnet://guest:s3cret@127.0.0.1:{server.port}/", timeout=5)
        out_read, out_write = os.pipe()
        errors = io.StringIO()
        with pipe_with(b"guest\n") as stdin:
            result = await run_interactive(url, session, stdin_fd=stdin, stdout_fd=out_write, stderr=errors)
        os.close(out_write)
        shown = read_all(out_read)
        os.close(out_read)
        await client.aclose()
    assert result.reason == "closed by server"
    # The banner as the terminal gets it: IAC IAC is one 0xFF, CR NUL a bare CR.
    assert shown == b"\r\nFake telnetd \xff marker\r\r\nlogin: \r\nhello guest\r\n"
    raw = bytes(server.received)
    # Not a terminal: TTYPE and NAWS refused, LINEMODE refused, remote ECHO and SGA accepted.
    for reply in ((252, TTYPE), (253, ECHO), (253, SGA), (252, NAWS), (252, LINEMODE)):
        assert bytes((IAC, *reply)) in raw
    assert server.text() == b"guest\r\n"  # the pipe's LF went out as CR LF
    assert result.sent == len(raw) and result.received == len(OFFER + ASK_TTYPE + BANNER) + len(b"\r\nhello guest\r\n")
    notice = errors.getvalue()
    assert f"telnet session with 127.0.0.1:{server.port}" in notice
    assert "suggested login: guest" in notice and "suggested password: s3cret" in notice
    assert "Ctrl-]" not in notice  # only offered on a terminal


async def test_input_ended_then_server_quiet_ends_the_session() -> None:
    async with open_fake_telnetd("silent") as server:
        url, session, client = await session_for(f"telnet://127.0.0.1:{server.port}/", timeout=0.5)
        out_read, out_write = os.pipe()
        started = time.monotonic()
        with pipe_with(b"") as stdin:
            result = await run_interactive(url, session, stdin_fd=stdin, stdout_fd=out_write, stderr=io.StringIO())
        elapsed = time.monotonic() - started
        os.close(out_write)
        shown = read_all(out_read)
        os.close(out_read)
        await client.aclose()
    assert result.reason == "input ended"
    assert shown.endswith(b"login: ")
    assert 0.4 < elapsed < 3


async def test_regular_file_as_stdin_is_read_in_a_thread(tmp_path: object) -> None:
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "keys"
    path.write_bytes(b"filed\n")
    async with open_fake_telnetd() as server:
        url, session, client = await session_for(f"telnet://127.0.0.1:{server.port}/", timeout=5)
        out_read, out_write = os.pipe()
        stdin = os.open(path, os.O_RDONLY)
        try:
            result = await run_interactive(url, session, stdin_fd=stdin, stdout_fd=out_write, stderr=io.StringIO())
        finally:
            os.close(stdin)
        os.close(out_write)
        shown = read_all(out_read)
        os.close(out_read)
        await client.aclose()
    assert result.reason == "closed by server"
    assert shown.endswith(b"hello filed\r\n")


# -- a terminal (a pty) ------------------------------------------------------------


@contextlib.contextmanager
def open_pty(columns: int = 100, rows: int = 30) -> Iterator[tuple[int, int]]:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    with trio.fail_after(5):
        while not condition():
            await trio.sleep(0.01)


def is_raw(fd: int) -> bool:
    lflag = termios.tcgetattr(fd)[3]
    return not lflag & (termios.ECHO | termios.ICANON | termios.ISIG)


async def drain(master: int) -> bytes:
    """What the client wrote to the terminal so far (the pty must not fill up)."""
    seen = bytearray()
    with contextlib.suppress(BlockingIOError, OSError):
        os.set_blocking(master, False)
        while chunk := os.read(master, 65536):
            seen += chunk
    return bytes(seen)


async def test_terminal_raw_while_server_echoes_escape_ends_and_restores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    with open_pty() as (master, slave):
        before = termios.tcgetattr(slave)
        assert not is_raw(slave)
        async with open_fake_telnetd("interactive") as server:
            url, session, client = await session_for(f"telnet://127.0.0.1:{server.port}/", timeout=5)
            errors = io.StringIO()
            outcome = {}

            async def run() -> None:
                outcome["result"] = await run_interactive(url, session, stdin_fd=slave, stdout_fd=slave, stderr=errors)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                await wait_for(lambda: is_raw(slave), "raw mode")
                os.write(master, b"tty-user\r")
                await wait_for(lambda: b"hello" in server.received or b"tty-user\r\x00" in server.received, "line")
                # The window grows: SIGWINCH makes the client report the new size.
                fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 300, 0, 0))
                os.kill(os.getpid(), signal.SIGWINCH)
                await wait_for(lambda: b"\xff\xfa\x1f\x01\x2c\x00\x32\xff\xf0" in server.received, "resize")
                os.write(master, b"more\x1dignored")
            shown = await drain(master)
            await client.aclose()
        after = termios.tcgetattr(slave)
    assert outcome["result"].reason == "escape"
    assert after == before
    raw = bytes(server.received)
    # TERM and the pty's size went to the server; Enter is CR NUL; nothing after Ctrl-] was sent.
    assert b"\xff\xfb\x18" in raw and b"\xff\xfa\x18\x00XTERM\xff\xf0" in raw
    assert b"\xff\xfb\x1f\xff\xfa\x1f\x00\x64\x00\x1e\xff\xf0" in raw
    assert server.text().endswith(b"tty-user\r\x00more")
    assert b"hello tty-user" in shown
    assert "Ctrl-] ends the session" in errors.getvalue()
    assert "ended with Ctrl-]" in errors.getvalue()


async def test_terminal_restored_when_the_session_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TERM", raising=False)
    with open_pty() as (_master, slave):
        before = termios.tcgetattr(slave)
        out_read, out_write = os.pipe()
        os.close(out_read)  # writing the banner fails with EPIPE, after raw mode was set
        async with open_fake_telnetd("silent") as server:
            url, session, client = await session_for(f"telnet://127.0.0.1:{server.port}/", timeout=5)
            with pytest.raises(ProtocolError, match="output was closed"):
                await run_interactive(url, session, stdin_fd=slave, stdout_fd=out_write, stderr=io.StringIO())
            await client.aclose()
        os.close(out_write)
        assert termios.tcgetattr(slave) == before


# -- the command line --------------------------------------------------------------


def spawn_on_pty(slave: int, *args: str) -> subprocess.Popen[bytes]:
    """`python -m fetcher ...` with the pty as its controlling terminal (it must own it to change modes)."""

    def take_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # As a terminal's foreground job gets it: a test run started in the background (nohup,
        # `&` in a script) passes SIGINT on ignored, and Python then never turns it into Ctrl-C.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    env = {**os.environ, "NETRC": str(ROOT / "tests" / "no-such-netrc"), "TERM": "vt100"}
    return subprocess.Popen(
        [sys.executable, "-m", "fetcher", *args],
        stdin=slave,
        stdout=slave,
        stderr=subprocess.PIPE,
        preexec_fn=take_terminal,
        env=env,
        cwd=ROOT,
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_cli_signal_in_raw_mode_restores_terminal(signum: int) -> None:
    with open_pty() as (master, slave):
        before = termios.tcgetattr(slave)
        async with open_fake_telnetd("interactive") as server:
            process = spawn_on_pty(slave, "--interactive", f"telnet://127.0.0.1:{server.port}/")
            try:
                await wait_for(lambda: is_raw(slave) or process.poll() is not None, "raw mode")
                assert process.poll() is None and is_raw(slave)
                process.send_signal(signum)
                code = await trio.to_thread.run_sync(process.wait, 10)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            assert process.stderr is not None
            stderr = process.stderr.read()
            process.stderr.close()
        await drain(master)
        assert termios.tcgetattr(slave) == before
    assert code == 130, stderr
    assert b"interrupted" in stderr or b"ended by SIGTERM" in stderr


async def test_cli_interactive_with_piped_input() -> None:
    async with open_fake_telnetd() as server:
        url = f"telnet://guest:pw@127.0.0.1:{server.port}/"
        run = await trio.to_thread.run_sync(lambda: run_fetch("--interactive", "--timeout", "5", url, input=b"piped\n"))
    assert run.returncode == 0, run.stderr
    # stdout holds the session and nothing else (no advisory after it).
    assert run.stdout == b"\r\nFake telnetd \xff marker\r\r\nlogin: \r\nhello piped\r\n"
    assert b"suggested login: guest" in run.stderr and b"suggested password: pw" in run.stderr
    assert server.connections == 1


@contextlib.contextmanager
def canary() -> Iterator[socket.socket]:
    """A listener that counts connections without ever answering."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        yield listener


def connections_seen(listener: socket.socket) -> int:
    seen = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return seen
        conn.close()
        seen += 1


def test_without_interactive_no_connection_and_advisory_names_everything() -> None:
    with canary() as listener:
        port = listener.getsockname()[1]
        run = run_fetch(f"telnet://guest:pw@127.0.0.1:{port}/")
        assert run.returncode == 0, run.stderr
        assert connections_seen(listener) == 0
        text = run.stdout.decode()
        assert f"telnet 127.0.0.1 {port}" in text
        assert "Suggested login: guest" in text and "Suggested password: pw" in text
        # The control: with --interactive the same URL does connect (and ends once the input has
        # ended and the silent listener said nothing for the timeout).
        run = run_fetch("--interactive", "--timeout", "0.3", f"telnet://guest:pw@127.0.0.1:{port}/", input=b"")
        assert run.returncode == 0, run.stderr
        assert connections_seen(listener) == 1


def test_interactive_goes_through_the_guard() -> None:
    run = run_fetch("--interactive", "telnet://127.0.0.1:25/", input=b"")
    assert run.returncode == 3
    assert b"25" in run.stderr and b"--allow-port" in run.stderr
    assert b"telnet session" not in run.stderr  # refused before the handler ran


def test_interactive_connection_refused_is_exit_4() -> None:
    with canary() as listener:
        port = listener.getsockname()[1]
    run = run_fetch("--interactive", f"telnet://127.0.0.1:{port}/", input=b"")
    assert run.returncode == 4
    assert b"cannot connect" in run.stderr
