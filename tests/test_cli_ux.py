"""The command a person uses (issue 21): progress, terminal safety, no-clobber, -C, retries, -H/-A/-e, -w.

Terminal behaviour runs the real `fetch` under a pseudo-terminal (the pty
module): what the test reads from the pty master is what a person would see.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.conftest import ROOT, read_pty, run_fetch
from tests.servers.http_server import Exchange, HTTPTestServer, Received

BIG = bytes(range(256)) * 1200  # 300 KiB with NUL bytes: binary
TEXT = b"line one\nline two\n"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "HTTP_PROXY")
NO_PROXY_ENV = dict.fromkeys(PROXY_VARIABLES, "")
CSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield


@pytest.fixture
async def server(nursery: trio.Nursery) -> HTTPTestServer:
    instance = HTTPTestServer()
    await nursery.start(instance.serve)
    instance.add("/big.bin", BIG, content_type="application/octet-stream")
    instance.add("/stream.bin", BIG, content_type="application/octet-stream", chunked=True)
    instance.add("/notes.txt", TEXT)
    instance.add("/photo.png", b"\x89PNG\r\n\x1a\nnot really", content_type="image/png")
    return instance


async def cli(*args: str, cwd: Path | None = None) -> tuple[int, bytes, str]:
    result = await trio.to_thread.run_sync(lambda: run_fetch(*args, env=NO_PROXY_ENV, cwd=cwd))
    return result.returncode, result.stdout, result.stderr.decode("utf-8", "replace")


def _on_pty(args: tuple[str, ...], *, stdout_on_pty: bool, cwd: Path | None) -> tuple[int, bytes, bytes]:
    """Run fetch with stderr (and maybe stdout) on a 100x24 pty; return (exit code, terminal bytes, piped stdout)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    env = {**os.environ, **NO_PROXY_ENV, "NETRC": str(ROOT / "tests" / "no-such-netrc"), "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "fetcher", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave if stdout_on_pty else subprocess.PIPE,
        stderr=slave,
        env=env,
        cwd=cwd,
    )
    os.close(slave)
    seen = read_pty(master)
    piped = process.stdout.read() if process.stdout is not None else b""
    code = process.wait(timeout=30)
    return code, seen, piped


async def on_pty(*args: str, stdout_on_pty: bool = False, cwd: Path | None = None) -> tuple[int, bytes, bytes]:
    return await trio.to_thread.run_sync(lambda: _on_pty(args, stdout_on_pty=stdout_on_pty, cwd=cwd))


def final_line(terminal: bytes) -> str:
    """The last thing left visible on the bottom line: escape sequences dropped, last \\r segment kept."""
    text = CSI.sub(b"", terminal).decode("utf-8", "replace")
    lines = [line.split("\r")[-1] if not line.endswith("\r") else line.rstrip("\r").split("\r")[-1]
             for line in text.split("\n")]  # fmt: skip
    visible = [line for line in lines if line.strip()]
    return visible[-1] if visible else ""


# -- progress ------------------------------------------------------------------------------------------------


