"""--warc-file: every scheme's retrievals archived as WARC/1.1, read back with warcio.

Each test runs the real `fetch` command against an in-repo server, then
reads the WARC with warcio's ArchiveIterator (digests checked) and its
`warcio check` command, and compares the archived payload with the bytes
fetched, byte for byte.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("warcio", reason="the 'warc' extra is not installed (pip install '.[warc]')")

from warcio.archiveiterator import ArchiveIterator

from tests.conftest import run_fetch
from tests.servers.ftp_fake import FakeFtpServer, serving
from tests.servers.http_server import HTTPTestServer, gzipped, redirect

pytestmark = pytest.mark.usefixtures("no_netrc")

BODY = bytes(range(256)) * 1024 + b"tail\n"  # 256 KiB and a bit: more than the spool keeps in memory
#: Incompressible (stored in its gzip member rather than deflated), deterministic.
NOISE = random.Random(19).randbytes(700_000)


async def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, cwd=cwd, timeout=60))


class Record:
    """One record as read back: its WARC headers, HTTP headers (if any) and payload."""

    def __init__(self, record: Any) -> None:
        self.type: str = record.rec_type
        self.headers = {name: value for name, value in record.rec_headers.headers}
        self.http = record.http_headers
        self.raw: bytes = record.raw_stream.read()
        self.url = self.headers.get("WARC-Target-URI")
        self.content_type = self.headers.get("Content-Type")

    def __repr__(self) -> str:
        return f"<Record {self.type} {self.url} {self.content_type}>"


def read_warc(path: Path) -> list[Record]:
    """Every record, with warcio checking each digest as it reads; and `warcio check` on the file."""
    records = []
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream, check_digests="raise"):
            records.append(Record(record))
    checked = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", "-v", str(path)], capture_output=True, timeout=60
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert b"digest pass" in checked.stdout
    assert records[0].type == "warcinfo"
    return records


def dialogue(records: list[Record], url_part: str) -> str:
    found = [r for r in records if r.type == "metadata" and url_part in (r.url or "")]
    assert found, f"no metadata record for {url_part}: {records}"
    return found[-1].raw.decode("utf-8")


# -- HTTP -------------------------------------------------------------------------------


@pytest.fixture
async def http(nursery: trio.Nursery) -> HTTPTestServer:
    server = HTTPTestServer()
    server.add("/body.bin", BODY, content_type="application/octet-stream")
    server.add("/gz.txt", gzipped(b"gzip me " * 1000), content_type="text/plain",
               headers=[("Content-Encoding", "gzip")])  # fmt: skip
    server.add("/chunked.txt", b"chunk " * 5000, content_type="text/plain", chunked=True)
    server.add("/noise.bin", NOISE, content_type="application/octet-stream")
    server.routes["/moved"] = redirect("/body.bin")

    async def odd_head(request: Any, exchange: Any) -> None:
        # A head warcio writes back differently ("X-Odd:tight" gets a space): digests recomputed.
        await exchange.send(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nX-Odd:tight\r\nConnection: close\r\n\r\nodd ok")
        exchange.closed = True
        await exchange.stream.aclose()

    server.routes["/odd"] = odd_head
    await nursery.start(server.serve)
    return server


async def test_http_request_and_response_records_hold_the_wire_bytes(http: HTTPTestServer, tmp_path: Path) -> None:
    done = await cli("--warc-file", "out", "-o", "got.bin", http.url("/body.bin"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "got.bin").read_bytes() == BODY
    records = read_warc(tmp_path / "out.warc.gz")
    assert [r.type for r in records] == ["warcinfo", "response", "request"]
    response, request = records[1], records[2]
    assert response.url == request.url == http.url("/body.bin")
    assert response.content_type == "application/http; msgtype=response"
    assert response.http.get_statuscode() == "200"
    assert response.raw == BODY
    assert request.headers["WARC-Concurrent-To"] == response.headers["WARC-Record-ID"]
    assert request.http.protocol == "GET"
    assert request.http.get_header("Host") == f"127.0.0.1:{http.port}"


async def test_http_bodies_are_archived_before_content_decoding(http: HTTPTestServer, tmp_path: Path) -> None:
    done = await cli("--warc-file", "out", http.url("/gz.txt"), http.url("/chunked.txt"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"gzip me " * 1000 + b"chunk " * 5000
    records = read_warc(tmp_path / "out.warc.gz")
    gz = next(r for r in records if r.type == "response" and r.url.endswith("/gz.txt"))
    assert gz.raw == gzipped(b"gzip me " * 1000)  # as on the wire: still gzip
    chunked = next(r for r in records if r.type == "response" and r.url.endswith("/chunked.txt"))
    assert chunked.http.get_header("Transfer-Encoding") == "chunked"
    assert b"chunk chunk" in chunked.raw and chunked.raw != b"chunk " * 5000  # chunk framing kept


async def test_incompressible_payloads_and_unusual_heads(http: HTTPTestServer, tmp_path: Path) -> None:
    async with serving(FakeFtpServer({"/noise.bin": NOISE})) as ftp:
        done = await cli("--warc-file", "out", "-d", "got", http.url("/noise.bin"), http.url("/odd"),
                         f"{ftp.url}/noise.bin", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    warc = tmp_path / "out.warc.gz"
    assert warc.stat().st_size > 2 * len(NOISE)  # stored, not deflated: both copies are there in full
    records = read_warc(warc)
    noise = next(r for r in records if r.type == "response" and r.url.endswith("/noise.bin"))
    assert noise.raw == NOISE
    odd = next(r for r in records if r.type == "response" and r.url.endswith("/odd"))
    assert odd.raw == b"odd ok" and odd.http.get_header("X-Odd") == "tight"
    # The head as it arrived, not as warcio would write it back ("X-Odd: tight").
    wire = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nX-Odd:tight\r\nConnection: close\r\n\r\nodd ok"
    assert b"Content-Length: %d\r\n\r\n" % len(wire) + wire + b"\r\n\r\n" in gzip.decompress(warc.read_bytes())
    resource = next(r for r in records if r.type == "resource")
    assert resource.raw == NOISE and resource.url == f"{ftp.url}/noise.bin"


async def test_http_redirect_hops_are_archived(http: HTTPTestServer, tmp_path: Path) -> None:
    done = await cli("--warc-file", "out", "-o", "got.bin", http.url("/moved"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_warc(tmp_path / "out.warc.gz")
    responses = [r for r in records if r.type == "response"]
    assert [r.http.get_statuscode() for r in responses] == ["302", "200"]
    assert responses[0].url == http.url("/moved") and responses[1].url == http.url("/body.bin")
    assert responses[1].raw == BODY


async def test_http_authorization_never_reaches_the_warc(http: HTTPTestServer, tmp_path: Path) -> None:
    url = http.url("/body.bin").replace("http://", "http://alice:s3cret-pw@")
    done = await cli("--warc-file", "out", "-o", "got.bin", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert http.requests[-1].header("authorization").startswith("Basic ")  # the server did get it
    raw = gzip.decompress((tmp_path / "out.warc.gz").read_bytes())
    assert b"s3cret-pw" not in raw
    assert http.requests[-1].header("authorization")[6:].encode() not in raw
    records = read_warc(tmp_path / "out.warc.gz")
    request = next(r for r in records if r.type == "request")
    assert request.http.get_header("Authorization") == "Basic ****"
    assert "s3cret" not in json.dumps([r.headers for r in records])


async def test_http_replay_with_warcio_tools(http: HTTPTestServer, tmp_path: Path) -> None:
    """warcio's extractor serves a record back by offset, as a replay tool does from a CDX line."""
    done = await cli("--warc-file", "out", "--warc-cdx", "-o", "got.bin", http.url("/body.bin"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = (tmp_path / "out.cdxj").read_text().splitlines()
    assert len(lines) == 1
    key, stamp, fields = lines[0].split(" ", 2)
    entry = json.loads(fields)
    assert key == f"127.0.0.1:{http.port})/body.bin" and len(stamp) == 14
    assert entry["status"] == "200" and entry["mime"] == "application/octet-stream"
    with open(tmp_path / entry["filename"], "rb") as stream:
        stream.seek(int(entry["offset"]))
        member = stream.read(int(entry["length"]))
    record = next(iter(ArchiveIterator(io.BytesIO(member))))
    assert record.rec_type == "response"
    assert record.http_headers.get_statuscode() == "200"
    assert record.content_stream().read() == BODY
    assert entry["digest"] == record.rec_headers.get_header("WARC-Payload-Digest")


# -- FTP --------------------------------------------------------------------------------

FTP_FILES = {"/pub/a.txt": b"in pub\n", "/pub/big.bin": BODY, "/secret.txt": b"for alice\n"}


async def test_ftp_resource_and_control_conversation(tmp_path: Path) -> None:
    async with serving(FakeFtpServer(FTP_FILES, users={"anonymous": "", "alice": "pw-alice-9"})) as server:
        done = await cli("--warc-file", "out", "-o", "got.bin", f"{server.url}/pub/big.bin", cwd=tmp_path)
        secret = await cli("--warc-file", "alice", f"ftp://alice:pw-alice-9@127.0.0.1:{server.port}/secret.txt",
                           cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = read_warc(tmp_path / "out.warc.gz")
    assert [r.type for r in records] == ["warcinfo", "resource", "metadata"]
    resource, metadata = records[1], records[2]
    assert resource.raw == BODY == (tmp_path / "got.bin").read_bytes()
    assert resource.url == f"{server.url}/pub/big.bin"
    assert metadata.content_type == "text/x-ftp-control-conversation"
    assert metadata.headers["WARC-Concurrent-To"] == resource.headers["WARC-Record-ID"]
    text = metadata.raw.decode()
    assert "> USER anonymous" in text and "> RETR big.bin" in text and "< 226" in text
    assert secret.returncode == 0, secret.stderr
    assert secret.stdout == b"for alice\n"
    raw = gzip.decompress((tmp_path / "alice.warc.gz").read_bytes())
    assert b"pw-alice-9" not in raw
    records = read_warc(tmp_path / "alice.warc.gz")
    assert "> PASS ****" in dialogue(records, "secret.txt")
    assert records[1].raw == b"for alice\n"


async def test_ftp_listing_is_archived_as_the_server_sent_it(tmp_path: Path) -> None:
    async with serving(FakeFtpServer(FTP_FILES)) as server:
        done = await cli("--warc-file", "out", f"{server.url}/pub/", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_warc(tmp_path / "out.warc.gz")
    resource = next(r for r in records if r.type == "resource")
    assert resource.content_type.startswith("text/x-ftp-")
    assert b"a.txt" in resource.raw and b"big.bin" in resource.raw
    assert b"\r\n" in resource.raw  # the wire form, not fetcher's rendering


# -- failures, rotation, dedup -----------------------------------------------------------


async def test_a_failed_fetch_leaves_a_valid_warc_of_what_completed(http: HTTPTestServer, tmp_path: Path) -> None:
    done = await cli("--warc-file", "out", http.url("/body.bin"), http.url("/missing"), cwd=tmp_path)
    assert done.returncode == 1
    assert b"404" in done.stderr
    records = read_warc(tmp_path / "out.warc.gz")
    # The 404 is an answer: archived as one (tests/test_warc_failures.py covers the cut transfers).
    assert [(r.type, r.url) for r in records[1:]] == [(kind, http.url(path)) for path in ("/body.bin", "/missing")
                                                      for kind in ("response", "request")]  # fmt: skip
    assert records[1].raw == BODY
    assert records[3].http.get_statuscode() == "404"


async def test_rotation_cdx_and_dedup(http: HTTPTestServer, tmp_path: Path) -> None:
    url = http.url("/body.bin")
    done = await cli("--warc-file", "run", "--warc-max-size", "500", "--warc-cdx", "--warc-dedup",
                     url, url, http.url("/chunked.txt"), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in tmp_path.glob("run*.warc.gz"))
    assert files == ["run-00000.warc.gz", "run-00001.warc.gz", "run-00002.warc.gz"]
    first, second, _third = (read_warc(tmp_path / name) for name in files)
    assert [r.type for r in first] == ["warcinfo", "response", "request"]
    assert [r.type for r in second] == ["warcinfo", "revisit", "request"]
    revisit = second[1]
    assert revisit.headers["WARC-Payload-Digest"] == first[1].headers["WARC-Payload-Digest"]
    assert revisit.headers["WARC-Refers-To"] == first[1].headers["WARC-Record-ID"]
    assert revisit.headers["WARC-Refers-To-Target-URI"] == url
    assert revisit.raw == b""  # the head only: the payload is in the first file
    assert revisit.http.get_statuscode() == "200"
    index = [line.split(" ", 2) for line in (tmp_path / "run.cdxj").read_text().splitlines()]
    assert [json.loads(fields)["filename"] for _, _, fields in index] == files
    assert json.loads(index[1][2])["mime"] == "warc/revisit"
    # Read back from the files (a cluster run indexes its batches' files so), the index is the same.
    from fetcher.archive.cdx import index_warc

    assert [line for name in files for line in index_warc(tmp_path / name)] == [
        line + "\n" for line in (tmp_path / "run.cdxj").read_text().splitlines()
    ]


async def test_bulk_run_archives_every_url(http: HTTPTestServer, tmp_path: Path) -> None:
    urls = [http.url("/body.bin"), http.url("/gz.txt"), http.url("/chunked.txt"), http.url("/moved")]
    (tmp_path / "urls.txt").write_text("\n".join(urls) + "\n")
    done = await cli("--warc-file", "bulk", "-i", "urls.txt", "-d", "out", "-j", "4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_warc(tmp_path / "bulk.warc.gz")
    responses = sorted(r.url for r in records if r.type == "response")
    assert responses == sorted([*urls, http.url("/body.bin")])
    assert sum(r.type == "request" for r in records) == 5


def test_version_does_not_import_warcio() -> None:
    code = "import sys; from fetcher.cli.main import main\ntry:\n main(['--version'])\nexcept SystemExit: pass\n"
    code += "print('warcio' in sys.modules, 'fetcher.archive' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    assert done.stdout.strip().endswith(b"False False"), done


# -- Gopher, Gopher+, NNTP, WAIS, Prospero, file -------------------------------------------


async def test_gopher_document_menu_and_gopher_plus(tmp_path: Path) -> None:
    from tests.servers.gopher import BINARY, GopherServer
    from tests.servers.gopher import serving as gopher_serving

    async with gopher_serving(GopherServer()) as server:
        base = f"gopher://127.0.0.1:{server.port}"
        urls = [f"{base}/9/binary.bin", f"{base}/1/dir", f"{base}/0/gp.txt%09%09+", f"{base}/1/gp-dir%09%09$"]
        done = await cli("--warc-file", "out", *urls, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_warc(tmp_path / "out.warc.gz")
    resources = {r.url: r for r in records if r.type == "resource"}
    assert resources[urls[0]].raw == BINARY
    assert resources[urls[1]].content_type == "application/gopher-menu"
    assert resources[urls[1]].raw == server.routes[b"/dir"]  # the menu as the server sent it
    assert resources[urls[2]].raw == b"Hello, world!\n"
    assert resources[urls[3]].content_type == "application/gopher+-attributes"
    assert b"+INFO:" in resources[urls[3]].raw
    for url in urls:
        text = dialogue(records, url)
        assert text.startswith("* connected to 127.0.0.1:")
    assert "> /dir" in dialogue(records, urls[1])
    assert "> /gp.txt\\t+" in dialogue(records, urls[2]) and "< +14" in dialogue(records, urls[2])
    for record in records[1:]:
        if record.type == "metadata":
            assert record.content_type == "text/x-gopher-control-conversation"
            assert record.headers["WARC-Concurrent-To"] == resources[record.url].headers["WARC-Record-ID"]


async def test_nntp_article_and_group_listing(tmp_path: Path) -> None:
    from tests.servers.nntp import Group, NntpServer, article
    from tests.servers.nntp import serving as nntp_serving

    body = b"Hello from article one.\n"
    groups = [Group("test.group", [article(1, "one@example.test", "First", body)])]
    async with nntp_serving(NntpServer(groups)) as server:
        base = f"nntp://127.0.0.1:{server.port}"
        done = await cli("--warc-file", "out", "-o", "art.txt", f"{base}/test.group/1", cwd=tmp_path)
        listing = await cli("--warc-file", "list", f"{base}/test.group", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_warc(tmp_path / "out.warc.gz")
    resource = next(r for r in records if r.type == "resource")
    assert resource.content_type == "message/rfc822"
    assert resource.raw == (tmp_path / "art.txt").read_bytes()
    assert body in resource.raw
    text = dialogue(records, "test.group/1")
    assert "> GROUP test.group" in text and "< 211" in text and "> ARTICLE 1" in text
    assert listing.returncode == 0, listing.stderr
    records = read_warc(tmp_path / "list.warc.gz")
    resource = next(r for r in records if r.type == "resource")
    assert resource.content_type == "text/x-nntp-overview"
    assert b"First" in resource.raw and b"<one@example.test>" in resource.raw


async def test_wais_search_and_document(tmp_path: Path) -> None:
    from tests.servers.wais import Database, Document, WaisServer
    from tests.servers.wais import serving as wais_serving

    apples = b"Apples are red or green.\nAn apple a day.\n"
    async with wais_serving(WaisServer([Database("testdb", [Document("apples.txt", apples)])])) as server:
        base = f"wais://127.0.0.1:{server.port}"
        search = await cli("--warc-file", "search", "--links", f"{base}/testdb?apple", cwd=tmp_path)
        assert search.returncode == 0, search.stderr
        document_url = search.stdout.decode().split()[0]
        done = await cli("--warc-file", "doc", document_url, cwd=tmp_path)
    records = read_warc(tmp_path / "search.warc.gz")
    hits = next(r for r in records if r.type == "resource")
    assert hits.content_type == "application/x-fetcher-listing+jsonl"
    rows = [json.loads(line) for line in hits.raw.splitlines()]
    assert rows[0]["url"] == document_url
    assert "apple" in dialogue(records, "testdb")
    assert done.returncode == 0, done.stderr
    assert done.stdout == apples
    records = read_warc(tmp_path / "doc.warc.gz")
    resource = next(r for r in records if r.type == "resource")
    assert resource.raw == apples
    assert "Retrieve" in dialogue(records, "testdb")


async def test_prospero_listing_document_and_resolution(tmp_path: Path) -> None:
    from tests.servers.prospero import Directory, Link, Object, ftp_server, serve_prospero

    text = b"prospero contents\n" * 100
    (tmp_path / "root" / "pub").mkdir(parents=True)
    (tmp_path / "root" / "pub" / "hello.txt").write_bytes(b"hello via ftp\n")
    with ftp_server(tmp_path / "root") as ftp_port:
        aftp = ["AFTP", "INTERNET-D", f"127.0.0.1({ftp_port})", "ASCII", "/pub/hello.txt", "BINARY"]
        tree = {
            "/pub": Directory([Link("contents.txt", "FILE", "127.0.0.1", "/pub/contents.txt")]),
            "/pub/contents.txt": Object([["PROSPERO-CONTENTS", "", "", "", ""]], contents=text),
            "/pub/hello.txt": Object([aftp]),
        }
        async with serve_prospero(tree) as server:
            base = f"prospero://127.0.0.1:{server.port}"
            urls = [f"{base}//pub", f"{base}//pub/contents.txt", f"{base}//pub/hello.txt"]
            done = await cli("--warc-file", "out", "-d", "got", *urls, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_warc(tmp_path / "out.warc.gz")
    resources = {r.url: r for r in records if r.type == "resource"}
    assert resources[urls[1]].raw == text
    assert json.loads(resources[urls[0]].raw.splitlines()[0])["name"] == "contents.txt"
    ftp_url = next(url for url in resources if url.startswith("ftp://"))
    assert resources[ftp_url].raw == b"hello via ftp\n"
    # The resolution hop: the Prospero dialogue that led to the FTP URL.
    hop = [r for r in records if r.type == "metadata" and r.url == urls[2]]
    assert hop and "hello.txt" in hop[0].raw.decode()
    assert "> RETR hello.txt" in dialogue(records, ftp_url)


async def test_file_document_and_directory(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.bin").write_bytes(BODY)
    file_url = (tmp_path / "dir" / "a.bin").as_uri()
    done = await cli("--warc-file", "out", file_url, (tmp_path / "dir").as_uri() + "/", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_warc(tmp_path / "out.warc.gz")
    resources = [r for r in records if r.type == "resource"]
    assert resources[0].url == file_url and resources[0].raw == BODY
    assert resources[1].content_type == "application/x-fetcher-listing+jsonl"
    assert json.loads(resources[1].raw)["name"] == "a.bin"


async def test_a_transfer_cut_midway_leaves_only_whole_records(tmp_path: Path) -> None:
    from tests.servers.gopher import GopherServer
    from tests.servers.gopher import serving as gopher_serving

    async with gopher_serving(GopherServer()) as server:
        base = f"gopher://127.0.0.1:{server.port}"
        done = await cli("--warc-file", "out", f"{base}/0/hello.txt", f"{base}/9/reset", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    records = read_warc(tmp_path / "out.warc.gz")
    assert [(r.type, r.url) for r in records[1:]] == [("resource", f"{base}/0/hello.txt"),
                                                      ("metadata", f"{base}/0/hello.txt")]  # fmt: skip


@pytest.mark.parametrize("option", [["--warc-cdx"], ["--warc-deflate", "always"]])
async def test_warc_options_without_warc_file_are_a_usage_error(tmp_path: Path, option: list[str]) -> None:
    done = await cli(*option, "file:///dev/null", cwd=tmp_path)
    assert done.returncode == 2
    assert b"need --warc-file" in done.stderr
    assert list(tmp_path.iterdir()) == []


async def test_warc_deflate_always_archives_a_valid_record(tmp_path: Path) -> None:
    source = tmp_path / "words.txt"
    source.write_bytes(b"an ordinary line of text in a document\n" * 50_000)
    done = await cli("--warc-file", "out", "--warc-deflate", "always", "-o", "copy.txt", f"file://{source}",
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (resource,) = [r for r in read_warc(tmp_path / "out.warc.gz") if r.type == "resource"]
    assert resource.raw == source.read_bytes() == (tmp_path / "copy.txt").read_bytes()
    assert (tmp_path / "out.warc.gz").stat().st_size < len(resource.raw) // 20  # deflated


async def test_recursive_mirror_archives_listings_and_files(tmp_path: Path) -> None:
    async with serving(FakeFtpServer(FTP_FILES)) as server:
        done = await cli("--warc-file", "mirror", "-r", "-d", "got", f"{server.url}/pub/", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = read_warc(tmp_path / "mirror.warc.gz")
    resources = {r.url: r for r in records if r.type == "resource"}
    assert resources[f"{server.url}/pub/a.txt"].raw == b"in pub\n"
    assert resources[f"{server.url}/pub/big.bin"].raw == BODY
    listing = resources[f"{server.url}/pub/"]
    assert listing.content_type.startswith("text/x-ftp-") and b"big.bin" in listing.raw
