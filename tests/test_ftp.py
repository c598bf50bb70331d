"""ftp:// against the in-repo trio FTP server (tests/servers/ftp_fake.py): faults, login, reuse, TLS."""

from __future__ import annotations

import logging
import os
import ssl
import subprocess
from pathlib import Path

import pytest
import trio
import trustme

from fetcher import Client
from fetcher.errors import AuthError, NotFound, ProtocolError, Timeout, TransientError, UnsafeURL
from tests.conftest import run_fetch
from tests.servers.ftp_fake import FakeFtpServer, Faults, serving

pytestmark = pytest.mark.usefixtures("no_netrc")

HELLO = b"Hello, world!\n"
TEXT = b"line one\nline two\r\nline three\n"
BIG = bytes(range(256)) * 4096  # 1 MiB
FILES = {
    "/hello.txt": HELLO,
    "/text.txt": TEXT,
    "/big.bin": BIG,
    "/pub/a.txt": b"in pub\n",
    "/pub/sub/deep.txt": b"deep\n",
    "/pub/with space.txt": b"spaced\n",
}
LOGIN = ["USER anonymous", "PASS anonymous@", "PWD"]


async def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, env=env, timeout=timeout))


# -- retrieval and the data connection -----------------------------------------------


async def test_image_retrieval_command_sequence() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            result = await client.fetch(f"{server.url}/pub/a.txt")
    assert result.content == b"in pub\n"
    assert result.size == 7
    assert server.sessions == [[*LOGIN, "CWD pub", "TYPE I", "SIZE a.txt", "MDTM a.txt", "EPSV", "RETR a.txt", "QUIT"]]


async def test_227_naming_another_address_is_ignored_and_the_control_address_dialled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="fetcher.trace")
    faults = Faults(epsv=False, pasv_address="10.9.8.7")
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        async with Client() as client:
            result = await client.fetch(f"{server.url}/hello.txt")
            again = await client.fetch(f"{server.url}/hello.txt")
    assert result.content == again.content == HELLO
    assert server.data_peers == ["127.0.0.1", "127.0.0.1"]
    # EPSV is tried once per connection; PASV afterwards.
    assert server.sessions[0].count("EPSV") == 1
    assert server.sessions[0].count("PASV") == 2
    assert "the 227 reply names 10.9.8.7; dialling the control connection's address 127.0.0.1" in caplog.text


async def test_a_data_port_on_the_refused_list_is_refused_by_the_guard() -> None:
    faults = Faults(replies={"EPSV": [b"229 Entering Extended Passive Mode (|||25|)"]})
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        async with Client() as client:
            with pytest.raises(UnsafeURL, match="data port 25 refused"):
                await client.fetch(f"{server.url}/hello.txt")


async def test_ascii_mode_turns_crlf_into_local_newlines_and_raw_keeps_them() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            text = await client.fetch(f"{server.url}/text.txt;type=a")
        async with Client(raw=True) as client:
            raw = await client.fetch(f"{server.url}/text.txt;type=a")
    assert text.content == b"line one\nline two\nline three\n"
    assert text.size is None
    assert raw.content == b"line one\r\nline two\r\nline three\r\n"
    assert server.sessions[0] == [*LOGIN, "TYPE A", "EPSV", "RETR text.txt", "QUIT"]


