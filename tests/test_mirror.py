"""`fetch -r` as a mirror (issue 16): scope, loops, skipped items, timestamping, the summary.

Every test asserts on what the servers received: nothing outside the start
directory is asked for without --parent, and a second -N run over an
unchanged tree sends no RETR.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from fetcher.cli.bulk import run_bulk
from fetcher.cli.main import build_parser, settings_from_args
from tests.servers import ftp_fake
from tests.servers.ftp_fake import FakeFtpServer, serving
from tests.servers.gopher import GopherServer
from tests.servers.gopher import serving as gopher_serving


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def _bulk(*argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return await run_bulk(args, settings_from_args(args))


class _LinkSession(ftp_fake._Session):
    """LIST as vsftpd writes it, plus symbolic links (`name -> target`) the server was given."""

    async def do_LIST(self, argument: str) -> None:
        await super().do_LIST(argument)

    async def _send_listing(self, lines: list[bytes]) -> None:
        links = getattr(self.server, "links", {})
        prefix = self.cwd.rstrip("/") + "/"
        for path, target in sorted(links.items()):
            if path.startswith(prefix) and "/" not in path[len(prefix):]:
                name = path[len(prefix):]
                lines.append(f"lrwxrwxrwx    1 0        0               2 Nov 21  2026 {name} -> {target}".encode())
        await super()._send_listing(lines)


class LinkingFtpServer(FakeFtpServer):
    session_class = _LinkSession

    def __init__(self, files: dict[str, bytes], links: dict[str, str], **options: object) -> None:
        super().__init__(files, **options)  # type: ignore[arg-type]
        self.links = links


def _touched(server: FakeFtpServer) -> list[str]:
    """The paths CWD, RETR and LIST named, resolved as the server saw them."""
    seen = []
    for commands in server.sessions:
        cwd = server.home
        for line in commands:
            verb, _, argument = line.partition(" ")
            if verb == "CWD":
                cwd = os.path.normpath(os.path.join(cwd, argument))
                seen.append(cwd.rstrip("/") + "/")  # "CWD /" (back to the login directory) is "/", not "//"
            elif verb in ("RETR", "SIZE", "MDTM"):
                seen.append(os.path.normpath(os.path.join(cwd, argument)))
            elif verb in ("LIST", "NLST", "MLSD"):
                seen.append(cwd + "/")
    return seen


async def test_ftp_mirror_never_leaves_the_start_directory(tmp_path: Path) -> None:
    files = {"/pub/a.txt": b"alpha", "/pub/sub/b.txt": b"beta", "/secret.txt": b"secret", "/etc/passwd": b"root"}
    links = {"/pub/up": "..", "/pub/loop": ".", "/pub/sub/back": "../..", "/pub/pw": "/etc/passwd",
             "/pub/sub/again": "/pub"}  # fmt: skip
    server = LinkingFtpServer(files, links)
    out, manifest = tmp_path / "out", tmp_path / "m.jsonl"
    async with serving(server):
        code = await _bulk("-r", "--layout", "tree", "-d", str(out), "--manifest", str(manifest), "--no-progress",
                           f"{server.url}/pub/")  # fmt: skip
    assert code == 0
    touched = _touched(server)
    assert "/pub/a.txt" in touched and "/pub/sub/b.txt" in touched
    # The first CWD is the start directory's parent path on the way in; nothing else outside /pub.
    outside = [path for path in touched if not (path == "/" or path.startswith("/pub/") or path == "/pub")]
    assert outside == []
    assert not any(path.startswith(("/pub/up", "/pub/loop", "/pub/sub/back", "/pub/pw", "/pub/sub/again"))
                   for path in touched)  # fmt: skip
    rows = {str(row["url"]).rsplit("/", 1)[-1] or str(row["url"]): row for row in _records(manifest)}
    assert "a loop" in str(rows["loop"]["reason"]) and rows["loop"]["status"] == "skipped"
    assert "a loop" in str(rows["up"]["reason"]) and "a loop" in str(rows["back"]["reason"])
    assert "a loop" in str(rows["again"]["reason"])
    assert "outside the start directory" in str(rows["pw"]["reason"]) and rows["pw"]["status"] == "skipped"
    assert (out / f"127.0.0.1_{server.port}" / "pub" / "sub" / "b.txt").read_bytes() == b"beta"
    assert not list(out.rglob("secret.txt")) and not list(out.rglob("passwd"))


def _menu(host: str, port: int, rows: list[tuple[str, str, str]]) -> bytes:
    text = "".join(f"{kind}{name}\t{selector}\t{host}\t{port}\r\n" for kind, name, selector in rows)
    return (text + ".\r\n").encode()


@pytest.mark.parametrize("parent", [False, True])
async def test_gopher_mirror_stays_below_the_start_menu(tmp_path: Path, parent: bool) -> None:
    server = GopherServer()
    async with gopher_serving(server):
        host, port = server.host, server.port
        server.extra_routes.update({
            b"/top": _menu(host, port, [("0", "A", "/top/a.txt"), ("1", "Up", "/"), ("0", "Sibling", "/topsecret"),
                                        ("0", "Climb", "/top/../x.txt"), ("7", "Search", "/top/find"),
                                        ("8", "Telnet", "/top/tn"), ("2", "Phone book", "/top/cso")]),
            b"/top/a.txt": b"a\r\n", b"/topsecret": b"s\r\n", b"/top/../x.txt": b"x\r\n",
            b"/": _menu(host, port, [("0", "Root file", "/root.txt")]), b"/root.txt": b"r\r\n",
        })  # fmt: skip
        server._routes = None
        manifest = tmp_path / "m.jsonl"
        code = await _bulk("-r", "-d", str(tmp_path / "out"), "--manifest", str(manifest), "--no-progress",
                           *(["--parent"] if parent else []), f"gopher://{host}:{port}/1/top")  # fmt: skip
        captured = sorted(request.selector for request in server.requests)
    assert code == 0
    if parent:
        assert captured == sorted([b"/top", b"/top/a.txt", b"/", b"/topsecret", b"/top/../x.txt", b"/root.txt"])
    else:
        assert captured == [b"/top", b"/top/a.txt"]
    skipped = {row["name"]: str(row["reason"]) for row in _records(manifest) if row["status"] == "skipped"}
    assert set(skipped) == {"Search", "Telnet", "Phone book"}
    assert "search" in skipped["Search"] and "telnet" in skipped["Telnet"] and "CSO" in skipped["Phone book"]
    assert all(row["status"] != "failed" for row in _records(manifest))


async def test_file_mirror_symlink_loops_and_parent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "src"
    (source / "start" / "sub").mkdir(parents=True)
    (source / "start" / "sub" / "f.txt").write_bytes(b"f")
    (source / "outside.txt").write_bytes(b"o")
    os.symlink("..", source / "start" / "sub" / "back")
    os.symlink("../outside.txt", source / "start" / "out-link")
    manifest = tmp_path / "m.jsonl"
    code = await _bulk("-r", "--depth", "9", "-d", str(tmp_path / "out"), "--manifest", str(manifest),
                       "--no-progress", f"file://{source}/start/")  # fmt: skip
    assert code == 0
    rows = _records(manifest)
    urls = {str(row["url"]) for row in rows}
    assert not any("outside" in url and row["status"] == "ok" for row in rows for url in [str(row["url"])])
    assert f"file://{source}/start/sub/f.txt" in urls
    reasons = [str(row.get("reason")) for row in rows if row["status"] == "skipped"]
    assert sum("a loop" in reason for reason in reasons) == 1
    assert sum("outside the start directory" in reason for reason in reasons) == 1
    assert "fetch: mirror: 1 new, 0 updated, 0 unchanged, 2 skipped, 0 failed; 1 bytes" in capsys.readouterr().err


@pytest.mark.parametrize(("mlsd", "count"), [(False, 500), (True, 200)])
async def test_timestamping_second_run_transfers_nothing(tmp_path: Path, mlsd: bool, count: int,
                                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    files = {f"/tree/d{i % 10}/f{i:03d}.txt": f"file {i}\n".encode() for i in range(count)}
    faults = ftp_fake.Faults(replies={"FEAT": [b"211-Features:", b" MLST type*;size*;modify*;", b"211 End"]}
                             if mlsd else {})  # fmt: skip
    server = FakeFtpServer(files, faults=faults)
    out, manifest = tmp_path / "out", tmp_path / "m.jsonl"
    argv = ["-r", "-N", "--layout", "tree", "-d", str(out), "--manifest", str(manifest), "--no-progress"]

    def retrs() -> list[str]:
        return [line for commands in server.sessions for line in commands if line.startswith("RETR")]

    async with serving(server):
        assert await _bulk(*argv, f"{server.url}/tree/") == 0
        first = len(retrs())
        assert f"fetch: mirror: {count} new, 0 updated, 0 unchanged, 0 skipped, 0 failed" in capsys.readouterr().err
        saved = out / f"127.0.0.1_{server.port}" / "tree" / "d7" / "f007.txt"
        assert saved.read_bytes() == b"file 7\n"
        assert saved.stat().st_mtime == 1795257000  # 2026-11-21 10:30:00 UTC, the server's time
        assert await _bulk(*argv, f"{server.url}/tree/") == 0
        second = len(retrs()) - first
        summary = f"fetch: mirror: 0 new, 0 updated, {count} unchanged, 0 skipped, 0 failed; 0 bytes"
        assert summary in capsys.readouterr().err
        server.files["/tree/d3/f123.txt"] = b"changed and longer\n"
        assert await _bulk(*argv, f"{server.url}/tree/") == 0
        third = retrs()[first + second:]
    assert first == count
    listed = {line for commands in server.sessions for line in commands if line in ("LIST", "MLSD")}
    assert listed == ({"MLSD"} if mlsd else {"LIST"})
    assert second == 0
    assert third == ["RETR f123.txt"]
    assert f"fetch: mirror: 0 new, 1 updated, {count - 1} unchanged" in capsys.readouterr().err
    rows = _records(manifest)
    assert [row["change"] for row in rows if str(row["url"]).endswith("f123.txt")] == ["new", "unchanged", "updated"]
    assert (out / f"127.0.0.1_{server.port}" / "tree" / "d3" / "f123.txt").read_bytes() == b"changed and longer\n"


@pytest.mark.parametrize("parent", [False, True])
async def test_prospero_mirror_stays_below_the_start_and_skips_externals(tmp_path: Path, parent: bool) -> None:
    from tests.servers.prospero import Directory, Link, Object, serve_prospero
    from tests.test_prospero import fix_ports

    here = "LOCALHOST(0)"
    aftp = ["AFTP", "INTERNET-D", "127.0.0.1(9)", "ASCII", "/x.txt", "BINARY"]
    tree = {
        "/pub/start": Directory([Link("up", "DIRECTORY", here, "/pub"),
                                 Link("sub", "DIRECTORY", here, "/pub/start/sub"),
                                 Link("f", "FILE", here, "/pub/start/f"), Link("away", "DIRECTORY", here, "/etc"),
                                 Link("ext", "EXTERNAL", "127.0.0.1", "/x.txt", [aftp])]),
        "/pub/start/sub": Directory([Link("back", "DIRECTORY", here, "/pub/start")]),
        "/pub/start/f": Object([["PROSPERO-CONTENTS", "", "", "", ""]], contents=b"eff"),
        "/pub": Directory([Link("top", "FILE", here, "/pub/top")]),
        "/pub/top": Object([["PROSPERO-CONTENTS", "", "", "", ""]], contents=b"top"),
        "/etc": Directory([]),
    }  # fmt: skip
    manifest = tmp_path / "m.jsonl"
    async with serve_prospero(tree) as server:
        fix_ports(server)
        start = f"prospero://localhost:{server.port}//pub/start"
        code = await _bulk("-r", "-d", str(tmp_path / "out"), "--manifest", str(manifest), "--no-progress",
                           *(["--parent"] if parent else []), start)  # fmt: skip
        asked = b"\n".join(server.requests).decode("latin-1")
    assert code == 0
    names = set(re.findall(r"'(/[^']*)'", asked))
    inside = {"/pub/start", "/pub/start/sub", "/pub/start/f"}
    assert names == (inside | {"/pub", "/pub/top", "/etc"} if parent else inside)
    rows = _records(manifest)
    skipped = [row for row in rows if row["status"] == "skipped"]
    assert [row["name"] for row in skipped] == ["ext"]
    assert "Prospero external link" in str(skipped[0]["reason"])
    assert not any(row["status"] == "failed" for row in rows)


def test_wais_database_without_words_is_skipped_and_documents_are_not() -> None:
    from fetcher.mirror.rules import Mirror, MirrorOptions
    from fetcher.resource import Entry
    from fetcher.url import parse_url

    mirror = Mirror(MirrorOptions(follow_schemes=frozenset({"wais"})), user_agent="t", log=print)
    parent = parse_url("gopher://127.0.0.1:70/1/top")
    mirror.started(parent, listing=True)
    query = parse_url("wais://127.0.0.1:210/testdb")
    document = parse_url("wais://127.0.0.1:210/testdb/TEXT/0%3Aab")
    assert "needs words" in str(mirror.consider(parent, Entry("db", str(query), type="link"), query))
    assert mirror.consider(parent, Entry("doc", str(document), type="text"), document) is None


@pytest.mark.parametrize("facts", [False, True])
async def test_timestamping_over_nlst_only_with_ftp_facts(tmp_path: Path, facts: bool) -> None:
    """A server that refuses LIST lists names only: -N can compare them only with --ftp-facts (SIZE, MDTM)."""
    files = {f"/tree/d{i % 3}/f{i:02d}.txt": f"file {i}\n".encode() for i in range(12)}
    server = FakeFtpServer(files, faults=ftp_fake.Faults(replies={"LIST": [b"502 Command not implemented."]}))
    out = tmp_path / "out"
    argv = ["-r", "-N", "--layout", "tree", "-d", str(out), "--no-progress", *(["--ftp-facts"] if facts else [])]

    def sent(verb: str, suffix: str = "") -> int:
        return sum(line.startswith(verb + " ") and line.endswith(suffix) for commands in server.sessions
                   for line in commands)  # fmt: skip

    async with serving(server):
        assert await _bulk(*argv, f"{server.url}/tree/") == 0
        first = sent("RETR", ".txt")
        assert await _bulk(*argv, f"{server.url}/tree/") == 0
    assert first == 12
    assert sent("RETR", ".txt") - first == (0 if facts else 12)
    saved = out / f"127.0.0.1_{server.port}" / "tree" / "d1" / "f07.txt"
    assert saved.read_bytes() == b"file 7\n" and saved.stat().st_mtime == 1795257000
    # Each RETR (a directory's too: RETR d0 is how a name of unknown type is tried) comes after its own
    # SIZE and MDTM; beyond those, --ftp-facts asks each of the 15 listed names once per run, else never.
    assert sent("SIZE") - sent("RETR") == sent("MDTM") - sent("RETR") == (30 if facts else 0)


@pytest.mark.parametrize("parent", [False, True])
async def test_file_mirror_reads_nothing_outside_the_start_without_parent(tmp_path: Path, parent: bool) -> None:
    source = tmp_path / "src"
    (source / "top" / "start" / "sub").mkdir(parents=True)
    (source / "top" / "start" / "sub" / "in.txt").write_bytes(b"in")
    (source / "top" / "beside.txt").write_bytes(b"beside")
    (source / "top" / "other").mkdir()
    (source / "top" / "other" / "o.txt").write_bytes(b"other")
    os.symlink("../beside.txt", source / "top" / "start" / "to-beside")
    os.symlink("../../other", source / "top" / "start" / "sub" / "to-other")
    manifest = tmp_path / "m.jsonl"
    code = await _bulk("-r", "--depth", "9", "-d", str(tmp_path / "out"), "--manifest", str(manifest),
                       "--no-progress", *(["--parent"] if parent else []), f"file://{source}/top/start/")  # fmt: skip
    assert code == 0
    rows = _records(manifest)
    opened = {str(row["url"]).removeprefix(f"file://{source}") for row in rows if row["status"] != "skipped"}
    if parent:
        assert "/top/start/to-beside" in opened
        assert "/top/start/sub/to-other/o.txt" in opened
    else:  # the manifest records every URL opened: all at or below the start directory, the links skipped
        assert opened == {"/top/start/", "/top/start/sub/", "/top/start/sub/in.txt"}
        skipped = {str(row["name"]): str(row["reason"]) for row in rows if row["status"] == "skipped"}
        assert set(skipped) == {"to-beside", "to-other"}
        assert all("outside the start directory" in reason for reason in skipped.values())


def test_a_links_own_size_and_time_never_make_its_copy_unchanged(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from fetcher.mirror.rules import Mirror, MirrorOptions
    from fetcher.resource import Entry
    from fetcher.url import parse_url

    local = tmp_path / "al"
    local.write_bytes(b"x" * 5)  # as long as the link's text "a.txt": LIST's size for the link
    mirror = Mirror(MirrorOptions(timestamping=True), user_agent="t", log=print)
    parent, url = parse_url("ftp://h/pub/"), parse_url("ftp://h/pub/al")
    listed = Entry("al", str(url), type="link", size=5, modified=datetime(2020, 1, 1, tzinfo=UTC), target="a.txt",
                   extra={"precision": "minute"})  # fmt: skip
    mirror.adopt(parent, url, listed)
    assert not mirror.up_to_date(url, local)  # the link's facts say nothing about a.txt: transfer it
    asked = Entry("al", str(url), type="link", size=5, modified=datetime(2020, 1, 1, tzinfo=UTC), target="a.txt",
                  extra={"precision": "second", "target_facts": True})  # fmt: skip
    mirror.adopt(parent, url, asked)  # --ftp-facts: SIZE and MDTM answered for the target
    assert mirror.up_to_date(url, local)


async def test_file_mirror_skips_a_fifo_instead_of_blocking_on_it(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.txt").write_bytes(b"a")
    os.mkfifo(source / "pipe")  # opening it to read would wait for a writer forever
    manifest = tmp_path / "m.jsonl"
    code = await _bulk("-r", "-d", str(tmp_path / "out"), "--manifest", str(manifest), "--no-progress",
                       f"file://{source}/")  # fmt: skip
    assert code == 0
    skipped = [row for row in _records(manifest) if row["status"] == "skipped"]
    assert [row["name"] for row in skipped] == ["pipe"] and "FIFO" in str(skipped[0]["reason"])


def test_scope_is_the_origin_and_encoded_dot_segments_climb() -> None:
    """fetcher.mirror.scope: another port is another origin; `%2e` spells a dot to servers that decode first."""
    from fetcher.mirror.scope import encoded_climb, in_scope, normalize_path, origin, scope_of
    from fetcher.url import parse_url

    start = parse_url("http://Host:8080/pub/")
    scope = scope_of(start, listing=True)
    assert scope is not None and origin(start) == ("http", "host", 8080)
    assert in_scope(parse_url("http://host:8080/pub/a/b.txt"), scope)
    assert not in_scope(parse_url("http://host:8081/pub/a/b.txt"), scope)
    assert not in_scope(parse_url("https://host:8080/pub/a/b.txt"), scope)
    for climb in ("/pub/%2e%2e/x", "/pub/%2E%2e/x", "/pub/.%2e/x", "/pub/%2e./x", "/pub/a/%2e%2e/%2E%2E/x"):
        assert not in_scope(parse_url("http://host:8080" + climb), scope), climb
        assert encoded_climb(parse_url("http://host:8080" + climb)) is not None, climb
    assert normalize_path("/pub/a/%2e/%2E%2e/b", encoded=True) == "/pub/b"
    assert normalize_path("/pub/%2e%2e", encoded=True) == "/"
    assert normalize_path("/pub/%2e%2e/x") == "/pub/%2e%2e/x"  # a decoded name (FTP, Gopher) is just a name
    for hidden in ("/pub/..%2fx", "/pub/%2e%2e%5cx", "/pub/..%5C..%5Cx", "/pub/%2e"):
        assert encoded_climb(parse_url("http://host:8080" + hidden)) is not None, hidden
    for fine in ("/pub/a%2eb", "/pub/...", "/pub/%2e%2e%2e", "/pub/..x", "/pub/a/../b", "/pub/100%25"):
        assert encoded_climb(parse_url("http://host:8080" + fine)) is None, fine
    assert encoded_climb(parse_url("gopher://host/0/pub/%252e%252e/x")) is not None  # selector "/pub/%2e%2e/x"
    assert encoded_climb(parse_url("ftp://host/pub/%252e%252e/x")) is None  # FTP servers do not decode names
