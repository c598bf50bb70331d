"""The file system is never harmed: symlinks, special files, full disks, hostile names.

The special files are real: a FIFO with a reader, a symlink planted at
NAME.part and at NAME, /dev/null reached through a symlink the test owns, a
tmpfs that fills up (or, where mounting is not allowed, a writer that fails
with ENOSPC the way a full disk does).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import threading
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fetcher.cli.layout import PATH_MAX, Layout, load_done
from fetcher.cli.main import build_parser, main, settings_from_args
from fetcher.disk.place import Directories
from fetcher.text import NAME_MAX, fit_name, safe_filename
from fetcher.url import parse_url
from tests.conftest import run_fetch
from tests.hostile.checks import one_error_line
from tests.hostile.names_hostile import NamingServer, naming_server
from tests.plugin_scheme import LineServer
from tests.servers.common import serving
from tests.servers.gopher import GopherServer

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def server() -> Iterator[LineServer]:
    """x-test server: GET NAME answers NAME's body; `big` is 3 MiB, `cut` stops short, `busy` says retry."""

    def reply(name: str) -> bytes | None:
        if name == "big":
            return b"OK %d\r\n" % (3 << 20) + b"b" * (3 << 20)
        if name == "cut":
            return b"OK 100\r\nonly part"
        if name.startswith("missing"):
            return b"ERR 6 no such file\r\n"
        data = (name or "root").encode() * 3
        return b"OK %d\r\n" % len(data) + data

    line_server = LineServer(reply)
    yield line_server
    line_server.close()


@pytest.fixture
def site() -> Iterator[NamingServer]:
    """An HTTP server for the tests that run the `fetch` command itself: /doc/NAME answers NAME three times."""
    with naming_server() as server:
        yield server


def url(server: LineServer, name: str) -> str:
    return f"x-test://127.0.0.1:{server.port}/{name}"


# -- symlinks and special files ------------------------------------------------------


