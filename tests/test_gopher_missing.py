"""A Gopher server's "no such item" (issue 15): never a saved file and exit 0.

The in-repo server plays each real server's way of answering a missing
selector (pygopherd, geomyidae, Motsognir, gophernicus); the tests run the
real `fetch` command and look at the exit code, stderr and the directory.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import trio

from fetcher import Client
from fetcher.errors import NotFound
from tests.conftest import run_fetch
from tests.servers.gopher import GopherServer, Missing, serving

pytestmark = pytest.mark.usefixtures("no_netrc")

STYLES: list[Missing] = ["pygopherd", "geomyidae", "motsognir", "gophernicus"]


async def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, timeout=60, cwd=cwd))


def base(server: GopherServer) -> str:
    return f"gopher://127.0.0.1:{server.port}"


@pytest.mark.parametrize("style", STYLES)
async def test_a_missing_document_exits_6_and_leaves_no_file(style: Missing, tmp_path: Path) -> None:
    target = tmp_path / "nope.txt"
    async with serving(GopherServer(missing=style)) as server:
        named = await cli("-o", str(target), base(server) + "/0/nope.txt")
        remote = await cli("-O", base(server) + "/9/nope.bin", cwd=tmp_path)
        shown = await cli(base(server) + "/0/nope.txt")
    for result in (named, remote, shown):
        assert result.returncode == 6, result.stderr
        assert result.stderr.startswith(b"fetch: the server says there is no such item: ")
        assert b"Traceback" not in result.stderr
    assert shown.stdout == b""
    assert list(tmp_path.iterdir()) == []
    assert [request.selector for request in server.requests] == [b"/nope.txt", b"/nope.bin", b"/nope.txt"]


@pytest.mark.parametrize("style", STYLES)
async def test_a_missing_menu_exits_6(style: Missing) -> None:
    async with serving(GopherServer(missing=style)) as server:
        result = await cli(base(server) + "/1/no-such-dir")
    assert result.returncode == 6, result.stderr
    assert b"no such item" in result.stderr and result.stdout == b""


async def test_an_error_item_with_an_unknown_message_is_still_not_found(tmp_path: Path) -> None:
    routes = {b"/odd": b"3The gremlins ate it\t\terror.host\t1\r\n"}
    async with serving(GopherServer(routes)) as server:
        result = await cli("-o", str(tmp_path / "odd"), base(server) + "/0/odd")
    assert result.returncode == 6
    assert b"error item instead of the item: The gremlins ate it" in result.stderr
    assert list(tmp_path.iterdir()) == []


async def test_a_text_that_only_looks_like_an_error_is_saved_with_a_warning(tmp_path: Path) -> None:
    target = tmp_path / "about.txt"
    async with serving(GopherServer()) as server:
        result = await cli("-o", str(target), base(server) + "/0/about-errors.txt")
    assert result.returncode == 0
    assert target.read_bytes() == b"Error: this text is about error messages.\r\nIt has more lines.\r\n"
    assert result.stderr.startswith(b"fetch: warning: the reply to gopher://")
    assert b"looks like a server's error message" in result.stderr


async def test_a_menu_starting_with_an_error_item_is_listed_with_a_warning() -> None:
    async with serving(GopherServer()) as server:
        result = await cli(base(server) + "/1/menu-with-error")
        async with Client() as client:
            fetched = await client.fetch(base(server) + "/1/menu-with-error")
    assert result.returncode == 0
    assert "Hello text" in result.stdout.decode()
    assert b"warning: the menu" in result.stderr and b"Some items are missing" in result.stderr
    assert [entry.name for entry in fetched.entries][1:] == ["Hello text", "Sub"]
    assert fetched.metadata["warnings"] == [f"the menu {base(server)}/1/menu-with-error starts with an error "
                                            "item: 'Some items are missing'"]  # fmt: skip


async def test_a_binary_type_gets_the_same_verdict() -> None:
    async with serving(GopherServer(missing="geomyidae")) as server, Client() as client:
        with pytest.raises(NotFound, match="could not be found"):
            await client.fetch(base(server) + "/I/missing.png")
