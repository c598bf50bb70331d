"""Bulk retrieval: every input URL accounted for, limits honoured, resumable."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from fetcher.cli.inputs import read_url_lines
from fetcher.cli.main import main
from tests.plugin_scheme import LineServer


def body(name: str) -> bytes:
    return (name.encode() + b"\n") * 50


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_read_url_lines_handles_comments_and_wrapped_urls() -> None:
    lines = [
        "# a comment\n",
        "\n",
        "ftp://h/a\n",
        "  <URL:ftp://info.cern.ch/pub/www/doc;\n",
        "      type=d>\n",
        "http://h/b\n",
    ]
    assert list(read_url_lines(lines)) == [
        ("ftp://h/a", 3),
        ("<URL:ftp://info.cern.ch/pub/www/doc;\n      type=d>", 4),
        ("http://h/b", 6),
    ]


def test_mixed_run_accounts_for_every_url(
    tmp_path: Path, x_test: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    def reply(name: str) -> bytes | None:
        if name.startswith("missing"):
            return b"ERR 6 no such file\r\n"
        if name.startswith("cut"):
            return b"OK 1000\r\npartial"
        if name.startswith("stall"):
            return None
        return b"OK %d\r\n" % len(body(name)) + body(name)

    server = LineServer(reply)
    base = f"x-test://127.0.0.1:{server.port}"
    good = [f"{base}/file{i}" for i in range(45)]
    bad = [f"{base}/missing1", f"{base}/cut1", f"{base}/stall1", "x-test://127.0.0.1:25/refused", "ftp://bad host/"]
    urls = good[:20] + bad + good[20:]
    listing = tmp_path / "urls.txt"
    listing.write_text("# mixed\n" + "\n".join(urls) + "\n")
    out = tmp_path / "out"
    manifest = tmp_path / "manifest.jsonl"
    try:
        code = main(
            ["-i", str(listing), "-d", str(out), "--manifest", str(manifest), "--timeout", "0.5", "--retries", "1",
             "-j", "8", "--per-host", "4", "--no-progress"]
        )  # fmt: skip
    finally:
        server.close()
    assert code == 1
    rows = records(manifest)
    assert len(rows) == len(urls)
    by_url = {row["url"]: row for row in rows}
    assert set(by_url) == set(urls)
    for url in good:
        row = by_url[url]
        assert row["status"] == "ok"
        name = url.rsplit("/", 1)[1]
        assert Path(str(row["path"])).read_bytes() == body(name)
        assert row["sha256"] == hashlib.sha256(body(name)).hexdigest()
    assert by_url[f"{base}/missing1"]["exit_code"] == 6
    assert by_url[f"{base}/missing1"]["attempts"] == 1
    assert by_url[f"{base}/cut1"]["exit_code"] == 7
    assert by_url[f"{base}/stall1"]["exit_code"] == 8
    assert by_url[f"{base}/stall1"]["attempts"] == 2  # a timeout is transient: retried once
    assert by_url["x-test://127.0.0.1:25/refused"]["exit_code"] == 3
    assert by_url["ftp://bad host/"]["exit_code"] == 2
    assert by_url["ftp://bad host/"]["line"] == 26
    assert not (out / "cut1").exists()
    err = capsysbinary.readouterr().err.decode()
    assert "45 retrieved, 5 failed" in err


def test_without_a_manifest_the_summary_and_failures_are_the_same(
    tmp_path: Path, x_test: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    # Without --manifest (or a bar, -v, -r), a saved file gets no record at all (BulkRun.handle):
    # the counts, bytes, failure lines, exit code and files must be those of a run that writes one.
    def reply(name: str) -> bytes | None:
        if name.startswith("missing"):
            return b"ERR 6 no such file\r\n"
        return b"OK %d\r\n" % len(body(name)) + body(name)

    server = LineServer(reply)
    base = f"x-test://127.0.0.1:{server.port}"
    urls = [f"{base}/file{i}" for i in range(12)] + [f"{base}/missing1", f"{base}/file3"]
    listing = tmp_path / "urls.txt"
    listing.write_text("\n".join(urls) + "\n")
    seen = {}
    try:
        for run, extra in (("quiet", []), ("recorded", ["--manifest", str(tmp_path / "m.jsonl")])):
            out = tmp_path / run
            code = main(["-i", str(listing), "-d", str(out), "--retries", "0", "--no-progress", *extra])
            err = capsysbinary.readouterr().err.decode()
            summary = err.splitlines()[-1].split(" in ")[0]  # without the time taken
            failures = sorted(line for line in err.splitlines() if "missing1" in line)
            files = {path.name: path.read_bytes() for path in out.iterdir()}
            seen[run] = (code, summary, failures, files)
    finally:
        server.close()
    assert seen["quiet"] == seen["recorded"]
    code, summary, failures, files = seen["quiet"]
    assert code == 1
    size = sum(len(body(f"file{i}")) for i in range(12))
    assert summary == f"fetch: 12 retrieved, 1 failed, 1 skipped; {size} bytes"
    assert len(failures) == 1 and len(files) == 12


def test_per_host_limit_holds(tmp_path: Path, x_test: None, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    def slow(name: str) -> bytes:
        time.sleep(0.05)
        return b"OK 2\r\nok"

    server = LineServer(slow)
    urls = [f"x-test://127.0.0.1:{server.port}/f{i}" for i in range(20)]
    try:
        code = main(["-d", str(tmp_path), "-j", "8", "--per-host", "2", "--no-progress", *urls])
    finally:
        server.close()
    assert code == 0
    assert server.connections == 20
    assert server.max_active == 2


def test_interrupted_run_resumes_to_identical_files(
    tmp_path: Path, x_test: None, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    stall = threading.Event()

    def reply(name: str) -> bytes | None:
        if name == "slow" and not stall.is_set():
            return None
        return b"OK %d\r\n" % len(body(name)) + body(name)

    server = LineServer(reply)
    urls = [f"x-test://127.0.0.1:{server.port}/f{i}" for i in range(10)] + [f"x-test://127.0.0.1:{server.port}/slow"]
    manifest = tmp_path / "m.jsonl"
    out = tmp_path / "out"
    args = ["-d", str(out), "--manifest", str(manifest), "--no-progress", "--timeout", "30", *urls]
    timer = threading.Timer(1.0, os.kill, args=(os.getpid(), signal.SIGINT))
    try:
        timer.start()
        assert main(args) == 130
        first = records(manifest)
        assert len(first) == 11
        assert {row["status"] for row in first} == {"ok", "interrupted"}
        assert [row["url"] for row in first if row["status"] == "interrupted"] == [urls[-1]]
        served_before = len(server.requests)
        stall.set()
        manifest2 = tmp_path / "m2.jsonl"
        assert main([*args[:2], "--manifest", str(manifest2), "--skip-done", str(manifest), "--no-progress",
                     *urls]) == 0  # fmt: skip
    finally:
        timer.cancel()
        server.close()
    second = records(manifest2)
    assert [row["url"] for row in second if row["status"] == "ok"] == [urls[-1]]
    assert len(server.requests) == served_before + 1  # no finished file was fetched again
    for url in urls:
        name = url.rsplit("/", 1)[1]
        assert (out / name).read_bytes() == body(name)


def test_recursive_file_tree_is_confined_and_visits_once(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    source = tmp_path / "src"
    (source / "a" / "b").mkdir(parents=True)
    (source / "top.txt").write_bytes(b"top")
    (source / "a" / "mid.txt").write_bytes(b"mid")
    (source / "a" / "b" / "deep.txt").write_bytes(b"deep")
    (source / "a" / "loop").symlink_to(source)  # a loop back to the top
    out = tmp_path / "out"
    manifest = tmp_path / "m.jsonl"
    code = main(["-r", "--depth", "5", "--layout", "tree", "-d", str(out), "--manifest", str(manifest),
                 "--no-progress", f"file://{source}/"])  # fmt: skip
    assert code == 0
    mirrored = out / "file_localhost" / str(source).lstrip("/")
    assert (mirrored / "top.txt").read_bytes() == b"top"
    assert (mirrored / "a" / "mid.txt").read_bytes() == b"mid"
    assert (mirrored / "a" / "b" / "deep.txt").read_bytes() == b"deep"
    urls = [row["url"] for row in records(manifest)]
    assert len(urls) == len(set(urls))
    for path in out.rglob("*"):
        assert path.resolve().is_relative_to(out.resolve())


def test_progress_counts_every_record_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    import fetcher.cli.progress as progress

    class Counting(progress.NoProgress):
        added = 0
        done = 0

        def url_added(self) -> None:
            Counting.added += 1

        def url_done(self, record: dict[str, object]) -> None:
            Counting.done += 1

    monkeypatch.setattr(progress, "make_progress", lambda *wanted, **options: Counting())
    (tmp_path / "a.txt").write_bytes(b"a")
    url = f"file://{tmp_path}/a.txt"
    code = main(["-d", str(tmp_path / "out"), url, url, "http://bad host/", "gopher://127.0.0.1:6379/x"])
    assert code == 1
    assert (Counting.added, Counting.done) == (4, 4)  # ok, duplicate, bad URL, refused


def test_long_list_is_read_a_window_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    import fetcher.cli.feed as feed
    from fetcher.cli.jobs import Job
    from fetcher.cli.run import BulkRun

    monkeypatch.setattr(feed, "WINDOW", 8)
    monkeypatch.setattr(feed, "READ_BATCH", 3)
    held: list[int] = []
    enqueue = BulkRun.enqueue

    def counting(self: BulkRun, job: Job) -> None:
        enqueue(self, job)
        held.append(len(self.by_url))

    monkeypatch.setattr(BulkRun, "enqueue", counting)
    source = tmp_path / "src"
    source.mkdir()
    lines = []
    for index in range(60):
        (source / f"f{index}").write_bytes(b"%d\n" % index)
        lines.append(f"file://{source}/f{index}")
    lines[40] = lines[2]  # line 41 repeats line 3
    lines[50] = "ftp://bad host/"
    url_file = tmp_path / "urls.txt"
    url_file.write_text("\n".join(lines) + "\n")
    manifest = tmp_path / "m.jsonl"
    code = main(["-i", str(url_file), "-d", str(tmp_path / "out"), "--manifest", str(manifest), "--no-progress"])
    assert code == 1  # the bad URL
    rows = records(manifest)
    assert sorted(row["line"] for row in rows) == list(range(1, 61))
    by_line = {row["line"]: row for row in rows}
    assert by_line[41]["status"] == "skipped" and by_line[41]["reason"] == "duplicate of line 3"
    assert by_line[51]["status"] == "failed" and by_line[51]["exit_code"] == 2
    assert sum(row["status"] == "ok" for row in rows) == 58
    for index in (0, 39, 59):
        assert (tmp_path / "out" / f"f{index}").read_bytes() == b"%d\n" % index
    assert held and max(held) <= 8  # never more than the window of URLs taken on and unfinished


def test_interrupt_records_the_input_not_read_yet(
    tmp_path: Path, x_test: None, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    import fetcher.cli.feed as feed

    monkeypatch.setattr(feed, "WINDOW", 4)

    def reply(name: str) -> bytes | None:
        return None if name.startswith("slow") else b"OK 2\r\nok"

    server = LineServer(reply)
    base = f"x-test://127.0.0.1:{server.port}"
    urls = [f"{base}/slow{i}" for i in range(4)] + [f"{base}/f{i}" for i in range(20)]
    url_file = tmp_path / "urls.txt"
    url_file.write_text("\n".join(urls) + "\n")
    manifest = tmp_path / "m.jsonl"
    timer = threading.Timer(1.0, os.kill, args=(os.getpid(), signal.SIGINT))
    try:
        timer.start()
        code = main(["-i", str(url_file), "-d", str(tmp_path / "out"), "--manifest", str(manifest),
                     "--no-progress", "-j", "4", "--timeout", "30"])  # fmt: skip
    finally:
        timer.cancel()
        server.close()
    assert code == 130
    rows = records(manifest)
    assert [row["url"] for row in rows] == urls  # one record a line, in order: nothing past the window ran
    assert {row["status"] for row in rows} == {"interrupted"}
    assert all(name.startswith("slow") for name in server.requests)


def test_a_pipe_given_to_i_is_read_once_with_the_bar_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    # `fetch -i <(command)`: the list cannot be counted in a first pass (no seeking a pipe); the bar
    # shows the total so far and the run reads the pipe once, as it comes.
    import fetcher.cli.feed as feed

    monkeypatch.setattr(feed, "WINDOW", 4)
    lines = []
    for index in range(10):
        (tmp_path / f"f{index}").write_bytes(b"%d\n" % index)
        lines.append(f"file://{tmp_path}/f{index}")
    read_end, write_end = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(write_end, ("\n".join(lines) + "\n").encode()),
                                              os.close(write_end)))  # fmt: skip
    writer.start()
    try:
        code = main(["-i", f"/dev/fd/{read_end}", "-d", str(tmp_path / "out"), "--progress",
                     "--manifest", str(tmp_path / "m.jsonl")])  # fmt: skip
    finally:
        writer.join()
        os.close(read_end)
    assert code == 0, capsysbinary.readouterr().err
    assert sorted(row["line"] for row in records(tmp_path / "m.jsonl")) == list(range(1, 11))
    assert (tmp_path / "out" / "f9").read_bytes() == b"9\n"
