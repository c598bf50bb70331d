"""ftp:// against pyftpdlib run in-process: the exact commands of RFC 1738 §3.2's examples.

pyftpdlib's handler is subclassed to record every command line per control
connection (tests/interop/ftp_servers.py), so each test asserts the
sequence the server received as well as the bytes or listing the user gets.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
import trustme

from fetcher import Client
from fetcher.errors import NotFound
from tests.conftest import require, run_fetch
from tests.interop.ftp_servers import PyFtpd, pyftpd

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("no_netrc")]

MOTD = b"Message of the day.\nSecond line.\n"
LOGIN = ["USER myname", "PASS pw", "PWD"]


def _have_pyftpdlib() -> bool:
    try:
        import pyftpdlib  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ftproot")
    (root / "etc").mkdir()
    (root / "etc" / "motd").write_bytes(MOTD)
    (root / "etc" / "issue").write_bytes(b"Debian\n")
    (root / "pub").mkdir()
    for index in range(40):
        (root / "pub" / f"f{index:02d}.txt").write_bytes(b"file %d\n" % index)
    return root


@pytest.fixture(scope="module")
def server(tree: Path) -> Iterator[PyFtpd]:
    require(_have_pyftpdlib(), "pyftpdlib", "pip install pyftpdlib")
    with pyftpd(tree, users={"myname": ("pw", tree)}) as running:
        yield running


def answer_pw(prompt: str, secret: bool) -> str | None:
    return "pw" if secret else None


async def one(server: PyFtpd, path: str, **settings: object) -> tuple[object, list[str]]:
    """Fetch one URL with a fresh Client; return the result and that connection's commands."""
    before = len(server.sessions)
    async with Client(prompt=answer_pw, **settings) as client:
        result = await client.fetch(f"ftp://myname@127.0.0.1:{server.port}{path}")
    await trio.sleep(0.05)  # let the server thread record the QUIT
    sessions = server.commands()[before:]
    assert len(sessions) == 1
    return result, sessions[0]


async def test_motd_with_encoded_slash_is_one_absolute_cwd(server: PyFtpd) -> None:
    result, commands = await one(server, "/%2Fetc/motd")
    assert result.content == MOTD  # type: ignore[attr-defined]
    assert commands == [*LOGIN, "CWD /etc", "TYPE I", "SIZE motd", "MDTM motd", "EPSV", "RETR motd", "QUIT"]


async def test_motd_relative_to_the_login_directory(server: PyFtpd) -> None:
    result, commands = await one(server, "/etc/motd")
    assert result.content == MOTD  # type: ignore[attr-defined]
    assert commands == [*LOGIN, "CWD etc", "TYPE I", "SIZE motd", "MDTM motd", "EPSV", "RETR motd", "QUIT"]


async def test_motd_with_an_empty_segment_sends_cwd_with_a_null_argument(server: PyFtpd) -> None:
    result, commands = await one(server, "//etc/motd")
    assert result.content == MOTD  # type: ignore[attr-defined]
    assert commands == [
        *LOGIN,
        "CWD ",
        "CWD etc",
        "TYPE I",
        "SIZE motd",
        "MDTM motd",
        "EPSV",
        "RETR motd",
        "QUIT",
    ]


async def test_typecode_d_lists_with_nlst_and_its_name(server: PyFtpd) -> None:
    result, commands = await one(server, "/etc;type=d")
    assert commands == [*LOGIN, "TYPE A", "EPSV", "NLST etc", "QUIT"]
    assert sorted(e.name for e in result.entries) == ["issue", "motd"]  # type: ignore[attr-defined]
    urls = sorted(e.url for e in result.entries)  # type: ignore[attr-defined]
    assert urls == [
        f"ftp://myname@127.0.0.1:{server.port}/etc/issue",
        f"ftp://myname@127.0.0.1:{server.port}/etc/motd",
    ]


