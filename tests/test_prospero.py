"""prospero:// end to end against the in-repo test server (tests/servers/prospero.py).

Listings, resolution to pyftpdlib and the bytes that arrive, PROSPERO-CONTENTS,
the guard on resolved targets, failures and exit codes, and the ARDP layer
under dropped, duplicated, reordered and delayed packets.
"""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from fetcher.client import Client
from fetcher.errors import AuthError, NotFound, ProtocolError, Timeout, UnsafeURL
from tests.conftest import run_fetch
from tests.servers.prospero import Directory, Faults, Forward, Link, Object, ProsperoServer, ftp_server, serve_prospero

HELLO = b"hello over prospero and ftp\n"
TEXT = b"".join(b"line %05d of the prospero contents, it's quoted\n" % n for n in range(1500))  # 73500 octets
FAST: dict[str, Any] = {"prospero_timeout": 0.05, "prospero_retries": 6}


@pytest.fixture
def ftp_root(tmp_path: Path) -> Path:
    root = tmp_path / "ftproot"
    (root / "pub").mkdir(parents=True)
    (root / "pub" / "hello.txt").write_bytes(HELLO)
    return root


@pytest.fixture
def ftp_port(ftp_root: Path) -> Iterator[int]:
    with ftp_server(ftp_root) as port:
        yield port


def aftp(port: int, path: str, mode: str = "BINARY") -> list[str]:
    return ["AFTP", "INTERNET-D", f"127.0.0.1({port})", "ASCII", path, mode]


def tree(ftp_port: int) -> dict[str, Any]:
    here = "LOCALHOST(0)"  # replaced by the real port below
    return {
        "/pub": Directory(
            [
                Link("hello.txt", "FILE", here, "/pub/hello.txt"),
                Link("docs", "DIRECTORY", here, "/pub/docs"),
                Link("mirror", "EXTERNAL", "127.0.0.1", "/pub/hello.txt", [aftp(ftp_port, "", "TEXT")]),
                Link("menu", "EXTERNAL", "gopher.example.org(7070)", "1/menu", [["GOPHER", "", "", "", ""]]),
                Link("guest", "EXTERNAL", "bbs.example.org", "", [["TELNET", "", "", "", "", "login as guest"]]),
                Link("odd name; yes", "FILE", here, "/pub/odd name; yes"),
            ]
        ),
        "/pub/docs": Directory([]),
        "/pub/hello.txt": Object([["LOCAL", "", "", "", ""], aftp(ftp_port, "/pub/hello.txt")]),
        "/pub/quirky": Object([aftp(ftp_port, "/pub/hello.txt")], quirk=True),
        "/pub/contents.txt": Object([["PROSPERO-CONTENTS", "", "", "", ""]], contents=TEXT),
        "/pub/local-only": Object([["LOCAL", "", "", "", ""], ["NFS", "INTERNET-D", "h", "ASCII", "/x", "fs"]]),
        "/pub/bad-port": Object([aftp(25, "/pub/hello.txt")]),
        "/pub/gopher": Object([["GOPHER", "INTERNET-D", "127.0.0.1(7070)", "ASCII", "0/a file", "TEXT"]]),
        "/secret": Directory([], authorized=False),
        "/old": Forward("LOCALHOST(0)", "/pub"),
    }


def fix_ports(server: ProsperoServer) -> None:
    """Links and forwards name the server's own (free) port, known only once it is bound."""
    for node in server.tree.values():
        if isinstance(node, Directory):
            for link in node.links:
                link.host = link.host.replace("LOCALHOST(0)", server.host_field)
        elif isinstance(node, Forward):
            node.host = server.host_field


async def fetch_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(functools.partial(run_fetch, *args, timeout=60))


# -- listings -----------------------------------------------------------------------


