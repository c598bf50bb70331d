"""Bulk runs on a Dask cluster (fetcher/cluster/): two worker processes on this machine.

One LocalCluster serves the whole module (starting one costs seconds); the
test that kills a worker runs last.  The servers are the in-repo trio
servers, run in a thread of their own so that the worker processes reach
them on 127.0.0.1 while the test drives `fetch` in the main thread.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from distributed import Client as DaskClient
from distributed import LocalCluster

from fetcher import cluster
from fetcher.cli.main import main
from fetcher.client import Client
from fetcher.cluster import forkgate, scheduler, shards
from fetcher.cluster.worker import BatchTask, Runner, close_runner, run_batch, runner
from fetcher.errors import FetchError
from fetcher.handler.notes import Confinement, RequestNotes
from fetcher.settings import Settings
from fetcher.url import parse_url
from tests.servers.common import serving
from tests.servers.ftp_fake import FakeFtpServer
from tests.servers.gopher import GopherServer
from tests.servers.http_server import Exchange, HTTPTestServer, Received


def body(name: str) -> bytes:
    return (name.encode() + b"\n") * 40


class _EveryPath(dict[str, Any]):
    """Routes that send every path to one route (the server looks routes up with .get)."""

    def __init__(self, route: Any) -> None:
        super().__init__()
        self.route = route

    def get(self, key: str, default: Any = None) -> Any:
        return self.route


class Servers:
    """HTTP servers (one host each: host and port make the shard key), an FTP and a Gopher server."""

    def __init__(self, http_hosts: int = 2, delay: float = 0.0, on_request: Any = None) -> None:
        self.http = [HTTPTestServer() for _ in range(http_hosts)]
        self.delay = delay
        self.on_request = on_request
        for server in self.http:
            server.routes = _EveryPath(self._route)
        self.ftp = FakeFtpServer({f"/pub/f{i}.txt": body(f"ftp{i}") for i in range(6)})
        self.gopher = GopherServer({f"/g{i}.txt".encode(): body(f"gopher{i}") for i in range(6)})
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)

    async def _route(self, request: Received, exchange: Exchange) -> None:
        if self.on_request is not None:
            self.on_request(request)
        if self.delay:
            await trio.sleep(self.delay)
        name = request.path.rsplit("/", 1)[1]
        if name.startswith("missing"):
            await exchange.respond(404, b"no such page\n")
        else:
            await exchange.respond(200, body(name), [("Content-Type", "text/plain")])

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            for server in self.http:
                await nursery.start(server.serve)
            await nursery.start(self.ftp.serve)
            async with serving(self.gopher):
                self._ready.set()
                await self._stop.wait()
            nursery.cancel_scope.cancel()

    def __enter__(self) -> Servers:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._token is not None and self._stop is not None
        self._token.run_sync_soon(self._stop.set)
        self._thread.join(10)

    def requests(self) -> Counter[str]:
        return Counter(f"{server.port}{request.path}" for server in self.http for request in server.requests)


@pytest.fixture(scope="module")
def dask() -> Iterator[DaskClient]:
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit="400MiB", dashboard_address="127.0.0.1:0"
        ) as local,
        DaskClient(local) as client,
    ):
        yield client


def records(path: Path, root: Path) -> dict[str, dict[str, Any]]:
    """Manifest records by URL, without timings, with paths relative to the output directory."""
    rows: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        row.pop("seconds")
        for key in ("path", "target"):
            if row.get(key):
                row[key] = str(Path(row[key]).relative_to(root))
        assert row["url"] not in rows, f"two records for {row['url']}"
        rows[row["url"]] = row
    return rows


def mixed_urls(servers: Servers, tmp_path: Path) -> list[str]:
    files = tmp_path / "files"
    files.mkdir()
    for i in range(4):
        (files / f"local{i}.txt").write_bytes(body(f"local{i}"))
    urls: list[str] = []
    for server in servers.http:
        urls += [server.url(f"/h{server.port}-{i}.txt") for i in range(12)]
        urls.append(server.url("/missing.txt"))
    ftp = servers.ftp.url
    urls += [f"{ftp}/pub/f{i}.txt" for i in range(6)] + [f"{ftp}/pub/absent.txt"]
    gopher = f"gopher://127.0.0.1:{servers.gopher.port}"
    urls += [f"{gopher}/0/g{i}.txt" for i in range(6)] + [f"{gopher}/0/absent.txt"]
    urls += [(files / f"local{i}.txt").as_uri() for i in range(4)] + [(files / "absent.txt").as_uri()]
    urls += ["http://127.0.0.1:25/refused-port", "ftp://bad host/"]
    return urls


def test_mixed_run_manifest_matches_single_process(
    dask: DaskClient, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    address = dask.scheduler.address
    with Servers() as servers:
        urls = mixed_urls(servers, tmp_path)
        listing = tmp_path / "urls.txt"
        listing.write_text("\n".join(urls) + "\n")
        common = ["-i", str(listing), "--no-progress", "--timeout", "5", "--retries", "1", "-j", "4"]
        local_code = main([*common, "-d", str(tmp_path / "one"), "--manifest", str(tmp_path / "one.jsonl")])
        local_err = capsysbinary.readouterr().err.decode()
        cluster_code = main(
            [*common, "-d", str(tmp_path / "two"), "--manifest", str(tmp_path / "two.jsonl"), "--cluster", address]
        )
        cluster_err = capsysbinary.readouterr().err.decode()
        served = servers.requests()
    assert local_code == cluster_code == 1
    single = records(tmp_path / "one.jsonl", tmp_path / "one")
    spread = records(tmp_path / "two.jsonl", tmp_path / "two")
    assert set(single) == set(urls)
    assert spread == single
    failed = {url for url, row in spread.items() if row["status"] == "failed"}
    assert len(failed) == 2 + 1 + 1 + 1 + 2  # two HTTP 404s, FTP, Gopher, file, guard, bad URL
    assert spread["http://127.0.0.1:25/refused-port"]["exit_code"] == 3
    for _url, row in spread.items():
        if row["status"] == "ok":
            assert (tmp_path / "two" / row["path"]).read_bytes() == (tmp_path / "one" / row["path"]).read_bytes()
    # The summary line is the same, counted across the cluster.
    summary = [
        line.split(";")[0] for err in (local_err, cluster_err) for line in err.splitlines() if "retrieved" in line
    ]
    assert summary == ["fetch: 40 retrieved, 7 failed"] * 2
    # Each HTTP document was asked for once per run, whichever worker ran it.
    assert set(served.values()) == {2}
    assert not list((tmp_path / "two").glob(".fetch-cluster-*"))  # the batch journals are gone

    # --skip-done works across local and cluster runs: only what failed runs again.
    code = main([*common, "-d", str(tmp_path / "two"), "--manifest", str(tmp_path / "three.jsonl"),
                 "--skip-done", str(tmp_path / "one.jsonl"), "--cluster", address])  # fmt: skip
    assert code == 1
    again = records(tmp_path / "three.jsonl", tmp_path / "two")
    assert {url for url, row in again.items() if row["status"] != "skipped"} == failed


def test_output_to_an_fsspec_url(dask: DaskClient, tmp_path: Path) -> None:
    """-d file:///...: workers stage each file and stream it through fsspec (LocalFileSystem) to the output.

    The workers are other processes: they reach the output only through the
    URL, as they would reach s3://.  The manifest is the single-process
    run's, with paths inside the URL.
    """
    with Servers() as servers:
        urls = mixed_urls(servers, tmp_path)
        listing = tmp_path / "urls.txt"
        listing.write_text("\n".join(urls) + "\n")
        common = ["-i", str(listing), "--no-progress", "--timeout", "5", "--retries", "1", "-j", "4"]
        assert main([*common, "-d", str(tmp_path / "one"), "--manifest", str(tmp_path / "one.jsonl")]) == 1
        output = f"file://{tmp_path}/two"
        code = main([*common, "-d", output, "--manifest", str(tmp_path / "two.jsonl"),
                     "--cluster", dask.scheduler.address])  # fmt: skip
    assert code == 1
    single = records(tmp_path / "one.jsonl", tmp_path / "one")
    spread: dict[str, dict[str, Any]] = {}
    for line in (tmp_path / "two.jsonl").read_text().splitlines():
        row = json.loads(line)
        row.pop("seconds")
        for key in ("path", "target"):
            if row.get(key):
                assert row[key].startswith(output + "/"), row
                row[key] = row[key][len(output) + 1 :]
        spread[row["url"]] = row
    assert spread == single
    saved = sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*") if p.is_file())
    assert saved == sorted(Path(row["path"]) for row in single.values() if row["status"] == "ok")
    for row in single.values():
        if row["status"] == "ok":
            assert (tmp_path / "two" / row["path"]).read_bytes() == (tmp_path / "one" / row["path"]).read_bytes()
    assert not [p for p in (tmp_path / "two").rglob("*") if p.name.startswith(".fetch") or p.suffix == ".part"]

    # --skip-done reads the URL paths back: only the failures run again.
    code = main([*common, "-d", output, "--manifest", str(tmp_path / "three.jsonl"),
                 "--skip-done", str(tmp_path / "two.jsonl"), "--cluster", dask.scheduler.address])  # fmt: skip
    again = [json.loads(line) for line in (tmp_path / "three.jsonl").read_text().splitlines()]
    assert {row["url"] for row in again if row["status"] != "skipped"} == {
        url for url, row in single.items() if row["status"] == "failed"
    }


def test_output_to_an_ftp_server_through_fsspec(dask: DaskClient, tmp_path: Path) -> None:
    """-d ftp://user:password@host/out: a file system that is not local, reached by the worker processes.

    fsspec's FTP file system does not rename in place: each file is written
    to a temporary name (STOR /tmp/...) and moved to its name when complete
    (RNFR/RNTO), the commit of an upload with autocommit=False.
    """
    pytest.importorskip("pyftpdlib")
    from tests.interop.ftp_servers import PyFtpd

    home = tmp_path / "ftp-home"
    (home / "tmp").mkdir(parents=True)
    ftpd = PyFtpd(home, anonymous=False)
    ftpd.server.handler.authorizer.add_user("up", "s3cret", str(home), perm="elradfmw")
    files = tmp_path / "files"
    files.mkdir()
    urls = []
    for i in range(12):
        (files / f"d{i}.txt").write_bytes(body(f"d{i}"))
        urls.append((files / f"d{i}.txt").as_uri())
    listing = tmp_path / "urls.txt"
    listing.write_text("\n".join(urls) + "\n")
    ftpd.start()
    try:
        output = f"ftp://up:s3cret@127.0.0.1:{ftpd.port}/out"
        code = main(["-i", str(listing), "-d", output, "--manifest", str(tmp_path / "m.jsonl"), "--no-progress",
                     "--cluster", dask.scheduler.address])  # fmt: skip
    finally:
        ftpd.stop()
    assert code == 0
    assert sorted(p.name for p in (home / "out").iterdir()) == sorted(f"d{i}.txt" for i in range(12))
    for i in range(12):
        assert (home / "out" / f"d{i}.txt").read_bytes() == body(f"d{i}")
    assert list((home / "tmp").iterdir()) == []
    rows = [json.loads(line) for line in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert sorted(row["path"] for row in rows) == sorted(
        f"ftp://up:***@127.0.0.1:{ftpd.port}/out/d{i}.txt" for i in range(12)
    )
    commands = [line for session in ftpd.commands() for line in session]
    stored = [line.split(" ", 1)[1] for line in commands if line.startswith("STOR ")]
    renamed = [line.split(" ", 1)[1] for line in commands if line.startswith("RNTO ")]
    assert all(name.startswith("/tmp/") for name in stored if "fetch-cluster" not in name)
    assert sorted(renamed) == sorted(f"/out/d{i}.txt" for i in range(12))


def archived(directory: Path, name: str) -> tuple[Counter[str], list[Path]]:
    """How often each URL's response or resource record appears over NAME-*.warc.gz (each file warcio-checked)."""
    from tests.test_warc import read_warc

    files = sorted(directory.glob(f"{name}-*.warc.gz"))
    counts = Counter[str]()
    for path in files:
        for record in read_warc(path):
            if record.type in ("response", "resource"):
                assert record.url is not None
                counts[record.url] += 1
    return counts, files


