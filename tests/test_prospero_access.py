"""Prospero access methods as a user meets them (issue 16), through the real CLI.

A link is tried through its access methods in order, down to PROSPERO-CONTENTS
read from the Prospero server when the archive does not answer; listings ask
for per-link ATTRIBUTES only when --json or -v shows them; a Gopher menu behind
an EXTERNAL link is a directory; --resolve-only --json shows every method.
"""

from __future__ import annotations

import functools
import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import run_fetch
from tests.servers.prospero import Directory, Link, Object, serve_prospero
from tests.test_prospero import fix_ports

BYTES = b"the same bytes, offered by the prospero server itself\n" * 40


def dead_port() -> int:
    """A 127.0.0.1 TCP port where nothing listens (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def fetch_cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(functools.partial(run_fetch, *args, timeout=60))


def unreachable_tree(port: int) -> dict[str, Any]:
    aftp = ["AFTP", "INTERNET-D", f"127.0.0.1({port})", "ASCII", "/pub/file.txt", "BINARY"]
    return {
        "/pub/file.txt": Object([aftp, ["PROSPERO-CONTENTS", "", "", "", ""]], contents=BYTES),
        "/pub/ftp-only": Object([aftp]),
        "/pub": Directory(
            [
                Link("file.txt", "FILE", "LOCALHOST(0)", "/pub/file.txt", size=len(BYTES)),
                Link("sub", "DIRECTORY", "LOCALHOST(0)", "/pub/sub"),
                Link("menu", "EXTERNAL", "gopher.example.org(7070)", "1/menu", [["GOPHER", "", "", "", ""]]),
                Link("text", "EXTERNAL", "gopher.example.org(7070)", "0/a.txt", [["GOPHER", "", "", "", ""]]),
            ]
        ),
    }


def commands(requests: list[bytes]) -> list[bytes]:
    """Each request without its VERSION/AUTHENTICATE preamble."""
    return [b"\n".join(request.splitlines()[2:]) for request in requests]


async def test_unreachable_ftp_archive_falls_back_to_prospero_contents(tmp_path: Path) -> None:
    port = dead_port()
    async with serve_prospero(unreachable_tree(port)) as server:
        url = f"prospero://127.0.0.1:{server.port}//pub/file.txt"
        got = await fetch_cli("-o", str(tmp_path / "file.txt"), url)
        asked = commands(server.requests)
        only = await fetch_cli(url + "X")  # not found: no fallback, exit 6
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "file.txt").read_bytes() == BYTES
    stderr = got.stderr.decode()
    assert f"access method AFTP (ftp://127.0.0.1:{port}/pub/file.txt;type=i) failed" in stderr
    assert "trying PROSPERO-CONTENTS" in stderr
    assert asked == [
        b"DIRECTORY ASCII '/pub/file.txt' 0\nLIST '' COMPONENTS",
        b"GET-OBJECT-INFO ACCESS-METHOD ASCII '/pub/file.txt' 0",
        b"GET-OBJECT-INFO CONTENTS ASCII '/pub/file.txt' 0",
    ]
    assert only.returncode == 6


async def test_an_archive_that_refuses_the_login_falls_back_too(tmp_path: Path) -> None:
    from tests.servers.ftp_fake import FakeFtpServer, Faults
    from tests.servers.ftp_fake import serving as ftp_serving

    refusing = Faults(replies={"PASS": [b"530 Login incorrect."]})
    archive = FakeFtpServer({"/pub/file.txt": b"never served"}, faults=refusing)
    async with ftp_serving(archive), serve_prospero(unreachable_tree(archive.port)) as server:
        got = await fetch_cli("-o", str(tmp_path / "file.txt"), f"prospero://127.0.0.1:{server.port}//pub/file.txt")
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "file.txt").read_bytes() == BYTES
    assert [commands[:2] for commands in archive.sessions] == [["USER anonymous", "PASS anonymous@"]]
    assert "trying PROSPERO-CONTENTS" in got.stderr.decode()


async def test_a_mirror_gets_the_bytes_through_prospero_contents_when_the_archive_is_down(tmp_path: Path) -> None:
    port = dead_port()
    aftp = ["AFTP", "INTERNET-D", f"127.0.0.1({port})", "ASCII", "/pub/file.txt", "BINARY"]
    tree = {
        "/pub": Directory([Link("file.txt", "FILE", "LOCALHOST(0)", "/pub/file.txt", size=len(BYTES))]),
        "/pub/file.txt": Object([aftp, ["PROSPERO-CONTENTS", "", "", "", ""]], contents=BYTES),
    }
    async with serve_prospero(tree) as server:
        fix_ports(server)
        got = await fetch_cli("-r", "-d", str(tmp_path / "out"), "--manifest", str(tmp_path / "m.jsonl"),
                              "--no-progress", f"prospero://localhost:{server.port}//pub")  # fmt: skip
        asked = commands(server.requests)
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "out" / "file.txt").read_bytes() == BYTES
    assert b"GET-OBJECT-INFO CONTENTS ASCII '/pub/file.txt' 0" in asked
    assert "fetch: mirror: 1 new, 0 updated, 0 unchanged, 0 skipped, 0 failed" in got.stderr.decode()


async def test_the_last_method_failing_is_the_error_the_user_sees() -> None:
    port = dead_port()
    async with serve_prospero(unreachable_tree(port)) as server:
        got = await fetch_cli(f"prospero://127.0.0.1:{server.port}//pub/ftp-only")
    assert got.returncode == 4, got.stderr  # connect failure, nothing to fall back to
    assert got.stderr.startswith(b"fetch: ") and b"Traceback" not in got.stderr
    assert b"trying" not in got.stderr


async def test_listings_ask_for_attributes_only_for_json_or_verbose() -> None:
    async with serve_prospero(unreachable_tree(dead_port())) as server:
        for node in server.tree.values():
            if isinstance(node, Directory):
                for link in node.links:
                    link.host = link.host.replace("LOCALHOST(0)", server.host_field)
        url = f"prospero://127.0.0.1:{server.port}//pub"
        table = await fetch_cli(url)
        plain_bytes = server.sent_bytes
        as_json = await fetch_cli("--json", url)
        json_bytes = server.sent_bytes - plain_bytes
        verbose = await fetch_cli("-v", url)
        asked = [request.splitlines()[-1] for request in server.requests]
    assert table.returncode == as_json.returncode == verbose.returncode == 0
    assert asked == [b"LIST '' COMPONENTS", b"LIST ATTRIBUTES COMPONENTS", b"LIST ATTRIBUTES COMPONENTS"]
    assert plain_bytes * 3 < json_bytes  # the facts cost several times the bytes of the names
    rows = {row["name"]: row for row in map(json.loads, as_json.stdout.decode().splitlines())}
    assert rows["file.txt"]["size"] == len(BYTES) and rows["file.txt"]["type"] == "file"
    # A Gopher menu behind an EXTERNAL link is a directory; a Gopher text item is a file.
    assert (rows["menu"]["type"], rows["menu"]["url"]) == ("directory", "gopher://gopher.example.org:7070/11/menu")
    assert (rows["sub"]["type"], rows["text"]["type"]) == ("directory", "file")
    lines = table.stdout.decode().splitlines()
    assert any(line.startswith("directory") and line.endswith("menu") for line in lines), lines


async def test_resolve_only_json_shows_every_access_method() -> None:
    port = dead_port()
    async with serve_prospero(unreachable_tree(port)) as server:
        url = f"prospero://127.0.0.1:{server.port}//pub/file.txt"
        got = await fetch_cli("--resolve-only", "--json", url)
        text = await fetch_cli("--resolve-only", url)
    assert got.returncode == 0, got.stderr
    shown = json.loads(got.stdout)
    first = f"ftp://127.0.0.1:{port}/pub/file.txt;type=i"
    assert (shown["url"], shown["method"]) == (first, "AFTP")
    assert shown["methods"] == [
        {"method": "AFTP", "host_type": "INTERNET-D", "host": f"127.0.0.1({port})", "hsoname_type": "ASCII",
         "hsoname": "/pub/file.txt", "extra": ["BINARY"], "usable": True, "url": first, "order": 1},
        {"method": "PROSPERO-CONTENTS", "host_type": "", "host": "", "hsoname_type": "", "hsoname": "",
         "extra": [], "usable": True, "url": None, "order": 2},
    ]  # fmt: skip
    assert text.stdout == f"{first}\n".encode()  # without --json: the URL alone, as before


@pytest.mark.parametrize("offered", [[["NFS", "INTERNET-D", "h", "ASCII", "/x", "fs"]]])
async def test_resolve_only_json_says_why_a_method_is_unusable(offered: list[list[str]]) -> None:
    tree: dict[str, Any] = {"/odd": Object([*offered, ["PROSPERO-CONTENTS", "", "", "", ""]], contents=b"x")}
    async with serve_prospero(tree) as server:
        got = await fetch_cli("--resolve-only", "--json", f"prospero://127.0.0.1:{server.port}//odd")
    shown = json.loads(got.stdout)
    assert shown["method"] == "PROSPERO-CONTENTS"
    assert shown["methods"][0]["usable"] is False
    assert "NFS is not a method fetcher can follow" in shown["methods"][0]["reason"]