async def test_directory_listing(ftp_port: int) -> None:
    async with serve_prospero(tree(ftp_port)) as server:
        fix_ports(server)
        async with Client(**FAST) as client:
            result = await client.fetch(f"prospero://127.0.0.1:{server.port}//pub")
    assert result.kind == "listing"
    rows = [(e.name, e.type, e.url, e.description) for e in result.entries]
    base = f"prospero://localhost:{server.port}"
    assert rows == [
        ("hello.txt", "file", f"{base}//pub/hello.txt", ""),
        ("docs", "directory", f"{base}//pub/docs", ""),
        ("mirror", "file", f"ftp://127.0.0.1:{ftp_port}/pub/hello.txt;type=a", ""),
        ("menu", "directory", "gopher://gopher.example.org:7070/11/menu", ""),
        ("guest", "link", "telnet://bbs.example.org/", "login as guest"),
        ("odd name; yes", "file", f"{base}//pub/odd%20name%3B%20yes", ""),
    ]
    assert server.requests == [
        b"VERSION 5 fetcher\nAUTHENTICATE '' UNAUTHENTICATED anonymous\n"
        b"DIRECTORY ASCII '/pub' 0\nLIST '' COMPONENTS\n"
    ]


async def test_listing_on_the_command_line(ftp_port: int) -> None:
    async with serve_prospero(tree(ftp_port)) as server:
        fix_ports(server)
        url = f"prospero://127.0.0.1:{server.port}//pub"
        table = await fetch_cli(url)
        links = await fetch_cli("--links", url)
        empty = await fetch_cli(f"prospero://127.0.0.1:{server.port}//pub/docs")
    assert table.returncode == 0, table.stderr
    assert b"hello.txt" in table.stdout and b"odd name; yes" in table.stdout
    assert links.stdout.decode().splitlines() == [
        f"prospero://localhost:{server.port}//pub/hello.txt",
        f"prospero://localhost:{server.port}//pub/docs",
        f"ftp://127.0.0.1:{ftp_port}/pub/hello.txt;type=a",
        "gopher://gopher.example.org:7070/11/menu",
        "telnet://bbs.example.org/",
        f"prospero://localhost:{server.port}//pub/odd%20name%3B%20yes",
    ]
    assert (empty.returncode, empty.stdout) == (0, b"")


async def test_forwarded_and_url_fields(ftp_port: int) -> None:
    async with serve_prospero(tree(ftp_port)) as server:
        fix_ports(server)
        async with Client(**FAST) as client:
            moved = await client.fetch(f"prospero://127.0.0.1:{server.port}//old")
            fielded = await client.fetch(f"prospero://127.0.0.1:{server.port}//pub;OBJECT-VERSION=3;ID=42;colour=red")
    assert [e.name for e in moved.entries][:2] == ["hello.txt", "docs"]
    assert server.requests[1].endswith(b"DIRECTORY ASCII '/pub' 0\nLIST '' COMPONENTS\n")
    assert server.requests[2].endswith(
        b"DIRECTORY ASCII '/pub' 3\nSELECT OBJECT FIELD ID REMOTE 42\nSELECT OBJECT FIELD colour red\n"
        b"LIST '' COMPONENTS\n"
    )
    assert fielded.metadata["unknown_fields"] == ["colour"]


# -- resolution ---------------------------------------------------------------------


async def test_resolution_to_ftp_delivers_the_bytes(ftp_port: int) -> None:
    async with serve_prospero(tree(ftp_port)) as server:
        async with Client(**FAST) as client:
            result = await client.fetch(f"prospero://127.0.0.1:{server.port}//pub/hello.txt")
    assert result.content == HELLO
    assert str(result.url) == f"ftp://127.0.0.1:{ftp_port}/pub/hello.txt;type=i"
    assert result.metadata["prospero"]["method"] == "AFTP"
    assert result.metadata["prospero"]["offered"] == "LOCAL, AFTP"
    assert server.requests[1].endswith(b"GET-OBJECT-INFO ACCESS-METHOD ASCII '/pub/hello.txt' 0\n")


