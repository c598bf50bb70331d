"""Startup cost: `fetch` imports only what the URL's scheme needs (issue 17).

Python's own import log (`python -X importtime`) of
the real `fetch` process names every module it loaded; a heavy module that a
command does not need fails the test, whatever the machine's speed (no timing
is asserted).  Modules the bare interpreter already loads (`python -c pass`:
`site` and whatever `.pth` files the environment has) are not fetcher's doing
and are left out.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from tests.conftest import ROOT
from tests.servers.http_server import HTTPTestServer

#: Never needed to print the version or copy a file: URL.
HEAVY = ("rich", "h11", "httptools", "dask", "distributed", "warcio", "hypothesis", "pytest", "pyftpdlib",
         "OpenSSL", "trustme", "numpy", "fetcher.schemes.http", "fetcher.schemes.ftp", "fetcher.cli.progress",
         # Bulk runs only (-i, -d, several jobs): the batch.
         "fetcher.bulk.batch", "fetcher.cli.bulk",
         # anyio and its trio backend (14 ms): a URL that opens no socket runs on trio's own calls (fetcher.net.aio).
         "anyio",
         # --warc-file only: the archive tap (and its json), the recorder.
         "fetcher.archive", "json",
         # Only when a URL has a host to look up in ~/.netrc, or other schemes.
         "netrc", "certifi", "idna.uts46data", "fetcher.schemes.gopher", "fetcher.schemes.nntp", "fetcher.schemes.wais",
         "fetcher.schemes.prospero", "fetcher.schemes.telnet", "fetcher.mirror.rules", "fetcher.cluster",
         # --limit-rate only.
         "fetcher.net.ratelimit")  # fmt: skip

#: A bulk run of file: URLs: the batch, and still no socket library.
HEAVY_FOR_FILE_BULK = tuple(
    name for name in HEAVY if name not in ("fetcher.bulk.batch", "fetcher.cli.bulk", "fetcher.cli.progress")
)

#: A plain http: fetch of an address needs HTTP and sockets (trio's own: no anyio), and still none of these.
HEAVY_FOR_HTTP = ("anyio", "rich", "dask", "distributed", "warcio", "hypothesis", "pytest", "pyftpdlib", "OpenSSL",
                  "trustme", "numpy", "certifi", "netrc", "shlex", "fetcher.schemes.ftp", "fetcher.schemes.gopher",
                  "fetcher.schemes.nntp", "fetcher.schemes.wais", "fetcher.schemes.prospero", "fetcher.schemes.telnet",
                  "fetcher.cli.progress", "fetcher.bulk.batch", "fetcher.cli.bulk", "fetcher.mirror.rules",
                  "fetcher.cluster", "fetcher.archive",
                  # --manifest/--skip-done, --warc-file and chunked replies only.
                  "json", "fetcher.schemes.http.chunked")  # fmt: skip


def run_logged(*args: str) -> subprocess.CompletedProcess[bytes]:
    """The real `fetch` command under `python -X importtime`."""
    env = dict(os.environ, NETRC=str(ROOT / "tests" / "no-such-netrc"), http_proxy="", HTTP_PROXY="", all_proxy="",
               ALL_PROXY="")  # fmt: skip
    argv = [sys.executable, "-X", "importtime", "-m", "fetcher", *args]
    return subprocess.run(argv, capture_output=True, timeout=60, env=env)


def interpreter_modules() -> set[str]:
    """What the bare interpreter imports in this environment (site, .pth files): not fetcher's doing."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, timeout=60)
    return imported(result.stderr)


def imported(stderr: bytes) -> set[str]:
    """Every module named in an import-time log."""
    names = set()
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":  # the header line
                names.add(name)
    return names


def heavy_in(names: set[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    names = names - interpreter_modules()
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in heavy))


def test_import_log_is_parsed() -> None:
    # The oracle itself: a log line names its module, and a submodule of a heavy package counts.
    log = b"import time: self [us] | cumulative | imported package\nimport time:  5 |  9 |   h11._util\n"
    assert imported(log) == {"h11._util"}
    assert heavy_in({"h11._util", "trio", "richer"}) == ["h11._util"]
    assert heavy_in({"anyio._backends._trio", "anyio", "anyiox"}) == ["anyio", "anyio._backends._trio"]


