"""No tracebacks: every mistake and every local failure is one line, a hint and a documented exit code."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from fetcher.cli.main import build_parser, main, settings_from_args
from tests.conftest import ROOT, read_pty, run_fetch
from tests.servers.common import serving
from tests.servers.gopher import GopherServer


@pytest.mark.parametrize(
    "option",
    [
        ["-j", "0"], ["--jobs", "-3"], ["--per-host", "-1"], ["--per-host", "0"], ["--retries", "-1"],
        ["--depth", "-1"], ["--timeout", "0"], ["--timeout", "-2"], ["--timeout", "nan"],
        ["--connect-timeout", "0"], ["--max-redirs", "-1"], ["--max-hits", "0"], ["--wais-chunk", "0"],
        ["--retry-max-time", "0"], ["--max-size", "0"], ["-j", "many"], ["--limit", "frontier=0"],
        ["--speed-time", "0"], ["-m", "-1"],
    ],
)  # fmt: skip
def test_bad_numbers_are_usage_errors(option: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([*option, "file:///x"])
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("fetch: argument ") and lines[1] == "  hint: see fetch --help"


def test_a_usage_error_is_one_line_and_a_hint() -> None:
    result = run_fetch("--per-host", "-1", "file:///x")
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "fetch: argument --per-host: '-1': a count must be positive\n  hint: see fetch --help\n"
    )


def test_zero_is_fine_where_it_means_none() -> None:
    args = build_parser().parse_args(["--retries", "0", "--depth", "0", "--max-redirs", "0", "file:///x"])
    assert (args.retries, args.depth, args.max_redirs) == (0, 0, 0)


def test_a_missing_input_file_is_exit_2(tmp_path: Path) -> None:
    result = run_fetch("-i", str(tmp_path / "nope.txt"))
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"fetch: cannot read -i {tmp_path / 'nope.txt'}: No such file or directory\n"
        "  hint: give a file of URLs, one per line ('-' reads them from stdin)\n"
    )


def test_a_missing_output_directory_is_exit_9(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"data")
    result = run_fetch("-o", str(tmp_path / "no" / "such" / "file"), f"file://{source}")
    assert result.returncode == 9
    err = result.stderr.decode()
    assert err.startswith(f"fetch: cannot write {tmp_path}/no/such/file.part: No such file or directory")
    assert f"hint: create the directory {tmp_path}/no/such first" in err and "Traceback" not in err


def test_an_output_directory_that_is_a_file_is_exit_9(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"data")
    (tmp_path / "plain").write_bytes(b"")
    for args in (["-o", str(tmp_path / "plain" / "f")], ["-O", "--output-dir", str(tmp_path / "plain")],
                 ["-d", str(tmp_path / "plain")]):  # fmt: skip
        result = run_fetch(*args, "--no-progress" if "-d" in args else "--raw", f"file://{source}")
        err = result.stderr.decode()
        assert "Traceback" not in err, err
        assert "Not a directory" in err or "File exists" in err
        assert result.returncode in (9, 1)  # 1: a bulk run whose manifest record says 9
    assert (tmp_path / "plain").read_bytes() == b""


def test_an_unreadable_skip_done_manifest_is_exit_2(tmp_path: Path) -> None:
    result = run_fetch("--skip-done", str(tmp_path), "-d", str(tmp_path / "out"), "file:///nowhere")
    assert result.returncode == 2
    assert result.stderr.decode().startswith(f"fetch: cannot read --skip-done {tmp_path}: Is a directory")


def test_an_unwritable_manifest_is_exit_9(tmp_path: Path) -> None:
    result = run_fetch("--manifest", str(tmp_path / "no" / "m.jsonl"), "-d", str(tmp_path / "out"), "file:///nowhere")
    assert result.returncode == 9
    assert result.stderr.decode().startswith(f"fetch: cannot write {tmp_path}/no/m.jsonl: No such file or directory")


def test_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    """`fetch URL | head -c 10`: a real pipe whose reader goes away early."""
    big = tmp_path / "big"
    big.write_bytes(b"x" * (8 << 20))
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "NETRC": str(ROOT / "tests" / "no-such-netrc")}
    command = [sys.executable, "-m", "fetcher", f"file://{big}"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(10) == b"x" * 10
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=30) == 141
    assert err == b""


def test_fetch_piped_into_head_on_a_terminal_ends_quietly(tmp_path: Path) -> None:
    """`fetch URL | head -c 10` typed at a terminal: stdout a pipe closed early, stderr a pty.

    What the person sees on the terminal: no traceback, no error line, and if a
    progress bar was drawn, the cursor is shown again.
    """
    big = tmp_path / "big"
    big.write_bytes(b"x" * (64 << 20))
    master, slave = pty.openpty()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "NETRC": str(ROOT / "tests" / "no-such-netrc"),
           "TERM": "xterm"}  # fmt: skip
    command = [sys.executable, "-m", "fetcher", f"file://{big}"]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    assert process.stdout is not None
    assert process.stdout.read(10) == b"x" * 10
    process.stdout.close()
    seen = read_pty(master)
    assert process.wait(timeout=30) == 141
    assert b"Traceback" not in seen and b"fetch:" not in seen and b"Error" not in seen, seen[-500:]
    if b"\x1b[?25l" in seen:
        assert seen.rfind(b"\x1b[?25h") > seen.rfind(b"\x1b[?25l"), seen[-500:]


# -- -r caps -------------------------------------------------------------------------


async def test_recursion_stops_at_the_frontier_and_page_caps(tmp_path: Path) -> None:
    from fetcher.cli.bulk import run_bulk

    server = GopherServer()
    async with serving(server):
        host, port = server.host, server.port
        rows = "".join(f"0item {i}\t/t/{i}\t{host}\t{port}\r\n" for i in range(50))
        server.extra_routes.update({b"/top": (rows + ".\r\n").encode()})
        server.extra_routes.update({f"/t/{i}".encode(): b"x\r\n" for i in range(50)})
        server._routes = None
        results = {}
        for cap in ("frontier=5", "pages=8"):
            manifest = tmp_path / f"{cap}.jsonl"
            argv = ["-r", "--parent", "-d", str(tmp_path / cap), "--manifest", str(manifest), "--limit", cap,
                    "--no-progress"]  # fmt: skip
            args = build_parser().parse_args([*argv, f"gopher://{host}:{port}/1/top"])
            code = await run_bulk(args, settings_from_args(args))
            results[cap] = (code, [json.loads(line) for line in manifest.read_text().splitlines()])
    code, rows = results["frontier=5"]
    assert code == 7
    assert len(rows) == 5  # the menu, then 4 links while the menu itself still counted as waiting
    code, rows = results["pages=8"]
    assert code == 7 and len(rows) == 8


def test_the_cap_note_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import trio

    from fetcher.cli.bulk import run_bulk

    (tmp_path / "src").mkdir()
    for i in range(20):
        (tmp_path / "src" / f"f{i}").write_bytes(b"x")
    args = build_parser().parse_args(["-r", "-d", str(tmp_path / "out"), "--limit", "pages=3", "--no-progress",
                                      f"file://{tmp_path}/src/"])  # fmt: skip
    assert trio.run(run_bulk, args, settings_from_args(args)) == 7
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "-r stops following links" in line]
    assert notes == [
        "fetch: -r stops following links at 3 URLs in this run (--limit pages=3); what is queued is still "
        "retrieved; raise the cap with --limit pages=N"
    ]
    assert len(list((tmp_path / "out").iterdir())) == 3  # the listing and two files


def test_main_reports_a_missing_input_file_without_traceback(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["-i", str(tmp_path / "missing")]) == 2
    assert b"Traceback" not in capsysbinary.readouterr().err


def test_a_manifest_on_a_full_disk_ends_the_run_in_one_line(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    source = tmp_path / "src"
    source.mkdir()
    for i in range(30):
        (source / f"f{i}").write_bytes(b"x")
    urls = [f"file://{source}/f{i}" for i in range(30)]
    result = run_fetch("-d", str(tmp_path / "out"), "--manifest", "/dev/full", "--no-progress", "-j", "1", *urls)
    assert result.returncode == 9
    assert result.stderr.decode() == (
        "fetch: cannot write /dev/full: No space left on device\n  hint: free some space, then run again\n"
    )
    assert len(list((tmp_path / "out").iterdir())) < 30  # it stopped starting new transfers