async def test_reset_in_the_middle_of_retr_leaves_no_complete_file_and_a_retry_resumes(tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    async with serving(FakeFtpServer(FILES, faults=Faults(reset_after=300_000))) as server:
        async with Client() as client:
            with pytest.raises(TransientError) as caught:
                await client.download(f"{server.url}/big.bin", target)
        assert caught.value.exit_code == 7
        assert not target.exists()
        partial = tmp_path / "big.bin.part"
        # A TCP reset may discard what the client had not read yet.
        kept = partial.stat().st_size
        assert kept <= 300_000
        assert partial.read_bytes() == BIG[:kept]
        server.faults.reset_after = None
        async with Client() as client:
            done = await client.download(f"{server.url}/big.bin", target, resume=True)
    assert target.read_bytes() == BIG
    assert done.resumed_from == kept
    resumed = ["EPSV", f"REST {kept}", "RETR big.bin", "QUIT"] if kept else ["EPSV", "RETR big.bin", "QUIT"]
    assert server.sessions[-1][-len(resumed) :] == resumed


async def test_cli_continue_after_a_cut_transfer(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    faults = Faults(reset_after=123_456, reset_hard=False, reset_times=1)
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        cut = await cli("-o", str(target), f"{server.url}/big.bin")
        assert cut.returncode == 7
        assert b"426" in cut.stderr or b"ended after 123456" in cut.stderr
        assert not target.exists()
        assert (tmp_path / "out.bin.part").stat().st_size == 123_456
        done = await cli("-C", "-o", str(target), f"{server.url}/big.bin")
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == BIG
    assert "REST 123456" in server.sessions[-1]


async def test_bulk_retries_a_cut_transfer_and_resumes_it(tmp_path: Path) -> None:
    faults = Faults(reset_after=200_000, reset_times=1, reset_hard=False)
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        async with Client(retries=2) as client:
            async with client.fetch_all([f"{server.url}/big.bin"], destination=lambda url: tmp_path / "b") as results:
                outcomes = [outcome async for outcome in results]
    (outcome,) = outcomes
    assert outcome.ok and outcome.attempts == 2
    assert (tmp_path / "b").read_bytes() == BIG
    assert not (tmp_path / "b.part").exists()
    # The 426 left the control connection in a known state, so the retry reused it.
    assert len(server.sessions) == 1
    retried = [line for line in server.sessions[0] if line.startswith(("REST", "RETR"))]
    assert retried == ["RETR big.bin", "REST 200000", "RETR big.bin"]


async def test_truncated_transfer_with_226_is_not_complete(tmp_path: Path) -> None:
    async with serving(FakeFtpServer(FILES, faults=Faults(truncate_after=1000))) as server:
        async with Client() as client:
            with pytest.raises(TransientError, match="ended after 1000 of 1048576 bytes"):
                await client.download(f"{server.url}/big.bin", tmp_path / "big.bin")
    assert not (tmp_path / "big.bin").exists()


async def test_rest_refused_restarts_from_the_beginning(tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    (tmp_path / "big.bin.part").write_bytes(b"garbage that must be replaced")
    async with serving(FakeFtpServer(FILES, faults=Faults(rest=False))) as server:
        async with Client() as client:
            done = await client.download(f"{server.url}/big.bin", target, resume=True)
    assert target.read_bytes() == BIG
    assert done.resumed_from == 0
    assert "REST 29" in server.sessions[0]


async def test_resume_of_a_complete_part_file_sends_no_retr(tmp_path: Path) -> None:
    target = tmp_path / "hello.txt"
    (tmp_path / "hello.txt.part").write_bytes(HELLO)
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            await client.download(f"{server.url}/hello.txt", target, resume=True)
    assert target.read_bytes() == HELLO
    assert "RETR hello.txt" not in server.sessions[0]


async def test_mdtm_sets_the_saved_files_time(tmp_path: Path) -> None:
    async with serving(FakeFtpServer(FILES, mdtm=b"20200102030405")) as server:
        async with Client() as client:
            await client.download(f"{server.url}/hello.txt", tmp_path / "h")
    assert int((tmp_path / "h").stat().st_mtime) == 1577934245


# -- greetings and replies ---------------------------------------------------------


async def test_421_at_greeting_is_transient_exit_7() -> None:
    faults = Faults(greeting=[b"421 Too many connections, try later."])
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        async with Client() as client:
            with pytest.raises(TransientError, match="421 Too many connections"):
                await client.fetch(f"{server.url}/hello.txt")
        done = await cli(f"{server.url}/hello.txt")
    assert done.returncode == 7
    assert b"421 Too many connections" in done.stderr


async def test_multi_line_banner_and_a_120_mark(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="fetcher.trace")
    banner = [b"120 ready in a moment", b"220-Welcome to the", b"  220 fake server", b"220-rules:", b"220 ok"]
    async with serving(FakeFtpServer(FILES, faults=Faults(greeting=banner))) as server:
        async with Client() as client:
            result = await client.fetch(f"{server.url}/hello.txt")
    assert result.content == HELLO
    assert "<   220 fake server" in caplog.text


@pytest.mark.parametrize(
    ("verb", "lines", "expected"),
    [
        ("PWD", [b'257 "/\x1b[31mred" is current'], "control characters"),
        ("SIZE", [b"213-\x1b]0;pwned\x07", b"213 1"], "SIZE reply holds no byte count"),
        ("TYPE", [b"this is not FTP"], "not an FTP reply"),
        ("USER", [b"999 out of range"], "not an FTP reply"),
    ],
)
async def test_escape_sequences_and_garbage_are_protocol_errors(verb: str, lines: list[bytes], expected: str) -> None:
    async with serving(FakeFtpServer(FILES, faults=Faults(replies={verb: lines}))) as server:
        async with Client() as client:
            with pytest.raises(ProtocolError, match=expected) as caught:
                await client.fetch(f"{server.url}/hello.txt")
        assert caught.value.exit_code == 7
        done = await cli("-v", f"{server.url}/hello.txt")
    assert done.returncode == 7
    assert b"\x1b" not in done.stderr and b"\x07" not in done.stderr
    assert expected.encode() in done.stderr


async def test_a_stalled_server_times_out_with_exit_8() -> None:
    async with serving(FakeFtpServer(FILES, faults=Faults(stall_after_greeting=True))) as server:
        async with Client(timeout=0.5) as client:
            with pytest.raises(Timeout):
                await client.fetch(f"{server.url}/hello.txt")
        done = await cli("--timeout", "0.5", f"{server.url}/hello.txt")
    assert done.returncode == 8


async def test_a_transfer_that_stalls_times_out(tmp_path: Path) -> None:
    async with serving(FakeFtpServer(FILES, faults=Faults(stall_after=5000))) as server:
        async with Client(timeout=0.5) as client:
            with pytest.raises(Timeout):
                await client.download(f"{server.url}/big.bin", tmp_path / "big.bin")
    assert not (tmp_path / "big.bin").exists()


async def test_550_and_the_guess_for_directories() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            with pytest.raises(NotFound, match="550 Failed to open file"):
                await client.fetch(f"{server.url}/missing.txt")
            listing = await client.fetch(f"{server.url}/pub")
        done = await cli(f"{server.url}/pub/missing.txt")
    assert done.returncode == 6
    assert [e.name for e in listing.entries] == ["a.txt", "sub", "with space.txt"]
    assert [e.url for e in listing.entries] == [
        f"{server.url}/pub/a.txt",
        f"{server.url}/pub/sub/",
        f"{server.url}/pub/with%20space.txt",
    ]
    assert [e.type for e in listing.entries] == ["file", "directory", "file"]
    assert server.sessions[0][3:] == [
        "TYPE I",
        "SIZE missing.txt",
        "MDTM missing.txt",
        "EPSV",
        "RETR missing.txt",
        "CWD missing.txt",
        "SIZE pub",
        "MDTM pub",
        "EPSV",
        "RETR pub",
        "CWD pub",
        "FEAT",
        "TYPE A",
        "EPSV",
        "LIST",
        "QUIT",
    ]


# -- login ---------------------------------------------------------------------------


async def test_anonymous_password_from_the_setting_and_the_environment() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client(anon_password="me@example.test") as client:
            await client.fetch(f"{server.url}/hello.txt")
        done = await cli(f"{server.url}/hello.txt", env={"FETCH_EMAIL": "env@example.test"})
    assert done.returncode == 0
    assert server.sessions[0][:2] == ["USER anonymous", "PASS me@example.test"]
    assert server.sessions[1][:2] == ["USER anonymous", "PASS env@example.test"]


async def test_user_and_password_from_the_url_and_the_masked_trace() -> None:
    async with serving(FakeFtpServer(FILES, users={"joe": "se cret"})) as server:
        done = await cli("-v", f"ftp://joe:se%20cret@127.0.0.1:{server.port}/hello.txt")
    assert done.returncode == 0, done.stderr
    assert done.stdout == HELLO
    assert server.sessions[0][:2] == ["USER joe", "PASS se cret"]
    assert b"> PASS ****" in done.stderr
    assert b"se cret" not in done.stderr


async def test_a_user_without_a_password_and_no_terminal_fails_with_exit_5() -> None:
    async with serving(FakeFtpServer(FILES, users={"joe": "pw"})) as server:
        done = await cli(f"ftp://joe@127.0.0.1:{server.port}/hello.txt")
        async with Client() as client:
            with pytest.raises(AuthError):
                await client.fetch(f"ftp://joe@127.0.0.1:{server.port}/hello.txt")
    assert done.returncode == 5
    assert b"asks for a password for 'joe'" in done.stderr
    assert b"-u USER:PASSWORD" in done.stderr
    assert server.sessions[0] == ["USER joe", "QUIT"]


async def test_the_password_is_asked_for_on_a_terminal() -> None:
    asked: list[tuple[str, bool]] = []

    def prompt(text: str, secret: bool) -> str | None:
        asked.append((text, secret))
        return "pw"

    async with serving(FakeFtpServer(FILES, users={"joe": "pw"})) as server:
        async with Client(prompt=prompt) as client:
            result = await client.fetch(f"ftp://joe@127.0.0.1:{server.port}/hello.txt")
    assert result.content == HELLO
    assert asked == [(f"Password for joe at 127.0.0.1:{server.port}: ", True)]


async def test_netrc_supplies_user_and_password(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login joe password fromnetrc\n")
    netrc.chmod(0o600)
    async with serving(FakeFtpServer(FILES, users={"joe": "fromnetrc"})) as server:
        done = await cli(f"{server.url}/hello.txt", env={"NETRC": str(netrc)})
        async with Client(netrc_file=str(netrc)) as client:
            await client.fetch(f"ftp://joe@127.0.0.1:{server.port}/hello.txt")
    assert done.returncode == 0, done.stderr
    assert server.sessions[0][:2] == ["USER joe", "PASS fromnetrc"]
    assert server.sessions[1][:2] == ["USER joe", "PASS fromnetrc"]


async def test_wrong_password_is_exit_5() -> None:
    async with serving(FakeFtpServer(FILES, users={"joe": "pw"})) as server:
        done = await cli(f"ftp://joe:bad@127.0.0.1:{server.port}/hello.txt")
    assert done.returncode == 5
    assert b"530 Login incorrect" in done.stderr


async def test_acct_on_332() -> None:
    faults = Faults(account="acc-1")
    async with serving(FakeFtpServer(FILES, users={"joe": "pw"}, faults=faults)) as server:
        done = await cli("--ftp-account", "acc-1", "-v", f"ftp://joe:pw@127.0.0.1:{server.port}/hello.txt")
        missing = await cli(f"ftp://joe:pw@127.0.0.1:{server.port}/hello.txt")
    assert done.returncode == 0, done.stderr
    assert server.sessions[0][:4] == ["USER joe", "PASS pw", "ACCT acc-1", "PWD"]
    assert b"> ACCT ****" in done.stderr
    assert missing.returncode == 5
    assert b"--ftp-account" in missing.stderr


# -- reuse ---------------------------------------------------------------------------


async def test_reuse_returns_to_the_login_directory_before_the_next_cwds() -> None:
    async with serving(FakeFtpServer(FILES, home="/pub")) as server:
        async with Client() as client:
            first = await client.fetch(f"{server.url}/sub/deep.txt")
            second = await client.fetch(f"{server.url}/a.txt")
            third = await client.fetch(f"{server.url}/sub/deep.txt")
    assert (first.content, second.content, third.content) == (b"deep\n", b"in pub\n", b"deep\n")
    assert len(server.sessions) == 1
    assert server.sessions[0] == [
        *LOGIN,
        "CWD sub",
        "TYPE I",
        "SIZE deep.txt",
        "MDTM deep.txt",
        "EPSV",
        "RETR deep.txt",
        "CWD /pub",
        "SIZE a.txt",
        "MDTM a.txt",
        "EPSV",
        "RETR a.txt",
        "CWD sub",
        "SIZE deep.txt",
        "MDTM deep.txt",
        "EPSV",
        "RETR deep.txt",
        "QUIT",
    ]


async def test_the_connection_a_bulk_lane_gives_back_serves_the_next_fetch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lane and the task path pool control connections under one key
    # (schemes/ftp/login.pool_key): what the lane gives back, the next fetch takes.
    from fetcher.handler.lanes import LaneWork
    from fetcher.schemes.ftp import lane

    lanes = []
    run_lane = lane.run_lane

    async def counted(work: LaneWork) -> None:
        lanes.append(work.key)
        await run_lane(work)

    monkeypatch.setattr(lane, "run_lane", counted)
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            async with client.fetch_all([f"{server.url}/pub/a.txt"], destination=lambda url: tmp_path / "a") as results:
                outcomes = [outcome async for outcome in results]
            second = await client.fetch(f"{server.url}/pub/sub/deep.txt")
    assert len(lanes) == 1 and outcomes[0].ok
    assert (tmp_path / "a").read_bytes() == b"in pub\n" and second.content == b"deep\n"
    assert len(server.sessions) == 1
    assert [line for line in server.sessions[0] if line.startswith("RETR")] == ["RETR a.txt", "RETR deep.txt"]


async def test_reuse_in_the_same_directory_sends_no_cwd_at_all() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            await client.fetch(f"{server.url}/pub/a.txt")
            await client.fetch(f"{server.url}/pub/with%20space.txt")
            await client.fetch(f"{server.url}/pub/sub/deep.txt")
    cwds = [line for line in server.sessions[0] if line.startswith("CWD")]
    assert cwds == ["CWD pub", "CWD /", "CWD pub", "CWD sub"]


async def test_an_unparsable_pwd_means_reconnecting_after_a_cwd() -> None:
    faults = Faults(pwd_reply=b"257 somewhere")
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        async with Client() as client:
            await client.fetch(f"{server.url}/hello.txt")  # no CWD: reusable
            await client.fetch(f"{server.url}/pub/a.txt")  # CWD: not reusable afterwards
            await client.fetch(f"{server.url}/hello.txt")
    assert len(server.sessions) == 2
    assert server.sessions[0][-2:] == ["RETR a.txt", "QUIT"]
    assert "CWD /" not in server.sessions[0]


async def test_a_pooled_connection_the_server_dropped_is_replaced() -> None:
    faults = Faults(hang_up_at=9)  # hangs up on the first command of the second URL
    async with serving(FakeFtpServer(FILES, faults=faults)) as server:
        async with Client() as client:
            await client.fetch(f"{server.url}/hello.txt")
            again = await client.fetch(f"{server.url}/hello.txt")
    assert again.content == HELLO
    assert len(server.sessions) == 2


async def test_an_abandoned_body_does_not_return_its_connection_to_the_pool() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            async with client.open(f"{server.url}/big.bin") as resource:
                async for _chunk in resource:
                    break
            again = await client.fetch(f"{server.url}/hello.txt")
    assert again.content == HELLO
    assert len(server.sessions) == 2


# -- TLS -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, str]:
    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server_context)
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return server_context, str(path)


async def test_explicit_ftps_protects_control_and_data(tls_pair: tuple[ssl.SSLContext, str]) -> None:
    context, cafile = tls_pair
    async with serving(FakeFtpServer(FILES, tls=context)) as server:
        async with Client(ftp_tls=True, cacert=cafile) as client:
            result = await client.fetch(f"{server.url}/big.bin")
            listing = await client.fetch(f"{server.url}/pub/")
    assert result.content == BIG
    assert [e.name for e in listing.entries] == ["a.txt", "sub", "with space.txt"]
    # Data connections resume the control connection's TLS session (vsftpd insists on it).
    assert server.data_tls_resumed == [True, True]
    assert server.sessions[0][:6] == ["AUTH TLS", "USER anonymous", "PASS anonymous@", "PBSZ 0", "PROT P", "PWD"]


async def test_implicit_ftps(tls_pair: tuple[ssl.SSLContext, str]) -> None:
    context, cafile = tls_pair
    async with serving(FakeFtpServer(FILES, tls=context, implicit_tls=True)) as server:
        done = await cli("--cacert", cafile, f"{server.url}/hello.txt")
        assert server.url.startswith("ftps://")
    assert done.returncode == 0, done.stderr
    assert done.stdout == HELLO
    assert server.sessions[0][:5] == ["USER anonymous", "PASS anonymous@", "PBSZ 0", "PROT P", "PWD"]


async def test_ftps_checks_certificates_by_default(tls_pair: tuple[ssl.SSLContext, str]) -> None:
    context, _ = tls_pair
    async with serving(FakeFtpServer(FILES, tls=context, implicit_tls=True)) as server:
        done = await cli(f"{server.url}/hello.txt")
    assert done.returncode == 4
    assert b"certificate" in done.stderr


async def test_explicit_tls_refused_by_the_server_is_an_error() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        done = await cli("--ftp-tls", f"{server.url}/hello.txt")
    assert done.returncode == 7
    assert b"does not accept AUTH TLS" in done.stderr
    assert server.sessions[0][0] == "AUTH TLS"


# -- the CLI and server-supplied names -------------------------------------------------


async def test_listing_names_are_escaped_when_printed_and_sanitized_when_saved(tmp_path: Path) -> None:
    files = {"/d/\x1b[31mred.txt": b"red\n", "/d/../../etc.txt": b"x\n"}
    async with serving(FakeFtpServer(files)) as server:
        listing = await cli(f"{server.url}/d/;type=d")
        links = await cli("--links", f"{server.url}/d/;type=d")
    assert listing.returncode == 0, listing.stderr
    assert b"\x1b" not in listing.stdout
    assert b"\\x1b[31mred.txt" in listing.stdout
    assert f"{server.url}/d/%1B%5B31mred.txt".encode() in links.stdout
    assert os.listdir(tmp_path) == []


async def test_an_encoded_line_break_is_refused_before_any_connection() -> None:
    async with serving(FakeFtpServer(FILES)) as server:
        done = await cli(f"{server.url}/hello.txt%0D%0ADELE%20hello.txt")
    assert done.returncode == 3
    assert server.sessions == []


async def test_the_line_writer_refuses_cr_lf_and_nul_again() -> None:
    from fetcher.schemes.ftp.control import Control

    async with serving(FakeFtpServer(FILES)) as server:
        async with Client() as client:
            async with client.open(f"{server.url}/") as resource:
                assert resource.kind == "listing"
            pooled = await client.pool.take(("ftp", "127.0.0.1", server.port, "anonymous", False))
            assert isinstance(pooled, Control)
            for bad in ("a\rb", "a\nb", "a\x00b"):
                with pytest.raises(UnsafeURL):
                    await pooled.send("RETR", bad)
            await pooled.aclose()
    assert not any("RETR" in line for line in server.sessions[0])
