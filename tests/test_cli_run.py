"""A run as a person watches it (issue 21): bulk and mirror progress on a pty, --limit-rate,
--content-disposition, --config and ~/.fetchrc.

Terminal behaviour runs the real `fetch` under a pseudo-terminal; what the test
reads from the pty master is what a person would see.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import trio

from fetcher.net.ratelimit import RateLimiter, parse_rate
from tests.conftest import run_fetch
from tests.servers.http_server import HTTPTestServer
from tests.test_cli_ux import CSI, NO_PROXY_ENV, clean_environment, final_line, on_pty  # noqa: F401

MIB = 1 << 20
BLOB = bytes(range(256)) * 4096  # 1 MiB


@pytest.fixture
async def server(nursery: trio.Nursery) -> HTTPTestServer:
    instance = HTTPTestServer()
    await nursery.start(instance.serve)
    instance.add("/blob.bin", BLOB, content_type="application/octet-stream")
    instance.add("/two.bin", BLOB * 2, content_type="application/octet-stream")
    for number in range(6):
        instance.add(f"/f{number}.txt", b"file %d\n" % number * 1000)
    return instance


async def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[int, bytes, str]:
    result = await trio.to_thread.run_sync(lambda: run_fetch(*args, env={**NO_PROXY_ENV, **(env or {})}, cwd=cwd))
    return result.returncode, result.stdout, result.stderr.decode("utf-8", "replace")


def assert_ends_cleanly(terminal: bytes) -> None:
    """The bar's last state is a finished line, the cursor is shown again, no stray escape bytes."""
    assert CSI.sub(b"", terminal).endswith(b"\r\n"), terminal[-300:]
    if b"\x1b[?25l" in terminal:
        assert terminal.rfind(b"\x1b[?25h") > terminal.rfind(b"\x1b[?25l"), terminal[-300:]
    assert b"\x1b" not in CSI.sub(b"", terminal)
    assert b"Traceback" not in terminal


# -- bulk and mirror progress --------------------------------------------------------------------------------


