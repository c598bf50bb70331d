"""telnet: against the real inetutils-telnetd, started inetd-style by socat on a free port.

telnetd needs root for its pty.  The program it runs after negotiating is
a stand-in for /bin/login written here: it prints a banner, the terminal
type telnetd gave it and a `login: ` prompt, reads one line and refuses it
(naming the window size), so nobody can log in.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator

import pytest
import trio

from fetcher.schemes.telnet.protocol import TelnetProtocol
from tests.conftest import require, require_program, run_fetch
from tests.interop.processes import Server, free_port

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("no_netrc")]

STAND_IN_LOGIN = """#!/bin/sh
# Stand-in for /bin/login: a banner and a prompt, never a shell.
printf 'Test telnet server (no real logins)\\r\\n'
printf 'terminal: %s\\r\\n' "${TERM:-none}"
printf 'login: '
IFS= read -r user || exit 0
# The size is asked for only now: telnetd may start this program before
# the client's window size has arrived, but not before the line typed after it.
printf '\\r\\nLogin incorrect (window %s)\\r\\n' "$(stty size 2>/dev/null || echo unsized)"
exit 1
"""

# What telnetd asks for, in order, as the client's trace shows it when the
# client refuses TTYPE and NAWS: first its authentication and environment
# probes, then (after the refusals) the character-mode options.
TELNETD_REQUESTS = [
    "< WILL AUTHENTICATION", "< WILL ENCRYPT", "< DO TTYPE", "< DO TSPEED", "< DO XDISPLOC",
    "< DO NEW-ENVIRON", "< DO OLD-ENVIRON",
    "< WILL SGA", "< DO ECHO", "< DO LINEMODE", "< DO NAWS", "< WILL STATUS", "< DO LFLOW",
    "< WILL ECHO", "< DO TM", "< DO BINARY",
]  # fmt: skip


@pytest.fixture(scope="module")
def telnetd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    telnetd = require_program("telnetd", "inetutils-telnetd")
    socat = require_program("socat", "socat")
    require(os.geteuid() == 0, "root (telnetd allocates a pty)", "run the interop tests as root, as CI does")
    state = tmp_path_factory.mktemp("telnetd")
    state.chmod(0o755)
    login = state / "stand-in-login"
    login.write_text(STAND_IN_LOGIN)
    login.chmod(0o755)
    port = free_port()
    server = Server(
        [
            socat,
            f"TCP-LISTEN:{port},bind=127.0.0.1,fork,reuseaddr,backlog=32",
            f"EXEC:{telnetd} -E {login},nofork",
        ],
        port,
        log=state / "socat.log",
    )
    yield port
    server.stop()


async def fetch(*args: str, input: bytes) -> tuple[int, bytes, bytes, float]:
    started = time.monotonic()
    run = await trio.to_thread.run_sync(lambda: run_fetch(*args, input=input, timeout=30))
    return run.returncode, run.stdout, run.stderr, time.monotonic() - started


async def test_banner_and_prompt_reach_stdout_then_input_end_ends_the_session(telnetd: int) -> None:
    code, out, err, elapsed = await fetch(
        "--interactive", "--timeout", "1", f"telnet://guest:secret@127.0.0.1:{telnetd}/", input=b""
    )
    assert code == 0, err
    assert re.search(rb"\r\n\S+ \S+ \(\S+\) \(pts/\d+\)\r\n", out), out  # telnetd's host line
    assert b"Test telnet server (no real logins)\r" in out
    # Not a terminal: TTYPE and NAWS were refused, so telnetd chose the type and size.
    assert re.search(rb"terminal: \S+\r", out), out
    assert out.endswith(b"login: ")
    assert b"suggested login: guest" in err and b"suggested password: secret" in err
    assert b"input ended and the server sent nothing for 1 s" in err
    assert elapsed < 10


async def test_a_line_is_echoed_refused_and_the_server_hangs_up(telnetd: int) -> None:
    code, out, err, elapsed = await fetch(
        "--interactive", "--timeout", "20", f"telnet://127.0.0.1:{telnetd}/", input=b"guest\n"
    )
    assert code == 0, err
    # The server's pty echoes the typed-ahead line (WILL ECHO was accepted; the line may come
    # before the prompt), then the stand-in refuses the login and exits.
    assert b"guest\r\n" in out and b"login: " in out
    assert re.search(rb"Login incorrect \(window \d+ \d+\)\r+\n$", out), out
    assert b"the server closed the connection" in err
    assert elapsed < 15  # ended by the server, not by the 20 s idle limit


async def test_option_sequence_of_telnetd(telnetd: int) -> None:
    client = TelnetProtocol()
    shown = bytearray()
    notes: list[str] = []
    with trio.fail_after(10):
        stream = await trio.open_tcp_stream("127.0.0.1", telnetd)
        async with stream:
            while not shown.endswith(b"login: "):
                data = await stream.receive_some(4096)
                assert data, f"telnetd closed early; shown {bytes(shown)!r}"
                text, reply = client.receive(data)
                shown += text
                notes += client.take_notes()
                await stream.send_all(reply)
    assert [note for note in notes if note.startswith("<")] == TELNETD_REQUESTS
    assert client.remote_echo and client.local_enabled(0)  # ECHO from the server, BINARY from us


async def test_terminal_type_and_window_size_reach_the_login_program(telnetd: int) -> None:
    client = TelnetProtocol(terminal_type="vt220", window_size=(101, 33))
    shown = bytearray()
    with trio.fail_after(10):
        stream = await trio.open_tcp_stream("127.0.0.1", telnetd)
        async with stream:
            typed = False
            while data := await stream.receive_some(4096):
                text, reply = client.receive(data)
                shown += text
                if shown.endswith(b"login: ") and not typed:
                    reply += client.send(b"someone\n")
                    typed = True
                await stream.send_all(reply)
    assert re.search(rb"terminal: vt220\r", bytes(shown), re.IGNORECASE), bytes(shown)
    assert b"Login incorrect (window 33 101)" in shown
