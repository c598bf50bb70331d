"""gopher: against real servers: gophernicus (no Gopher+) and pygopherd (partial Gopher+)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import trio

from fetcher import Client
from fetcher.errors import AuthError, NotFound, UnsafeURL
from tests.conftest import run_fetch
from tests.interop.content import sha256_file
from tests.interop.gopher_servers import GopherService, gopher_root, gophernicus, pygopherd

__all__ = ["gopher_root", "gophernicus", "pygopherd"]

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("no_netrc")]


def names(entries: list) -> list[str]:  # type: ignore[type-arg]
    return [entry.name for entry in entries]


# -- gophernicus ------------------------------------------------------------------------------


async def test_gophernicus_root_menu(gophernicus: GopherService) -> None:
    async with Client() as client:
        menu = await client.fetch(gophernicus.base)
    by_name = {entry.name: entry for entry in menu.entries}
    assert by_name["Hello text file"].url == f"{gophernicus.base}/0/hello.txt"
    assert by_name["Search (type 7)"].type == "search"
    assert by_name["Web link (URL: selector)"].url == "http://example.invalid/"
    assert by_name["Link to another host (never resolves)"].url == "gopher://other.invalid/1/"
    assert menu.metadata["terminated"] is True
    assert menu.entries[0].type == "info" and menu.entries[0].name == "Welcome to the test gopher root."


async def test_gophernicus_text_binary_and_search(gophernicus: GopherService, tmp_path: Path) -> None:
    target = tmp_path / "big.bin"
    async with Client() as client:
        hello = await client.fetch(gophernicus.base + "/0/hello.txt")
        dots = await client.fetch(gophernicus.base + "/0/dotlines.txt")
        empty = await client.fetch(gophernicus.base + "/0/empty.txt")
        gif = await client.fetch(gophernicus.base + "/g/images/tiny.gif")
        found = await client.fetch(gophernicus.base + "/7/cgi-bin/search%09foo%20bar")
        saved = await client.download(gophernicus.base + "/9/big-64M.bin", target)
    assert hello.content == b"Hello, world!\r\n"  # gophernicus rewrites line ends to CRLF
    assert dots.content == b"first line\r\n.\r\n.hidden-looking line\r\n..two dots\r\nlast line\r\n"
    assert empty.content == b""
    assert gif.content == (gophernicus.root / "images/tiny.gif").read_bytes()
    assert names(found.entries) == ["You searched for: foo bar", "hello.txt"]
    assert saved.sha256 == sha256_file(gophernicus.root / "big-64M.bin")
    assert hashlib.sha256(target.read_bytes()).hexdigest() == saved.sha256


async def test_gophernicus_errors_and_gopher_plus_fallback(gophernicus: GopherService) -> None:
    async with Client() as client:
        with pytest.raises(NotFound, match="not found"):
            await client.fetch(gophernicus.base + "/0/nope.txt")
        with pytest.raises(AuthError, match="Access denied"):
            await client.fetch(gophernicus.base + "/0/unreadable.txt")
        plain = await client.fetch(gophernicus.base + "/0/hello.txt%09%09+")
        root_attributes = await client.fetch(gophernicus.base + "/1%09%09$")
    assert plain.content == b"Hello, world!\r\n"
    assert "did not answer in Gopher+" in plain.metadata["warnings"][0]
    # The one Gopher+ reply gophernicus has: "\t$" on the root.
    assert names(root_attributes.entries) == ["Main menu"]
    assert root_attributes.entries[0].extra["attributes"]["views"][0]["size"] == "<512b>"


async def test_gophernicus_cli(gophernicus: GopherService) -> None:
    menu = await trio.to_thread.run_sync(lambda: run_fetch(gophernicus.base + "/1/a"))
    missing = await trio.to_thread.run_sync(lambda: run_fetch(gophernicus.base + "/0/nope.txt"))
    assert menu.returncode == 0 and "(TXT)   a.txt" in menu.stdout.decode()
    assert missing.returncode == 6 and b"not found" in missing.stderr


# -- pygopherd ---------------------------------------------------------------------------------------


async def test_pygopherd_menu_without_dot_and_plus_flags(pygopherd: GopherService) -> None:
    async with Client() as client:
        menu = await client.fetch(pygopherd.base)
    by_name = {entry.name: entry for entry in menu.entries}
    assert menu.metadata["terminated"] is False
    assert by_name["Hello text file"].extra["gopher_plus"] == "+"
    assert by_name["Hello text file"].url == f"{pygopherd.base}/0/hello.txt"
    assert "A friendly greeting." in by_name  # pygopherd adds abstracts as info lines
    assert by_name["Web link (URL: selector)"].url == "http://example.invalid/"


async def test_pygopherd_text_binary_search(pygopherd: GopherService) -> None:
    async with Client() as client:
        dots = await client.fetch(pygopherd.base + "/0/dotlines.txt")
        text = await client.fetch(pygopherd.base + "/0/text-256k.txt")
        gif = await client.fetch(pygopherd.base + "/g/images/tiny.gif")
        found = await client.fetch(pygopherd.base + "/7/cgi-bin/search%09foo%20bar")
        found_plus = await client.fetch(pygopherd.base + "/7/cgi-bin/search%09foo%20bar%09+")
    assert dots.content == (pygopherd.root / "dotlines.txt").read_bytes()
    assert text.content == (pygopherd.root / "text-256k.txt").read_bytes()
    assert gif.content == (pygopherd.root / "images/tiny.gif").read_bytes()
    assert names(found.entries) == names(found_plus.entries) == ["You searched for: foo bar", "hello.txt"]


async def test_pygopherd_gopher_plus(pygopherd: GopherService) -> None:
    async with Client() as client:
        hello = await client.fetch(pygopherd.base + "/0/hello.txt%09%09+")
        directory = await client.fetch(pygopherd.base + "/1/gplus%09%09+")
        attributes = await client.fetch(pygopherd.base + "/0/hello.txt%09%09!")
        listing = await client.fetch(pygopherd.base + "/1/gplus%09%09$")
        with pytest.raises(NotFound, match="does not exist"):
            await client.fetch(pygopherd.base + "/0/nope%09%09+")
        with pytest.raises(NotFound, match="Permission denied"):  # its double-header bug
            await client.fetch(pygopherd.base + "/0/unreadable.txt%09%09+")
        with pytest.raises(AuthError, match="Permission denied"):
            await client.fetch(pygopherd.base + "/0/unreadable.txt")
    assert (hello.content, hello.size) == (b"Hello, world!\n", 14)
    assert names(directory.entries) == ["askme.txt", "doc.txt"]
    record = attributes.metadata["attributes"][0]
    assert record["admin"]["Admin"] == "Test Admin <admin@example.invalid>"
    assert record["views"] == [{"mime": "text/plain", "lang": None, "size": "<0k>", "approx_bytes": 0}]
    assert record["abstract"] == "A friendly greeting.\nThis is the Gopher+ abstract of hello.txt."
    assert record["modified"] is not None
    assert names(listing.entries) == ["askme.txt", "doc.txt"]
    ask = listing.entries[0].extra["attributes"]["ask"]
    assert [field["kind"] for field in ask] == ["Ask", "Choose"]
    assert listing.entries[1].description == "Abstract line one."


async def test_pygopherd_ask_form(pygopherd: GopherService) -> None:
    url = pygopherd.base + "/0/gplus/askme.txt%09%09?"
    async with Client() as client:
        form = await client.fetch(url)
    async with Client(form={"name": "Bob", "colour": "red"}) as client:
        submitted = await client.fetch(url)
    assert form.kind == "advisory" and "Ask: What is your name? [Anonymous]" in form.advisory.text  # type: ignore[union-attr]
    # pygopherd cannot take ASK submissions: it answers with the plain document, and we say so.
    assert submitted.content == b"Item that carries an ASK block.\n"
    assert "did not answer in Gopher+" in submitted.metadata["warnings"][0]
    assert submitted.metadata["form_url"].endswith("%09%09+%091%0D%0A+-1%0D%0ABob%0D%0Ared%0D%0A.%0D%0A")


async def test_pygopherd_guard_on_followed_links(pygopherd: GopherService) -> None:
    async with Client() as client:
        with pytest.raises(UnsafeURL):
            await client.fetch(f"gopher://127.0.0.1:{pygopherd.port}/0-n/tmp/x")
        with pytest.raises(UnsafeURL):
            await client.fetch(f"gopher://127.0.0.1:{pygopherd.port}/0/cgi-bin/search?-n/tmp/x")
