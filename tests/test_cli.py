"""The `fetch` command as a user sees it: output, files, messages, exit codes."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest

from fetcher.cli.main import main
from tests.conftest import ROOT, run_fetch
from tests.plugin_scheme import LineServer


def serve(replies: dict[str, bytes | None]) -> LineServer:
    return LineServer(lambda name: replies.get(name, b"ERR 6 no such thing\r\n"))


def test_version_is_fast_and_light() -> None:
    result = run_fetch("--version")
    assert result.returncode == 0
    assert result.stdout.decode().startswith("fetch (fetcher) ")
    # --version must not import trio or any protocol module.
    probe = run_fetch("--version", env={"PYTHONVERBOSE": "1"})
    imported = probe.stderr.decode()
    assert "import 'trio'" not in imported
    assert "schemes" not in imported


def test_file_url_prints_the_file() -> None:
    result = run_fetch(f"file://{ROOT}/pyproject.toml")
    assert result.returncode == 0
    assert result.stdout == (ROOT / "pyproject.toml").read_bytes()


def test_file_directory_lists(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"12345")
    (tmp_path / "sub").mkdir()
    result = run_fetch(f"file://{tmp_path}/")
    assert result.returncode == 0
    lines = result.stdout.decode().splitlines()
    assert lines == ["file       5  a.txt", "directory  -  sub/"]
    links = run_fetch("--links", f"file://{tmp_path}/").stdout.decode().splitlines()
    assert links == [f"file://{tmp_path}/a.txt", f"file://{tmp_path}/sub/"]
    rows = [json.loads(line) for line in run_fetch("--json", f"file://{tmp_path}/").stdout.splitlines()]
    assert rows[0]["name"] == "a.txt" and rows[0]["size"] == 5 and rows[0]["type"] == "file"
    assert rows[1]["type"] == "directory" and rows[1]["url"] == f"file://{tmp_path}/sub/"


def test_file_names_with_control_characters_are_escaped(tmp_path: Path) -> None:
    (tmp_path / "evil\x1b[31mred").write_bytes(b"")
    result = run_fetch(f"file://{tmp_path}/")
    assert b"\x1b" not in result.stdout
    assert b"evil\\x1b[31mred" in result.stdout


def test_file_other_host_is_refused_with_ftp_hint() -> None:
    result = run_fetch("file://example.com/etc/motd")
    assert result.returncode == 2
    assert b"ftp://example.com/etc/motd" in result.stderr


def test_file_missing_is_exit_6(tmp_path: Path) -> None:
    result = run_fetch(f"file://{tmp_path}/absent.txt")
    assert result.returncode == 6
    assert b"no such file or directory" in result.stderr


def test_telnet_advisory() -> None:
    result = run_fetch("telnet://guest:pw@127.0.0.1:2323/")
    assert result.returncode == 0
    text = result.stdout.decode()
    assert "telnet 127.0.0.1 2323" in text
    assert "Suggested login: guest" in text
    assert "Suggested password: pw" in text
    data = json.loads(run_fetch("--json", "telnet://guest@h.example/").stdout)
    assert data["host"] == "h.example" and data["port"] == 23 and data["user"] == "guest"
    assert data["password"] is None


def test_mailto_advisory() -> None:
    result = run_fetch("mailto:info%25desk@example.com")
    assert result.returncode == 0
    assert "info%desk@example.com" in result.stdout.decode()


def test_malformed_url_names_the_part() -> None:
    result = run_fetch("ftp://host:99999/x")
    assert result.returncode == 2
    assert b"port 99999 is out of range (0-65535)" in result.stderr


def test_unknown_scheme_has_no_handler() -> None:
    result = run_fetch("x-unknown:foo")
    assert result.returncode == 2
    assert b"no handler for scheme 'x-unknown'" in result.stderr


def test_guard_refusals_exit_3_with_hint() -> None:
    result = run_fetch("gopher://127.0.0.1:6379/_save")
    assert result.returncode == 3
    assert b"--allow-port 6379" in result.stderr
    result = run_fetch("ftp://127.0.0.1/a%0d%0aDELE%20x")
    assert result.returncode == 3
    assert b"name contains '\\r'" in result.stderr


def test_usage_without_url() -> None:
    result = run_fetch()
    assert result.returncode == 2
    assert b"give at least one URL" in result.stderr


def test_output_file_is_written_via_part(
    tmp_path: Path, x_test: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    server = serve({"doc": b"OK 5\r\nhello"})
    try:
        target = tmp_path / "out.bin"
        assert main(["-o", str(target), f"x-test://127.0.0.1:{server.port}/doc"]) == 0
        assert target.read_bytes() == b"hello"
        assert not (tmp_path / "out.bin.part").exists()
    finally:
        server.close()


def test_failed_transfer_leaves_no_complete_looking_file(
    tmp_path: Path, x_test: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    server = serve({"doc": b"OK 100\r\nonly part of it"})
    try:
        target = tmp_path / "out.bin"
        code = main(["-o", str(target), f"x-test://127.0.0.1:{server.port}/doc"])
        assert code == 7
        assert not target.exists()
        assert (tmp_path / "out.bin.part").read_bytes() == b"only part of it"
        assert b"connection closed after 15 of 100 bytes" in capsysbinary.readouterr().err
    finally:
        server.close()


def test_remote_name_is_sanitized(tmp_path: Path, x_test: None, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    server = serve({"x/..%2F..%2Fevil": b"OK 2\r\nhi"})
    try:
        url = f"x-test://127.0.0.1:{server.port}/x/..%2F..%2Fevil"
        # The last segment decodes to "../../evil"; only "evil" survives.
        assert main(["-O", "--output-dir", str(tmp_path), url]) == 0
        assert [p.name for p in tmp_path.iterdir()] == ["evil"]
    finally:
        server.close()


@pytest.mark.parametrize(
    ("reply", "code", "message"),
    [
        (b"ERR 5 login refused\r\n", 5, b"login refused"),
        (b"ERR 6 not here\r\n", 6, b"not here"),
        (b"ERR 7 bad reply\r\n", 7, b"bad reply"),
    ],
)
def test_exit_codes_from_handler_errors(
    x_test: None, capsysbinary: pytest.CaptureFixture[bytes], reply: bytes, code: int, message: bytes
) -> None:
    server = serve({"doc": reply})
    try:
        assert main([f"x-test://127.0.0.1:{server.port}/doc"]) == code
        assert message in capsysbinary.readouterr().err
    finally:
        server.close()


def test_connect_refused_is_exit_4(x_test: None, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    server = serve({})
    port = server.port
    server.close()
    assert main([f"x-test://127.0.0.1:{port}/doc"]) == 4
    assert b"cannot connect to 127.0.0.1:" in capsysbinary.readouterr().err


def test_stall_is_exit_8(x_test: None, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    server = serve({"doc": None})
    try:
        assert main(["--timeout", "0.3", f"x-test://127.0.0.1:{server.port}/doc"]) == 8
        assert b"sent nothing for 0.3 s" in capsysbinary.readouterr().err
    finally:
        server.close()


def test_interrupt_is_exit_130(x_test: None, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    # Ctrl-C as a terminal delivers it, even when this test run inherited SIGINT ignored (a run
    # started in the background), where Python would never raise KeyboardInterrupt.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    server = serve({"doc": None})
    timer = threading.Timer(0.5, os.kill, args=(os.getpid(), signal.SIGINT))
    try:
        timer.start()
        assert main(["--timeout", "20", f"x-test://127.0.0.1:{server.port}/doc"]) == 130
    finally:
        timer.cancel()
        server.close()
        signal.signal(signal.SIGINT, previous)


def test_verbose_traces_protocol_lines(x_test: None, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    server = serve({"doc": b"OK 2\r\nhi"})
    try:
        assert main(["-v", f"x-test://127.0.0.1:{server.port}/doc"]) == 0
        captured = capsysbinary.readouterr()
        assert captured.out == b"hi"
        assert b"> GET doc" in captured.err
    finally:
        server.close()


def test_terminal_output_escapes_control_characters() -> None:
    from fetcher.text import escape_bytes

    assert escape_bytes(b"ok\n\x1b[2Jgone\r") == "ok\n\\x1b[2Jgone\\r"


def test_an_error_wrapped_by_a_nursery_keeps_its_exit_code(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    import trio

    from fetcher.errors import NotFound

    def fail(*args: object) -> int:
        raise ExceptionGroup("nursery", [ExceptionGroup("inner", [NotFound("gone away")])])

    monkeypatch.setattr(trio, "run", fail)
    assert main(["file:///nowhere"]) == 6
    assert capsysbinary.readouterr().err == b"fetch: gone away\n"

    def bug(*args: object) -> int:
        raise ExceptionGroup("nursery", [ValueError("a bug")])

    monkeypatch.setattr(trio, "run", bug)
    with pytest.raises(ExceptionGroup):
        main(["file:///nowhere"])
