"""The validators a resume keeps beside its `.part` (fetcher/disk/resume.py) and the pure checks that use them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fetcher.disk.resume import SUFFIX, Validators, forget, record, recorded
from fetcher.schemes.ftp.retr import resume_problem as ftp_problem
from fetcher.schemes.http.response import ignored_range, resume_problem

V1 = Validators(etag='"v1"', modified=1_772_445_600, length=1000)


def test_a_record_round_trips_and_goes_with_forget(tmp_path: Path) -> None:
    part = tmp_path / "doc.part"
    assert record(part, V1)
    assert recorded(part) == V1
    forget(part)
    assert recorded(part) is None and not (tmp_path / ("doc.part" + SUFFIX)).exists()


@pytest.mark.parametrize(
    "content",
    [
        b'{"etag": "\\"a\\"\\r\\nX-Injected: 1", "modified": null, "length": null}',  # no tag with CR LF
        b'{"etag": 5, "modified": "yesterday", "length": -3}',
        b"not json",
        b"[1, 2]",
        b'{"etag": "\\"' + b"x" * 5000 + b'\\""}',
    ],
)
def test_a_record_that_is_not_ours_is_ignored(tmp_path: Path, content: bytes) -> None:
    part = tmp_path / "doc.part"
    (tmp_path / ("doc.part" + SUFFIX)).write_bytes(content)
    assert recorded(part) is None


def test_a_symlink_planted_as_the_record_is_neither_written_through_nor_read(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text('{"etag": "\\"planted\\""}')
    part = tmp_path / "doc.part"
    os.symlink(victim, tmp_path / ("doc.part" + SUFFIX))
    assert not record(part, V1)
    assert victim.read_text() == '{"etag": "\\"planted\\""}'
    assert recorded(part) is None


def test_a_hard_link_planted_as_the_record_is_left_whole(tmp_path: Path) -> None:
    """Another name of someone's file is refused before anything is cut from it."""
    victim = tmp_path / "victim"
    victim.write_text("someone's data")
    part = tmp_path / "doc.part"
    os.link(victim, tmp_path / ("doc.part" + SUFFIX))
    assert not record(part, V1)
    assert victim.read_text() == "someone's data"


def test_if_range_takes_a_strong_tag_else_the_date_never_a_weak_tag() -> None:
    assert V1.if_range() == '"v1"'
    assert Validators(modified=784_111_777).if_range() == "Sun, 06 Nov 1994 08:49:37 GMT"
    assert Validators(etag='W/"v1"', modified=784_111_777).if_range() is None
    assert Validators(length=5).if_range() is None


def test_changes_compare_only_what_both_sides_know() -> None:
    assert V1.changed(Validators(etag='"v1"')) is None
    assert V1.changed(Validators(etag='W/"v1"', length=1000)) is None  # weak comparison of the tags
    assert V1.changed(Validators()) is None
    assert V1.changes(Validators(etag='"v2"', modified=1_772_445_601, length=999)) == [
        'ETag "v1" is now "v2"',
        "modified 2026-03-02 10:00:00 UTC is now 2026-03-02 10:00:01 UTC",
        "size 1000 is now 999 bytes",
    ]


def range_reply(span: str, length: int, etag: str = '"v1"') -> list[tuple[str, str]]:
    return [("Content-Range", span), ("Content-Length", str(length)), ("ETag", etag)]


def test_a_206_continues_the_part_only_where_it_ends_and_as_long_as_it_says() -> None:
    assert resume_problem(range_reply("bytes 400-999/1000", 600), 400, V1) is None
    assert resume_problem(range_reply("bytes 400-999/1000", 600), 400, None) is None
    assert "from 300 on, not from 400" in (resume_problem(range_reply("bytes 300-999/1000", 700), 400, V1) or "")
    assert "599 bytes for a range of 600" in (resume_problem(range_reply("bytes 400-999/1000", 599), 400, V1) or "")
    assert "no usable Content-Range" in (resume_problem([("Content-Length", "600")], 400, V1) or "")
    assert "no usable Content-Range" in (resume_problem(range_reply("bytes */1000", 0), 400, V1) or "")
    assert "ends at byte 1000" in (resume_problem(range_reply("bytes 400-1000/1000", 601), 400, V1) or "")
    assert "changed" in (resume_problem(range_reply("bytes 400-999/1000", 600, '"v2"'), 400, V1) or "")
    assert "size 1000 is now 2000" in (resume_problem(range_reply("bytes 400-1999/2000", 1600), 400, V1) or "")


def test_a_whole_document_to_a_resume_says_why() -> None:
    assert ignored_range([("ETag", '"v1"'), ("Content-Length", "1000")], V1) == "the server ignored the byte range"
    assert "changed" in ignored_range([("ETag", '"v2"'), ("Content-Length", "1000")], V1)
    assert ignored_range([("ETag", '"v2"')], None) == "the server ignored the byte range"


def test_ftp_resumes_only_an_image_transfer_of_the_same_size_and_time() -> None:
    from datetime import UTC, datetime

    then = datetime.fromtimestamp(1_772_445_600, UTC)
    assert ftp_problem(400, "I", 1000, then, V1) is None
    assert ftp_problem(400, "I", 1000, None, None) is None
    assert "changed" in (ftp_problem(400, "I", 1001, then, V1) or "")
    assert "changed" in (ftp_problem(400, "I", 1000, datetime.fromtimestamp(1_772_445_700, UTC), V1) or "")
    assert "longer than the file on the server" in (ftp_problem(1200, "I", 1000, None, None) or "")
    assert "ASCII" in (ftp_problem(400, "A", 1000, None, None) or "")
    assert "SIZE" in (ftp_problem(400, "I", None, None, None) or "")