def test_version_imports_nothing_heavy() -> None:
    result = run_logged("--version")
    assert result.returncode == 0, result.stderr[-500:]
    names = imported(result.stderr)
    assert "fetcher.cli.main" in names or "fetcher" in names  # the log is really there
    assert heavy_in(names) == []
    assert "trio" not in names  # --version needs no event loop


@pytest.mark.parametrize("output", ["-o", "-"])
def test_file_fetch_imports_nothing_heavy(tmp_path: Path, output: str) -> None:
    source = tmp_path / "source.txt"
    source.write_bytes(b"startup\n")
    target = tmp_path / "copy.txt"
    args = ["-o", str(target)] if output == "-o" else []
    result = run_logged(*args, f"file://{source}")
    assert result.returncode == 0, result.stderr[-500:]
    if output == "-o":
        assert target.read_bytes() == b"startup\n"
    else:
        assert result.stdout == b"startup\n"
    names = imported(result.stderr)
    assert "fetcher.client" in names  # the log covers the retrieval itself
    assert heavy_in(names) == []


async def test_http_fetch_imports_only_what_http_needs(nursery: trio.Nursery, tmp_path: Path) -> None:
    server = HTTPTestServer()
    await nursery.start(server.serve)
    server.add("/small.txt", b"small\n", content_type="text/plain")
    target = tmp_path / "small.txt"
    result = await trio.to_thread.run_sync(lambda: run_logged("-o", str(target), server.url("/small.txt")))
    assert result.returncode == 0, result.stderr[-500:]
    assert target.read_bytes() == b"small\n"
    names = imported(result.stderr)
    assert "fetcher.schemes.http.handler" in names  # the log covers the retrieval itself
    assert heavy_in(names, HEAVY_FOR_HTTP) == []


async def test_a_large_http_download_streams_without_anyio(nursery: trio.Nursery, tmp_path: Path) -> None:
    # Past the sink's 1 MiB small-body limit an HTTP body goes through the streaming writer: a writer
    # task and a channel, trio's own on trio (fetcher.net.aio), so the disk layer loads no anyio.
    body = bytes(range(256)) * 8192  # 2 MiB
    server = HTTPTestServer()
    await nursery.start(server.serve)
    server.add("/large.bin", body, content_type="application/octet-stream")
    target = tmp_path / "large.bin"
    result = await trio.to_thread.run_sync(lambda: run_logged("-o", str(target), server.url("/large.bin")))
    assert result.returncode == 0, result.stderr[-500:]
    assert target.read_bytes() == body
    names = imported(result.stderr)
    assert "fetcher.disk.save" in names  # the log covers the write itself
    # json writes the `.part`'s resume record (fetcher.disk.resume), as a streamed body should.
    assert heavy_in(names, tuple(name for name in HEAVY_FOR_HTTP if name != "json")) == []