async def test_resolution_on_the_command_line(ftp_port: int, tmp_path: Path) -> None:
    async with serve_prospero(tree(ftp_port)) as server:
        url = f"prospero://127.0.0.1:{server.port}//pub/hello.txt"
        only = await fetch_cli("--resolve-only", url)
        body = await fetch_cli("-v", url)
        saved = await fetch_cli("-o", str(tmp_path / "out.txt"), url)
        quirky = await fetch_cli("--resolve-only", f"prospero://127.0.0.1:{server.port}//pub/quirky")
    target = f"ftp://127.0.0.1:{ftp_port}/pub/hello.txt;type=i"
    assert (only.returncode, only.stdout) == (0, f"{target}\n".encode())
    assert (body.returncode, body.stdout) == (0, HELLO)
    trace = body.stderr.decode()
    assert f"resolves to {target} via AFTP" in trace
    assert f"prospero resolution to {target}" in trace
    assert "> DIRECTORY ASCII '/pub/hello.txt' 0" in trace and "< FAILURE NOT-A-DIRECTORY" in trace
    assert saved.returncode == 0 and (tmp_path / "out.txt").read_bytes() == HELLO
    assert (quirky.returncode, quirky.stdout) == (0, f"{target}\n".encode())
    asked = [r.splitlines()[2] for r in server.requests[-3:]]
    assert asked == [
        b"DIRECTORY ASCII '/pub/quirky' 0",
        b"GET-OBJECT-INFO ACCESS-METHOD ASCII '/pub/quirky' 0",
        b"GET-OBJECT-INFO #ALL ASCII '/pub/quirky' 0",
    ]


async def test_resolution_to_other_schemes_and_refused_ports(ftp_port: int) -> None:
    async with serve_prospero(tree(ftp_port)) as server:
        base = f"prospero://127.0.0.1:{server.port}/"
        gopher = await fetch_cli("--resolve-only", base + "/pub/gopher")
        refused = await fetch_cli(base + "/pub/bad-port")
        refused_only = await fetch_cli("--resolve-only", base + "/pub/bad-port")
        bad_server = await fetch_cli("prospero://127.0.0.1:25//pub")
        async with Client(**FAST) as client:
            with pytest.raises(UnsafeURL, match="port 25 refused for ftp"):
                await client.fetch(base + "/pub/bad-port")
    assert (gopher.returncode, gopher.stdout) == (0, b"gopher://127.0.0.1:7070/00/a%20file\n")
    assert refused.returncode == 3 and b"port 25 refused for ftp" in refused.stderr
    assert refused_only.returncode == 0  # printing a URL is not fetching it
    assert bad_server.returncode == 3 and b"port 25 refused for prospero" in bad_server.stderr
    assert len(server.requests) == 8  # two per object; nothing for the refused server port


async def test_prospero_contents_streams_a_multi_window_reply(ftp_port: int, tmp_path: Path) -> None:
    async with serve_prospero(tree(ftp_port)) as server:
        url = f"prospero://127.0.0.1:{server.port}//pub/contents.txt"
        async with Client(**FAST) as client:
            result = await client.fetch(url)
        cli = await fetch_cli("-o", str(tmp_path / "c.txt"), url)
        only = await fetch_cli("--resolve-only", url)
    assert result.content == TEXT  # 60+ packets: four windows, acks, byte-swapped ids
    assert result.metadata["prospero"]["method"] == "PROSPERO-CONTENTS"
    assert cli.returncode == 0 and (tmp_path / "c.txt").read_bytes() == TEXT
    assert only.stdout == f"{url}\n".encode()
    assert server.requests[2].endswith(b"GET-OBJECT-INFO CONTENTS ASCII '/pub/contents.txt' 0\n")


# -- failures -------------------------------------------------------------------------