def test_a_symlink_planted_at_part_is_never_written_through(
    tmp_path: Path, x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    target = tmp_path / "out.bin"
    (tmp_path / "out.bin.part").symlink_to(victim)
    for extra in ([], ["-C"]):
        assert main([*extra, "-o", str(target), url(server, "doc")]) == 9
        err = capsysbinary.readouterr().err.decode()
        assert "out.bin.part is a symlink; fetcher does not write through it" in err
        assert "Traceback" not in err
        assert victim.read_bytes() == b"precious"
        assert (tmp_path / "out.bin.part").is_symlink() and not target.exists()


def test_a_symlink_planted_at_name_is_replaced_not_followed(
    tmp_path: Path, x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "doc").symlink_to(victim)
    assert main(["-O", "--output-dir", str(out), url(server, "doc")]) == 0
    assert victim.read_bytes() == b"precious"
    assert not (out / "doc").is_symlink() and (out / "doc").read_bytes() == b"docdocdoc"


def test_bulk_refuses_planted_symlinks_at_part_and_in_the_tree(
    tmp_path: Path, x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "doc.part").symlink_to(victim)
    manifest = tmp_path / "m.jsonl"
    code = main(["-d", str(out), "--manifest", str(manifest), "--no-progress", url(server, "doc"), url(server, "ok")])
    assert code == 1
    rows = {row["url"].rsplit("/", 1)[-1]: row for row in map(json.loads, manifest.read_text().splitlines())}
    assert rows["doc"]["status"] == "failed" and rows["doc"]["exit_code"] == 9
    assert "symlink" in rows["doc"]["error"]
    assert rows["ok"]["status"] == "ok" and (out / "ok").read_bytes() == b"okokok"
    assert victim.read_bytes() == b"precious"
    assert "Traceback" not in capsysbinary.readouterr().err.decode()


async def test_a_symlinked_directory_inside_the_output_tree_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = GopherServer()
    async with serving(server):
        server.extra_routes.update({b"/sub/a.txt": b"alpha\r\n", b"/b.txt": b"beta\r\n"})
        server._routes = None
        out = tmp_path / "out"
        site = out / f"gopher_{server.host}_{server.port}"
        site.mkdir(parents=True)
        (site / "sub").symlink_to(elsewhere)
        manifest = tmp_path / "m.jsonl"
        base = f"gopher://{server.host}:{server.port}/0"
        args = build_parser().parse_args(["--layout", "tree", "-d", str(out), "--manifest", str(manifest),
                                          "--no-progress", f"{base}/sub/a.txt", f"{base}/b.txt"])  # fmt: skip
        from fetcher.cli.bulk import run_bulk

        assert await run_bulk(args, settings_from_args(args)) == 1
    assert list(elsewhere.iterdir()) == []
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    failed = [row for row in rows if row["status"] == "failed"]
    assert len(failed) == 1 and "a symlink; fetcher does not write through it" in failed[0]["error"]
    assert (site / "b.txt").read_bytes() == b"beta\r\n"


def test_output_to_a_fifo_is_written_in_place(
    tmp_path: Path, x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    assert main(["-o", str(fifo), url(server, "doc")]) == 0
    reader.join(timeout=10)
    assert received == [b"docdocdoc"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not (tmp_path / "pipe.part").exists()


def test_dev_null_through_a_symlink_is_written_in_place(
    tmp_path: Path, x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    link = tmp_path / "sink"
    link.symlink_to("/dev/null")
    assert main(["-o", str(link), url(server, "big")]) == 0
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not (tmp_path / "sink.part").exists()


def test_output_dash_is_stdout(x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["-o", "-", url(server, "doc")]) == 0
    assert capsysbinary.readouterr().out == b"docdocdoc"
    assert not Path("-").exists()


def test_a_special_file_in_the_bulk_tree_is_not_replaced(
    tmp_path: Path, x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "doc")
    manifest = tmp_path / "m.jsonl"
    assert main(["-d", str(out), "--manifest", str(manifest), "--no-progress", url(server, "doc")]) == 1
    row = json.loads(manifest.read_text())
    assert row["exit_code"] == 9 and "not a regular file" in row["error"]
    assert stat.S_ISFIFO(os.lstat(out / "doc").st_mode)


def test_resume_refuses_a_hard_linked_part(
    tmp_path: Path, x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"pre and the rest")
    victim = tmp_path / "victim"
    victim.write_bytes(b"pre")
    os.link(victim, tmp_path / "out.part")
    assert main(["-C", "-o", str(tmp_path / "out"), f"file://{source}"]) == 9
    assert "not a regular file of its own" in capsysbinary.readouterr().err.decode()
    assert victim.read_bytes() == b"pre"
    # Without -C the old .part is replaced (its link removed), never written into.
    assert main(["-o", str(tmp_path / "out"), url(server, "doc")]) == 0
    assert victim.read_bytes() == b"pre" and (tmp_path / "out").read_bytes() == b"docdocdoc"


# -- a full disk ---------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A 256 KiB file system: a real tmpfs where mounting is allowed, else writes that fail with ENOSPC past 256 KiB."""
    where = tmp_path / "small"
    where.mkdir()
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
                                 capture_output=True).returncode == 0  # fmt: skip
    except OSError:  # no mount(8) here
        mounted = False
    if not mounted:
        import fetcher.disk.partfile

        real_fdopen = os.fdopen

        class Full:
            def __init__(self, raw: object) -> None:
                self.raw = raw
                self.size = 0

            def write(self, data: bytes) -> int:
                if self.size + len(data) > 256 << 10:
                    room = (256 << 10) - self.size
                    self.raw.write(data[:room])  # type: ignore[attr-defined]
                    self.size += room
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                self.size += len(data)
                return self.raw.write(data)  # type: ignore[attr-defined,no-any-return]

            def __getattr__(self, name: str) -> object:
                return getattr(self.raw, name)

        def fdopen(fd: int, mode: str = "r", *args: object) -> object:
            raw = real_fdopen(fd, mode, *args)  # type: ignore[call-overload]
            return Full(raw) if "w" in mode or "+" in mode else raw

        monkeypatch.setattr(fetcher.disk.partfile.os, "fdopen", fdopen)
    try:
        yield where
    finally:
        if mounted:
            subprocess.run(["umount", str(where)], check=False)


@pytest.mark.parametrize("size", ["small", "large"])
def test_a_full_disk_is_one_line_and_keeps_the_part(
    small_disk: Path, x_test: None, capsysbinary: pytest.CaptureFixture[bytes], size: str
) -> None:
    length = (600 << 10) if size == "small" else (3 << 20)  # one write, or the streaming writer
    line_server = LineServer(lambda name: b"OK %d\r\n" % length + b"z" * length)
    try:
        target = small_disk / "doc"
        assert main(["-o", str(target), f"x-test://127.0.0.1:{line_server.port}/doc"]) == 9
    finally:
        line_server.close()
    err = capsysbinary.readouterr().err.decode()
    assert err.splitlines()[0].startswith(f"fetch: cannot write {target}.part: No space left on device")
    assert "hint: free some space, then run again with -C to resume from doc.part" in err
    assert "Traceback" not in err and len(err.splitlines()) == 2
    assert not target.exists()
    assert 0 < (small_disk / "doc.part").stat().st_size <= 256 << 10


def test_dev_full_is_one_line(x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    assert main(["-o", "/dev/full", url(server, "doc")]) == 9
    err = capsysbinary.readouterr().err.decode()
    assert err.startswith("fetch: cannot write /dev/full: No space left on device (x-test://")
    assert err.endswith("\n  hint: free some space, then run again\n") and "Traceback" not in err


# -- names ---------------------------------------------------------------------------


@FUZZ
@given(st.text(max_size=300))
def test_safe_filename_is_one_safe_component(name: str) -> None:
    safe = safe_filename(name)
    assert safe not in ("", ".", "..") and "/" not in safe and "\\" not in safe
    assert len(os.fsencode(safe)) <= NAME_MAX - 16
    assert not [c for c in safe if unicodedata.category(c) in {"Cc", "Cf", "Cs", "Cn", "Zl", "Zp"}]


def test_long_multibyte_names_are_cut_keeping_the_extension() -> None:
    name = "名" * 200 + ".tar.gz"
    safe = safe_filename(name)
    assert safe.endswith(".gz") and len(os.fsencode(safe)) <= NAME_MAX - 16
    assert safe.startswith("名" * 70)
    assert fit_name("é" * 300) == "é" * 127
    assert safe_filename("\u202egnp.exe") == "_gnp.exe" and safe_filename("a\u200bb\x00c\x9b") == "a_b_c_"


def test_equal_names_are_numbered_in_linear_time() -> None:
    # In a child process: 20,000 names must not raise the test runner's own memory high-water
    # mark, which the RSS budget tests of tests/hostile see through their children.
    script = """
from pathlib import Path
from fetcher.cli.layout import Layout
from fetcher.url import parse_url
layout = Layout(Path("out"), "flat")
names = [layout.document(parse_url(f"http://h{i}.example/same.txt")).name for i in range(20_000)]
assert names[:3] == ["same.txt", "same.txt.1", "same.txt.2"], names[:3]
assert names[-1] == "same.txt.19999" and len(set(names)) == 20_000
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert result.stdout == b"ok\n", result.stderr.decode()


def test_a_file_and_a_directory_of_the_same_name_both_land() -> None:
    layout = Layout(Path("out"), "tree")
    first = layout.document(parse_url("gopher://h/0/x"))
    below = layout.document(parse_url("gopher://h/0/x/y"))
    assert (first, below) == (Path("out/gopher_h/x"), Path("out/gopher_h/x.d/y"))
    other = Layout(Path("out"), "tree")
    below = other.document(parse_url("gopher://h/0/x/y"))
    first = other.document(parse_url("gopher://h/0/x"))
    assert (first, below) == (Path("out/gopher_h/x.1"), Path("out/gopher_h/x/y"))


async def test_a_mirror_with_x_and_x_slash_y_and_a_very_deep_path(tmp_path: Path) -> None:
    deep = b"/" + b"/".join([b"d"] * 7000) + b"/end.txt"
    server = GopherServer()
    async with serving(server):
        server.extra_routes.update({b"/x": b"file x\r\n", b"/x/y": b"file y\r\n", deep: b"deep\r\n"})
        server._routes = None
        base = f"gopher://{server.host}:{server.port}/0"
        out = tmp_path / "out"
        manifest = tmp_path / "m.jsonl"
        argv = ["--layout", "tree", "-d", str(out), "--manifest", str(manifest), "-j", "1", "--no-progress"]
        args = build_parser().parse_args([*argv, f"{base}/x", f"{base}/x/y", base + deep.decode()])
        from fetcher.cli.bulk import run_bulk

        assert await run_bulk(args, settings_from_args(args)) == 0
    site = out / f"gopher_{server.host}_{server.port}"
    assert (site / "x").read_bytes() == b"file x\r\n"
    assert (site / "x.d" / "y").read_bytes() == b"file y\r\n"
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    deep_row = next(row for row in rows if row["url"].endswith("end.txt"))
    deep_path = Path(deep_row["path"])
    assert deep_path.read_bytes() == b"deep\r\n"
    assert deep_path.parent == site / "_long" and deep_path.name.endswith("-end.txt")
    assert len(os.fsencode(str(deep_path.resolve()))) < PATH_MAX


def test_remote_name_of_a_directory_url_is_not_the_host(
    tmp_path: Path, x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["-O", "--output-dir", str(tmp_path), url(server, "")]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["index"]


# -- --skip-done ---------------------------------------------------------------------


def test_skip_done_reports_bad_lines_and_keeps_every_name(
    tmp_path: Path, x_test: None, server: LineServer, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    out = tmp_path / "out"
    manifest = tmp_path / "m.jsonl"
    # Two servers, one name: one URL gets "doc", the other "doc.1"; the second fails (exit 6).
    first = url(server, "doc")
    other = LineServer(lambda name: b"ERR 6 gone\r\n")
    try:
        failing = f"x-test://127.0.0.1:{other.port}/doc"
        assert main(["-d", str(out), "--manifest", str(manifest), "--no-progress", first, failing]) == 1
        rows = [json.loads(line) for line in manifest.read_text().splitlines()]
        names = {row["url"]: Path(row["path"] or row["target"]).name for row in rows}
        assert sorted(names.values()) == ["doc", "doc.1"]
        # A corrupt line in the middle and a run cut off mid-record at the end.
        with manifest.open("a") as sink:
            sink.write("{not json\n")
            sink.write('{"url": "x-test://127.0.0.1:1/cut", "sta')
        capsysbinary.readouterr()
        newcomer = LineServer(lambda name: b"OK 3\r\nnew")
        try:
            new = f"x-test://127.0.0.1:{newcomer.port}/doc"
            code = main(["-d", str(out), "--manifest", str(manifest), "--skip-done", str(manifest), "--no-progress",
                         first, failing, new])  # fmt: skip
        finally:
            newcomer.close()
    finally:
        other.close()
    assert code == 1
    err = capsysbinary.readouterr().err.decode()
    assert f"--skip-done {manifest} line 3: not a manifest record; ignored" in err
    assert f"--skip-done {manifest} line 4: truncated; ignored" in err
    assert "Traceback" not in err
    lines = manifest.read_text().splitlines()
    later = [json.loads(line) for line in lines[4:]]  # line 4 was ended, so the new records are whole
    by_url = {row["url"]: row for row in later}
    assert by_url[first]["status"] == "skipped"
    assert Path(by_url[failing]["target"]).name == names[failing]  # the same name as before
    assert Path(by_url[new]["path"]).name == "doc.2"  # never a name an earlier record owns
    assert (out / "doc.2").read_bytes() == b"new"
    records = load_done(str(manifest))
    assert len(records.problems) == 2


def test_a_listing_saved_with_dash_o_uppercase_never_follows_a_planted_symlink(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "a.txt").write_bytes(b"")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "index").symlink_to(victim)  # -O names a directory URL `index` (issue 29, item 10)
    assert main(["-O", "--output-dir", str(out), f"file://{source}/"]) == 0
    assert victim.read_bytes() == b"precious"
    assert not (out / "index").is_symlink() and "a.txt" in (out / "index").read_text()
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    assert main(["-o", str(link), f"file://{source}/"]) == 0
    assert link.is_symlink() and stat.S_ISCHR(os.stat("/dev/null").st_mode)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                ["a.txt", "index.html", "", "x/", "a%20b", ".", "..", "CON", "%2e%2e", "%C3%A9" * 150, "a.txt.1"]
            ),
            st.sampled_from([None, "a.txt", "../up", "b.bin"]),
            st.sampled_from(["document", "release", "renamed"]),
        ),
        max_size=40,
    ),
    st.sampled_from([".", "out", "/tmp/out/", "./deep/er"]),
)
def test_flat_names_take_the_short_way_to_the_same_paths(steps: list[tuple[str, str | None, str]], root: str) -> None:
    # Layout._flat (the bulk run's short way) names, numbers and records exactly as _place does.
    fast, slow = Layout(Path(root), "flat"), Layout(Path(root), "flat")
    slow._flat = lambda name: None  # type: ignore[method-assign]
    taken: list[tuple[Path, Path]] = []
    for index, (tail, suggested, action) in enumerate(steps):
        url = parse_url(f"http://127.0.0.1:8080/{index % 3}/{tail}")
        if action == "release" and taken:
            first, second = taken.pop(0)
            fast.release(first)
            slow.release(second)
        elif action == "renamed" and taken:
            first, second = taken.pop()
            pair = (fast.renamed(url, first, "b.bin"), slow.renamed(url, second, "b.bin"))
            assert pair[0] == pair[1]
            taken.append(pair)
        else:
            pair = (fast.document(url, suggested), slow.document(url, suggested))
            assert pair[0] == pair[1]
            assert pair[0].parent == Path(root)
            taken.append(pair)


def test_inspect_target_names_what_is_there_following_symlinks(tmp_path: Path) -> None:
    # The check before a rename: a planted directory, FIFO or symlink to one is seen as such;
    # only a name with nothing behind it (nothing at all, or a dangling symlink) is "missing".
    from fetcher.disk.names import inspect_target

    (tmp_path / "file").write_bytes(b"x")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "to-dir").symlink_to(tmp_path / "dir")
    (tmp_path / "to-fifo").symlink_to(tmp_path / "fifo")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    kinds = {name: inspect_target(tmp_path / name) for name in
             ("file", "dir", "fifo", "to-dir", "to-fifo", "dangling", "nothing")}  # fmt: skip
    assert kinds == {"file": "file", "dir": "directory", "fifo": "special", "to-dir": "directory",
                     "to-fifo": "special", "dangling": "missing", "nothing": "missing"}  # fmt: skip


@pytest.fixture(params=[False, True], ids=["by-path", "by-directory"])
def directories(request: pytest.FixtureRequest) -> Iterator[Directories | None]:
    """Each small-body test runs with paths and with a bulk run's open directories (`Directories`)."""
    if not request.param:
        yield None
        return
    opened = Directories()
    yield opened
    opened.close()


def test_a_small_body_survives_short_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, directories: Directories | None
) -> None:
    # write(2) may take fewer bytes than asked (a signal, a nearly full disk): the rest follows,
    # and only the whole body is renamed into place.
    from fetcher.disk.writer import BodyWriter

    real_write = os.write
    calls = []

    def short_write(fd: int, data: bytes) -> int:
        calls.append(len(data))
        return real_write(fd, bytes(data)[:1000])

    body = bytes(range(256)) * 20
    writer = BodyWriter(parse_url("http://example.org/a.bin"), tmp_path / "a.bin", None, directories=directories)
    writer.write(body[:3000])
    writer.write(body[3000:])
    monkeypatch.setattr(os, "write", short_write)
    download = writer.finish(None)
    monkeypatch.undo()
    assert (tmp_path / "a.bin").read_bytes() == body
    assert not (tmp_path / "a.bin.part").exists()
    assert calls == [3000, 2000, 1000, 2120, 1120, 120]  # each write asks for what is left of its chunk
    assert download.bytes == len(body)


@pytest.fixture(params=[True, False], ids=["renameat2", "check-then-replace"])
def rename_way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test of the rename into place runs with renameat2 and with the check-then-replace fallback."""
    import fetcher.disk.place as place

    if not request.param:
        monkeypatch.setattr(place, "_renameat2", False)


def test_a_small_body_goes_only_where_a_file_may_be(
    tmp_path: Path, rename_way: None, directories: Directories | None
) -> None:
    # A small body is renamed into place only if nothing is at the target (RENAME_NOREPLACE, one
    # atomic call) or after the target check (where that call is missing): an old file or a dangling
    # symlink is replaced, a directory or a FIFO is refused and no .part is left beside it.
    from fetcher.disk.writer import BodyWriter
    from fetcher.errors import OutputError

    (tmp_path / "old").write_bytes(b"old")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "stale.part").write_bytes(b"an earlier run's")
    (tmp_path / "linked.part").symlink_to(tmp_path / "elsewhere")

    def save(name: str) -> OutputError | None:
        writer = BodyWriter(parse_url(f"http://example.org/{name}"), tmp_path / name, None,
                            directories=directories)  # fmt: skip
        writer.write(b"new body")
        try:
            writer.finish(None)
        except OutputError as error:
            writer.abandon()  # as the lanes do on a failure: nothing may come back
            return error
        return None

    for name in ("fresh", "old", "dangling", "stale"):
        assert save(name) is None
        assert (tmp_path / name).read_bytes() == b"new body"
        assert not (tmp_path / name).is_symlink()
    assert not (tmp_path / "nowhere").exists()  # the symlink was replaced, not followed
    refused = {name: save(name) for name in ("dir", "fifo", "linked")}
    assert "is a directory" in str(refused["dir"])
    assert "not a regular file" in str(refused["fifo"])
    assert "linked.part is a symlink" in str(refused["linked"])
    assert (tmp_path / "dir").is_dir() and stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert not (tmp_path / "elsewhere").exists()  # the planted .part symlink was not written through
    assert sorted(path.name for path in tmp_path.iterdir()) == ["dangling", "dir", "fifo", "fresh", "linked.part",
                                                                "old", "stale"]  # fmt: skip


@pytest.mark.parametrize("code", [errno.EINVAL, errno.EACCES])
def test_a_file_system_that_refuses_renameat2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, directories: Directories | None
) -> None:
    # EINVAL (a file system without RENAME_NOREPLACE): the body goes in by the checked replace.
    # Any other failure is the user's error, named as every write failure is.
    import ctypes

    import fetcher.disk.place as place
    from fetcher.disk.writer import BodyWriter
    from fetcher.errors import OutputError

    def refusing(*args: object) -> int:
        ctypes.set_errno(code)
        return -1

    monkeypatch.setattr(place, "_renameat2", refusing)
    writer = BodyWriter(parse_url("http://example.org/a.bin"), tmp_path / "a.bin", None, directories=directories)
    writer.write(b"body")
    if code == errno.EINVAL:
        assert writer.finish(None).bytes == 4
        assert (tmp_path / "a.bin").read_bytes() == b"body"
    else:
        with pytest.raises(OutputError, match=r"cannot write .*a\.bin: Permission denied"):
            writer.finish(None)
        assert not (tmp_path / "a.bin").exists()


def test_a_directory_swapped_for_a_symlink_during_a_run_does_not_redirect_writes(tmp_path: Path) -> None:
    # A bulk run opens each directory it writes into once (Directories): a directory replaced by
    # a symlink after it was made and checked does not take the next file elsewhere; a removed
    # one fails the write (exit 9), and nothing is written anywhere.
    from fetcher.disk.place import Directories
    from fetcher.disk.writer import BodyWriter
    from fetcher.errors import OutputError

    out, other = tmp_path / "out", tmp_path / "other"
    out.mkdir()
    other.mkdir()
    opened = Directories()

    def save(name: str) -> None:
        writer = BodyWriter(parse_url(f"http://example.org/{name}"), out / name, None, directories=opened)
        writer.write(b"body of " + name.encode())
        writer.finish(None)

    try:
        save("first")
        out.rename(tmp_path / "moved")
        out.symlink_to(other)
        save("second")
        assert sorted(path.name for path in (tmp_path / "moved").iterdir()) == ["first", "second"]
        assert (tmp_path / "moved" / "second").read_bytes() == b"body of second"
        assert list(other.iterdir()) == []
        for path in (tmp_path / "moved").iterdir():
            path.unlink()
        (tmp_path / "moved").rmdir()
        with pytest.raises(OutputError, match=r"cannot write .*third\.part: No such file or directory"):
            save("third")
        assert list(other.iterdir()) == []
    finally:
        opened.close()


def test_a_small_body_that_cannot_be_created_is_an_output_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, directories: Directories | None
) -> None:
    # Creating the .part failed (its directory is gone, no descriptor left): the URL's exit-9
    # error, not an OSError that ends the whole run with a traceback.
    from fetcher.disk.writer import BodyWriter
    from fetcher.errors import OutputError

    writer = BodyWriter(parse_url("http://example.org/a"), tmp_path / "gone" / "a", None, directories=directories)
    writer.write(b"x")
    with pytest.raises(OutputError, match=r"cannot write .*gone/a\.part: No such file or directory"):
        writer.finish(None)
    real_open = os.open

    def no_descriptors_left(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if str(path).endswith(".part"):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), path)
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", no_descriptors_left)
    writer = BodyWriter(parse_url("http://example.org/b"), tmp_path / "b", None, directories=directories)
    writer.write(b"x")
    with pytest.raises(OutputError, match=r"cannot write .*b\.part: Too many open files"):
        writer.finish(None)
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_open_directories_are_capped_and_closed(tmp_path: Path) -> None:
    from fetcher.disk.place import Directories
    from fetcher.disk.writer import BodyWriter

    def open_here() -> int:
        """Descriptors of this process open on a directory below tmp_path (other threads' do not count)."""
        found = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                found += os.readlink(f"/proc/self/fd/{fd}").startswith(str(tmp_path))
            except OSError:
                pass
        return found

    opened = Directories()
    for index in range(Directories.LIMIT + 5):
        (tmp_path / f"d{index}").mkdir()
        writer = BodyWriter(parse_url("http://example.org/a"), tmp_path / f"d{index}" / "a", None, directories=opened)
        writer.write(b"x")
        writer.finish(None)
        assert open_here() == min(index + 1, Directories.LIMIT)
    assert all((tmp_path / f"d{index}" / "a").read_bytes() == b"x" for index in range(Directories.LIMIT + 5))
    opened.close()
    assert open_here() == 0


def test_what_appears_at_the_name_during_a_transfer_is_not_replaced(tmp_path: Path, rename_way: None) -> None:
    # A streamed body's target is checked before the first byte; something planted there while
    # the bytes arrive (a FIFO, a directory) is not renamed over at the end: the whole body stays
    # in .part.  A regular file that appears is replaced, as an old file is.
    from fetcher.disk.writer import SMALL_BODY, BodyWriter
    from fetcher.errors import OutputError

    body = os.urandom(SMALL_BODY + 1000)
    planted = {"fifo": lambda path: os.mkfifo(path), "dir": lambda path: path.mkdir(),
               "file": lambda path: path.write_bytes(b"someone else's")}  # fmt: skip
    for kind, plant in planted.items():
        target = tmp_path / f"{kind}.bin"
        writer = BodyWriter(parse_url(f"http://example.org/{kind}.bin"), target, None)
        writer.write(body[:SMALL_BODY])
        writer.write(body[SMALL_BODY:])  # streaming to .part by now
        plant(target)
        if kind == "file":
            assert writer.finish(None).bytes == len(body)
            assert target.read_bytes() == body
            continue
        with pytest.raises(OutputError, match=r"directory|not a regular file"):
            writer.finish(None)
        assert (tmp_path / f"{kind}.bin.part").read_bytes() == body
        assert target.is_dir() if kind == "dir" else stat.S_ISFIFO(os.lstat(target).st_mode)


# -- the user's -o path is written through its symlinks (issue 29, item 2) -----------------------


def test_dash_o_onto_a_symlink_writes_through_it_as_curl_does(tmp_path: Path, site: NamingServer) -> None:
    """`fetch -o link URL`, link -> target: the target gets the bytes through `target.part`, the link stays."""
    target = tmp_path / "real" / "target.bin"
    target.parent.mkdir()
    target.write_bytes(b"old version")
    link = tmp_path / "link"
    link.symlink_to(target)
    result = run_fetch("-o", str(link), site.url("/doc/doc"))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == b"docdocdoc"
    assert sorted(p.name for p in target.parent.iterdir()) == ["target.bin"]  # no .part left beside it
    assert not (tmp_path / "link.part").exists()


def test_dash_o_onto_a_dangling_symlink_creates_what_it_names(tmp_path: Path, site: NamingServer) -> None:
    link = tmp_path / "link"
    link.symlink_to("made.bin")  # relative, as `ln -s made.bin link` makes it
    result = run_fetch("--no-clobber", "-o", str(link), site.url("/doc/doc"))  # nothing there to keep yet
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and (tmp_path / "made.bin").read_bytes() == b"docdocdoc"
    result = run_fetch("--no-clobber", "-o", str(link), site.url("/doc/other"))  # now the target is kept
    assert result.returncode == 0 and b"exists; kept it (--no-clobber)" in result.stderr
    assert (tmp_path / "made.bin").read_bytes() == b"docdocdoc"


def test_dash_o_onto_a_symlink_to_a_directory_or_a_loop_is_a_clear_error(tmp_path: Path, site: NamingServer) -> None:
    directory = tmp_path / "dir"
    directory.mkdir()
    (tmp_path / "to-dir").symlink_to(directory)
    result = run_fetch("-o", str(tmp_path / "to-dir"), site.url("/doc/doc"))
    assert result.returncode == 9
    assert one_error_line(result.stderr).startswith(f"fetch: {tmp_path / 'to-dir'} is a symlink to the directory "
                                                    f"{directory} (")  # fmt: skip
    assert list(directory.iterdir()) == []
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    result = run_fetch("-o", str(tmp_path / "a"), site.url("/doc/doc"))
    assert result.returncode == 9
    assert "a loop of symlinks" in one_error_line(result.stderr)
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink()


def test_dash_o_through_a_symlink_keeps_part_no_follow_and_resumes(tmp_path: Path, site: NamingServer) -> None:
    """The rule for NAME.part stays: a symlink planted at the target's .part is refused, never followed;
    -C resumes the target's own .part."""
    target = tmp_path / "target.bin"
    link = tmp_path / "link"
    link.symlink_to(target)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    (tmp_path / "target.bin.part").symlink_to(victim)
    result = run_fetch("-o", str(link), site.url("/doc/doc"))
    assert result.returncode == 9 and b"target.bin.part is a symlink" in result.stderr
    assert victim.read_bytes() == b"precious" and not target.exists()
    (tmp_path / "target.bin.part").unlink()
    (tmp_path / "target.bin.part").write_bytes(b"doc")
    result = run_fetch("-C", "-o", str(link), site.url("/doc/doc"))
    assert result.returncode == 0, result.stderr
    assert target.read_bytes() == b"docdocdoc" and link.is_symlink()


# -- a bulk run without -d (issue 29, item 1) ---------------------------------------------------------------


def test_a_bulk_run_without_d_prints_documents_and_replaces_nothing(tmp_path: Path, site: NamingServer) -> None:
    """`fetch -i urls.txt` where the user keeps a `hello` of their own: --help says documents go to stdout."""
    here = tmp_path / "here"
    here.mkdir()
    (here / "hello").write_bytes(b"my own file\n")
    (here / "doc").write_bytes(b"mine too\n")
    listing = tmp_path / "urls.txt"
    listing.write_text(f"# two documents\n{site.url('/doc/hello')}\n\n{site.url('/doc/doc')}\n")
    result = run_fetch("-i", str(listing), "--no-progress", cwd=here)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"hellohellohello" + b"docdocdoc"  # in input order, one after another
    assert (here / "hello").read_bytes() == b"my own file\n" and (here / "doc").read_bytes() == b"mine too\n"
    assert sorted(p.name for p in here.iterdir()) == ["doc", "hello"]
    # stdin as the list, a failure in the middle: the others still print, exit 1
    result = run_fetch("-i", "-", input=f"{site.url('/doc/doc')}\n{site.url('/missing')}\n{site.url('/doc/ok')}\n"
                       .encode(), cwd=here)  # fmt: skip
    assert result.returncode == 1
    assert result.stdout == b"docdocdoc" + b"okokok"
    assert "404 Not Found" in result.stderr.decode()
    assert sorted(p.name for p in here.iterdir()) == ["doc", "hello"]


def test_a_bulk_run_that_saves_needs_a_directory(tmp_path: Path, site: NamingServer) -> None:
    """-r, --manifest, --skip-done without -d: refused before anything runs, nothing written."""
    here = tmp_path / "here"
    here.mkdir()
    (here / "doc").write_bytes(b"mine\n")
    for args in (["-r"], ["--manifest", "m.jsonl"], ["--skip-done", "m.jsonl"], ["-i", "-", "--manifest", "m.jsonl"]):
        result = run_fetch(*args, site.url("/doc/doc"), input=b"", cwd=here)
        assert result.returncode == 2, (args, result.stderr)
        assert "give -d DIR for where they go" in result.stderr.decode()
        assert "-d . saves in the current directory" in result.stderr.decode()
        assert sorted(p.name for p in here.iterdir()) == ["doc"] and (here / "doc").read_bytes() == b"mine\n"
    # -d . is asking for the current directory: there, replacing stays the documented default
    result = run_fetch("-d", ".", "--no-progress", site.url("/doc/doc"), cwd=here)
    assert result.returncode == 0, result.stderr
    assert (here / "doc").read_bytes() == b"docdocdoc"


def test_dash_o_and_an_input_list_is_a_usage_error(tmp_path: Path, site: NamingServer) -> None:
    listing = tmp_path / "urls.txt"
    listing.write_text(f"{site.url('/doc/doc')}\n")
    result = run_fetch("-o", str(tmp_path / "out"), "-i", str(listing))
    assert result.returncode == 2 and b"-o names one file" in result.stderr
    assert not (tmp_path / "out").exists()
