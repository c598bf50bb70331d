"""wais:// against the in-repo trio WAIS server (tests/servers/wais.py): library, CLI, faults, pipeline."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import trio

from fetcher import Client
from fetcher.errors import NotFound, ProtocolError, Timeout, URLError
from fetcher.schemes.wais import Hit, search
from fetcher.schemes.wais.codec import Init, RelevantDocument, Retrieval, docid_to_string, freewais_docid
from tests.conftest import run_fetch
from tests.servers.wais import CORPUS, INDEX, Database, Document, Faults, WaisServer, serving

pytestmark = pytest.mark.usefixtures("no_netrc")

APPLES = b"Apples are red or green.\nAn apple a day keeps the doctor away.\nApple pie.\nApple trees grow in orchards.\n"
BANANAS = b"Bananas are yellow.\nA banana is a fruit, like an apple.\n"
CHERRIES = b"Cherries are small and red. Cherry trees blossom in orchards in spring.\n"
BIG = b"".join(b"orchard ledger line %05d: pears, plums and quinces\n" % i for i in range(700))
GIF = bytes(range(256)) * 40
EVIL = Document("evil.txt", b"apple \x1b[31mred\x07\n", headline="\x1b[31mred headline\x07")


def databases() -> list[Database]:
    return [
        Database(
            "testdb",
            [
                Document("apples.txt", APPLES, date="19930401"),
                Document("bananas.txt", BANANAS),
                Document("cherries.txt", CHERRIES),
                Document("big.txt", BIG),
                Document("pixel.gif", GIF, types=("GIF",)),
            ],
            description=b'(:source :database-name "testdb" :description "Fruit for the tests")\n',
        ),
        Database("other/sub", [Document("notes.txt", b"kiwi notes\n")]),
        Database("evil", [EVIL]),
    ]


def docid(name: str, data: bytes, database: str = "testdb") -> bytes:
    return freewais_docid("testhost:210", f"{INDEX}/{database}", f"0 {len(data)} {CORPUS}/{database}/{name}")


def base(server: WaisServer) -> str:
    return f"wais://127.0.0.1:{server.port}"


def doc_url(server: WaisServer, name: str, data: bytes, *, wtype: str = "TEXT", length: bool = True) -> str:
    path = docid_to_string(docid(name, data))
    return f"{base(server)}/testdb/{wtype}/{len(data)}/{path}" if length else f"{base(server)}/testdb/{wtype}/{path}"


async def cli(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, input=stdin, cwd=cwd, timeout=60))


# -- searches -------------------------------------------------------------------------


async def test_search_lists_hits_with_lynx_form_urls() -> None:
    async with serving(WaisServer(databases())) as server:
        async with Client() as client:
            result = await client.fetch(f"{base(server)}/testdb?apple")
    assert result.kind == "listing"
    names = [entry.name for entry in result.entries]
    assert names == ["apples.txt   /srv/wais/corpus/testdb/", "bananas.txt   /srv/wais/corpus/testdb/"]
    first = result.entries[0]
    assert first.url == doc_url(server, "apples.txt", APPLES)
    assert first.url is not None and first.url.endswith(
        "/testdb/TEXT/104/1=testhost%3A210;2=/srv/wais/idx/testdb;3=0%20104%20/srv/wais/corpus/testdb/apples.txt;"
        "4=testhost%3A210;5=/srv/wais/idx/testdb;6=0%20104%20/srv/wais/corpus/testdb/apples.txt;7=%00;"
    )
    assert first.size == len(APPLES) and first.type == "text"
    assert first.extra == {
        "score": 1000,
        "lines": 4,
        "types": ["TEXT"],
        "date": "19930401",
        "source": "/srv/wais/idx/testdb",
        "docid": docid_to_string(docid("apples.txt", APPLES)),
    }
    assert result.entries[1].extra["score"] == 333
    [request] = server.searches()
    assert request.database == "testdb" and request.info is not None
    assert (request.info.seed_words, request.info.max_documents) == ("apple", 40)
    assert [kind for kind, _ in server.requests] == ["init", "search"]
    init = server.requests[0][1]
    assert isinstance(init, Init) and init.maximum_record_size == 100000


async def test_cli_search_table_json_links_and_max_hits() -> None:
    async with serving(WaisServer(databases())) as server:
        table = await cli(f"{base(server)}/testdb?apple+orchards")
        as_json = await cli("--json", f"{base(server)}/testdb?apple")
        links = await cli("--links", f"{base(server)}/testdb?apple")
        one = await cli("--max-hits", "1", f"{base(server)}/testdb?apple")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.decode().splitlines()
    assert lines[0].split()[:3] == ["text", "104", "apples.txt"] and "score 1000, 4 lines, TEXT" in lines[0]
    assert len(lines) == 3  # apples, cherries (orchards), bananas (apple); big.txt has "orchard" only
    rows = [json.loads(line) for line in as_json.stdout.decode().splitlines()]
    assert [row["score"] for row in rows] == [1000, 333]
    assert rows[0]["url"] == doc_url(server, "apples.txt", APPLES)
    assert links.stdout.decode().splitlines() == [
        doc_url(server, "apples.txt", APPLES),
        doc_url(server, "bananas.txt", BANANAS),
    ]
    assert one.returncode == 0 and len(one.stdout.decode().splitlines()) == 1
    assert server.searches()[-1].info.max_documents == 1  # type: ignore[union-attr]


async def test_headlines_are_escaped_on_the_terminal_table() -> None:
    async with serving(WaisServer(databases())) as server:
        done = await cli(f"{base(server)}/evil?apple")
    assert done.returncode == 0
    assert b"\x1b" not in done.stdout and b"\x07" not in done.stdout
    assert b"\\x1b[31mred headline\\x07" in done.stdout


async def test_database_with_a_slash_and_no_hits() -> None:
    async with serving(WaisServer(databases())) as server:
        async with Client() as client:
            found = await client.fetch(f"{base(server)}/other%2Fsub?kiwi")
            none = await client.fetch(f"{base(server)}/testdb?durian")
    assert [entry.url for entry in found.entries] == [
        f"{base(server)}/other%2Fsub/TEXT/11/" + docid_to_string(docid("notes.txt", b"kiwi notes\n", "other/sub"))
    ]
    assert server.searches()[0].database == "other/sub"
    assert none.kind == "listing" and none.entries == []


async def test_empty_search_returns_the_database_description_and_catalog() -> None:
    async with serving(WaisServer(databases())) as server:
        async with Client() as client:
            listing = await client.fetch(f"{base(server)}/testdb?")
            assert [(e.name, e.type) for e in listing.entries] == [("testdb.src", "source"), ("testdb.cat", "text")]
            source_url = listing.entries[0].url
            assert source_url is not None and "/testdb/WSRC/" in source_url
            source = await client.fetch(source_url)
    assert source.content_type == "application/x-wais-source"
    assert source.content == databases()[0].description


# -- the database URL without a search ---------------------------------------------------


async def test_database_url_without_words_is_an_advisory_off_a_terminal() -> None:
    async with serving(WaisServer(databases())) as server:
        done = await cli(f"{base(server)}/testdb")
        queried = await cli("--query", "banana", f"{base(server)}/testdb")
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    assert "Searchable WAIS database testdb" in text
    assert f"fetch --query WORDS {base(server)}/testdb" in text and f"{base(server)}/testdb?WORD+WORD" in text
    assert queried.returncode == 0
    assert queried.stdout.decode().split()[2] == "bananas.txt"
    assert server.connections == 1  # the advisory needed no connection
    assert [s.info.seed_words for s in server.searches()] == ["banana"]  # type: ignore[union-attr]


async def test_words_are_asked_for_on_a_terminal() -> None:
    asked: list[str] = []

    def prompt(text: str, secret: bool) -> str:
        asked.append(text)
        return "cherry"

    async with serving(WaisServer(databases())) as server:
        async with Client(prompt=prompt) as client:
            result = await client.fetch(f"{base(server)}/testdb")
    assert asked == ["Search words for the WAIS database testdb on 127.0.0.1: "]
    assert [entry.name.split()[0] for entry in result.entries] == ["cherries.txt"]
    assert result.metadata["query"] == "cherry"


# -- retrieval ------------------------------------------------------------------------------


async def test_multi_chunk_document_through_fetch_matches_the_source(tmp_path: Path) -> None:
    async with serving(WaisServer(databases())) as server:
        url = doc_url(server, "big.txt", BIG)
        done = await cli("-o", str(tmp_path / "big.txt"), url)
        streamed = await cli(url)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "big.txt").read_bytes() == BIG
    assert streamed.stdout == BIG
    assert len(BIG) == 36400
    ranges = [(r.start, r.end) for r in server.retrievals()]
    assert ranges == [(0, 10000), (10000, 20000), (20000, 30000), (30000, 36400)] * 2
    assert all(r.type == "TEXT" and r.unit == "bytes" for r in server.retrievals())
    assert server.connections == 2 and server.counts["init"] == 2


async def test_document_without_length_loops_until_out_of_range() -> None:
    async with serving(WaisServer(databases())) as server:
        done = await cli("--wais-chunk", "4096", doc_url(server, "apples.txt", APPLES, length=False))
        exact = await cli("--wais-chunk", "4000", doc_url(server, "big.txt", BIG, length=False))
    assert done.returncode == 0 and done.stdout == APPLES
    assert exact.returncode == 0 and exact.stdout == BIG
    assert [(r.start, r.end) for r in server.retrievals()][:2] == [(0, 4096), (0, 4000)]
    assert (server.retrievals()[-1].start, server.retrievals()[-1].end) == (36000, 40000)


async def test_binary_type_and_resume(tmp_path: Path) -> None:
    async with serving(WaisServer(databases())) as server:
        url = doc_url(server, "pixel.gif", GIF, wtype="GIF")
        async with Client(wais_chunk=3000) as client:
            result = await client.fetch(url)
            target = tmp_path / "pixel.gif"
            (tmp_path / "pixel.gif.part").write_bytes(GIF[:5000])
            download = await client.download(url, target, resume=True)
    assert result.content_type == "image/gif" and result.content == GIF and result.size == len(GIF)
    assert target.read_bytes() == GIF and download.resumed_from == 5000
    assert [(r.start, r.end, r.type) for r in server.retrievals()][-2:] == [(5000, 8000, "GIF"), (8000, 10240, "GIF")]
    assert server.connections == 1


async def test_a_search_and_its_hits_share_one_association() -> None:
    async with serving(WaisServer(databases())) as server:
        async with Client() as client:
            listing = await client.fetch(f"{base(server)}/testdb?apple")
            texts = [(await client.fetch(entry.url)).content for entry in listing.entries if entry.url]
    assert texts == [APPLES, BANANAS]
    assert server.connections == 1 and server.counts == {"init": 1, "search": 1, "retrieve": 2}


async def test_a_pooled_association_the_server_dropped_is_replaced() -> None:
    async with serving(WaisServer(databases(), Faults(close_after=2))) as server:
        async with Client() as client:
            first = await client.fetch(f"{base(server)}/testdb?apple")
            second = await client.fetch(f"{base(server)}/testdb?banana")
    assert len(first.entries) == 2 and len(second.entries) == 1
    assert server.connections == 2


# -- diagnostics and exit codes ----------------------------------------------------------------


async def test_diagnostics_become_exit_codes() -> None:
    async with serving(WaisServer(databases())) as server:
        missing_db = await cli(f"{base(server)}/nosuch?apple")
        missing_doc_db = await cli(doc_url(server, "apples.txt", APPLES).replace("/testdb/", "/nosuch/"))
        missing_file = await cli(doc_url(server, "gone.txt", b"x" * 10))
        syntax = await cli(f"{base(server)}/testdb?%3F")
        bad_docid = await cli(f"{base(server)}/testdb/TEXT/10/nonsense")
    assert missing_db.returncode == 6
    assert b"diagnostic S1 The following database is not available: /srv/wais/idx/nosuch" in missing_db.stderr
    assert missing_doc_db.returncode == 6 and missing_file.returncode == 6
    assert b"File not present in specified database" in missing_file.stderr
    assert syntax.returncode == 7 and b"S1 query syntax error: ?" in syntax.stderr
    assert bad_docid.returncode == 2 and b"document id in the URL is malformed" in bad_docid.stderr


async def test_a_refused_init_is_a_protocol_error() -> None:
    async with serving(WaisServer(databases(), Faults(refuse_init=True))) as server:
        done = await cli(f"{base(server)}/testdb?apple")
    assert done.returncode == 7 and b"refused the association (InitResponse Result 0)" in done.stderr


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("reset", b"closed the connection in the middle of its reply to the retrieval of bytes 10000-20000"),
        ("garbage", b"did not answer the retrieval of bytes 10000-20000 with a WAIS message"),
        ("oversize", b"more than the 100000 bytes negotiated"),
        ("empty", b"sent an empty reply to the retrieval of bytes 10000-20000"),
        ("unreadable", b"sent an unreadable reply to the retrieval"),
        ("close", b"closed the connection instead of answering the retrieval of bytes 10000-20000"),
    ],
)
async def test_faults_in_the_middle_of_a_document(tmp_path: Path, fault: str, message: bytes) -> None:
    async with serving(WaisServer(databases(), Faults(nth=2, **{fault: "retrieve"}))) as server:
        done = await cli("-o", str(tmp_path / "big.txt"), doc_url(server, "big.txt", BIG))
    assert done.returncode == 7, done.stderr
    assert message in done.stderr
    assert b"\x1b" not in done.stderr
    assert not (tmp_path / "big.txt").exists()
    assert (tmp_path / "big.txt.part").read_bytes() == BIG[:10000]


async def test_a_search_reply_larger_than_negotiated_and_a_stall() -> None:
    async with serving(WaisServer(databases(), Faults(oversize="search"))) as server:
        oversize = await cli(f"{base(server)}/testdb?apple")
    async with serving(WaisServer(databases(), Faults(stall="search"))) as server:
        stalled = await cli("--timeout", "1", f"{base(server)}/testdb?apple")
    assert oversize.returncode == 7 and b"reply to the search, more than the 100000 bytes" in oversize.stderr
    assert stalled.returncode == 8 and b"sent nothing for 1 s" in stalled.stderr


async def test_library_errors_for_a_stalled_document_and_a_short_one() -> None:
    async with serving(WaisServer(databases(), Faults(stall="retrieve"))) as server:
        async with Client(timeout=0.5) as client:
            with pytest.raises(Timeout):
                await client.fetch(doc_url(server, "apples.txt", APPLES))
    async with serving(WaisServer(databases())) as server:
        longer = doc_url(server, "apples.txt", APPLES).replace("/TEXT/104/", "/TEXT/200/")
        async with Client() as client:
            with pytest.raises(ProtocolError, match="ended after 104 of the 200 bytes"):
                await client.fetch(longer)
            with pytest.raises(NotFound):
                await client.fetch(f"{base(server)}/nosuch?x")
            with pytest.raises(URLError):
                await client.fetch(f"{base(server)}/testdb/TEXT/5/1=%zz;")


async def test_a_smaller_negotiated_size_shrinks_the_chunks() -> None:
    async with serving(WaisServer(databases(), Faults(max_record=4096))) as server:
        async with Client() as client:
            result = await client.fetch(doc_url(server, "big.txt", BIG))
    assert result.content == BIG
    sizes = {r.end - r.start for r in server.retrievals()[:-1]}
    assert sizes == {4096 - 512 - len(docid("big.txt", BIG))}


# -- relevance feedback through the library ------------------------------------------------------


async def test_relevance_feedback_seeds_the_search_with_earlier_hits() -> None:
    async with serving(WaisServer(databases())) as server:
        url = f"{base(server)}/testdb"
        async with Client() as client:
            plain = await search(client, url, "banana")
            assert [hit.headline.split()[0] for hit in plain.hits] == ["bananas.txt"]
            seeded = await search(client, url, "banana", relevant=[plain.hits[0]], max_hits=10)
            by_url = await search(client, url + "?ignored", "banana", relevant=[doc_url(server, "cherries.txt",
                                                                                             CHERRIES)])  # fmt: skip
            with pytest.raises(NotFound, match="Relevant Document not available"):
                await search(client, url, "x", relevant=[RelevantDocument(docid("gone.txt", b""), "TEXT")])
    assert isinstance(seeded.hits[0], Hit)
    assert sorted(hit.headline.split()[0] for hit in seeded.hits) == ["apples.txt", "bananas.txt"]
    assert seeded.hits[1].url == doc_url(server, "bananas.txt", BANANAS)
    assert "cherries.txt" in [hit.headline.split()[0] for hit in by_url.hits]
    searches = server.searches()
    assert searches[1].info is not None and searches[1].info.max_documents == 10
    assert searches[1].info.documents == (RelevantDocument(docid("bananas.txt", BANANAS), "TEXT"),)
    assert searches[2].info is not None
    assert searches[2].info.documents == (RelevantDocument(docid("cherries.txt", CHERRIES), "TEXT"),)
    assert server.connections == 1


async def test_retrieval_requests_are_exactly_what_waissearch_sends() -> None:
    from fetcher.schemes.wais.codec import message, retrieval_search

    async with serving(WaisServer(databases())) as server:
        async with Client() as client:
            await client.fetch(doc_url(server, "apples.txt", APPLES))
    expected = message(retrieval_search("testdb", [Retrieval(docid("apples.txt", APPLES), "TEXT", 0, 104)]).encode())
    assert server.raw[1] == expected


# -- the bulk pipeline ----------------------------------------------------------------------------


async def test_links_piped_into_bulk_retrieval(tmp_path: Path) -> None:
    pytest.importorskip("fetcher.cli.bulk")
    async with serving(WaisServer(databases())) as server:
        links = await cli("--links", f"{base(server)}/testdb?apple+orchards")
        assert links.returncode == 0
        bulk = await cli("-i", "-", "-d", str(tmp_path / "out"), stdin=links.stdout)
    assert bulk.returncode == 0, bulk.stderr
    saved = sorted(path.read_bytes() for path in (tmp_path / "out").iterdir() if path.is_file())
    assert saved == sorted([APPLES, BANANAS, CHERRIES])


async def test_access_control_and_a_search_reply_shrunk_to_fit() -> None:
    async with serving(WaisServer(databases(), Faults(access_denied=True))) as server:
        denied = await cli(f"{base(server)}/testdb?apple")
    async with serving(WaisServer(databases(), Faults(max_record=700))) as server:
        async with Client() as client:
            shrunk = await client.fetch(f"{base(server)}/testdb?apple+orchards")
    assert denied.returncode == 5 and b"T2 Unautorized access to database: /srv/wais/idx/testdb" in denied.stderr
    assert [entry.name.split()[0] for entry in shrunk.entries] == ["apples.txt", "bananas.txt"]  # cherries.txt dropped


async def test_the_test_server_behaves_like_freewais_sf() -> None:
    """The server's freeWAIS-sf behaviours of wais.md §9, seen through a raw socket."""
    from fetcher.schemes.wais.codec import (
        HEADER_SIZE,
        InitResponse,
        Options,
        Search,
        SearchResponse,
        decode_header,
        message,
        word_search,
    )

    async def exchange(stream: trio.SocketStream, apdu: bytes) -> bytes | None:
        await stream.send_all(message(apdu))
        data = b""
        while len(data) < HEADER_SIZE or len(data) < HEADER_SIZE + decode_header(data[:HEADER_SIZE]).length:
            more = await stream.receive_some(65536)
            if not more:
                return None
            data += more
        return data[HEADER_SIZE:]

    async with serving(WaisServer(databases())) as server:
        async with await trio.open_tcp_stream("127.0.0.1", server.port) as stream:
            # Lynx sends no Init: a search as the first message is answered normally.
            reply = await exchange(stream, word_search("testdb", "kiwi").encode())
            assert reply is not None and SearchResponse.decode(reply).headers == ()
            refused = await exchange(stream, Init(options=Options(will_present=True)).encode())
            assert refused is not None and not InitResponse.decode(refused).result
            assert await exchange(stream, b"\x00\x01\x18") == b""  # a Present APDU: zero-length reply
            assert await exchange(stream, Search("testdb", "9").encode()) == b""
            assert await exchange(stream, Search("testdb", None).encode()) is None  # the server process dies


async def test_libwww_type_lists_and_the_suggested_file_name(tmp_path: Path) -> None:
    async with serving(WaisServer(databases())) as server:
        url = doc_url(server, "apples.txt", APPLES).replace("/TEXT/", "/TEXT,HTML/")
        saved = await cli("-O", "--output-dir", str(tmp_path), url)
    assert saved.returncode == 0, saved.stderr
    assert (tmp_path / "apples.txt").read_bytes() == APPLES
    assert server.retrievals()[0].type == "TEXT"