async def test_progress_bar_on_a_terminal_shows_size_percent_and_ends_cleanly(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    code, terminal, piped = await on_pty("-o", str(tmp_path / "big.bin"), server.url("/big.bin"))
    assert code == 0, terminal
    assert (tmp_path / "big.bin").read_bytes() == BIG
    last = final_line(terminal)
    assert "big.bin" in last and "100%" in last and "300.0/300.0 KiB" in last, last
    # It ends on a fresh line with the cursor shown again, and nothing but SGR/cursor sequences was drawn.
    assert CSI.sub(b"", terminal).endswith(b"\r\n")
    assert terminal.endswith(b"\x1b[?25h")  # the cursor is shown again
    leftovers = CSI.sub(b"", terminal)
    assert b"\x1b" not in leftovers
    assert piped == b""


async def test_unknown_size_shows_a_spinner_with_bytes_and_rate(server: HTTPTestServer, tmp_path: Path) -> None:
    code, terminal, _ = await on_pty("-o", str(tmp_path / "s.bin"), server.url("/stream.bin"))
    assert code == 0, terminal
    last = final_line(terminal)
    assert last.startswith("✓ s.bin 300.0 KiB ") and "/s" in last and "%" not in last, last
    # The rate in the binary units --limit-rate reads (4M is 4.0 MiB/s, never "4.2 MB/s").
    assert re.search(r" \d+(\.\d)? (B|KiB|MiB|GiB)/s ", last), last


async def test_no_bar_when_stderr_is_not_a_terminal_or_with_silent(server: HTTPTestServer, tmp_path: Path) -> None:
    code, out, err = await cli("-o", str(tmp_path / "a.bin"), server.url("/big.bin"))
    assert (code, out, err) == (0, b"", "")
    code, terminal, _ = await on_pty("-s", "-o", str(tmp_path / "b.bin"), server.url("/big.bin"))
    assert (code, terminal) == (0, b"")
    code, terminal, _ = await on_pty("--no-progress", "-o", str(tmp_path / "c.bin"), server.url("/big.bin"))
    assert (code, terminal) == (0, b"")


async def test_progress_forces_the_bar_without_a_terminal(server: HTTPTestServer, tmp_path: Path) -> None:
    code, _, err = await cli("--progress", "-o", str(tmp_path / "a.bin"), server.url("/big.bin"))
    assert code == 0
    assert "100%" in err and "a.bin" in err


async def test_no_bar_over_a_document_shown_on_the_terminal(server: HTTPTestServer) -> None:
    code, terminal, _ = await on_pty(server.url("/notes.txt"), stdout_on_pty=True)
    assert code == 0
    assert terminal.replace(b"\r\n", b"\n") == TEXT


# -- binary on a terminal ------------------------------------------------------------------------------------


async def test_binary_is_refused_on_a_terminal_with_a_hint(server: HTTPTestServer) -> None:
    for path in ("/big.bin", "/photo.png"):
        code, terminal, _ = await on_pty(server.url(path), stdout_on_pty=True)
        text = terminal.decode("utf-8", "replace")
        assert code == 2, text
        assert text.startswith("fetch: not writing binary data to the terminal")
        assert "hint: binary output can mess up your terminal; use -o FILE or -o - to force" in text
        assert "PNG" not in text and "\x00" not in text


async def test_dash_o_dash_forces_binary_out_escaped(server: HTTPTestServer) -> None:
    code, terminal, _ = await on_pty("-o", "-", server.url("/photo.png"), stdout_on_pty=True)
    assert code == 0
    assert b"PNG" in terminal and b"\x1a" not in terminal  # written, control characters escaped


async def test_binary_to_a_pipe_is_written_as_is(server: HTTPTestServer) -> None:
    code, out, err = await cli(server.url("/big.bin"))
    assert (code, err) == (0, "")
    assert out == BIG


# -- existing files, -C, netrc -------------------------------------------------------------------------------


async def test_no_clobber_keeps_an_existing_file(server: HTTPTestServer, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(b"mine\n")
    code, out, err = await cli("--no-clobber", "-O", server.url("/notes.txt"), cwd=tmp_path)
    assert (code, out) == (0, b"")
    assert err == "fetch: notes.txt exists; kept it (--no-clobber)\n"
    code, _, err = await cli("--no-clobber", "-o", str(tmp_path / "notes.txt"), server.url("/notes.txt"))
    assert code == 0 and "kept it" in err
    assert (tmp_path / "notes.txt").read_bytes() == b"mine\n"
    assert server.requests == []  # nothing was asked of the server
    code, _, err = await cli("-O", server.url("/notes.txt"), cwd=tmp_path)
    assert (code, err) == (0, "")
    assert (tmp_path / "notes.txt").read_bytes() == TEXT  # the default replaces it, as --help says


async def test_no_clobber_in_a_directory_run_keeps_existing_files(server: HTTPTestServer, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "notes.txt").write_bytes(b"mine\n")
    code, _, err = await cli("--no-clobber", "-d", str(out_dir), server.url("/notes.txt"), server.url("/big.bin"))
    assert code == 0, err
    assert f"fetch: {out_dir / 'notes.txt'} exists; kept it (--no-clobber)" in err.splitlines()
    assert (out_dir / "notes.txt").read_bytes() == b"mine\n"
    assert (out_dir / "big.bin").read_bytes() == BIG
    assert [request.path for request in server.requests] == ["/big.bin"]


def test_help_states_what_dash_o_does_with_an_existing_file() -> None:
    result = run_fetch("--help")
    text = " ".join(result.stdout.decode().split())
    assert "replaces an existing file; see --no-clobber" in text
    assert "keep an existing output file (-o, -O, -d): say so and exit 0 (default: replace it)" in text


async def test_continue_on_a_complete_file_says_so(server: HTTPTestServer, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(TEXT)
    code, out, err = await cli("-C", "-O", server.url("/notes.txt"), cwd=tmp_path)
    assert (code, out) == (0, b"")
    assert err == f"fetch: notes.txt is already complete ({len(TEXT)} bytes); nothing to do\n"
    # A shorter file is not complete: it is downloaded again.
    (tmp_path / "notes.txt").write_bytes(b"line")
    code, _, err = await cli("-C", "-O", server.url("/notes.txt"), cwd=tmp_path)
    assert (code, err) == (0, "")
    assert (tmp_path / "notes.txt").read_bytes() == TEXT


def test_missing_netrc_file_is_an_error(tmp_path: Path) -> None:
    result = run_fetch("--netrc-file", str(tmp_path / "nosuch"), "http://127.0.0.1:1/")
    assert result.returncode == 2
    lines = result.stderr.decode().splitlines()
    assert lines[0] == f"fetch: --netrc-file '{tmp_path / 'nosuch'}': no such file"
    assert lines[1].startswith("  hint:") and len(lines) == 2


# -- retries for one URL -------------------------------------------------------------------------------------


async def test_retries_apply_to_a_single_url(server: HTTPTestServer) -> None:
    calls: list[int] = []

    @server.route("/flaky")
    async def flaky(request: Received, exchange: Exchange) -> None:
        calls.append(1)
        if len(calls) < 3:
            await exchange.respond(503, b"busy\n", [("Retry-After", "0")])
        else:
            await exchange.respond(200, TEXT)

    code, out, err = await cli("--retries", "2", server.url("/flaky"))
    assert (code, out, err) == (0, TEXT, "")
    assert len(calls) == 3
    calls.clear()
    code, out, err = await cli(server.url("/flaky"))  # default for one URL: no retry
    assert code == 7 and out == b"" and "unavailable" in err
    assert len(calls) == 1


async def test_permanent_failures_are_not_retried(server: HTTPTestServer) -> None:
    code, _, err = await cli("--retries", "3", server.url("/missing"))
    assert code == 6, err
    assert [request.path for request in server.requests] == ["/missing"]


# -- request headers -----------------------------------------------------------------------------------------


async def test_header_user_agent_and_referer_are_sent_exactly(server: HTTPTestServer) -> None:
    code, out, err = await cli("-H", "X-Trace: abc 1", "-H", "Accept: text/plain", "-H", "Accept-Encoding:",
                               "-A", "probe/2", "-e", "http://example.org/from", server.url("/notes.txt"))  # fmt: skip
    assert (code, out, err) == (0, TEXT, "")
    assert server.requests[0].raw == (
        b"GET /notes.txt HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: probe/2\r\nAccept: text/plain\r\n"
        b"X-Trace: abc 1\r\nReferer: http://example.org/from\r\n\r\n" % server.port
    )


@pytest.mark.parametrize(
    "args",
    [("-H", "X-A: one\r\nX-Injected: two"), ("-H", "X-A: one\ntwo"), ("-A", "probe\r\nX-B: 1"),
     ("-e", "http://a/\r\nX-C: 1"), ("-H", "X A: one")],
)  # fmt: skip
async def test_header_injection_is_refused_by_the_guard(server: HTTPTestServer, args: tuple[str, str]) -> None:
    code, out, err = await cli(*args, server.url("/notes.txt"))
    assert code == 3, err
    assert out == b"" and "line-injection rule" in err and err.startswith("fetch: header")
    assert server.requests == []


async def test_header_with_other_control_or_non_ascii_characters_is_refused(server: HTTPTestServer) -> None:
    code, _, err = await cli("-H", "X-A: a\x1bb", server.url("/notes.txt"))
    assert code == 3 and "control-character rule" in err, err
    code, _, err = await cli("-A", "caf\u00e9", server.url("/notes.txt"))
    assert code == 2 and err.startswith("fetch: header 'User-Agent' holds a non-ASCII character"), err
    assert server.requests == []
    code, out, _ = await cli("-H", "X-A: a\tb", server.url("/notes.txt"))  # a TAB is fine inside a value
    assert (code, out) == (0, TEXT) and server.requests[0].header("x-a") == "a\tb"


def test_header_without_a_colon_is_a_usage_error() -> None:
    result = run_fetch("-H", "NoColon", "http://127.0.0.1:1/")
    assert result.returncode == 2
    assert result.stderr.decode().startswith("fetch: argument -H/--header: 'NoColon' is not 'NAME: VALUE'")


# -- write-out -----------------------------------------------------------------------------------------------


async def test_write_out_after_each_url(server: HTTPTestServer, tmp_path: Path) -> None:
    form = r"%{url} %{size} %{exit_code} %{time_total}\n"
    code, out, _ = await cli("-w", form, server.url("/notes.txt"), server.url("/missing"))
    assert code == 1
    lines = out.decode().split("\n")
    assert lines[0] == "line one" and lines[1] == "line two"
    first, second = lines[2].split(" "), lines[3].split(" ")
    assert first[:3] == [server.url("/notes.txt"), str(len(TEXT)), "0"]
    assert second[:3] == [server.url("/missing"), "0", "6"]
    assert re.fullmatch(r"\d+\.\d{6}", first[3]) and lines[4] == ""
    code, out, _ = await cli("-o", str(tmp_path / "x"), "-w", r"%{size}\t%%\n", server.url("/big.bin"))
    assert (code, out) == (0, b"%d\t%%\n" % len(BIG))


def test_write_out_unknown_field_is_a_usage_error() -> None:
    result = run_fetch("-w", "%{bogus}", "http://127.0.0.1:1/")
    assert result.returncode == 2
    assert "unknown -w field %{bogus}" in result.stderr.decode()


# -- shell completion ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_name_every_option(shell: str) -> None:
    import shutil

    from fetcher.cli.main import build_parser

    result = run_fetch("--print-completion", shell)
    assert result.returncode == 0, result.stderr
    script = result.stdout.decode()
    options = [option for action in build_parser()._actions for option in action.option_strings]
    assert len(options) > 60
    for option in options:
        fish = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
        form = fish if shell == "fish" else option
        assert re.search(rf"(?<![\w-]){re.escape(form)}(?![\w-])", script), (shell, option)
    checker = shutil.which(shell)
    if checker is not None:  # the script parses in its own shell
        assert subprocess.run([checker, "-n"], input=result.stdout, capture_output=True).returncode == 0


def test_completion_is_not_imported_by_an_ordinary_run() -> None:
    probe = subprocess.run([sys.executable, "-X", "importtime", "-m", "fetcher", "--version"], capture_output=True)
    assert b"shtab" not in probe.stderr and b"fetcher.cli.completion" not in probe.stderr


def test_every_option_has_help_text_and_help_ends_with_examples() -> None:
    from fetcher.cli.main import build_parser

    silent = [action.option_strings for action in build_parser()._actions if action.option_strings and not action.help]
    assert silent == []
    text = run_fetch("--help").stdout.decode()
    examples = text[text.index("\nexamples:\n") :]
    assert "  fetch -O https://example.org/big.iso" in examples
    assert "fetch -w '%{size} %{time_total}\\n' -o out URL" in examples
