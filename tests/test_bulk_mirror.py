"""Recursive bulk retrieval (`fetch -r`) over real protocol trees with hostile links.

A Gopher menu tree from the in-repo Gopher server and an FTP directory tree
from pyftpdlib: every reachable document arrives once, nothing escapes the
output directory, other hosts and schemes are not followed, and the guard
refuses links to dangerous ports without a connection.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fetcher.cli.bulk import run_bulk
from fetcher.cli.main import build_parser, settings_from_args
from tests.servers.gopher import GopherServer, serving


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def _bulk(*argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return await run_bulk(args, settings_from_args(args))


def _menu(host: str, port: int, lines: list[tuple[str, str, str, str | int]]) -> bytes:
    rows = [f"{kind}{display}\t{selector}\t{where}\t{at}\r\n" for kind, display, selector, where, at in
            [(k, d, s, host if w == "here" else w, port if w == "here" else a) for k, d, s, w, a in lines]]  # fmt: skip
    return ("".join(rows) + ".\r\n").encode()


async def test_gopher_tree_mirror_with_hostile_links(tmp_path: Path) -> None:
    server = GopherServer()
    async with serving(server):
        host, port = server.host, server.port
        server.extra_routes.update(
            {
                b"/top": _menu(
                    host,
                    port,
                    [
                        ("0", "A text", "/top/a.txt", "here", 0),
                        ("1", "Sub menu", "/top/sub", "here", 0),
                        ("0", "Climbing name", "/../../etc/passwd-copy", "here", 0),
                        ("1", "Other host", "/", "other.invalid", 70),
                        ("0", "Redis", "/_flushall", "127.0.0.1", 6379),
                        ("h", "Web link", "URL:http://127.0.0.1:9/", "here", 0),
                        ("i", "just info", "", "here", 0),
                    ],
                ),
                b"/top/sub": _menu(
                    host,
                    port,
                    [
                        ("1", "Back to the top (a loop)", "/top", "here", 0),
                        ("0", "Deep text", "/top/sub/deep.txt", "here", 0),
                    ],
                ),
                b"/top/a.txt": b"alpha\r\n",
                b"/top/sub/deep.txt": b"deep\r\n",
                b"/../../etc/passwd-copy": b"not really\r\n",
            }
        )
        server._routes = None  # rebuild with the extra routes
        out = tmp_path / "out"
        manifest = tmp_path / "m.jsonl"
        code = await _bulk(
            "-r", "--parent", "--depth", "4", "--layout", "tree", "-d", str(out), "--manifest", str(manifest),
            "--no-progress", f"gopher://{host}:{port}/1/top",
        )  # fmt: skip  (--parent: the climbing selector is asked for, and its file stays confined)
    assert code == 0
    rows = _records(manifest)
    urls = [str(row["url"]) for row in rows]
    assert len(urls) == len(set(urls))  # each URL once, despite the loop
    site = out / f"gopher_{host}_{port}"
    assert (site / "top" / "a.txt").read_bytes() == b"alpha\r\n"
    assert (site / "top" / "sub" / "deep.txt").read_bytes() == b"deep\r\n"
    assert (site / "etc" / "passwd-copy").read_bytes() == b"not really\r\n"  # confined, ".." dropped
    for path in out.rglob("*"):
        assert path.resolve().is_relative_to(out.resolve())
    refused = [row for row in rows if "6379" in str(row["url"])]
    assert len(refused) == 1 and refused[0]["status"] == "skipped" and "ssrf-port" in str(refused[0]["reason"])
    assert not any("other.invalid" in url or url.startswith("http:") for url in urls)
    selectors = [request.selector for request in server.requests]
    assert sorted(selectors) == sorted(
        [b"/top", b"/top/a.txt", b"/top/sub", b"/top/sub/deep.txt", b"/../../etc/passwd-copy"]
    )


async def test_ftp_tree_mirror_reuses_connections(tmp_path: Path) -> None:
    from tests.interop.ftp_servers import pyftpd

    root = tmp_path / "root"
    (root / "pub" / "notes" / "deeper").mkdir(parents=True)
    (root / "pub" / "hello.txt").write_bytes(b"hello\n")
    (root / "pub" / "notes" / "n.txt").write_bytes(b"note\n")
    (root / "pub" / "notes" / "deeper" / "d.bin").write_bytes(bytes(range(256)) * 40)
    (root / "pub" / "-rf").write_bytes(b"a name that looks like an option\n")
    out = tmp_path / "out"
    manifest = tmp_path / "m.jsonl"
    with pyftpd(root) as server:
        code = await _bulk(
            "-r", "--depth", "5", "--layout", "tree", "-d", str(out), "--manifest", str(manifest),
            "--per-host", "2", "--no-progress", f"{server.url}/pub/",
        )  # fmt: skip
        sessions = len(server.sessions)
    assert code == 0
    site = out / f"127.0.0.1_{server.port}" / "pub"
    assert (site / "hello.txt").read_bytes() == b"hello\n"
    assert (site / "notes" / "n.txt").read_bytes() == b"note\n"
    assert (site / "notes" / "deeper" / "d.bin").read_bytes() == bytes(range(256)) * 40
    assert (site / "-rf").read_bytes() == b"a name that looks like an option\n"
    rows = _records(manifest)
    assert all(row["status"] == "ok" for row in rows)
    assert len({row["url"] for row in rows}) == len(rows)
    assert sessions <= 2  # control connections are reused across the whole tree


@pytest.mark.parametrize("depth", [0, 1])
async def test_depth_limits_recursion(tmp_path: Path, depth: int) -> None:
    source = tmp_path / "src"
    (source / "a" / "b").mkdir(parents=True)
    (source / "a" / "b" / "x.txt").write_bytes(b"x")
    manifest = tmp_path / "m.jsonl"
    code = await _bulk("-r", "--depth", str(depth), "-d", str(tmp_path / "out"), "--manifest", str(manifest),
                       "--no-progress", f"file://{source}/")  # fmt: skip
    assert code == 0
    assert len(_records(manifest)) == 1 + depth


@pytest.mark.parametrize("extra", [[], ["-R"]])
async def test_bulk_ftp_sends_only_what_a_retrieval_needs(tmp_path: Path, extra: list[str]) -> None:
    """Bulk: EPSV and RETR per file, the length checked against the 150 reply; -R adds SIZE and MDTM
    and gives files the server's time."""
    import os

    from tests.interop.ftp_servers import pyftpd

    root = tmp_path / "root"
    (root / "pub").mkdir(parents=True)
    for index in range(5):
        (root / "pub" / f"f{index}.bin").write_bytes(bytes([index]) * 3000)
        os.utime(root / "pub" / f"f{index}.bin", (1_500_000_000, 1_500_000_000))
    out = tmp_path / "out"
    listing = tmp_path / "urls.txt"
    with pyftpd(root) as server:
        listing.write_text("".join(f"{server.url}/pub/f{index}.bin\n" for index in range(5)))
        code = await _bulk("-i", str(listing), "-d", str(out), "--per-host", "1", "--no-progress", *extra)
        commands = [line.split(" ", 1)[0] for session in server.commands() for line in session]
    assert code == 0
    for index in range(5):
        assert (out / f"f{index}.bin").read_bytes() == bytes([index]) * 3000
    verbs = {verb: commands.count(verb) for verb in ("RETR", "SIZE", "MDTM", "EPSV")}
    if extra:
        assert verbs == {"RETR": 5, "SIZE": 5, "MDTM": 5, "EPSV": 5}
        assert (out / "f0.bin").stat().st_mtime == 1_500_000_000
    else:
        assert verbs == {"RETR": 5, "SIZE": 0, "MDTM": 0, "EPSV": 5}
        assert (out / "f0.bin").stat().st_mtime > 1_500_000_000