def test_file_bulk_imports_no_socket_library(tmp_path: Path) -> None:
    # The bulk path's nurseries, semaphores and channels are trio's own on trio (fetcher.net.aio), not anyio's.
    urls = []
    for index in range(3):
        (tmp_path / f"f{index}.txt").write_bytes(b"%d\n" % index)
        urls.append(f"file://{tmp_path}/f{index}.txt")
    (tmp_path / "urls.txt").write_text("\n".join(urls) + "\n")
    result = run_logged("-i", str(tmp_path / "urls.txt"), "-d", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 0, result.stderr[-500:]
    assert (tmp_path / "out" / "f2.txt").read_bytes() == b"2\n"
    names = imported(result.stderr)
    assert "fetcher.bulk.batch" in names  # the log covers the bulk run itself
    assert heavy_in(names, HEAVY_FOR_FILE_BULK) == []


def fresh_python(code: str) -> str:
    """What `code` prints in a new interpreter (nothing imported or initialised before it)."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_content_types_read_no_system_table_for_common_names() -> None:
    # Python's own table answers the common names; /etc/mime.types is read only for the rest.
    code = (
        "import mimetypes, fetcher.schemes.file as f, fetcher.schemes.ftp.operate as ftp; "
        "import fetcher.schemes.gopher.types as g; "
        "print(f._content_type('/a/b.txt'), f._content_type('/a/B.PNG'), ftp._content_type('c.pdf', 'I'), "
        "g.content_type_for('d', 'sel/d.zip'), f._content_type('/a/noext'), mimetypes.inited); "
        "print(f._content_type('/a/b.tar.gz'), mimetypes.inited)"
    )
    first, second = fresh_python(code).splitlines()
    assert first == "text/plain image/png application/pdf application/zip None False"
    assert second == "application/x-tar True"


def test_a_names_type_does_not_change_once_the_system_table_is_read() -> None:
    # mimetypes.init() replaces types_map with Python's table merged with the system's (on
    # Debian, .xml turns to application/xml): fetcher.mime answers from its own copy.
    code = (
        "import mimetypes, fetcher.mime as m; "
        "before = [m.guess_type(n) for n in ('a.xml', 'b.js', 'c.bmp', 'd.wav')]; "
        "mimetypes.guess_type('e.unknown-ext'); assert mimetypes.inited; "
        "after = [m.guess_type(n) for n in ('a.xml', 'b.js', 'c.bmp', 'd.wav')]; "
        "print(before == after, before[0])"
    )
    assert fresh_python(code).split() == ["True", "text/xml"]


async def test_http_bulk_lane_needs_no_h11(nursery: trio.Nursery, tmp_path: Path) -> None:
    # Plain replies on the pipelined lane are framed by fasthead.py; h11 and email.utils
    # (dates) load only when a reply needs them.
    server = HTTPTestServer()
    await nursery.start(server.serve)
    urls = []
    for index in range(5):
        server.add(f"/f{index}.txt", b"%d\n" % index, content_type="text/plain",
                   headers=[("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT")])  # fmt: skip
        urls.append(server.url(f"/f{index}.txt"))
    (tmp_path / "urls.txt").write_text("\n".join(urls) + "\n")
    result = await trio.to_thread.run_sync(
        lambda: run_logged("-i", str(tmp_path / "urls.txt"), "-d", str(tmp_path / "out"), "--no-progress")
    )
    assert result.returncode == 0, result.stderr[-500:]
    assert (tmp_path / "out" / "f4.txt").read_bytes() == b"4\n"
    assert (tmp_path / "out" / "f4.txt").stat().st_mtime == 784111777  # the date was read
    names = imported(result.stderr)
    assert "fetcher.schemes.http.lane" in names
    assert heavy_in(names, ("h11", "email", "anyio")) == []


async def test_plain_http_bulk_loads_no_manifest_archive_or_chunked_code(nursery: trio.Nursery, tmp_path: Path) -> None:
    # json (--manifest, --skip-done), the archive tap (--warc-file) and the chunked reader
    # load when a run needs them, and only then.
    server = HTTPTestServer()
    await nursery.start(server.serve)
    urls = []
    for index in range(3):
        server.add(f"/f{index}.txt", b"%d\n" % index, content_type="text/plain")
        urls.append(server.url(f"/f{index}.txt"))
    server.add("/chunked.txt", b"chunked\n", content_type="text/plain", chunked=True)
    (tmp_path / "plain.txt").write_text("\n".join(urls) + "\n")
    (tmp_path / "more.txt").write_text("\n".join([*urls, server.url("/chunked.txt")]) + "\n")

    def bulk(name: str, *more: str) -> set[str]:
        out = tmp_path / f"out-{name}"
        result = run_logged("-i", str(tmp_path / f"{name}.txt"), "-d", str(out), "--no-progress", *more)
        assert result.returncode == 0, result.stderr[-500:]
        assert (out / "f2.txt").read_bytes() == b"2\n"
        return imported(result.stderr)

    names = await trio.to_thread.run_sync(bulk, "plain")
    assert "fetcher.schemes.http.lane" in names  # the log covers the retrieval itself
    lazy = ("json", "fetcher.archive", "fetcher.schemes.http.chunked")
    assert heavy_in(names, lazy) == []

    manifest = tmp_path / "m.jsonl"
    names = await trio.to_thread.run_sync(bulk, "more", "--manifest", str(manifest))
    assert (tmp_path / "out-more" / "chunked.txt").read_bytes() == b"chunked\n"
    assert len(manifest.read_text().splitlines()) == 4
    assert {"json", "fetcher.schemes.http.chunked"} <= names
    assert heavy_in(names, ("fetcher.archive",)) == []


def test_patterns_of_unusual_urls_and_replies_compile_on_first_use() -> None:
    # The careful URL route, HTTP's range/disposition/Location rules and password masking
    # compile their patterns the first time they run: a plain URL and reply use none of them.
    code = (
        "import fetcher.url as u, fetcher.url.grammar as g, fetcher.schemes.http.response as r, fetcher.text as t; "
        "lazy = lambda: [sorted(set(vars(p)) - {'_sources'}) for p in (g.PATTERNS, r._PATTERNS, t._PATTERNS)]; "
        "u.parse_url('http://example.com/a/b?c'); t.mask_secrets('http://example.com/'); print(lazy()); "
        "print(u.parse_url('<URL:http://example.com/a>'), r.content_range('bytes 0-9/20'), "
        "t.mask_secrets('ftp://u:pw@h/'), r.location_reference('/a b')); print(lazy())"
    )
    before, values, after = fresh_python(code).splitlines()
    assert before == "[[], [], []]"
    assert values == "http://example.com/a ContentRange(first=0, last=9, total=20) ftp://u:***@h/ /a%20b"
    careful, response, text = ast.literal_eval(after)
    assert {"bad_char", "scheme", "hostname"} <= set(careful)
    assert response == ["content_range", "location_unsafe"]
    assert text == ["url_password"]


def test_lazy_patterns_compile_once_then_are_plain_attributes() -> None:
    import copy
    import re

    from fetcher.text import LazyPatterns

    class Patterns(LazyPatterns):
        word: re.Pattern[str]
        folded: re.Pattern[bytes]

    patterns = Patterns(word=r"\w+", folded=(rb"abc", re.IGNORECASE))
    assert set(vars(patterns)) == {"_sources"}
    word = patterns.word
    assert vars(patterns)["word"] is word is patterns.word  # kept: later reads are attribute reads
    assert word.fullmatch("abc") and not word.fullmatch("a b")
    assert patterns.folded.fullmatch(b"ABC")
    assert not hasattr(patterns, "other")
    assert copy.copy(patterns).word is word


def test_ftp_bulk_needs_no_anyio(tmp_path: Path) -> None:
    # Control and data connections to an address are trio's own sockets (fetcher.net.connect.dial).
    from tests.servers.prospero import ftp_server

    root = tmp_path / "root"
    root.mkdir()
    for index in range(3):
        (root / f"f{index}.bin").write_bytes(b"%d\n" % index * 1000)
    with ftp_server(root) as port:
        urls = [f"ftp://127.0.0.1:{port}/f{index}.bin" for index in range(3)]
        (tmp_path / "urls.txt").write_text("\n".join(urls) + "\n")
        result = run_logged("-i", str(tmp_path / "urls.txt"), "-d", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 0, result.stderr[-500:]
    assert (tmp_path / "out" / "f2.bin").read_bytes() == b"2\n" * 1000
    names = imported(result.stderr)
    assert "fetcher.schemes.ftp.lane" in names
    # Nor the archive tap (--warc-file) or json (--manifest): the run asked for neither.
    assert heavy_in(names, ("anyio", "h11", "fetcher.archive", "json")) == []


# -- the collector: off while the command starts, on while it runs ----------------------------

#: Runs the real entry point with trio.run replaced by a probe that reports the collector's state.
_GC_PROBE = """
import gc, sys, trio
import fetcher.cli.main as cli
def probe(*args, **kwargs):
    print("collector", gc.isenabled(), "frozen", gc.get_freeze_count() > 0, flush=True)
    return 0
trio.run = probe
sys.argv = ["fetch", *sys.argv[1:]]
cli.entry_point()
"""


def test_command_runs_with_the_collector_on(tmp_path: Path) -> None:
    # entry_point turns the cyclic collector off for start-up; a run that kept it off
    # would never free cyclic garbage (a long bulk run would grow without bound).
    for args in (["file:///dev/null", "-o", str(tmp_path / "null")], ["-i", str(tmp_path / "none.txt"), "-d", "out"]):
        (tmp_path / "none.txt").write_text("file:///dev/null\n")
        result = subprocess.run([sys.executable, "-c", _GC_PROBE, *args], capture_output=True, timeout=60, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-500:]
        assert result.stdout.decode().split() == ["collector", "True", "frozen", "True"]


def test_main_in_a_program_leaves_the_collector_alone(tmp_path: Path) -> None:
    # Only the command's own process turns the collector off and freezes start-up's objects.
    import gc

    from fetcher.cli.main import main

    frozen = gc.get_freeze_count()
    assert main(["file:///dev/null", "-o", str(tmp_path / "null")]) == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
