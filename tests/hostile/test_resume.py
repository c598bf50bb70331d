"""`fetch -C` against servers whose file changed, that lie about ranges, or ignore them (issue 29, items 7 and 14).

Every case runs the real command: a first run is cut by the server (or a
file is left as wget or curl would leave it), the server's document
changes, and `fetch -C -o FILE URL` must leave exactly the server's current
bytes in FILE, never the old head with the new tail, and must say on
stderr when it starts over.
"""

from __future__ import annotations

import functools
import logging
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from fetcher import Client
from tests.conftest import run_fetch
from tests.hostile.resume_hostile import ChangingFile, ChangingFtpServer, Version
from tests.servers.ftp_fake import FakeFtpServer, Faults, serving
from tests.servers.http_server import HTTPTestServer

NO_PROXY = dict.fromkeys(("http_proxy", "https_proxy", "HTTPS_PROXY", "HTTP_PROXY", "no_proxy", "NO_PROXY"), "")
#: Two versions of one document, of the same length: only the validators tell them apart.
OLD = bytes(range(256)) * 1200
NEW = bytes(reversed(range(256))) * 1200
CUT = 100_000
OLD_DATE = "Mon, 02 Mar 2026 10:00:00 GMT"
NEW_DATE = "Tue, 03 Mar 2026 11:30:00 GMT"
RESTART = "starting over from 0"


async def fetch(*args: str) -> subprocess.CompletedProcess[bytes]:
    """`fetch ARGS` in a worker thread, so the test's server keeps serving."""
    return await trio.to_thread.run_sync(functools.partial(run_fetch, *args, env=NO_PROXY))


def err(done: subprocess.CompletedProcess[bytes]) -> str:
    return done.stderr.decode("utf-8", "replace")


@pytest.fixture
async def http(nursery: trio.Nursery) -> AsyncIterator[HTTPTestServer]:
    server = HTTPTestServer()
    await nursery.start(server.serve)
    yield server


async def interrupted(server: HTTPTestServer, changing: ChangingFile, target: Path) -> None:
    """A first `fetch -o` that the server cuts after CUT bytes: CUT bytes stay in `.part`."""
    server.routes["/doc.bin"] = changing.route
    changing.cut = [CUT]
    first = await fetch("-o", str(target), server.url("/doc.bin"))
    assert first.returncode != 0, err(first)
    assert not target.exists()
    assert (target.parent / (target.name + ".part")).read_bytes() == OLD[:CUT]


# -- item 14: the file changed between the interrupted and the resumed request -----------------------


@pytest.mark.parametrize(
    ("old", "new", "sent"),
    [
        (Version(OLD, etag='"v1"', modified=OLD_DATE), Version(NEW, etag='"v2"', modified=NEW_DATE), '"v1"'),
        (Version(OLD, modified=OLD_DATE), Version(NEW, modified=NEW_DATE), OLD_DATE),
    ],
    ids=["etag", "last-modified"],
)
async def test_a_changed_file_is_fetched_whole_through_if_range(
    http: HTTPTestServer, tmp_path: Path, old: Version, new: Version, sent: str
) -> None:
    target = tmp_path / "doc.bin"
    changing = ChangingFile(old, mode="honour")
    await interrupted(http, changing, target)
    changing.now = new
    done = await fetch("-C", "-o", str(target), http.url("/doc.bin"))
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == NEW
    resumed = http.requests[-1]
    assert (resumed.header("range"), resumed.header("if-range")) == (f"bytes={CUT}-", sent)
    assert len(http.requests) == 2  # If-Range made the server send the new file at once
    assert "changed on the server" in err(done) and RESTART in err(done)
    assert not (tmp_path / "doc.bin.part").exists() and not (tmp_path / "doc.bin.part.resume").exists()


