"""`fetch` against the hostile FTP server: bounded memory, strict fields, lenient text, real quirks.

Every test runs the real command and asserts what the user sees (exit code,
the one-line message, stdout) and what the server received.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import trio

from tests.conftest import run_fetch
from tests.hostile.ftp_hostile import DECORATED, Hostile, HostileFtpServer, serving

HELLO = b"hello, hostile world\n"


async def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return await trio.to_thread.run_sync(lambda: run_fetch(*args, cwd=cwd, timeout=60))


def message(done: subprocess.CompletedProcess[bytes]) -> str:
    """The first stderr line (the one-line error), with `fetch: ` checked and removed."""
    first = done.stderr.decode("utf-8", "replace").splitlines()[0]
    assert first.startswith("fetch: "), done.stderr
    return first[len("fetch: ") :]


def verbs(server: HostileFtpServer) -> list[str]:
    """The verbs the server received, without the closing QUITs."""
    return [line.split(" ")[0] for line in server.commands if line != "QUIT"]


# -- bounds ---------------------------------------------------------------------------


async def test_an_endless_nlst_stops_at_listing_entries() -> None:
    server = HostileFtpServer(directories=("/dir",), hostile=Hostile(nlst_flood=-1))
    async with serving(server):
        done = await cli("--limit", "listing_entries=5000", f"{server.url}/dir/;type=d")
    assert done.returncode == 7
    assert message(done).startswith("the server sent more than 5000 entries in one listing")
    assert b"--limit listing_entries=N" in done.stderr
    assert done.stdout == b""
    assert verbs(server)[-3:] == ["TYPE", "EPSV", "NLST"]
    assert "CWD dir" in server.commands


async def test_an_nlst_of_long_names_stops_at_listing_bytes() -> None:
    server = HostileFtpServer(directories=("/dir",), hostile=Hostile(nlst_flood=-1, flood_name=300))
    async with serving(server):
        done = await cli("--limit", "listing_bytes=200000", f"{server.url}/dir/")
    assert done.returncode == 7
    # The raw bytes or what their entries hold, whichever passes the cap first (it depends on the chunking).
    assert message(done).startswith("the server sent more than 200000 bytes ")
    assert b"--limit listing_bytes=N" in done.stderr


MLSD_FEAT = [b"211-Features:", b" MLST type*;size*;modify*;", b"211 End"]


async def test_endless_list_and_mlsd_stop_at_listing_entries() -> None:
    for feat, verb in ((None, "LIST"), (MLSD_FEAT, "MLSD")):
        hostile = Hostile(nlst_flood=-1, facts="flood", feat=feat)
        server = HostileFtpServer(directories=("/dir",), hostile=hostile)
        async with serving(server):
            done = await cli("--limit", "listing_entries=5000", f"{server.url}/dir/")
        assert done.returncode == 7, verb
        assert message(done).startswith("the server sent more than 5000 ")
        assert b"--limit listing_entries=N" in done.stderr
        assert verbs(server)[-4:] == ["FEAT", "TYPE", "EPSV", verb]


async def test_list_and_mlsd_listings_with_decorated_names_are_escaped() -> None:
    files = {"/d/plain.txt": HELLO, "/d/\x1b[31mred.txt": HELLO}
    for feat, verb in ((None, "LIST"), (MLSD_FEAT, "MLSD")):
        server = HostileFtpServer(files, hostile=Hostile(facts="list", feat=feat))
        async with serving(server):
            done = await cli("--json", f"{server.url}/d/")
        assert done.returncode == 0, done.stderr
        rows = {row["name"]: row for row in map(json.loads, done.stdout.splitlines())}
        assert set(rows) == {"plain.txt", "\x1b[31mred.txt"}
        assert rows["plain.txt"]["size"] == 42 and rows["plain.txt"]["type"] == "file"
        assert b"\x1b" not in done.stdout
        assert verbs(server)[-1] == verb


async def test_names_that_cost_more_memory_than_bytes_stop_at_listing_bytes_as_held() -> None:
    # 400 bytes that are not UTF-8 a name: twice that in the name, three times in its URL.
    hostile = Hostile(nlst_flood=-1, flood_name=400, flood_fill=b"\xff")
    server = HostileFtpServer(directories=("/dir",), hostile=hostile)
    async with serving(server):
        done = await cli("--limit", "listing_bytes=1000000", f"{server.url}/dir/")
    assert done.returncode == 7
    assert message(done).startswith("the server sent more than 1000000 bytes of listing entries (as held in memory)")
    assert b"--limit listing_bytes=N" in done.stderr


async def test_a_listing_line_that_never_ends_stops_at_line_bytes() -> None:
    # One 1 MB "name" without a line end.
    server = HostileFtpServer(directories=("/dir",), hostile=Hostile(nlst_flood=1_000_000, flood_name=2_000_000))
    async with serving(server):
        done = await cli(f"{server.url}/dir/")
    assert done.returncode == 7
    assert message(done).startswith("the server sent more than 65536 bytes in one listing line")


async def test_the_listing_caps_leave_a_listing_under_them_alone() -> None:
    server = HostileFtpServer(directories=("/dir",), hostile=Hostile(nlst_flood=8000))
    async with serving(server):
        done = await cli("--json", f"{server.url}/dir/")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1000  # 8 bytes a name


async def test_an_endless_multi_line_greeting_stops_at_reply_lines() -> None:
    server = HostileFtpServer(hostile=Hostile(endless_reply=""))
    async with serving(server):
        done = await cli("--limit", "reply_lines=300", f"{server.url}/file")
    assert done.returncode == 7
    assert message(done).startswith("the server sent more than 300 lines in one FTP reply")
    assert b"--limit reply_lines=N" in done.stderr
    assert server.commands == []


async def test_an_endless_multi_line_reply_to_a_command_stops_at_reply_lines() -> None:
    server = HostileFtpServer({"/f": HELLO}, hostile=Hostile(endless_reply="TYPE"))
    async with serving(server):
        done = await cli(f"{server.url}/f")
    assert done.returncode == 7
    assert message(done).startswith("the server sent more than 10000 lines in one FTP reply")
    assert verbs(server)[-1] == "TYPE"


async def test_endless_1xx_marks_stop_at_reply_lines() -> None:
    for where in ("", "TYPE"):
        server = HostileFtpServer({"/f": HELLO}, hostile=Hostile(endless_marks=where))
        async with serving(server):
            done = await cli("--limit", "reply_lines=500", f"{server.url}/f")
        assert done.returncode == 7, where
        assert message(done).startswith("the server sent more than 500 1xx replies before a final reply")
        assert (verbs(server)[-1:] or [""])[0] == where


async def test_a_reply_line_that_never_ends_stops_at_line_bytes() -> None:
    server = HostileFtpServer(hostile=Hostile(endless_line=""))
    async with serving(server):
        done = await cli("--limit", "line_bytes=1000", f"{server.url}/file")
    assert done.returncode == 7
    assert message(done).startswith("the server sent more than 1000 bytes in one line")
    assert b"--limit line_bytes=N" in done.stderr


# -- informational text: escaped, and the transfer goes on -----------------------------


async def test_decorated_banner_multi_line_text_and_226_are_escaped_and_the_file_arrives() -> None:
    hostile = Hostile(
        greeting=[b"220-" + DECORATED, DECORATED, b"220 " + DECORATED],
        complete=b"226-" + DECORATED + b"\r\n226 done \x1b[5mblink\x1b[0m",
        replies={"TYPE": [b"200-type \x1b[2J", b" \x07\x07", b"200 ok \x9b"]},
    )
    server = HostileFtpServer({"/pub/hello.txt": HELLO}, hostile=hostile)
    async with serving(server):
        done = await cli("-v", f"{server.url}/pub/hello.txt")
    assert done.returncode == 0, done.stderr
    assert done.stdout == HELLO
    for raw in (b"\x1b", b"\x07", b"\x9b", b"\r", b"\xc2\x9b", b"\xff"):
        assert raw not in done.stderr
    assert b"\\x1b[1;32mWelcome\\x1b[0m" in done.stderr  # the trace shows the banner, escaped
    assert b"226 done \\x1b[5mblink" in done.stderr
    assert verbs(server) == ["USER", "PASS", "PWD", "CWD", "TYPE", "SIZE", "MDTM", "EPSV", "RETR"]


async def test_names_with_control_characters_are_listed_escaped() -> None:
    odd = [b"\x1b]0;pwned\x07", b"red\x1b[31m.txt", b"caf\xe9", b"nul\x00name", b"lone\rcr"]
    server = HostileFtpServer({"/d/plain.txt": HELLO}, hostile=Hostile(odd_names=odd))
    async with serving(server):
        listing = await cli(f"{server.url}/d/")
        links = await cli("--json", f"{server.url}/d/")
    assert listing.returncode == 0, listing.stderr
    for raw in (b"\x1b", b"\x07", b"\x00", b"\r", b"\xe9"):
        assert raw not in listing.stdout
    assert b"\\x1b]0;pwned\\x07" in listing.stdout
    assert b"nul\\x00name" in listing.stdout
    rows = [json.loads(line) for line in links.stdout.splitlines()]
    urls = {row["name"]: row["url"] for row in rows}
    assert urls["plain.txt"] == f"{server.url}/d/plain.txt"
    assert urls["red\x1b[31m.txt"] == f"{server.url}/d/red%1B%5B31m.txt"
    # A name that cannot be sent back in a command line gets no URL to follow.
    assert urls["nul\x00name"] is None and urls["lone\rcr"] is None


# -- the fields fetcher acts on: strict -------------------------------------------------


async def test_impossible_pasv_numbers_are_refused_before_any_data_connection() -> None:
    replies = {"EPSV": [b"502 no EPSV here"], "PASV": [b"227 Entering Passive Mode (127,0,0,1,300,7)."]}
    server = HostileFtpServer({"/f": HELLO}, hostile=Hostile(replies=replies))
    async with serving(server):
        done = await cli(f"{server.url}/f")
    assert done.returncode == 7
    assert message(done).startswith('cannot find an address in the PASV reply "227 Entering Passive Mode')
    assert verbs(server)[-2:] == ["EPSV", "PASV"]
    assert "RETR" not in verbs(server)


async def test_a_pasv_reply_with_decoration_around_good_numbers_works() -> None:
    replies = {"EPSV": [b"500 what?"]}
    server = HostileFtpServer({"/f": HELLO}, hostile=Hostile(replies=replies))
    async with serving(server):
        done = await cli(f"{server.url}/f")
    assert done.returncode == 0, done.stderr
    assert done.stdout == HELLO
    assert verbs(server)[-3:] == ["EPSV", "PASV", "RETR"]


async def test_an_epsv_port_out_of_range_is_refused() -> None:
    server = HostileFtpServer({"/f": HELLO}, hostile=Hostile(replies={"EPSV": [b"229 Extended (|||99999|)"]}))
    async with serving(server):
        done = await cli(f"{server.url}/f")
    assert done.returncode == 7
    assert message(done).startswith('cannot find a port in the EPSV reply "229 Extended (|||99999|)"')
    assert "RETR" not in verbs(server)


async def test_size_mdtm_and_257_with_control_characters_are_refused() -> None:
    cases = {
        "SIZE": ([b"213 12\x1b[2J"], "the SIZE reply holds no byte count"),
        "MDTM": ([b"213 2026\x1b1121103000"], "the MDTM reply holds no valid time"),
        "PWD": ([b'257 "/\x1b]0;x\x07" is current'], "the 257 reply names a directory with control characters"),
    }
    for verb, (reply, expected) in cases.items():
        server = HostileFtpServer({"/f": HELLO}, hostile=Hostile(replies={verb: reply}))
        async with serving(server):
            done = await cli(f"{server.url}/f")
        assert done.returncode == 7, verb
        assert message(done).startswith(expected), verb
        assert b"\x1b" not in done.stderr
        assert "RETR" not in verbs(server)


# -- real-server quirks: 450/550 to NLST of an empty directory ---------------------------


async def test_550_no_files_found_for_an_empty_directory_is_an_empty_listing() -> None:
    for refusal in (b"550 No files found", b"450 No files found.", b"550 No such file or directory."):
        server = HostileFtpServer(directories=("/pub/empty",), hostile=Hostile(empty_reply=refusal))
        async with serving(server):
            done = await cli("--json", f"{server.url}/pub/empty/")
        assert done.returncode == 0, (refusal, done.stderr)
        assert done.stdout == b""
        assert verbs(server)[-2:] == ["EPSV", "NLST"]
        assert "CWD empty" in server.commands


async def test_type_d_with_a_name_probes_the_directory_before_calling_it_empty() -> None:
    server = HostileFtpServer(directories=("/pub/empty",), hostile=Hostile(empty_reply=b"550 No files found"))
    async with serving(server):
        empty = await cli("--json", f"{server.url}/pub/empty;type=d")
        missing = await cli("--json", f"{server.url}/pub/missing;type=d")
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout == b""
    assert missing.returncode == 6
    assert message(missing).startswith("listing 'pub/missing': the server answered \"550 No such file or directory.\"")
    sessions = [[line for line in session if line != "QUIT"] for session in server.sessions]
    assert sessions[0][-2:] == ["NLST empty", "CWD empty"]
    assert sessions[1][-2:] == ["NLST missing", "CWD missing"]


async def test_a_missing_directory_is_still_not_found() -> None:
    server = HostileFtpServer(directories=("/pub",), hostile=Hostile(empty_reply=b"550 No files found"))
    async with serving(server):
        done = await cli(f"{server.url}/pub/missing/")
    assert done.returncode == 6
    assert message(done).startswith("changing to directory 'missing'")
    assert "NLST" not in verbs(server)


async def test_a_permission_refusal_is_not_an_empty_listing() -> None:
    server = HostileFtpServer(directories=("/locked",), hostile=Hostile(empty_reply=b"550 Permission denied."))
    async with serving(server):
        done = await cli(f"{server.url}/locked/")
    assert done.returncode == 5
    assert message(done).startswith("listing 'locked': the server answered \"550 Permission denied.\"")


async def test_an_empty_directory_under_r_is_an_empty_listing(tmp_path: Path) -> None:
    files = {"/top/a.txt": HELLO}
    server = HostileFtpServer(files, directories=("/top/empty",), hostile=Hostile(empty_reply=b"550 No files found"))
    manifest = tmp_path / "manifest.jsonl"
    async with serving(server):
        done = await cli("-r", "--layout", "tree", "-d", str(tmp_path / "out"), "--manifest", str(manifest),
                         f"{server.url}/top/")  # fmt: skip
    assert done.returncode == 0, done.stderr
    (host,) = (tmp_path / "out").iterdir()  # --layout tree: one directory per host
    saved = {str(path.relative_to(host)): path.read_bytes() for path in host.rglob("*") if path.is_file()}
    assert saved["top/a.txt"] == HELLO
    assert saved["top/empty/index.listing.json"] == b""  # listed, and empty
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    assert all(record.get("status") != "failed" for record in records), records
    assert "NLST" in verbs(server) and "CWD empty" in server.commands


# -- the memory bench stays runnable -------------------------------------------------------


async def test_the_hostile_rss_bench_measures_a_case(tmp_path: Path) -> None:
    import sys

    from tests.conftest import ROOT

    report = tmp_path / "rss.json"
    argv = [sys.executable, "-m", "bench.hostile_rss", "--case", "ftp_endless_reply", "--json", str(report)]
    done = await trio.run_process(argv, cwd=ROOT, capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr
    (outcome,) = json.loads(report.read_text())
    assert outcome["case"] == "ftp_endless_reply" and outcome["exit_code"] == 7
    assert 0 < outcome["peak_rss_mib"] < 256
    assert outcome["message"].startswith("fetch: the server sent more than 10000 lines in one FTP reply")


async def test_listed_names_never_write_outside_the_output_directory(tmp_path: Path) -> None:
    files = {"/escape.txt": b"outside\n", "/top/sub/inner.txt": HELLO}
    odd = [b"../../escape.txt", b"/escape.txt", b"\x1b[31mred\x07"]
    server = HostileFtpServer(files, hostile=Hostile(odd_names=odd))
    out = tmp_path / "deep" / "out"
    async with serving(server):
        # --parent: without it -r never asks for names that climb out of the start directory (tests/test_mirror.py).
        done = await cli("-r", "--parent", "--layout", "tree", "-d", str(out), f"{server.url}/top/sub/")
    assert done.returncode == 1, done.stderr  # a bulk run where one URL (the ESC name: 550) failed
    written = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert written and all(out in path.parents for path in written)
    assert any(path.read_bytes() == HELLO for path in written)
    assert all("\x1b" not in str(path) and "\x07" not in str(path) for path in written)
    # The odd names were asked for by name, percent-decoded, in the listed directory.
    assert "RETR ../../escape.txt" in server.commands
    # What the server sent for those names landed inside, under the listed directory.
    (host,) = out.iterdir()
    inside = host / "top" / "sub"
    saved = sorted(path.read_bytes() for path in written if path.parent == inside and path.suffix == ".txt")
    assert saved == [HELLO, b"outside\n", b"outside\n"]