async def test_typecode_d_with_an_empty_name_sends_nlst_without_argument(server: PyFtpd) -> None:
    result, commands = await one(server, "/etc/;type=d")
    assert commands == [*LOGIN, "CWD etc", "TYPE A", "EPSV", "NLST", "QUIT"]
    assert sorted(e.name for e in result.entries) == ["issue", "motd"]  # type: ignore[attr-defined]


async def test_typecode_a_converts_line_ends_and_typecode_i_keeps_bytes(server: PyFtpd) -> None:
    text, commands = await one(server, "/etc/motd;type=a")
    assert text.content == MOTD  # type: ignore[attr-defined]
    assert commands == [*LOGIN, "CWD etc", "TYPE A", "EPSV", "RETR motd", "QUIT"]
    raw, _ = await one(server, "/etc/motd;type=a", raw=True)
    assert raw.content == MOTD.replace(b"\n", b"\r\n")  # type: ignore[attr-defined]
    image, commands = await one(server, "/etc/motd;type=i")
    assert image.content == MOTD  # type: ignore[attr-defined]
    assert commands == [*LOGIN, "CWD etc", "TYPE I", "SIZE motd", "MDTM motd", "EPSV", "RETR motd", "QUIT"]


async def test_guessing_a_directory_without_typecode(server: PyFtpd) -> None:
    result, commands = await one(server, "/etc")
    assert result.kind == "listing"  # type: ignore[attr-defined]
    assert sorted(e.name for e in result.entries) == ["issue", "motd"]  # type: ignore[attr-defined]
    assert commands == [
        *LOGIN,
        "TYPE I",
        "SIZE etc",
        "MDTM etc",
        "EPSV",
        "RETR etc",
        "CWD etc",
        "FEAT",
        "TYPE A",
        "EPSV",
        "MLSD",
        "QUIT",
    ]
    listing, commands = await one(server, "/etc/")
    assert commands == [*LOGIN, "CWD etc", "FEAT", "TYPE A", "EPSV", "MLSD", "QUIT"]
    assert sorted(e.name for e in listing.entries) == ["issue", "motd"]  # type: ignore[attr-defined]


async def test_a_missing_file_is_not_found(server: PyFtpd) -> None:
    async with Client(prompt=answer_pw) as client:
        with pytest.raises(NotFound, match="550"):
            await client.fetch(f"ftp://myname@127.0.0.1:{server.port}/etc/nothing")


async def test_anonymous_ascii_and_image_of_mixed_line_ends(content_tree: Path) -> None:
    require(_have_pyftpdlib(), "pyftpdlib", "pip install pyftpdlib")
    original = (content_tree / "mixed-eol.txt").read_bytes()
    with pyftpd(content_tree) as server:
        async with Client() as client:
            image = await client.fetch(f"{server.url}/mixed-eol.txt")
            text = await client.fetch(f"{server.url}/mixed-eol.txt;type=a")
            spaced = await client.fetch(f"{server.url}/file%20with%20space.txt")
            odd = await client.fetch(f"{server.url}/semi%3Bcolon%2541pct.txt")
        await trio.sleep(0.05)
    assert image.content == original
    assert text.content == original.replace(b"\r\n", b"\n")
    assert spaced.content == (content_tree / "file with space.txt").read_bytes()
    assert odd.content == (content_tree / "semi;colon%41pct.txt").read_bytes()
    (commands,) = server.commands()
    assert commands[:3] == ["USER anonymous", "PASS anonymous@", "PWD"]
    assert "RETR file with space.txt" in commands
    assert "RETR semi;colon%41pct.txt" in commands