def indexed(directory: Path, name: str, files: list[Path]) -> list[dict[str, Any]]:
    """NAME.cdxj of a cluster run, checked: sorted, one line per response, resource or revisit record
    of `files`, each line's filename, offset and length locating its record."""
    from warcio.archiveiterator import ArchiveIterator

    lines = (directory / f"{name}.cdxj").read_text().splitlines()
    assert lines == sorted(lines)
    entries = [json.loads(line.split(" ", 2)[2]) for line in lines]
    wanted = Counter[tuple[str, str]]()
    for path in files:
        with path.open("rb") as source:
            for record in ArchiveIterator(source):
                if record.rec_type in ("response", "resource", "revisit"):
                    wanted[(path.name, record.rec_headers.get_header("WARC-Target-URI"))] += 1
    assert Counter((entry["filename"], entry["url"]) for entry in entries) == wanted
    for entry in entries:
        with (directory / entry["filename"]).open("rb") as source:
            source.seek(int(entry["offset"]))
            record = next(iter(ArchiveIterator(source)))
            assert record.rec_headers.get_header("WARC-Target-URI") == entry["url"]
            record.content_stream().read()
        assert int(entry["length"]) > 0
    return entries


def test_warc_files_on_a_cluster(dask: DaskClient, tmp_path: Path) -> None:
    """--warc-file: each batch archives into its own files, rotated past --warc-max-size, each URL once;
    --warc-cdx indexes all of them in NAME.cdxj."""
    pytest.importorskip("warcio")
    with Servers() as servers:
        urls = mixed_urls(servers, tmp_path)
        listing = tmp_path / "urls.txt"
        listing.write_text("\n".join(urls) + "\n")
        warc = tmp_path / "archive" / "crawl"
        warc.parent.mkdir()
        code = main(["-i", str(listing), "--no-progress", "--timeout", "5", "--retries", "0", "-j", "4",
                     "-d", str(tmp_path / "out"), "--manifest", str(tmp_path / "m.jsonl"),
                     "--warc-file", str(warc), "--warc-max-size", "3000", "--warc-cdx",
                     "--cluster", dask.scheduler.address])  # fmt: skip
    assert code == 1
    rows = records(tmp_path / "m.jsonl", tmp_path / "out")
    ok = {url for url, row in rows.items() if row["status"] == "ok"}
    counts, files = archived(warc.parent, "crawl")
    # Every retrieved URL once; an answered failure (an HTTP 404) may be archived too, once.
    assert ok <= set(counts) <= set(rows)
    assert set(counts.values()) == {1}
    # Several batches, and at least one batch's archive rotated into a second file.
    names = {path.name.rsplit("-", 1)[0] for path in files}
    assert len(names) >= 2 and len(files) > len(names)
    assert all(re.fullmatch(r"crawl-[0-9a-f]{12}-\d{6}-0-\d{5}\.warc\.gz", path.name) for path in files), files
    assert {entry["url"] for entry in indexed(warc.parent, "crawl", files)} == set(counts)
    # Staging is gone: the archive's files and the one index are left.
    assert [p.name for p in warc.parent.iterdir() if not p.name.endswith(".warc.gz")] == ["crawl.cdxj"]