@pytest.mark.parametrize("validators", ["etag", "last-modified", "length"])
async def test_a_server_ignoring_if_range_cannot_splice(http: HTTPTestServer, tmp_path: Path, validators: str) -> None:
    """The 206 carries the new version's tail; its ETag, date or total length gives it away."""
    target = tmp_path / "doc.bin"
    old = Version(OLD, etag='"v1"' if validators == "etag" else None,
                  modified=OLD_DATE if validators == "last-modified" else None)  # fmt: skip
    body = NEW + b"grown" if validators == "length" else NEW
    new = Version(body, etag='"v2"' if validators == "etag" else None,
                  modified=NEW_DATE if validators == "last-modified" else None)  # fmt: skip
    changing = ChangingFile(old, mode="ignore")
    await interrupted(http, changing, target)
    changing.now = new
    done = await fetch("-C", "-o", str(target), http.url("/doc.bin"))
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == body
    ranges = [request.header("range") for request in http.requests]
    assert ranges == [None, f"bytes={CUT}-", None]
    assert "changed on the server" in err(done) and RESTART in err(done)


@pytest.mark.parametrize("mode", ["shifted", "lying"])
async def test_a_206_that_does_not_continue_the_part_is_not_appended(
    http: HTTPTestServer, tmp_path: Path, mode: str
) -> None:
    """A 206 starting at another byte, or whose length disagrees with its range: start over, exit 0."""
    target = tmp_path / "doc.bin"
    changing = ChangingFile(Version(OLD, etag='"v1"'), mode=mode)
    await interrupted(http, changing, target)
    done = await fetch("-C", "-o", str(target), http.url("/doc.bin"))
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == OLD
    assert [request.header("range") for request in http.requests] == [None, f"bytes={CUT}-", None]
    assert RESTART in err(done)


async def test_an_unchanged_file_still_resumes(http: HTTPTestServer, tmp_path: Path) -> None:
    target = tmp_path / "doc.bin"
    changing = ChangingFile(Version(OLD, etag='"v1"', modified=OLD_DATE), mode="honour")
    await interrupted(http, changing, target)
    assert (tmp_path / "doc.bin.part.resume").exists()
    done = await fetch("-C", "-o", str(target), http.url("/doc.bin"))
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == OLD
    assert len(http.requests) == 2 and http.requests[-1].header("if-range") == '"v1"'
    assert err(done) == ""
    assert sorted(path.name for path in tmp_path.iterdir()) == ["doc.bin"]


# -- item 7: a resume that is not one says so ------------------------------------------------------------


async def test_a_server_ignoring_range_says_it_starts_over_without_v(http: HTTPTestServer, tmp_path: Path) -> None:
    target = tmp_path / "doc.bin"
    changing = ChangingFile(Version(OLD, etag='"v1"'), mode="no-ranges")
    await interrupted(http, changing, target)
    done = await fetch("-C", "-o", str(target), http.url("/doc.bin"))
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == OLD
    assert err(done) == f"fetch: {target}: the server ignored the byte range; {RESTART}\n"


