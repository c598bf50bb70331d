"""WAIS names and diagnostics as a user meets them (issue 16), through the real CLI.

Bulk (`fetch -i`) and `-r` save each document under the file name its DocID
carries, else its headline, never the database's name (`testdb`,
`testdb.1`, ...).  Diagnostic records that come with hits are shown on stderr,
escaped, as waissearch shows them; without hits they are the error.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import trio

from tests.conftest import run_fetch
from tests.servers.wais import Database, Document, Faults, WaisServer, serving

APPLES = b"apple orchards in the valley\n" * 3
BANANAS = b"banana and apple smoothies\n"
REPORT = b"the apple harvest report, quarter three\n"


def databases() -> list[Database]:
    return [
        Database(
            "testdb",
            [
                Document("apples.txt", APPLES),
                Document("bananas.txt", BANANAS),
                Document("r", REPORT, local_id="doc-42", headline="Quarterly apple report"),
                Document("pears.txt", b"pears only\n"),
            ],
        )
    ]


async def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, input=stdin, timeout=60))


def files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.name.endswith(".json")}


async def test_bulk_names_come_from_the_docid_not_the_database(tmp_path: Path) -> None:
    async with serving(WaisServer(databases())) as server:
        base = f"wais://127.0.0.1:{server.port}/testdb"
        links = await cli("--links", f"{base}?apple")
        bulk = await cli("-i", "-", "-d", str(tmp_path / "out"), stdin=links.stdout)
    assert bulk.returncode == 0, bulk.stderr
    saved = files(tmp_path / "out")
    # The DocID's file name where it has one; the third document's DocID has none, so -i
    # (which has only the URL) falls back to the database name, once.
    assert saved["apples.txt"] == APPLES and saved["bananas.txt"] == BANANAS
    assert saved["testdb"] == REPORT
    assert sorted(saved) == ["apples.txt", "bananas.txt", "testdb"]


async def test_recursive_names_use_the_docid_else_the_headline(tmp_path: Path) -> None:
    async with serving(WaisServer(databases())) as server:
        got = await cli("-r", "-d", str(tmp_path / "out"), f"wais://127.0.0.1:{server.port}/testdb?apple")
    assert got.returncode == 0, got.stderr
    saved = files(tmp_path / "out")
    assert saved == {"apples.txt": APPLES, "bananas.txt": BANANAS, "Quarterly apple report": REPORT}
    assert not any(name.startswith("testdb") for name in saved)


async def test_diagnostics_with_hits_are_shown_escaped() -> None:
    notice = ("S9", "index \x1b[31mrebuilt\x07 at noon")
    async with serving(WaisServer(databases(), Faults(notice=notice))) as server:
        base = f"wais://127.0.0.1:{server.port}/testdb"
        table = await cli(f"{base}?apple")
        as_json = await cli("--json", f"{base}?apple")
        none = await cli(f"{base}?zebra")
    for result in (table, as_json):
        assert result.returncode == 0, result.stderr
        lines = result.stderr.decode().splitlines()
        assert lines == [
            f"fetch: warning: the WAIS server 127.0.0.1:{server.port} says: S9 index \\x1b[31mrebuilt\\x07 at noon"
        ]
        assert b"\x1b" not in result.stderr
    assert b"apples.txt" in table.stdout
    assert {json.loads(line)["name"].split()[0] for line in as_json.stdout.decode().splitlines()} >= {"apples.txt"}
    # No hits: the diagnostic is the error (exit 7), escaped too.
    assert none.returncode == 7
    assert b"S9 index \\x1b[31mrebuilt\\x07 at noon" in none.stderr and b"\x1b" not in none.stderr