def test_the_library_call_yields_what_client_fetch_all_yields(dask: DaskClient, tmp_path: Path) -> None:
    """fetcher.cluster.fetch_all(urls, dask_client, settings): Client.fetch_all's outcomes, into memory here."""
    settings = Settings(timeout=5)

    def seen(outcome: Any) -> tuple[Any, ...]:
        result, error = outcome.result, outcome.error
        return (
            outcome.ok, type(result).__name__, getattr(result, "kind", None), getattr(result, "content", None),
            getattr(result, "content_type", None), str(getattr(result, "url", "")), type(error).__name__,
            str(error) if error else None, getattr(error, "exit_code", None), outcome.attempts,
        )  # fmt: skip

    async def run(spread: bool) -> dict[str, tuple[Any, ...]]:
        got: dict[str, tuple[Any, ...]] = {}
        if spread:
            async with cluster.fetch_all(urls, dask, settings, retries=0) as outcomes:
                async for outcome in outcomes:
                    assert outcome.url not in got
                    got[outcome.url] = seen(outcome)
            return got
        async with Client(settings) as client, client.fetch_all(urls, retries=0) as outcomes:
            async for outcome in outcomes:
                got[outcome.url] = seen(outcome)
        return got

    with Servers() as servers:
        urls = mixed_urls(servers, tmp_path)
        local, spread = trio.run(run, False), trio.run(run, True)
    assert set(local) == set(urls)
    assert spread == local
    assert {row[1] for row in spread.values()} == {"Fetched", "NoneType"}
    assert sum(row[0] for row in spread.values()) == 40


