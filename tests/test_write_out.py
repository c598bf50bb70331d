"""`-w FORMAT` in every mode (issue 29, item 5): a line per URL for one URL, a bulk run and a mirror,
with curl's common fields, over HTTP and FTP (the in-repo servers), run as a user runs `fetch`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trio

from fetcher.cli.writeout import FIELDS
from tests.conftest import ROOT, run_fetch
from tests.servers.ftp_fake import FakeFtpServer, serving
from tests.servers.http_server import HTTPTestServer, redirect

TEXT = b"line one\nline two\n"
BIG = bytes(range(256)) * 400
NO_PROXY = {name: "" for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY")}
PAGE = b'<html><body><a href="one.txt">1</a> <a href="two.txt">2</a> <a href="gone.txt">x</a></body></html>'


async def cli(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    result = await trio.to_thread.run_sync(lambda: run_fetch(*args, env=NO_PROXY, cwd=cwd))
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def http_server(nursery: trio.Nursery) -> HTTPTestServer:
    server = HTTPTestServer()
    await nursery.start(server.serve)
    server.add("/notes.txt", TEXT)
    server.add("/big.bin", BIG, content_type="application/octet-stream")
    server.routes["/moved"] = redirect("/hop")
    server.routes["/hop"] = redirect("/notes.txt", 301)
    server.add("/site/", PAGE, content_type="text/html")
    server.add("/site/one.txt", b"one\n")
    server.add("/site/two.txt", b"two\n")
    return server


def rows(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


async def test_one_url_gives_curls_fields(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = await http_server(nursery)
    form = (r"%{http_code} %{response_code} %{content_type} %{size_download} %{num_redirects} %{url_effective} "
            r"%{remote_ip} %{remote_port} [%{filename_effective}] [%{errormsg}] %{exit_code}\n")  # fmt: skip
    code, out, _ = await cli("-w", form, server.url("/moved"), server.url("/missing"))
    assert code == 1
    lines = out.split("\n")
    assert lines[:2] == ["line one", "line two"]
    assert lines[2] == (f"200 200 text/plain {len(TEXT)} 2 {server.url('/notes.txt')} 127.0.0.1 {server.port} [] [] 0")
    missing = lines[3]
    assert missing.startswith(f"404 404  0 0 {server.url('/missing')} 127.0.0.1 {server.port} [] [HTTP 404 Not Found: ")
    assert missing.endswith("] 6")
    code, out, _ = await cli("-o", str(tmp_path / "big.bin"), "-w", r"%{json}\n", server.url("/big.bin"))
    (row,) = rows(out)
    assert code == 0
    assert set(row) == set(FIELDS) - {"json"}
    assert row["filename_effective"] == str(tmp_path / "big.bin")
    assert (row["size_download"], row["size"], row["http_code"], row["num_redirects"]) == (len(BIG), len(BIG), 200, 0)
    assert row["content_type"] == "application/octet-stream" and row["errormsg"] == ""
    assert isinstance(row["speed_download"], int) and row["speed_download"] > 0
    assert isinstance(row["time_total"], float) and row["time_total"] > 0
    assert (row["remote_ip"], row["remote_port"]) == ("127.0.0.1", server.port)


async def test_every_url_of_a_bulk_run_gets_its_line(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = await http_server(nursery)
    urls = [server.url("/notes.txt"), server.url("/big.bin"), server.url("/missing"), server.url("/moved"),
            server.url("/notes.txt"), "nonsense"]  # fmt: skip
    (tmp_path / "urls.txt").write_text("\n".join(urls) + "\n")
    for mode in ("--per-host=2", "--no-pipeline"):  # the pipelined lanes (the default) and the task path
        out_dir = tmp_path / mode.strip("-")
        code, out, err = await cli("-i", "urls.txt", "-d", str(out_dir), "-w", r"%{url}\n", mode, cwd=tmp_path)
        assert code == 1, err
        assert sorted(out.splitlines()) == sorted(urls)  # one line per URL: done, failed, duplicate, bad line
        code, out, err = await cli("-i", "urls.txt", "-d", str(out_dir), "-w", r"%{json}\n", mode, cwd=tmp_path)
        by_url: dict[object, list[dict[str, object]]] = {}
        for row in rows(out):
            by_url.setdefault(row["url"], []).append(row)
        (notes, duplicate) = sorted(by_url[urls[0]], key=lambda row: row["filename_effective"] == "")
        assert (notes["http_code"], notes["size_download"], notes["exit_code"]) == (200, len(TEXT), 0)
        assert notes["filename_effective"] == str(out_dir / "notes.txt")
        assert (notes["remote_ip"], notes["remote_port"]) == ("127.0.0.1", server.port)
        assert (duplicate["exit_code"], duplicate["remote_ip"], duplicate["size_download"]) == (0, "", 0)
        (big,) = by_url[urls[1]]
        assert (big["http_code"], big["size_download"]) == (200, len(BIG))
        assert big["content_type"] == "application/octet-stream"
        (missing,) = by_url[urls[2]]
        assert (missing["http_code"], missing["exit_code"], missing["filename_effective"]) == (404, 6, "")
        assert str(missing["errormsg"]).startswith("HTTP 404 Not Found")
        (moved,) = by_url[urls[3]]
        assert (moved["http_code"], moved["num_redirects"], moved["url_effective"]) == (200, 2, urls[0])
        (bad,) = by_url["nonsense"]
        assert bad["exit_code"] == 2 and bad["errormsg"] and bad["http_code"] == 0


async def test_a_mirror_gives_a_line_per_url_it_considers(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = await http_server(nursery)
    code, out, err = await cli("-r", "-d", "out", "--no-robots", "-w", r"%{http_code} %{url}\n",
                               server.url("/site/"), cwd=tmp_path)  # fmt: skip
    assert code == 1, err  # gone.txt is missing
    assert sorted(out.splitlines()) == sorted([
        f"200 {server.url('/site/')}", f"200 {server.url('/site/one.txt')}", f"200 {server.url('/site/two.txt')}",
        f"404 {server.url('/site/gone.txt')}",
    ])  # fmt: skip


async def test_ftp_gives_zero_for_http_only_fields(tmp_path: Path) -> None:
    files = {"/pub/hello.txt": b"Hello, world!\n", "/pub/data.bin": BIG}
    async with serving(FakeFtpServer(files)) as server:
        form = r"%{http_code} %{size_download} %{num_redirects} %{remote_ip} %{remote_port} %{url_effective}\n"
        code, out, err = await cli("-w", form, f"{server.url}/pub/hello.txt", f"{server.url}/pub/")
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0] == "Hello, world!"
        assert lines[1] == f"0 14 0 127.0.0.1 {server.port} {server.url}/pub/hello.txt"
        assert lines[-1] == f"0 0 0 127.0.0.1 {server.port} {server.url}/pub/"  # a listing: no document bytes
        (tmp_path / "urls.txt").write_text(f"{server.url}/pub/hello.txt\n{server.url}/pub/data.bin\n"
                                           f"{server.url}/pub/absent\n")  # fmt: skip
        code, out, err = await cli("-i", "urls.txt", "-d", "out", "-w", r"%{json}\n", cwd=tmp_path)
    assert code == 1, err
    found = {row["url"]: row for row in rows(out)}
    data = found[f"{server.url}/pub/data.bin"]
    assert (data["http_code"], data["size_download"], data["remote_port"]) == (0, len(BIG), server.port)
    assert data["filename_effective"] == str(Path("out") / "data.bin")
    absent = found[f"{server.url}/pub/absent"]
    assert absent["exit_code"] == 6 and absent["errormsg"] and absent["filename_effective"] == ""


def test_an_unknown_field_is_refused_naming_the_known_ones() -> None:
    result = run_fetch("-w", "%{http_code} %{bogus}", "-i", str(ROOT / "README.md"), "-d", "/nonexistent")
    assert result.returncode == 2
    err = result.stderr.decode()
    assert "unknown -w field %{bogus}" in err
    known = re.search(r"\(known: ([^)]*)\)", err)
    assert known is not None and known.group(1).split(", ") == list(FIELDS)


def test_the_command_page_documents_every_field() -> None:
    page = (ROOT / "docs" / "command.md").read_text()
    for name, meaning in FIELDS.items():
        assert f"| `%{{{name}}}` | {meaning} |" in page, name
