"""Credentials stay with their origin (issue 14).

A real HTTP server on loopback redirects to an FTP server on another port
(another origin), a Prospero server resolves to it, a bulk run lists both:
the FTP server records every USER/PASS it received, so the tests assert what
went on the wire, and what the user sees on stderr with -v.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from fetcher import Client
from fetcher.errors import NotFound
from fetcher.handler import Session
from fetcher.url import parse_url
from tests.conftest import run_fetch
from tests.servers.ftp_fake import FakeFtpServer, serving
from tests.servers.http_server import HTTPTestServer, redirect
from tests.servers.prospero import Directory, Link, Object, serve_prospero

SECRET = "s3cretPW"
BODY = b"the file on the other origin\n"
USERS = {"anonymous": "", "bob": SECRET, "carol": "netrcPW"}
NO_PROXY = {name: "" for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY")}


@pytest.fixture
async def ftp() -> AsyncIterator[FakeFtpServer]:
    async with serving(FakeFtpServer({"/file.txt": BODY}, users=USERS)) as server:
        yield server


@pytest.fixture
async def http(nursery: trio.Nursery) -> HTTPTestServer:
    server = HTTPTestServer()
    await nursery.start(server.serve)
    server.add("/hello.txt", b"hello\n")
    return server


async def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, bytes, str]:
    result = await trio.to_thread.run_sync(lambda: run_fetch(*args, env={**NO_PROXY, **(env or {})}, timeout=30))
    return result.returncode, result.stdout, result.stderr.decode("utf-8", "replace")


def logins(server: FakeFtpServer) -> list[tuple[str, str]]:
    """(USER argument, PASS argument) of every FTP session."""
    found = []
    for commands in server.sessions:
        user = next((c[5:] for c in commands if c.upper().startswith("USER ")), "")
        password = next((c[5:] for c in commands if c.upper().startswith("PASS ")), "")
        found.append((user, password))
    return found


def everything_sent(server: FakeFtpServer) -> str:
    return "\n".join(line for commands in server.sessions for line in commands)


async def test_u_is_not_sent_to_the_ftp_server_a_redirect_leads_to(http: HTTPTestServer, ftp: FakeFtpServer) -> None:
    http.routes["/go"] = redirect(f"{ftp.url}/file.txt")
    code, out, err = await cli("-v", "-u", f"bob:{SECRET}", http.url("/go"))
    assert (code, out) == (0, BODY), err
    assert http.requests[0].header("authorization") is not None  # the origin got them
    assert [user for user, _ in logins(ftp)] == ["anonymous"]
    assert SECRET not in everything_sent(ftp)
    assert SECRET not in err
    assert f"* redirect to {ftp.url}/file.txt" in err


async def test_location_trusted_sends_u_along(http: HTTPTestServer, ftp: FakeFtpServer) -> None:
    http.routes["/go"] = redirect(f"{ftp.url}/file.txt")
    code, out, err = await cli("-v", "--location-trusted", "-u", f"bob:{SECRET}", http.url("/go"))
    assert (code, out) == (0, BODY), err
    assert logins(ftp) == [("bob", SECRET)]
    assert SECRET not in err  # sent, but never shown: "PASS ****"


async def test_the_other_origin_gets_its_own_netrc_entry(
    http: HTTPTestServer, ftp: FakeFtpServer, tmp_path: Path
) -> None:
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login carol password netrcPW\n")
    netrc.chmod(0o600)
    http.routes["/go"] = redirect(f"{ftp.url}/file.txt")
    code, out, err = await cli("-u", f"bob:{SECRET}", http.url("/go"), env={"NETRC": str(netrc)})
    assert (code, out) == (0, BODY), err
    assert logins(ftp) == [("carol", "netrcPW")]


async def test_same_origin_redirect_keeps_u(http: HTTPTestServer) -> None:
    http.routes["/go"] = redirect("/hello.txt")
    code, out, _ = await cli("-u", f"bob:{SECRET}", http.url("/go"))
    assert (code, out) == (0, b"hello\n")
    assert [r.header("authorization") is not None for r in http.requests] == [True, True]


async def test_a_password_in_a_redirect_target_is_masked_in_the_trace_and_errors(
    http: HTTPTestServer, ftp: FakeFtpServer
) -> None:
    http.routes["/go"] = redirect(f"ftp://mallory:{SECRET}@127.0.0.1:{ftp.port}/missing.txt")
    code, _, err = await cli("-v", http.url("/go"))
    assert code == 5 or code == 6, err  # mallory is no user of this server
    assert "* redirect to ftp://mallory:***@127.0.0.1" in err
    assert SECRET not in err


async def test_a_password_in_the_url_never_reaches_stderr(ftp: FakeFtpServer) -> None:
    code, _, err = await cli("-v", f"ftp://bob:{SECRET}@127.0.0.1:{ftp.port}/missing.txt")
    assert code == 6, err
    assert logins(ftp) == [("bob", SECRET)]  # the URL's own origin gets them
    assert err.startswith("* connected") or "fetch:" in err
    assert SECRET not in err


async def test_prospero_resolution_to_ftp_elsewhere_gets_no_u(ftp: FakeFtpServer) -> None:
    aftp = ["AFTP", "INTERNET-D", f"127.0.0.1({ftp.port})", "ASCII", "/file.txt", "BINARY"]
    async with serve_prospero({"/pub/file": Object([aftp])}) as server:
        url = f"prospero://127.0.0.1:{server.port}//pub/file"
        code, out, err = await cli("-v", "-u", f"bob:{SECRET}", url)
        trusted = await cli("--location-trusted", "-u", f"bob:{SECRET}", url)
    assert (code, out) == (0, BODY), err
    assert SECRET not in err and SECRET.encode() not in b"".join(server.requests)
    assert logins(ftp) == [("anonymous", logins(ftp)[0][1]), ("bob", SECRET)]
    assert trusted[:2] == (0, BODY)


async def test_r_links_to_another_origin_get_no_u(ftp: FakeFtpServer, tmp_path: Path) -> None:
    aftp = ["AFTP", "INTERNET-D", f"127.0.0.1({ftp.port})", "ASCII", "/file.txt", "BINARY"]
    tree = {"/pub": Directory([Link("mirror", "EXTERNAL", "127.0.0.1", "/file.txt", [aftp])])}
    async with serve_prospero(tree) as server:
        url = f"prospero://127.0.0.1:{server.port}//pub"
        code, _, err = await cli(
            "-v", "-u", f"bob:{SECRET}", "-r", "--follow-schemes", "ftp", "-d", str(tmp_path / "out"), url
        )
    assert code == 0, err
    assert [user for user, _ in logins(ftp)] == ["anonymous"]  # the link's origin is not the start URL's
    assert SECRET not in err and SECRET not in everything_sent(ftp)


async def test_bulk_lines_of_another_origin_get_no_u(http: HTTPTestServer, ftp: FakeFtpServer, tmp_path: Path) -> None:
    listing = tmp_path / "urls.txt"
    listing.write_text(f"{http.url('/hello.txt')}\n{ftp.url}/file.txt\n")
    out_dir = tmp_path / "out"
    code, _, err = await cli("-v", "-u", f"bob:{SECRET}", "-i", str(listing), "-d", str(out_dir), "--jobs", "1")
    assert code == 0, err
    assert http.requests[0].header("authorization") is not None  # the first URL's origin
    assert [user for user, _ in logins(ftp)] == ["anonymous"]
    assert SECRET not in err


async def test_library_values_never_show_the_password(ftp: FakeFtpServer, tmp_path: Path) -> None:
    url = f"ftp://bob:{SECRET}@127.0.0.1:{ftp.port}/missing.txt"
    good = f"ftp://bob:{SECRET}@127.0.0.1:{ftp.port}/file.txt"
    async with Client(user="bob", password=SECRET, timeout=2) as client:
        assert SECRET not in repr(client) and SECRET not in repr(client.settings)
        assert SECRET not in repr(Session(client, parse_url(good)))
        with pytest.raises(NotFound) as caught:
            await client.fetch(url)
        async with client.fetch_all([url, good]) as results:
            outcomes = [outcome async for outcome in results]
        fetched = await client.fetch(good)
        saved = await client.download(good, tmp_path / "file.txt")
    assert fetched.content == BODY and saved.bytes == len(BODY)
    error = caught.value
    shown = [str(error), repr(error), error.url or "", repr(outcomes), repr(fetched), repr(saved)]
    assert all(SECRET not in text for text in shown), shown
    parsed = parse_url(url)
    assert SECRET not in repr(parsed) and SECRET not in parsed.redacted()
    assert parse_url(str(parsed)) == parsed  # str() stays the exact serialization