async def test_bulk_progress_on_a_terminal_counts_urls_failures_and_bytes(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    urls = [server.url(f"/f{number}.txt") for number in range(6)] + [server.url("/missing")]
    code, terminal, _ = await on_pty("-d", str(tmp_path / "out"), *urls)
    assert code == 1, terminal
    text = CSI.sub(b"", terminal).decode("utf-8", "replace")
    bar = [line for line in text.replace("\r", "\n").split("\n") if line.startswith("URLs ")]
    assert bar, text
    last_bar = bar[-1]
    assert "7/7 100%" in last_bar and "1 failed" in last_bar and "41.0 KiB" in last_bar and "/s" in last_bar, last_bar
    assert "left" not in last_bar  # finished: the elapsed time, not an estimate
    assert (
        final_line(terminal) == "fetch: 6 retrieved, 1 failed; 42000 bytes in " + final_line(terminal).split(" in ")[1]
    )
    assert f"fetch: {server.url('/missing')}: HTTP 404" in text  # the failure has its own line
    assert "fetch: ok " not in text  # per-file lines only with -v
    assert_ends_cleanly(terminal)


async def test_bulk_progress_with_verbose_prints_a_line_per_finished_file(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    urls = [server.url(f"/f{number}.txt") for number in range(3)]
    code, terminal, _ = await on_pty("-v", "-d", str(out), *urls, urls[0])
    assert code == 0, terminal
    text = CSI.sub(b"", terminal).decode("utf-8", "replace")
    for number in range(3):
        assert f"fetch: ok {urls[number]} -> {out / f'f{number}.txt'} (7000 bytes)" in text
    assert f"fetch: skipped {urls[0]}: duplicate of the command line" in text
    # The -v protocol trace is printed above the bar, never into it.
    assert "> GET /f1.txt HTTP/1.1\r\n" in text
    for line in text.replace("\r", "\n").split("\n"):
        if "URLs " in line:
            assert line.startswith("URLs ") and re.search(r"(\d:\d\d:\d\d|-:--:--)( left)?\s*$", line), line
    assert_ends_cleanly(terminal)


async def test_bulk_without_a_terminal_or_with_silent_draws_nothing(server: HTTPTestServer, tmp_path: Path) -> None:
    urls = [server.url(f"/f{number}.txt") for number in range(3)]
    code, out, err = await cli("-d", str(tmp_path / "a"), *urls)
    assert (code, out) == (0, b"")
    assert err.startswith("fetch: 3 retrieved, 0 failed; 21000 bytes in ") and err.count("\n") == 1, err
    code, terminal, _ = await on_pty("-s", "-d", str(tmp_path / "b"), *urls)
    assert code == 0
    assert b"\x1b" not in terminal and b"URLs" not in terminal
    assert terminal.startswith(b"fetch: 3 retrieved, 0 failed")
    code, _, err = await cli("--progress", "-d", str(tmp_path / "c"), *urls)  # forced on without a terminal
    assert code == 0 and "3/3 100%" in err, err


async def test_mirror_progress_shows_what_is_known_so_far_and_no_estimate(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    for number in range(5):
        (source / f"a{number}.txt").write_bytes(b"a" * 100)
        (source / "sub" / f"b{number}.txt").write_bytes(b"b" * 100)
    code, terminal, _ = await on_pty("-r", "-d", str(tmp_path / "mirror"), f"file://{source}/")
    assert code == 0, terminal
    text = CSI.sub(b"", terminal).decode("utf-8", "replace")
    states = [line.strip() for line in text.replace("\r", "\n").split("\n") if line.startswith("URLs ")]
    assert states, text
    assert all("left" not in state for state in states)  # a growing total gets no made-up time left
    assert all("%" not in state for state in states[:-1] if "so far" in state)
    assert "12/12 100%" in states[-1] and "0 failed" in states[-1] and "1000 B" in states[-1], states[-1]
    assert_ends_cleanly(terminal)


async def test_one_job_at_a_time_retrieves_every_url(
    server: HTTPTestServer, nursery: trio.Nursery, tmp_path: Path
) -> None:
    """-j 1: an idle HTTP lane worker gives its one job slot up for the next host (it used to wait for ever)."""
    other = HTTPTestServer()
    await nursery.start(other.serve)
    other.add("/g.txt", b"other host\n")
    urls = [server.url("/f1.txt"), server.url("/f2.txt"), other.url("/g.txt"), server.url("/f3.txt")]
    result = await trio.to_thread.run_sync(
        lambda: run_fetch("-j", "1", "-d", str(tmp_path / "out"), *urls, env=NO_PROXY_ENV, timeout=30)
    )
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["f1.txt", "f2.txt", "f3.txt", "g.txt"]


# -- --limit-rate ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rate"),
    [("100K", 102400), ("1M", MIB), ("1.5m", 3 * MIB // 2), ("2G", 2 << 30), ("50000", 50000), ("256k", 262144),
     ("100KB/s", 102400), ("1M/s", MIB)],
)  # fmt: skip
def test_rates_are_read_as_curl_reads_them(text: str, rate: int) -> None:
    assert parse_rate(text) == rate


@pytest.mark.parametrize("text", ["", "0", "0K", "fast", "-1K", "1T", "1.K", "K"])
def test_bad_rates_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="rate"):
        parse_rate(text)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_limiter_paces_one_transfer_to_its_rate() -> None:
    clock = FakeClock()
    limiter = RateLimiter(256 * 1024, burst=64 * 1024, clock=clock)
    waits = []
    for _ in range(16):  # 1 MiB in 64 KiB chunks, sleeping exactly as told
        wait = limiter.delay(64 * 1024)
        waits.append(wait)
        clock.now += wait
    assert waits[0] == 0.0  # the burst
    assert waits[1:] == [0.25] * 15
    assert clock.now - 100.0 == pytest.approx((MIB - 64 * 1024) / (256 * 1024))  # 3.75 s for 1 MiB at 256K


def test_the_limiter_lets_a_fast_reader_through_and_does_not_bank_idle_time() -> None:
    clock = FakeClock()
    limiter = RateLimiter(1000, burst=500, clock=clock)
    assert limiter.delay(400) == 0.0
    clock.now += 10.0  # idle for a long time: the bucket holds at most `burst`
    assert limiter.delay(500) == 0.0
    assert limiter.delay(1000) == pytest.approx(1.0)  # 1000 bytes of debt at 1000 B/s
    clock.now += 0.5  # woke up early: only half the debt is paid
    assert limiter.delay(0) == pytest.approx(0.5)


def test_transfers_sharing_the_limiter_share_the_rate() -> None:
    clock = FakeClock()
    limiter = RateLimiter(100_000, burst=10_000, clock=clock)
    # Two transfers read 50,000 bytes each, interleaved; each wait delays the next taker too.
    for _ in range(10):
        clock.now += limiter.delay(5_000)  # transfer A
        clock.now += limiter.delay(5_000)  # transfer B
    assert clock.now - 100.0 == pytest.approx((100_000 - 10_000) / 100_000)


async def test_limit_rate_end_to_end_keeps_every_byte(server: HTTPTestServer, tmp_path: Path) -> None:
    code, out, err = await cli("--limit-rate", "8M", "-o", str(tmp_path / "blob.bin"), server.url("/blob.bin"))
    assert (code, out, err) == (0, b"", "")
    assert (tmp_path / "blob.bin").read_bytes() == BLOB
    urls = [server.url("/blob.bin"), server.url("/f1.txt"), server.url("/f2.txt")]
    code, _, err = await cli("--limit-rate", "8M", "-d", str(tmp_path / "bulk"), *urls)
    assert code == 0, err
    assert (tmp_path / "bulk" / "blob.bin").read_bytes() == BLOB
    assert (tmp_path / "bulk" / "f2.txt").read_bytes() == b"file 2\n" * 1000


async def test_limited_bodies_are_handed_on_in_slices_of_an_eighth_of_a_second(server: HTTPTestServer) -> None:
    from fetcher import Client

    async with Client(limit_rate=4 * MIB) as client:
        assert client.rate is not None and client.rate.slice == MIB // 2
        async with client.open(server.url("/two.bin")) as resource:
            sizes = []
            received = bytearray()
            async for chunk in resource:
                sizes.append(len(chunk))
                received += chunk
    assert bytes(received) == BLOB * 2
    assert max(sizes) <= MIB // 2 and len(sizes) >= 4


async def test_limit_rate_pauses_count_against_max_time(server: HTTPTestServer, tmp_path: Path) -> None:
    # 2 MiB at 1 MiB/s cannot be done in 0.5 s, however fast the machine: the pacing is what runs out of time.
    code, _, err = await cli("--limit-rate", "1M", "-m", "0.5", "-o", str(tmp_path / "two"), server.url("/two.bin"))
    assert code == 8, err
    assert "took longer than --max-time 0.5 s" in err
    code, _, err = await cli("-m", "20", "-o", str(tmp_path / "two"), server.url("/two.bin"))  # unpaced: fine
    assert code == 0, err


async def test_limit_rate_paces_ftp_too(tmp_path: Path) -> None:
    from fetcher import Client
    from fetcher.errors import Timeout
    from tests.servers.ftp_fake import FakeFtpServer, serving

    async with serving(FakeFtpServer({"/blob.bin": BLOB})) as ftp:
        async with Client(limit_rate=1 * MIB, max_time=0.3, use_netrc=False) as client:
            with pytest.raises(Timeout, match="--max-time"):  # 1 MiB at 1 MiB/s: not in 0.3 s
                await client.download(f"{ftp.url}/blob.bin", tmp_path / "slow.bin")
        async with Client(limit_rate=16 * MIB, use_netrc=False) as client:
            done = await client.download(f"{ftp.url}/blob.bin", tmp_path / "blob.bin")
    assert done.bytes == MIB and (tmp_path / "blob.bin").read_bytes() == BLOB


def test_limit_rate_refuses_a_bad_rate() -> None:
    result = run_fetch("--limit-rate", "lots", "http://127.0.0.1:1/")
    assert result.returncode == 2
    assert result.stderr.decode().startswith("fetch: argument --limit-rate: 'lots' is not a rate")


# -- --config FILE and ~/.fetchrc --------------------------------------------------------------------------


def home_env(home: Path) -> dict[str, str]:
    """A run whose ~/.fetchrc is `home`/.fetchrc ($FETCHRC unset)."""
    return {"HOME": str(home), "FETCHRC": ""}


async def test_fetchrc_options_apply_in_every_form_and_the_command_line_wins(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    (tmp_path / ".fetchrc").write_text(
        "# options for every run\n"
        "\n"
        "user-agent = from-rc/1\n"
        '--header "X-Quoted: a \\"b\\" # kept"\n'
        "-H X-Short: one two\n"
        "--header=X-Equals: 3\n"
        "header: X-Colon: 4\n"
        "   silent\n"
        "--no-progress\n"
        "max-redirs 3\n"
    )
    code, out, err = await cli(server.url("/f1.txt"), env=home_env(tmp_path))
    assert (code, out, err) == (0, b"file 1\n" * 1000, "")
    sent = server.requests[0]
    assert sent.header("user-agent") == "from-rc/1"
    assert [sent.header(f"x-{name}") for name in ("quoted", "short", "equals", "colon")] == [
        'a "b" # kept',
        "one two",
        "3",
        "4",
    ]
    code, _, err = await cli("-A", "cli/2", "-H", "X-Cli: 5", server.url("/f1.txt"), env=home_env(tmp_path))
    assert code == 0, err
    sent = server.requests[1]
    assert sent.header("user-agent") == "cli/2"  # single-valued: the command line wins
    assert sent.header("x-short") == "one two" and sent.header("x-cli") == "5"  # -H: both add up


async def test_config_file_after_fetchrc_and_no_config_skips_fetchrc(server: HTTPTestServer, tmp_path: Path) -> None:
    (tmp_path / ".fetchrc").write_text("user-agent = from-rc/1\nreferer = http://rc.example/\n")
    (tmp_path / "extra.conf").write_text("user-agent = from-file/2\nurl = " + server.url("/f2.txt") + "\n")
    code, out, err = await cli("--config", str(tmp_path / "extra.conf"), env=home_env(tmp_path))
    assert (code, out) == (0, b"file 2\n" * 1000), err
    assert server.requests[0].header("user-agent") == "from-file/2"
    assert server.requests[0].header("referer") == "http://rc.example/"
    code, _, err = await cli("-q", "-K", str(tmp_path / "extra.conf"), env=home_env(tmp_path))
    assert code == 0, err
    assert server.requests[1].header("user-agent") == "from-file/2" and server.requests[1].header("referer") is None
    (tmp_path / ".fetchrc").write_text("no-such-option\n")
    code, _, err = await cli("--no-config", server.url("/f1.txt"), env=home_env(tmp_path))
    assert (code, err) == (0, "")
    code, _, err = await cli(server.url("/f1.txt"), env=home_env(tmp_path))
    assert code == 2
    assert err == (
        f"fetch: {tmp_path / '.fetchrc'} line 1: unknown option '--no-such-option'\n"
        f"  hint: fix or remove that line, or run fetch -q to skip {tmp_path / '.fetchrc'}\n"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("timeout = soon", "--timeout: 'soon' is not a number of seconds"),
        ("silent = yes", "--silent takes no value (found 'yes')"),
        ("--output", "--output needs a value"),
        ("colour = red", "unknown option '--colour'"),
        ('user-agent "unfinished', "a quoted value without its closing quote"),
        ('user-agent "a" b', "text after the closing quote: 'b'"),
        ("config = other.conf", "--config cannot be used in a config file"),
        ("layout = round", "--layout: 'round' is not one of flat, tree"),
        ("limit-rate = 1X", "--limit-rate: '1X' is not a rate"),
        ("url", "'url' needs a value (url = URL)"),
    ],
)
def test_config_errors_name_the_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    config = tmp_path / "my.conf"
    config.write_text("# first\n-s\n" + line + "\n")
    result = run_fetch("-K", str(config), "http://127.0.0.1:1/")
    assert result.returncode == 2
    first, hint = result.stderr.decode().splitlines()
    assert first.startswith(f"fetch: {config} line 3: {message}"), first
    assert hint == "  hint: fix or remove that line"


def test_a_missing_config_file_is_an_error_and_a_missing_fetchrc_is_not(tmp_path: Path) -> None:
    result = run_fetch("--config", str(tmp_path / "nosuch"), "http://127.0.0.1:1/")
    assert result.returncode == 2
    assert result.stderr.decode() == f"fetch: --config {tmp_path / 'nosuch'}: no such file\n  hint: check the path\n"
    source = tmp_path / "a.txt"
    source.write_bytes(b"a\n")
    result = run_fetch(f"file://{source}", env=home_env(tmp_path))  # no ~/.fetchrc there
    assert (result.returncode, result.stdout, result.stderr) == (0, b"a\n", b"")


async def test_urls_may_come_between_and_after_options(server: HTTPTestServer) -> None:
    code, out, err = await cli(server.url("/f1.txt"), "-A", "mixed/1", server.url("/f2.txt"), "-s")
    assert (code, err) == (0, "")
    assert out == b"file 1\n" * 1000 + b"file 2\n" * 1000
    assert [request.header("user-agent") for request in server.requests] == ["mixed/1", "mixed/1"]


# -- --content-disposition ---------------------------------------------------------------------------------

HOSTILE_NAMES = [
    ('attachment; filename="../../etc/evil name.txt"', "evil name.txt"),
    ('attachment; filename="/etc/passwd"', "passwd"),
    ('attachment; filename="..\\\\..\\\\win.ini"', "win.ini"),
    ('attachment; filename=".bashrc"', "bashrc"),
    ('attachment; filename=".."', "download"),
    ("attachment; filename*=UTF-8''%E2%82%AC%20rates.txt; filename=\"fallback.txt\"", "€ rates.txt"),
    ("attachment; filename*=UTF-8''a%00b%0Ac%1B.txt", "a_b_c_.txt"),
    ("attachment; filename*=UTF-8''%E2%80%AEgpj.exe", "_gpj.exe"),
    ('attachment; filename="CON.txt"', "_CON.txt"),
    ("inline; filename*=iso-8859-1'en'%E9t%E9.txt", "été.txt"),
]


@pytest.mark.parametrize(("header", "name"), HOSTILE_NAMES)
async def test_content_disposition_names_the_file_made_safe(
    server: HTTPTestServer, tmp_path: Path, header: str, name: str
) -> None:
    server.add("/dl", b"payload\n", headers=[("Content-Disposition", header)])
    out = tmp_path / "out"
    out.mkdir()
    code, stdout, err = await cli("-O", "-J", "--output-dir", str(out), server.url("/dl"))
    assert (code, stdout, err) == (0, b"", "")
    assert [path.name for path in out.iterdir()] == [name]
    assert (out / name).read_bytes() == b"payload\n"
    assert [path.name for path in tmp_path.iterdir()] == ["out"]  # nothing landed beside or above


async def test_a_very_long_server_name_is_cut_keeping_its_extension(server: HTTPTestServer, tmp_path: Path) -> None:
    server.add(
        "/dl", b"payload\n", headers=[("Content-Disposition", 'attachment; filename="' + "x" * 1000 + '.tar.gz"')]
    )
    code, _, err = await cli("-O", "--content-disposition", server.url("/dl"), cwd=tmp_path)
    assert code == 0, err
    [saved] = tmp_path.iterdir()
    assert saved.name.endswith(".gz") and set(saved.name[:-3]) <= {"x", "."} and len(saved.name) <= 240
    assert saved.read_bytes() == b"payload\n"


async def test_without_the_option_the_url_names_the_file(server: HTTPTestServer, tmp_path: Path) -> None:
    server.add("/report", b"payload\n", headers=[("Content-Disposition", 'attachment; filename="other.txt"')])
    code, _, err = await cli("-O", server.url("/report"), cwd=tmp_path)
    assert (code, err) == (0, "")
    assert [path.name for path in tmp_path.iterdir()] == ["report"]


async def test_content_disposition_in_a_bulk_run(server: HTTPTestServer, tmp_path: Path) -> None:
    server.add("/a", b"first\n", headers=[("Content-Disposition", 'attachment; filename="../same.txt"')])
    server.add("/b", b"second\n", headers=[("Content-Disposition", "attachment; filename*=UTF-8''same.txt")])
    server.add("/c", b"third\n")  # no suggestion: the URL's name
    out = tmp_path / "out"
    manifest = tmp_path / "m.jsonl"
    code, _, err = await cli(
        "-J", "-j", "1", "-d", str(out), "--manifest", str(manifest), *map(server.url, ["/a", "/b", "/c"])
    )
    assert code == 0, err
    assert sorted(path.name for path in out.iterdir()) == ["c", "same.txt", "same.txt.1"]
    assert {(out / "same.txt").read_bytes(), (out / "same.txt.1").read_bytes()} == {b"first\n", b"second\n"}
    import json

    paths = sorted(json.loads(line)["path"] for line in manifest.read_text().splitlines())
    assert paths == [str(out / "c"), str(out / "same.txt"), str(out / "same.txt.1")]
    code, _, err = await cli("-d", str(tmp_path / "plain"), server.url("/a"))  # without -J: the URL's name
    assert code == 0 and [path.name for path in (tmp_path / "plain").iterdir()] == ["a"]


async def test_a_symlink_planted_at_the_server_name_is_replaced_not_followed(
    server: HTTPTestServer, tmp_path: Path
) -> None:
    server.add("/a", b"first\n", headers=[("Content-Disposition", 'attachment; filename="same.txt"')])
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    for option in ("-d", "--output-dir"):
        out = tmp_path / option.strip("-")
        out.mkdir()
        (out / "same.txt").symlink_to(victim)
        extra = ["-O"] if option == "--output-dir" else []
        code, _, err = await cli("-J", *extra, option, str(out), server.url("/a"))
        assert code == 0, err
        assert victim.read_bytes() == b"precious"
        assert not (out / "same.txt").is_symlink() and (out / "same.txt").read_bytes() == b"first\n"


# -- -i - takes URLs as stdin delivers them ----------------------------------------------------------------


def _stream_on_pty(first: str, second: str, out: Path) -> tuple[int, bytes, bool]:
    """`producer | fetch -i - -d out` on a terminal: the first URL is retrieved while stdin is still open."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import subprocess
    import sys
    import termios
    import time

    from tests.conftest import ROOT, read_pty

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = {**os.environ, **NO_PROXY_ENV, "NETRC": str(ROOT / "tests" / "no-such-netrc"), "TERM": "xterm"}
    process = subprocess.Popen([sys.executable, "-m", "fetcher", "-i", "-", "-d", str(out)], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=slave, env=env)  # fmt: skip
    os.close(slave)
    assert process.stdin is not None
    process.stdin.write(f"# from a producer\n{first}\n".encode())
    process.stdin.flush()
    # Read the terminal until the first URL is done while stdin is still open.
    seen = b""
    deadline = time.monotonic() + 30
    while b"1/1 so far" not in CSI.sub(b"", seen) and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            seen += os.read(master, 65536)
    early = (out / "f1.txt").exists()  # retrieved before stdin ended
    process.stdin.write(f"{second}\n".encode())
    process.stdin.close()
    seen += read_pty(master)
    return process.wait(timeout=30), seen, early


async def test_input_from_stdin_is_retrieved_as_it_arrives(server: HTTPTestServer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first, second = server.url("/f1.txt"), server.url("/f2.txt")
    code, terminal, early = await trio.to_thread.run_sync(lambda: _stream_on_pty(first, second, out))
    assert code == 0, terminal
    assert early
    assert (out / "f2.txt").read_bytes() == b"file 2\n" * 1000
    text = CSI.sub(b"", terminal).decode("utf-8", "replace")
    states = [line.strip() for line in text.replace("\r", "\n").split("\n") if line.startswith("URLs ")]
    assert any("1/1 so far" in state for state in states), states  # while stdin was open: no total, no %
    assert all("left" not in state for state in states if "so far" in state)
    assert "2/2 100%" in states[-1], states[-1]
    assert_ends_cleanly(terminal)


async def test_input_from_stdin_keeps_line_numbers_and_wrapped_urls(server: HTTPTestServer, tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"
    lines = f"\n# comment\n<URL:{server.url('/f1.txt')}\n>\n{server.url('/missing')}\r\n{server.url('/f2.txt')}"
    result = await trio.to_thread.run_sync(
        lambda: run_fetch(
            "-i", "-", "-d", str(tmp_path / "out"), "--manifest", str(manifest), input=lines.encode(), env=NO_PROXY_ENV
        )
    )
    assert result.returncode == 1, result.stderr
    import json

    records = sorted(
        (record["line"], record["status"]) for record in map(json.loads, manifest.read_text().splitlines())
    )
    assert records == [(3, "ok"), (5, "failed"), (6, "ok")]  # the last line has no newline and still counts
