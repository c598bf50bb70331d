"""Every script in examples/ runs as it is, against the in-repo HTTP test server or file: URLs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import trio

import fetcher
from tests.servers.http_server import HTTPTestServer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HELLO = b"Hello, world!\n"
BIG = bytes(range(256)) * 40
PROXIES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY")


def example_env(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in PROXIES}
    env["PYTHONPATH"] = str(Path(fetcher.__file__).resolve().parent.parent)  # the fetcher under test
    env["NETRC"] = str(tmp_path / "absent-netrc")
    return env


async def run_example(tmp_path: Path, name: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    with trio.fail_after(60):
        return await trio.run_process(
            [sys.executable, str(EXAMPLES / name), *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=tmp_path,
            env=example_env(tmp_path),
        )


@pytest.fixture
async def server(nursery: trio.Nursery) -> HTTPTestServer:
    instance = HTTPTestServer()
    await nursery.start(instance.serve)
    instance.add("/hello.txt", HELLO)
    instance.add("/pub/big.bin", BIG, content_type="application/octet-stream")
    return instance


def test_every_example_is_covered() -> None:
    tested = {"bulk.py", "sync_script.py", "mirror.py", "tour.py", "asyncio_example.py", "new_scheme.py"}
    assert {path.name for path in EXAMPLES.glob("*.py")} == tested


async def test_bulk_skips_comments_and_blank_lines(server: HTTPTestServer, tmp_path: Path) -> None:
    local = tmp_path / "local.txt"
    local.write_bytes(b"from disk\n")
    urls = tmp_path / "urls.txt"
    urls.write_text(
        "# the documents of the test server\n"
        "\n"
        f"{server.url('/hello.txt')}\n"
        "   # an indented comment\n"
        f"<URL:{server.url('/pub/')}\n"
        "  big.bin>\n"
        "\t\n"
        f"{server.url('/missing.txt')}\n"
        f"{server.url('/hello.txt')}\n"
        "http://[::1/broken\n"
        f"file://{local}\n"
    )
    result = await run_example(tmp_path, "bulk.py", str(urls), "out")
    out, err = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 1, err
    assert "Traceback" not in err
    assert sorted(line.split()[1] for line in out.splitlines()) == sorted(
        [server.url("/hello.txt"), server.url("/pub/big.bin"), f"file://{local}"]
    )
    assert all(line.startswith("ok    ") for line in out.splitlines())
    errors = err.splitlines()
    assert len(errors) == 2, err
    assert errors[0].startswith(f"BAD   {urls}:10: ")
    assert errors[1].startswith(f"FAIL  {server.url('/missing.txt')}: HTTP 404 Not Found")
    assert (tmp_path / "out" / "hello.txt").read_bytes() == HELLO
    assert (tmp_path / "out" / "big.bin").read_bytes() == BIG
    assert (tmp_path / "out" / "local.txt").read_bytes() == b"from disk\n"
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["big.bin", "hello.txt", "local.txt"]
    # the duplicate was fetched once; the 404 is not retried
    assert sorted(request.target for request in server.requests) == ["/hello.txt", "/missing.txt", "/pub/big.bin"]


async def test_bulk_exits_0_when_everything_arrives(server: HTTPTestServer, tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text(f"# one\n{server.url('/hello.txt')}\n\n")
    result = await run_example(tmp_path, "bulk.py", str(urls), "out")
    assert result.returncode == 0, result.stderr.decode()
    assert (tmp_path / "out" / "hello.txt").read_bytes() == HELLO


async def test_sync_script(server: HTTPTestServer, tmp_path: Path) -> None:
    big, hello, missing = server.url("/pub/big.bin"), server.url("/hello.txt"), server.url("/nothing")
    result = await run_example(tmp_path, "sync_script.py", "out", big, hello, missing)
    out, err = result.stdout.decode().splitlines(), result.stderr.decode()
    assert result.returncode == 1, err
    assert out == [
        f"{big}: {len(BIG)} bytes (application/octet-stream)",
        *[line for line in out[1:6] if line.startswith("  | ")],
        f"saved {big} as big.bin ({len(BIG)} bytes)",
        f"saved {hello} as hello.txt ({len(HELLO)} bytes)",
        f"download_sync: {len(BIG)} bytes to again.bin, resumed from byte 10",
    ]
    assert err.startswith(f"FAIL  {missing}: HTTP 404 Not Found") and err.count("\n") == 1
    assert (tmp_path / "out" / "big.bin").read_bytes() == BIG
    assert (tmp_path / "out" / "hello.txt").read_bytes() == HELLO
    assert (tmp_path / "out" / "again.bin").read_bytes() == BIG
    assert server.requests[-1].target == "/pub/big.bin"
    assert server.requests[-1].header("range") == "bytes=10-"


async def test_asyncio_example(server: HTTPTestServer, tmp_path: Path) -> None:
    """The asyncio program fetches from the test server (which runs on the test's trio loop)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_bytes(b"alpha\n")
    big, hello, missing = server.url("/pub/big.bin"), server.url("/hello.txt"), server.url("/nothing")
    listing = f"file://{tree}/"
    result = await run_example(tmp_path, "asyncio_example.py", "out", big, listing, hello, missing)
    out, err = result.stdout.decode().splitlines(), result.stderr.decode()
    assert result.returncode == 1, err
    assert out == [
        f"{big}: {len(BIG)} bytes (application/octet-stream)",
        f"{listing}: a listing of 1 entries",
        f"{hello}: {len(HELLO)} bytes (text/plain)",
        f"saved {big} as big.bin ({len(BIG)} bytes)",
    ]
    assert err.startswith(f"FAIL  {missing}: HTTP 404 Not Found") and err.count("\n") == 1
    assert (tmp_path / "out" / "big.bin").read_bytes() == BIG
    targets = sorted(request.target for request in server.requests)
    assert targets == ["/hello.txt", "/nothing", "/pub/big.bin", "/pub/big.bin"]


async def test_sync_script_shows_a_listing(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_bytes(b"alpha\n")
    result = await run_example(tmp_path, "sync_script.py", "out", f"file://{tree}/", f"file://{tree}/a.txt")
    out = result.stdout.decode().splitlines()
    assert result.returncode == 0, result.stderr.decode()
    assert out[0] == f"file://{tree}/: a listing of 1 entries"
    assert out[1].split() == ["file", "a.txt"]
    assert f"saved file://{tree}/a.txt as a.txt (6 bytes)" in out


async def test_mirror_over_a_file_tree(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub" / "deeper").mkdir(parents=True)
    (tree / "top.txt").write_bytes(b"top\n")
    (tree / "sub" / "mid.txt").write_bytes(b"mid\n")
    (tree / "sub" / "deeper" / "low.txt").write_bytes(b"low\n")
    result = await run_example(tmp_path, "mirror.py", f"file://{tree}/", "out", "--depth", "2")
    assert result.returncode == 0, result.stderr.decode()
    saved = sorted(path.relative_to(tmp_path / "out") for path in (tmp_path / "out").rglob("*") if path.is_file())
    base = Path("file_localhost", *tree.parts[1:])
    assert saved == [base / "sub" / "mid.txt", base / "top.txt"]  # low.txt is below --depth 2
    assert (tmp_path / "out" / base / "top.txt").read_bytes() == b"top\n"


async def test_new_scheme(tmp_path: Path) -> None:
    """A scheme in one module and one registry entry (docs/architecture.md), fetched from its own server."""
    result = await run_example(tmp_path, "new_scheme.py")
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b"echo: hello\n"


async def test_tour(tmp_path: Path) -> None:
    """Every scheme's section shows a listing with its facts and a retrieval (no timing is asserted)."""
    pytest.importorskip("pyftpdlib", reason="the tour needs pyftpdlib (the test extra)")
    result = await run_example(tmp_path, "tour.py")
    out = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()
    assert "Traceback" not in out + result.stderr.decode()
    sections = {part.split("\n", 1)[0].split(":", 1)[0]: part for part in out.split("\n== ")[1:]}
    expected = {
        "FTP": [r"file +14  1994-12-20 12:00:00  hello\.txt", r"directory +\d+  1994-12-20 12:00:00  notes",
                r"\n  Hello, world!\n  \[exit 0\]"],
        "HTTP": [r"< Content-Length: 14", r"< Last-Modified: Tue, 20 Dec 1994 12:00:00 GMT",
                 r"\n  89 bytes in [\d.]+ s, exit 0\n", r"\n  Welcome to the fetcher tour\.\n"],
        "Gopher and Gopher+": [r"\(DIR\)   Gopher\+ shelf",
                               r"\(TXT\)   Poem       1k  1994-12-20  Four lines about URLs\.",
                               r"\n  This menu and this text come from", r"\n  and fetch goes and gets it\.\n"],
        "NNTP": [r"article  \d+  1  RFC 1738 published \| Tim <timbl@tour\.test> \| Tue, 20 Dec 1994",
                 r"Message-ID: <2@tour\.announce>\n  \n  ftp, http, gopher", r"group  -  tour\.chatter"],
        "WAIS": [r"text  63  apples\.txt .* score \d+", r"orchard\.txt",
                 r"\| head -1\)\"    # the first hit, retrieved\n  Apples are red or green\."],
        "Prospero": [r"link       -  bbs        login as guest", r"\n  ftp://127\.0\.0\.1:\d+/pub/hello\.txt;type=a\n",
                     r"login as guest\n  Hello, world!\n  \[exit 0\]"],
        "Telnet": [r"Suggested login: guest", r"Welcome to the tour BBS\.", r"\n  hello guest\n"],
        "file": [r"file +14  hello\.txt", r"\n  Welcome to the fetcher tour\.\n"],
        "mailto": [r"\n  mailto: tour@example\.org\n", r"there is nothing to retrieve"],
        "Many URLs at once, a mirror, and the guard": [r"3 retrieved, 1 failed", r"mirror: 3 new",
                                                        r"ssrf-port rule", r"line-injection rule"],
    }  # fmt: skip
    assert list(sections) == list(expected)
    for title, patterns in expected.items():
        for pattern in patterns:
            assert re.search(pattern, sections[title]), (title, pattern, sections[title])
        if title != "Many URLs at once, a mirror, and the guard":  # every other command succeeds
            assert sections[title].count("[exit ") == sections[title].count("[exit 0]") >= 1, sections[title]
    assert re.findall(r"\[exit (\d+)\]", sections["Many URLs at once, a mirror, and the guard"]) == ["1", "0", "3", "3"]
    assert "unknown  -" not in out  # FTP rows carry facts, not NLST names
    wrote = re.search(r"\nFiles the tour wrote: (.*)\n", out)
    assert wrote is not None
    files = {re.sub(r"_\d+/", "_PORT/", name) for name in wrote[1].split(", ")}
    assert files == {"bulk/about.txt", "bulk/data.bin", "bulk/hello.txt", "hello.txt", "manifest.jsonl",
                     "mirror/127.0.0.1_PORT/pub/data.bin", "mirror/127.0.0.1_PORT/pub/hello.txt",
                     "mirror/127.0.0.1_PORT/pub/index.listing.json",
                     "mirror/127.0.0.1_PORT/pub/notes/index.listing.json",
                     "mirror/127.0.0.1_PORT/pub/notes/rfc1738.txt"}  # fmt: skip
    assert re.search(r"\nThe tour took [\d.]+ s\.\n$", out)