def test_urls_read_and_named_while_the_cluster_starts(
    dask: DaskClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver reads and names the URLs while the cluster starts: here all of them before it is up.

    The cluster comes up only once every URL has its name (a run that did
    not read on while connecting would wait here in vain); the outcomes and
    files are those of a local run.
    """
    named: list[str] = []
    all_named = threading.Event()
    real_connect = scheduler.connect

    def late_connect(target: Any) -> Any:
        assert all_named.wait(30), f"only {len(named)} URLs named before the cluster was up"
        return real_connect(target)

    monkeypatch.setattr(scheduler, "connect", late_connect)

    def naming(root: Path, expected: int, record: bool) -> Any:
        def destination(url: Any) -> Path:
            text = str(url)
            if record:
                named.append(text)
                if len(named) == expected:
                    all_named.set()
            return root / re.sub(r"[^A-Za-z0-9.]+", "_", text)

        return destination

    async def run(spread: bool, urls: list[str], root: Path, expected: int) -> dict[str, tuple[Any, ...]]:
        got: dict[str, tuple[Any, ...]] = {}
        destination = naming(root, expected, spread)
        settings = Settings(timeout=5)
        async with (
            cluster.fetch_all(urls, dask, settings, retries=0, destination=destination)
            if spread
            else Client(settings).fetch_all(urls, retries=0, destination=destination)
        ) as outcomes:
            async for outcome in outcomes:
                assert outcome.url not in got
                path = getattr(outcome.result, "path", None)
                got[outcome.url] = (
                    outcome.ok, type(outcome.error).__name__, str(outcome.error) if outcome.error else None,
                    getattr(outcome.result, "bytes", None), path.name if path else None,
                    path.read_bytes() if path else None,
                )  # fmt: skip
        return got

    with Servers() as servers:
        urls = mixed_urls(servers, tmp_path)
        valid = 0
        for text in urls:
            try:
                parse_url(text)
                valid += 1
            except FetchError:
                pass
        (tmp_path / "local").mkdir()
        (tmp_path / "spread").mkdir()
        local = trio.run(run, False, urls, tmp_path / "local", valid)
        spread = trio.run(run, True, urls, tmp_path / "spread", valid)
    assert all_named.is_set() and sorted(named) == sorted(u for u in urls if u != "ftp://bad host/")
    assert set(spread) == set(urls)
    assert spread == local
    assert sum(row[0] for row in spread.values()) == 40


def test_a_fork_from_another_thread_waits_for_the_trio_threads_step() -> None:
    """While a run goes on, a fork from another thread (dask forking a worker) happens between trio's steps.

    The step below starts the forking thread, then computes without a
    checkpoint for a while: without the gate the fork happens mid-step.
    """
    log: list[str] = []

    def fork() -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        log.append("forked")
        os.waitpid(pid, 0)

    async def main() -> None:
        gate = forkgate.ForkGate()
        trio.lowlevel.add_instrument(gate)
        forkgate.GATES.add(gate)
        try:
            thread = threading.Thread(target=fork)
            thread.start()
            until = time.monotonic() + 0.3
            while time.monotonic() < until:
                pass  # one step: no checkpoint
            log.append("step over")
            await trio.to_thread.run_sync(thread.join)
        finally:
            forkgate.GATES.discard(gate)
            trio.lowlevel.remove_instrument(gate)

    trio.run(main)
    assert log == ["step over", "forked"]


def test_a_host_never_runs_on_two_workers_at_once(
    dask: DaskClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shards.Shards, "GROWTH", 1)  # ten batches of 4 per host: many chances to move
    # Three hosts take turns on two workers, both busy at once (-j 1: one host per batch): the
    # host left waiting goes to the worker that frees first, so hosts move from worker to worker.
    with Servers(http_hosts=3, delay=0.01) as servers:
        urls = [server.url(f"/n{i}.txt") for server in servers.http for i in range(40)]
        out = tmp_path / "out"
        out.mkdir()

        async def run() -> list[cluster.ClusterOutcome]:
            got: list[cluster.ClusterOutcome] = []
            async with cluster.fetch_all(
                urls, dask, Settings(timeout=5), jobs=1, per_host=1, host_chunk=4,
                destination=lambda url: out / f"{url.port}-{url.path.strip('/')}",
            ) as results:  # fmt: skip
                async for outcome in results:
                    assert isinstance(outcome, cluster.ClusterOutcome)
                    got.append(outcome)
            return got

        outcomes = trio.run(run)
    assert sorted(o.url for o in outcomes) == sorted(urls)
    assert [o for o in outcomes if not o.ok] == []
    by_host: dict[str, list[cluster.ClusterOutcome]] = {}
    for outcome in outcomes:
        by_host.setdefault(outcome.url.rsplit("/", 1)[0], []).append(outcome)
    moved = 0
    for spans in by_host.values():
        spans.sort(key=lambda o: o.started)
        moved += len({o.worker for o in spans}) > 1
        for earlier, later in itertools.pairwise(spans):
            if earlier.worker != later.worker:
                # Every URL of this host on the earlier worker ended before this one started.
                last_end = max(o.ended for o in spans if o.worker == earlier.worker and o.started <= later.started)
                assert last_end <= later.started, (earlier, later)
    assert moved, "no host's shards ran on both workers: the check above proved nothing"


def test_recursive_run_matches_single_process(dask: DaskClient, tmp_path: Path) -> None:
    """-r: listings come back to the driver, which follows their links and ships the new URLs out again."""
    with Servers(http_hosts=0) as servers:
        root = f"gopher://127.0.0.1:{servers.gopher.port}/"
        common = ["-r", "--depth", "2", "--no-progress", "--timeout", "5", "--retries", "0", root]
        main([*common, "-d", str(tmp_path / "one"), "--manifest", str(tmp_path / "one.jsonl")])
        main([*common, "-d", str(tmp_path / "two"), "--manifest", str(tmp_path / "two.jsonl"),
              "--cluster", dask.scheduler.address])  # fmt: skip
    single = records(tmp_path / "one.jsonl", tmp_path / "one")
    assert len([row for row in single.values() if row.get("depth")]) >= 3
    assert records(tmp_path / "two.jsonl", tmp_path / "two") == single


def test_recursive_timestamping_on_a_cluster(
    dask: DaskClient, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """-r -N: the driver's If-Modified-Since notes travel with the batches, so a second run gets only 304s."""
    from tests.test_mirror_http import _site

    with Servers(http_hosts=1) as servers:
        server = servers.http[0]
        server.routes = {}
        _site(server)
        argv = ["-r", "-N", "--layout", "tree", "-d", str(tmp_path / "out"), "--manifest", str(tmp_path / "m.jsonl"),
                "--no-progress", "--timeout", "5", "--cluster", dask.scheduler.address, server.url("/site/index.html")]
        assert main(argv) == 0
        first = len(server.requests)
        assert "fetch: mirror: 7 new, 0 updated, 0 unchanged, 1 skipped, 0 failed" in capsys.readouterr().err
        assert main(argv) == 0
        second = server.requests[first:]
    assert second and all(request.header("if-modified-since") for request in second if request.path != "/robots.txt")
    assert "fetch: mirror: 0 new, 0 updated, 7 unchanged, 1 skipped, 0 failed; 0 bytes" in capsys.readouterr().err


def test_recursive_ftp_on_a_cluster_never_leaves_the_start_directory(dask: DaskClient, tmp_path: Path) -> None:
    """-r over FTP on a cluster: the records of a local run, and nothing outside the start directory touched."""
    from tests.test_mirror import LinkingFtpServer, _touched

    files = {"/pub/a.txt": b"alpha", "/pub/sub/b.txt": b"beta", "/secret.txt": b"secret", "/etc/passwd": b"root"}
    links = {"/pub/up": "..", "/pub/loop": ".", "/pub/sub/back": "../..", "/pub/pw": "/etc/passwd",
             "/pub/sub/again": "/pub"}  # fmt: skip
    servers = Servers(http_hosts=0)
    servers.ftp = LinkingFtpServer(files, links)
    with servers:
        common = ["-r", "--layout", "tree", "--no-progress", "--timeout", "5", f"{servers.ftp.url}/pub/"]
        assert main([*common, "-d", str(tmp_path / "one"), "--manifest", str(tmp_path / "one.jsonl")]) == 0
        local = len(servers.ftp.sessions)
        assert main([*common, "-d", str(tmp_path / "two"), "--manifest", str(tmp_path / "two.jsonl"),
                     "--cluster", dask.scheduler.address]) == 0  # fmt: skip
        touched = _touched(servers.ftp)  # both runs: the local one is the reference
    assert local and len(servers.ftp.sessions) > local
    outside = [path for path in touched if not (path == "/" or path.startswith("/pub/") or path == "/pub")]
    assert outside == []
    assert records(tmp_path / "two.jsonl", tmp_path / "two") == records(tmp_path / "one.jsonl", tmp_path / "one")
    assert not list((tmp_path / "two").rglob("secret.txt")) and not list((tmp_path / "two").rglob("passwd"))


def test_a_local_cluster_from_the_command_line(tmp_path: Path) -> None:
    """`--cluster local:2` in a fresh process: fetch starts (forks) its own two workers and stops them."""
    files = tmp_path / "files"
    files.mkdir()
    urls = []
    for i in range(30):
        (files / f"d{i}.txt").write_bytes(body(f"d{i}"))
        urls.append((files / f"d{i}.txt").as_uri())
    listing = tmp_path / "urls.txt"
    listing.write_text("\n".join(urls) + "\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    env.pop("DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD", None)
    done = subprocess.run(
        [sys.executable, "-m", "fetcher", "-i", str(listing), "-d", str(tmp_path / "out"), "--no-progress",
         "--manifest", str(tmp_path / "m.jsonl"), "--cluster", "local:2"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("fetch: 30 retrieved, 0 failed;"), done.stderr
    rows = records(tmp_path / "m.jsonl", tmp_path / "out")
    assert set(rows) == set(urls)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(f"d{i}.txt" for i in range(30))


def test_ctrl_c_on_a_cluster_run(tmp_path: Path) -> None:
    """Ctrl-C mid-batch: exit 130, a file the batch completed recorded as saved (as a local run records it),
    the rest as interrupted, the workers stopped, no traceback."""
    listing = tmp_path / "urls.txt"
    listing.write_text("file:///etc/hostname\nfile:///dev/zero\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    child = subprocess.Popen(
        [sys.executable, "-m", "fetcher", "-i", str(listing), "-d", str(tmp_path / "out"), "--no-progress",
         "--manifest", str(tmp_path / "m.jsonl"), "--cluster", "local:2"],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    part = tmp_path / "out" / "zero.part"

    def journaled() -> bool:
        return any("hostname" in path.read_text() for path in (tmp_path / "out").glob(".fetch-cluster-*/*.jsonl"))

    for _ in range(600):  # until a worker is mid-batch (writing /dev/zero's endless bytes), hostname saved
        if part.exists() and part.stat().st_size > 1 << 20 and journaled():
            break
        time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "Traceback" not in err
    assert "fetch: 1 retrieved, 0 failed, 1 interrupted;" in err
    assert err.endswith(f"fetch: interrupted; 1 .part file kept, rerun with -C --skip-done {tmp_path / 'm.jsonl'} "
                        "to resume\n")  # fmt: skip
    rows = {row["url"]: row for row in map(json.loads, (tmp_path / "m.jsonl").read_text().splitlines())}
    assert {url: row["status"] for url, row in rows.items()} == {
        "file:///etc/hostname": "ok", "file:///dev/zero": "interrupted"
    }
    saved = rows["file:///etc/hostname"]
    assert (tmp_path / "out" / "hostname").read_bytes() == Path("/etc/hostname").read_bytes()
    assert saved["path"] == str(tmp_path / "out" / "hostname")
    assert saved["bytes"] == len(Path("/etc/hostname").read_bytes())
    assert not list((tmp_path / "out").glob(".fetch-cluster-*"))


def test_version_imports_no_dask() -> None:
    shown = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "fetcher", "--version"], capture_output=True, text=True, check=True
    )
    imported = {line.split("|")[-1].strip().split(".")[0] for line in shown.stderr.splitlines() if "|" in line}
    assert "fetcher" in imported
    assert not imported & {"dask", "distributed"}


def test_the_cli_imports_distributed_without_numpy() -> None:
    """`fetch --cluster` keeps numpy out of its process; a library user may still import it afterwards."""
    script = (
        "import sys; from fetcher.cluster.scheduler import import_dask; d = import_dask(lean=True); "
        "print('numpy' in sys.modules, d.Client.__name__, sys.modules.get('numpy', 0) is None); "
        "import importlib.util; print(importlib.util.find_spec('numpy') is not None)"
    )
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert shown.stdout.splitlines()[0] == "False Client False"
    plain = subprocess.run(
        [sys.executable, "-c", "import sys; from fetcher.cluster.scheduler import import_dask; import_dask(); "
                               "print('numpy' in sys.modules)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    if shown.stdout.splitlines()[1] == "True":  # numpy installed: the library call imports it as dask does
        assert plain.stdout.strip() == "True"


def test_cluster_usage_errors(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    def error(*argv: str) -> str:
        assert main([*argv, "http://127.0.0.1:9/x"]) == 2
        return capsysbinary.readouterr().err.decode()

    # s3fs is not installed here: fsspec cannot open s3://, and the message says what to install.
    err = error("-d", "s3://bucket/prefix", "--cluster", "local:2")
    assert "fetch: -d s3://bucket/prefix: fsspec cannot open this URL" in err and "s3fs" in err
    assert "implemented for --cluster only" in error("-d", f"file://{tmp_path}/out")
    assert "-r with an fsspec output URL" in error("-r", "-d", f"file://{tmp_path}/out", "--cluster", "local:2")
    warc = ["-d", str(tmp_path), "--warc-file", str(tmp_path / "a"), "--cluster", "local:2"]
    assert "--warc-dedup with --cluster is not implemented" in error(*warc, "--warc-dedup")
    assert "fetch: --cluster local:zero" in error("-d", str(tmp_path), "--cluster", "local:zero")
    assert not list(tmp_path.iterdir())  # nothing was started, nothing written


def ftp_batch(servers: Servers, out: Path, run_id: str, number: int, names: range) -> BatchTask:
    """One batch of FTP URLs as the driver ships it (-j 1: one control connection at a time)."""
    return BatchTask(
        batch_id=f"{run_id}-{number}", items=[(f"{servers.ftp.url}/pub/f{i}.txt", str(out / f"{run_id}-{i}.txt"))
                                              for i in names],
        settings=Settings(timeout=5), jobs=1, per_host=1, resume=False, retries=0, journal=None, run_id=run_id,
    )  # fmt: skip


def wait_until(check: Any, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_workers_batches_of_one_run_share_its_connections(tmp_path: Path) -> None:
    """run_batch in this process (as a worker runs it): the second batch reuses the first one's FTP login.

    A batch of another run gets a Client, so a login, of its own; closing
    the runner (a worker's teardown) logs every kept connection out.
    """
    with Servers(http_hosts=1) as servers:
        try:
            first = run_batch(ftp_batch(servers, tmp_path, "run1", 0, range(0, 3)))
            second = run_batch(ftp_batch(servers, tmp_path, "run1", 3, range(3, 6)))
            assert [s.error for s in first + second] == [None] * 6
            assert (tmp_path / "run1-4.txt").read_bytes() == body("ftp4")
            assert len(servers.ftp.sessions) == 1
            assert sum(line.startswith("USER") for line in servers.ftp.sessions[0]) == 1
            assert sum(line.startswith("RETR") for line in servers.ftp.sessions[0]) == 6
            other = run_batch(ftp_batch(servers, tmp_path, "run2", 0, range(0, 2)))
            assert [s.error for s in other] == [None] * 2
            assert len(servers.ftp.sessions) == 2
        finally:
            close_runner()
        logged_out = wait_until(lambda: all(session[-1:] == ["QUIT"] for session in servers.ftp.sessions))
        assert logged_out, servers.ftp.sessions


def test_a_runner_closes_a_client_left_idle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept Client unused for its idle_timeout is closed (its FTP session logs out); the next batch logs in anew."""
    monkeypatch.setattr(Runner, "SWEEP", 0.05)
    with Servers(http_hosts=1) as servers:
        try:
            task = ftp_batch(servers, tmp_path, "idle", 0, range(0, 2))
            task.settings = Settings(timeout=5, idle_timeout=0.2)
            assert [s.error for s in run_batch(task)] == [None] * 2
            assert wait_until(lambda: servers.ftp.sessions[0][-1:] == ["QUIT"])
            assert [s.error for s in run_batch(task)] == [None] * 2
            assert len(servers.ftp.sessions) == 2
        finally:
            close_runner()


def test_a_batch_carries_the_drivers_notes_to_its_client(tmp_path: Path) -> None:
    """A confinement note (-r over FTP) reaches the worker's handler with its URL, for the batch only.

    With the note, a name that turns out to be a directory is entered
    between two PWDs (to see where it led); without it, no PWD but the
    login's.
    """
    with Servers(http_hosts=1) as servers:
        servers.ftp.files["/pub/sub/x.txt"] = b"x"
        servers.ftp.directories.add("/pub/sub")
        url = f"{servers.ftp.url}/pub/sub"
        task = ftp_batch(servers, tmp_path, "notes", 0, range(0))
        task.items = [(url, None)]
        try:
            task.notes = {url: RequestNotes(confinement=Confinement("/pub/"))}
            assert [s.error for s in run_batch(task)] == [None]
            noted = list(servers.ftp.sessions[0])
            assert runner().kept  # the next batch runs on the same Client: the note went with its URL only
            task.notes = None
            assert [s.error for s in run_batch(task)] == [None]
            plain = servers.ftp.sessions[0][len(noted):]
        finally:
            close_runner()
    assert noted.count("PWD") == 3 and "CWD sub" in noted  # login, then before and after the CWD
    assert "CWD sub" in plain and "PWD" not in plain


def test_batches_on_a_cluster_reuse_logins(dask: DaskClient, tmp_path: Path) -> None:
    """Seven batches of one FTP host (host_chunk 1: 1, 2, 4, ... URLs) log in once per worker at most, not per batch."""
    with Servers(http_hosts=1) as servers:
        servers.ftp.files.update({f"/pub/f{i}.txt": body(f"f{i}.txt") for i in range(6, 60)})
        urls = [f"{servers.ftp.url}/pub/f{i}.txt" for i in range(60)]
        out = tmp_path / "out"
        out.mkdir()

        async def run() -> list[cluster.ClusterOutcome]:
            got: list[cluster.ClusterOutcome] = []
            async with cluster.fetch_all(
                urls, dask, Settings(timeout=5), jobs=1, per_host=1, host_chunk=1,
                destination=lambda url: out / url.name,
            ) as results:  # fmt: skip
                async for outcome in results:
                    got.append(outcome)
            return got

        outcomes = trio.run(run)
        sessions = [session for session in servers.ftp.sessions if any(line.startswith("RETR") for line in session)]
    assert sorted(o.url for o in outcomes) == sorted(urls)
    assert [o.error for o in outcomes if not o.ok] == []
    workers = {o.worker for o in outcomes}
    assert 1 <= len(sessions) <= len(workers) <= 2
    assert sum(line.startswith("RETR") for session in sessions for line in session) == 60


@pytest.mark.parametrize("archive", [False, True], ids=["kept-client", "warc"])
def test_a_killed_worker_loses_nothing(dask: DaskClient, tmp_path: Path, archive: bool) -> None:
    """Without --warc-file batches run on the worker's kept Client; with it, each on a fresh one."""
    pids = list(dask.run(os.getpid).values())
    killed = threading.Event()
    seen = Counter[str]()

    def on_request(request: Received) -> None:
        # Both workers are mid-batch (-j 2 --per-host 2: one host each) when the 10th request of a host arrives.
        seen[request.path.split("-")[0]] += 1
        if not killed.is_set() and max(seen.values()) >= 10:
            killed.set()
            os.kill(pids[0], signal.SIGKILL)

    with Servers(http_hosts=2, delay=0.03, on_request=on_request) as servers:
        urls = [server.url(f"/h{server.port}-{i}.txt") for server in servers.http for i in range(30)]
        listing = tmp_path / "urls.txt"
        listing.write_text("\n".join(urls) + "\n")
        manifest = tmp_path / "m.jsonl"
        warc = tmp_path / "archive" / "crawl"
        warc.parent.mkdir()
        code = main(["-i", str(listing), "-d", str(tmp_path / "out"), "--manifest", str(manifest), "--no-progress",
                     "--timeout", "5", "-j", "2", "--per-host", "2", "--cluster", dask.scheduler.address,
                     *(["--warc-file", str(warc), "--warc-cdx"] if archive else [])])  # fmt: skip
        served = servers.requests()
    assert killed.is_set()
    assert code == 0
    rows = records(manifest, tmp_path / "out")
    assert set(rows) == set(urls)
    assert {row["status"] for row in rows.values()} == {"ok"}
    for row in rows.values():
        name = row["url"].rsplit("/", 1)[1]
        assert (tmp_path / "out" / row["path"]).read_bytes() == body(name)
    # Files the dead worker had completed were not fetched again: only the
    # ones in flight when it died (--per-host 2) may have been asked for twice,
    # plus what the kill races: the request that triggers it is seen by the
    # server thread while the worker goes on, and a file renamed just before
    # its journal line was written.  An idle machine shows 2-3; a loaded one
    # has shown 4; without the journal it is 7 or more.
    assert sum(count > 1 for count in served.values()) <= 4
    assert sum(served.values()) <= len(urls) + 4
    if not archive:
        return
    # The archive holds each URL's response once, in files warcio checks whole: the dead worker's
    # file (attempt 0, cut mid-record by the kill) was salvaged by the batch's rerun (attempt 1),
    # without the records of the URLs the rerun fetched again.
    counts, files = archived(warc.parent, "crawl")
    assert set(counts) == set(urls)
    assert set(counts.values()) == {1}
    attempts = Counter(path.name.split("-")[2] for path in files if path.name.endswith("-1.warc.gz"))
    assert attempts, f"no batch ran twice: {files}"
    for batch in attempts:
        assert any(path.name.split("-")[2] == batch and path.name.endswith("-0.warc.gz") for path in files)
    # The salvaged file is indexed at the offsets its records have now.
    assert sorted(entry["url"] for entry in indexed(warc.parent, "crawl", files)) == sorted(urls)