async def test_a_partial_file_without_part_is_continued_from_its_length(http: HTTPTestServer, tmp_path: Path) -> None:
    """As `curl -C -` and `wget -c`: FILE left by another tool is continued, not fetched again."""
    target = tmp_path / "doc.bin"
    target.write_bytes(OLD[:CUT])
    http.routes["/doc.bin"] = ChangingFile(Version(OLD, etag='"v1"')).route
    done = await fetch("-C", "-o", str(target), http.url("/doc.bin"))
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == OLD
    assert [request.header("range") for request in http.requests] == [f"bytes={CUT}-"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["doc.bin"]


async def test_a_complete_or_longer_file_without_part_is_left_alone(http: HTTPTestServer, tmp_path: Path) -> None:
    target = tmp_path / "doc.bin"
    http.routes["/doc.bin"] = ChangingFile(Version(OLD, etag='"v1"')).route
    target.write_bytes(OLD)
    done = await fetch("-C", "-o", str(target), http.url("/doc.bin"))
    assert done.returncode == 0, err(done)
    assert err(done) == f"fetch: {target} is already complete ({len(OLD)} bytes); nothing to do\n"
    assert http.requests[-1].header("range") == f"bytes={len(OLD)}-"  # answered 416: no body sent
    longer = OLD + b"local additions"
    target.write_bytes(longer)
    done = await fetch("-C", "-o", str(target), http.url("/doc.bin"))
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == longer
    assert "is longer than the document on the server" in err(done) and "kept it" in err(done)


async def test_a_server_ignoring_range_for_a_partial_file_replaces_it_whole(
    http: HTTPTestServer, tmp_path: Path
) -> None:
    target = tmp_path / "doc.bin"
    target.write_bytes(OLD[:CUT])
    http.routes["/doc.bin"] = ChangingFile(Version(OLD), mode="no-ranges").route
    done = await fetch("-C", "-o", str(target), http.url("/doc.bin"))
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == OLD
    assert err(done) == f"fetch: {target}: the server ignored the byte range; {RESTART}\n"


async def test_the_library_warns_when_a_resume_starts_over(
    http: HTTPTestServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`Client.download(resume=True)` (and so bulk runs) checks the same and logs a warning."""
    target = tmp_path / "doc.bin"
    changing = ChangingFile(Version(OLD, etag='"v1"'), mode="ignore")
    await interrupted(http, changing, target)
    changing.now = Version(NEW, etag='"v2"')
    with caplog.at_level(logging.WARNING, logger="fetcher"):
        async with Client() as client:
            done = await client.download(http.url("/doc.bin"), target, resume=True)
    assert target.read_bytes() == NEW and done.resumed_from == 0
    assert any("changed on the server" in line and RESTART in line for line in caplog.messages)


# -- FTP: no validators, but SIZE and MDTM -----------------------------------------------------------------


@pytest.mark.parametrize("change", ["content-and-time", "size"])
async def test_ftp_resume_of_a_changed_file_starts_over(tmp_path: Path, change: str) -> None:
    target = tmp_path / "doc.bin"
    faults = Faults(reset_after=CUT, reset_hard=False, reset_times=1)
    async with serving(FakeFtpServer({"/doc.bin": OLD}, faults=faults, mdtm=b"20260302100000")) as server:
        first = await fetch("-o", str(target), f"{server.url}/doc.bin")
        assert first.returncode != 0
        assert (tmp_path / "doc.bin.part").read_bytes() == OLD[:CUT]
        new = NEW if change == "content-and-time" else NEW + b"appended"
        server.files["/doc.bin"] = new
        if change == "content-and-time":
            server.mdtm = b"20260303113000"
        done = await fetch("-C", "-o", str(target), f"{server.url}/doc.bin")
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == new
    assert not any(line.startswith("REST") for line in server.sessions[-1])
    assert "changed on the server" in err(done) and RESTART in err(done)


async def test_ftp_change_between_two_attempts_of_one_run_is_not_spliced(tmp_path: Path) -> None:
    """The retry after a cut resumes; the file changed in between: the whole new file, said once."""
    target = tmp_path / "doc.bin"
    server = ChangingFtpServer({"/doc.bin": OLD}, faults=Faults(reset_after=CUT, reset_hard=False, reset_times=1),
                               mdtm=b"20260302100000")  # fmt: skip
    server.after_cut = (NEW, b"20260303113000")
    async with serving(server):
        done = await fetch("--retries", "1", "-o", str(target), f"{server.url}/doc.bin")
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == NEW
    commands = [line for session in server.sessions for line in session if line.startswith(("REST", "RETR"))]
    assert commands == ["RETR doc.bin", "RETR doc.bin"]
    assert err(done).count(RESTART) == 1 and "changed on the server" in err(done)


async def test_ftp_resume_of_an_unchanged_file_continues_it(tmp_path: Path) -> None:
    target = tmp_path / "doc.bin"
    faults = Faults(reset_after=CUT, reset_hard=False, reset_times=1)
    async with serving(FakeFtpServer({"/doc.bin": OLD}, faults=faults)) as server:
        first = await fetch("-o", str(target), f"{server.url}/doc.bin")
        assert first.returncode != 0
        done = await fetch("-C", "-o", str(target), f"{server.url}/doc.bin")
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == OLD
    assert f"REST {CUT}" in server.sessions[-1]
    assert err(done) == ""


async def test_ftp_rest_refused_says_it_starts_over(tmp_path: Path) -> None:
    target = tmp_path / "doc.bin"
    (tmp_path / "doc.bin.part").write_bytes(OLD[:CUT])
    async with serving(FakeFtpServer({"/doc.bin": OLD}, faults=Faults(rest=False))) as server:
        done = await fetch("-C", "-o", str(target), f"{server.url}/doc.bin")
    assert done.returncode == 0, err(done)
    assert target.read_bytes() == OLD
    assert f"REST {CUT}" in server.sessions[-1]
    assert "the server refused to resume" in err(done) and RESTART in err(done)