async def test_failures_map_to_exit_codes(ftp_port: int) -> None:
    async with serve_prospero(tree(ftp_port)) as server:
        base = f"prospero://127.0.0.1:{server.port}/"
        missing = await fetch_cli(base + "/nowhere")
        secret = await fetch_cli(base + "/secret")
        unusable = await fetch_cli(base + "/pub/local-only")
        async with Client(**FAST) as client:
            with pytest.raises(NotFound):
                await client.fetch(base + "/nowhere")
            with pytest.raises(AuthError):
                await client.fetch(base + "/secret")
            with pytest.raises(ProtocolError, match=r"offered: LOCAL, NFS"):
                await client.fetch(base + "/pub/local-only")
    assert missing.returncode == 6 and b"/nowhere" in missing.stderr and b"FAILURE NOT-FOUND" in missing.stderr
    assert secret.returncode == 5 and b"NOT-AUTHORIZED" in secret.stderr
    assert unusable.returncode == 7
    assert b"no access method fetcher can follow (offered: LOCAL, NFS)" in unusable.stderr


async def test_silent_server_times_out() -> None:
    async with serve_prospero({}, Faults(silent=True)) as server:
        url = f"prospero://127.0.0.1:{server.port}//pub"
        async with Client(prospero_timeout=0.02, prospero_retries=3) as client:
            with pytest.raises(Timeout, match="after 3 retransmissions"):
                await client.fetch(url)
        with trio.fail_after(5):
            while server.cancels == 0:  # the client tells the server it gave up
                await trio.sleep(0.01)
        assert server.received == 5  # the request, three retransmissions, the cancel
        cli = await fetch_cli("--timeout", "0.05", url)
    assert cli.returncode == 8 and b"no answer from the Prospero server" in cli.stderr


# -- a bad network -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "faults",
    [
        Faults(drop_every=3),
        Faults(duplicate=True, reverse=True),
        Faults(drop_every=5, duplicate=True, reverse=True, window=4),
        Faults(loss=0.1, seed=1),
        Faults(loss=0.1, seed=2, swap_cid=False),
    ],
    ids=["drop-every-3rd", "duplicate-and-reorder", "all-of-it-window-4", "loss-10pc-seed1", "loss-10pc-seed2"],
)
async def test_delivery_survives_loss_duplicates_and_reordering(ftp_port: int, faults: Faults) -> None:
    async with serve_prospero(tree(ftp_port), faults) as server:
        async with Client(prospero_timeout=0.05, prospero_retries=8) as client:
            result = await client.fetch(f"prospero://127.0.0.1:{server.port}//pub/contents.txt")
    assert result.content == TEXT
    assert server.dropped > 0 or faults.duplicate


async def test_please_wait_extends_the_deadline(ftp_port: int) -> None:
    # Without honouring the wait the client would give up after 0.05 + 0.1 s.
    async with serve_prospero(tree(ftp_port), Faults(wait=0.6, wait_seconds=2)) as server:
        async with Client(prospero_timeout=0.05, prospero_retries=1) as client:
            result = await client.fetch(f"prospero://127.0.0.1:{server.port}//pub")
    assert [e.name for e in result.entries][:2] == ["hello.txt", "docs"]


async def test_resolution_to_gopher_delivers_the_bytes(nursery: trio.Nursery) -> None:
    """GOPHER is outside the redirect policy (http, https, ftp) but a Prospero resolution may use it."""
    selectors: list[bytes] = []

    async def gopher(stream: trio.SocketStream) -> None:
        data = b""
        while not data.endswith(b"\r\n"):
            data += await stream.receive_some(1024)
        selectors.append(data)
        await stream.send_all(b"text from gopher\r\n.\r\n")
        await stream.aclose()

    listeners = await nursery.start(functools.partial(trio.serve_tcp, gopher, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    method = ["GOPHER", "INTERNET-D", f"127.0.0.1({port})", "ASCII", "0/a file"]
    async with serve_prospero({"/g": Object([method])}) as server:
        async with Client(**FAST) as client:
            result = await client.fetch(f"prospero://127.0.0.1:{server.port}//g")
    assert str(result.url) == f"gopher://127.0.0.1:{port}/00/a%20file"
    assert result.content.replace(b"\r\n", b"\n") == b"text from gopher\n"
    assert selectors == [b"0/a file\r\n"]