async def test_one_client_reuses_one_connection_across_directories(server: PyFtpd) -> None:
    before = len(server.sessions)
    async with Client(prompt=answer_pw) as client:
        base = f"ftp://myname@127.0.0.1:{server.port}"
        first = await client.fetch(f"{base}/etc/motd")
        listing = await client.fetch(f"{base}/pub/;type=d")
        second = await client.fetch(f"{base}/%2Fetc/issue")
    await trio.sleep(0.05)
    (commands,) = server.commands()[before:]
    assert first.content == MOTD and second.content == b"Debian\n"
    assert len(listing.entries) == 40
    assert commands == [
        *LOGIN,
        "CWD etc",
        "TYPE I",
        "SIZE motd",
        "MDTM motd",
        "EPSV",
        "RETR motd",
        "CWD /",
        "CWD pub",
        "TYPE A",
        "EPSV",
        "NLST",
        "CWD /",
        "CWD /etc",
        "TYPE I",
        "SIZE issue",
        "MDTM issue",
        "EPSV",
        "RETR issue",
        "QUIT",
    ]


async def test_bulk_retrieval_reuses_control_connections(server: PyFtpd, tmp_path: Path) -> None:
    before = len(server.sessions)
    urls = [f"ftp://myname:pw@127.0.0.1:{server.port}/pub/f{index:02d}.txt" for index in range(40)]
    async with Client() as client:
        async with client.fetch_all(
            urls, jobs=4, per_host=4, destination=lambda url: tmp_path / str(url).rsplit("/", 1)[1]
        ) as results:
            outcomes = [outcome async for outcome in results]
    assert all(outcome.ok for outcome in outcomes)
    assert (tmp_path / "f07.txt").read_bytes() == b"file 7\n"
    await trio.sleep(0.05)
    sessions = server.commands()[before:]
    assert 1 <= len(sessions) <= 4
    assert sum(session.count("USER myname") for session in sessions) == len(sessions)
    assert sum(1 for session in sessions for line in session if line.startswith("RETR")) == 40


# -- FTPS with pyftpdlib's TLS handler ------------------------------------------------


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """(certfile with key, keyfile, CA file) from trustme."""
    try:
        import OpenSSL  # noqa: F401
    except ImportError:
        require(False, "pyOpenSSL (pyftpdlib's TLS handler needs it)", "pip install pyopenssl")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    base = tmp_path_factory.mktemp("ftps")
    cert.cert_chain_pems[0].write_to_path(str(base / "cert.pem"))
    for extra in cert.cert_chain_pems[1:]:
        extra.write_to_path(str(base / "cert.pem"), append=True)
    cert.private_key_pem.write_to_path(str(base / "key.pem"))
    ca.cert_pem.write_to_path(str(base / "ca.pem"))
    return str(base / "cert.pem"), str(base / "key.pem"), str(base / "ca.pem")


async def test_explicit_ftps_against_pyftpdlib(tree: Path, tls_files: tuple[str, str, str]) -> None:
    certfile, keyfile, cafile = tls_files
    with pyftpd(tree, users={"myname": ("pw", tree)}, tls=(certfile, keyfile)) as server:
        async with Client(ftp_tls=True, cacert=cafile) as client:
            base = f"ftp://myname:pw@127.0.0.1:{server.port}"
            motd = await client.fetch(f"{base}/etc/motd")
            listing = await client.fetch(f"{base}/etc/;type=d")
        done = await trio.to_thread.run_sync(
            lambda: run_fetch("--ftp-tls", "--cacert", cafile, "-v", f"{base}/etc/issue")
        )
        untrusted = await trio.to_thread.run_sync(lambda: run_fetch("--ftp-tls", f"{base}/etc/issue"))
        await trio.sleep(0.05)
    assert motd.content == MOTD
    assert sorted(e.name for e in listing.entries) == ["issue", "motd"]
    commands = server.commands()[0]
    assert commands[:6] == ["AUTH TLS", "USER myname", "PASS pw", "PBSZ 0", "PROT P", "PWD"]
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"Debian\n"
    assert b"> PASS ****" in done.stderr and b"PASS pw" not in done.stderr
    assert b"> AUTH TLS" in done.stderr and b"< 234 " in done.stderr
    assert untrusted.returncode == 4
    assert b"certificate" in untrusted.stderr
