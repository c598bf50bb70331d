"""A name the server or the URL chooses never lands on one of the run's own files (issue 29, item 16).

Against `names_hostile.NamingServer`, whose Content-Disposition names each
of the run's files in turn: the manifest, the input list, the -K option
file, the WARC file, its CDX index and a rotated WARC name, the ETag store.
The run's files come out intact and every document is saved beside them
under another name (bulk), or refused with one clear line (one URL).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fetcher.disk.reserved import Reserved
from tests.conftest import run_fetch
from tests.hostile.checks import one_error_line
from tests.hostile.names_hostile import naming_server

#: Names of the run's own files inside -d, as the bulk test lays them out.
OWN = ["m.jsonl", "urls.txt", "options", ".fetch-etags.jsonl"]
WARC = ["crawl.warc.gz", "crawl.cdxj", "crawl-00001.warc.gz"]


def test_server_names_never_replace_the_runs_own_files_in_a_bulk_run(tmp_path: Path) -> None:
    pytest.importorskip("warcio")
    out = tmp_path / "out"
    out.mkdir()
    names = [*OWN, *WARC]
    with naming_server(names) as site:
        urls = [site.url(f"/named/{index}") for index in range(len(names))]
        (out / "urls.txt").write_text("\n".join(urls) + "\n")
        (out / "options").write_text("no-progress\n")
        (out / ".fetch-etags.jsonl").write_text("")  # -N's store, there from an earlier run
        listing_before = (out / "urls.txt").read_bytes()
        result = run_fetch("-J", "-K", str(out / "options"), "-i", str(out / "urls.txt"), "-d", str(out),
                           "--manifest", str(out / "m.jsonl"), "--warc-file", str(out / "crawl"),
                           "--warc-cdx")  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (out / "m.jsonl").read_text().splitlines()]
    assert len(rows) == len(names) and {row["status"] for row in rows} == {"ok"}  # every record is still there
    saved = {Path(row["path"]).name: row["url"] for row in rows}
    for index, name in enumerate(names):
        # beside it, numbered: the server's name never replaced the run's file (a leading dot is
        # never kept from a server's name, so the ETag store's is safe by that rule already)
        kept = name.lstrip(".") if name.startswith(".") else f"{name}.1"
        assert saved[kept] == urls[index]
        assert (out / kept).read_bytes() == b"named %d\n" % index
    assert (out / "urls.txt").read_bytes() == listing_before
    assert (out / "options").read_text() == "no-progress\n"
    assert (out / ".fetch-etags.jsonl").read_text() == ""
    assert not (out / "crawl-00001.warc.gz").exists()  # no rotation asked: a name of the family, kept free
    from warcio.archiveiterator import ArchiveIterator

    with open(out / "crawl.warc.gz", "rb") as warc:
        archived = {record.rec_headers.get_header("WARC-Target-URI") for record in ArchiveIterator(warc)
                    if record.rec_type == "response"}  # fmt: skip
    assert archived == set(urls)
    assert len((out / "crawl.cdxj").read_text().splitlines()) >= len(urls)


def test_one_url_refuses_a_name_that_is_the_runs_own_file(tmp_path: Path) -> None:
    """-O -J: the server names the -K file; -O: the URL names the WARC file. One line each, exit 9."""
    options = tmp_path / "options"
    options.write_text("no-progress\n")
    with naming_server(["options"]) as site:
        result = run_fetch("-O", "-J", "-K", str(options), "--output-dir", str(tmp_path), site.url("/named/0"))
        assert result.returncode == 9
        line = one_error_line(result.stderr)
        assert line.startswith(f"fetch: {options} (the name its server chose) is one of this run's own files")
        assert options.read_text() == "no-progress\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["options"]
        pytest.importorskip("warcio")
        result = run_fetch("-O", "--warc-file", "crawl", site.url("/doc/crawl.warc.gz"), cwd=tmp_path)
        assert result.returncode == 9
        assert "(the name from the URL) is one of this run's own files" in one_error_line(result.stderr)
        assert (tmp_path / "crawl.warc.gz").read_bytes()[:2] == b"\x1f\x8b"  # still the archive (gzip)
        # The user's own -o names any file, the run's too: the user asked for that place.
        result = run_fetch("-o", str(options), "-K", str(options), site.url("/doc/x"))
        assert result.returncode == 0, result.stderr
        assert options.read_bytes() == b"xxx"


def test_reserved_names_are_found_however_they_are_spelled(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    manifest = tmp_path / "real" / "m.jsonl"
    manifest.write_text("")
    reserved = Reserved([manifest], [(tmp_path / "real", "crawl-", (".warc.gz",))])
    assert reserved.hit(tmp_path / "link" / "m.jsonl")
    assert reserved.hit(tmp_path / "real" / ".." / "real" / "m.jsonl")
    assert reserved.hit(tmp_path / "link" / "crawl-00042.warc.gz")
    assert not reserved.hit(tmp_path / "link" / "crawl-00042.txt")
    assert not reserved.hit(tmp_path / "m.jsonl") and not reserved.hit(tmp_path / "real" / "m.json")
    # By identity: the same file under another name (a hard link stands in for a case-insensitive spelling).
    os.link(manifest, tmp_path / "other")
    assert reserved.owns(os.stat(tmp_path / "other")) and not reserved.owns(os.stat(tmp_path / "real"))


def test_a_document_is_not_renamed_onto_the_runs_own_file_by_another_spelling(tmp_path: Path) -> None:
    """The rename into place asks the file system: the file at the target is the manifest's own (same inode)."""
    out = tmp_path / "out"
    out.mkdir()
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("")
    os.link(manifest, out / "doc")  # what a case-insensitive file system makes of `DOC` beside `doc`
    with naming_server() as site:
        result = run_fetch("-d", str(out), "--manifest", str(manifest), "--no-progress", site.url("/doc/doc"),
                           site.url("/doc/ok"))  # fmt: skip
    assert result.returncode == 1
    rows = {Path(row["url"]).name: row for row in map(json.loads, manifest.read_text().splitlines())}
    assert rows["doc"]["status"] == "failed" and "one of this run's own files" in rows["doc"]["error"]
    assert rows["ok"]["status"] == "ok" and (out / "ok").read_bytes() == b"okokok"
    assert os.path.samefile(out / "doc", manifest)


def test_the_etag_store_name_is_the_one_etags_writes() -> None:
    from fetcher.cli import own_files
    from fetcher.mirror import etags

    assert own_files._ETAG_STORE == etags.STATE_NAME