async def test_gopher_menus_without_trailing_slashes_keep_their_names(tmp_path: Path) -> None:
    """Motsognir's menus name a directory `/a/b`, not `/a/b/`: its files land in `a/b/`, not `a/b.d/`.

    `/a` lists the menu `/a/b` and the file `/a/b/x.txt`: a bulk run names
    each URL when it takes it on (in input order), so the file is named
    while the menu is still waiting for its reply.  `.d` stays for a real
    collision: the document `/a/n` and the document `/a/n/inner.txt`.
    """
    from tests.hostile.checks import cli
    from tests.servers.gopher import menu_line

    server = GopherServer()
    async with serving(server):
        host, port = server.host, server.port

        def menu(*items: tuple[str, str]) -> bytes:
            lines = [menu_line(kind, name.encode(), name.encode(), host, port) for kind, name in items]
            return b"".join(lines) + b".\r\n"

        server.extra_routes.update({
            b"/a": menu(("1", "/a/b"), ("0", "/a/b/x.txt"), ("0", "/a/n"), ("0", "/a/n/inner.txt")),
            b"/a/b": menu(("1", "/a/b/c"), ("0", "/a/b/x.txt")),
            b"/a/b/c": menu(("0", "/a/b/c/deep.txt")),
            b"/a/b/x.txt": b"ex\r\n",
            b"/a/b/c/deep.txt": b"deep\r\n",
            b"/a/n": b"a document named n\r\n",
            b"/a/n/inner.txt": b"inner\r\n",
        })  # fmt: skip
        server._routes = None
        out = tmp_path / "out"
        done = await cli("-r", "--layout", "tree", "-d", str(out), "--no-progress", f"gopher://{host}:{port}/1/a")
    assert done.returncode == 0, done.stderr
    site = out / f"gopher_{host}_{port}" / "a"
    assert (site / "b" / "x.txt").read_bytes() == b"ex\r\n"
    assert (site / "b" / "c" / "deep.txt").read_bytes() == b"deep\r\n"
    assert (site / "b" / "index.listing.json").is_file()
    assert (site / "n").read_bytes() == b"a document named n\r\n"  # a true collision: the directory is n.d
    assert (site / "n.d" / "inner.txt").read_bytes() == b"inner\r\n"
    assert sorted(path.name for path in site.iterdir()) == ["b", "index.listing.json", "n", "n.d"]
    assert "4 new, 0 updated, 0 unchanged, 0 skipped, 0 failed" in done.stderr.decode()
