"""The -N ETag state (fetcher/mirror/etags.py): what is kept, what is refused, what a damaged file does."""

from __future__ import annotations

import os
from pathlib import Path

from fetcher.mirror.etags import STATE_NAME, EtagStore
from fetcher.text import valid_tag


def test_only_well_formed_entity_tags_are_kept() -> None:
    assert valid_tag('"abc"') == '"abc"' and valid_tag('W/"5f3-1a"') == 'W/"5f3-1a"' and valid_tag('""') == '""'
    for hostile in ('abc', '"a"\r\nX-Injected: 1', '"a b"', '"a"b"', 'w/"x"', '"' + "x" * 600 + '"', None, 7):
        assert valid_tag(hostile) is None, hostile


def test_a_tag_describes_the_file_only_while_it_is_unchanged(tmp_path: Path) -> None:
    store = EtagStore(tmp_path)
    saved = tmp_path / "a.txt"
    saved.write_bytes(b"alpha")
    store.remember("http://h/a.txt", saved, '"t1"')
    store.remember("http://h/evil", saved, '"t"\r\nSet-Cookie: x')  # refused: never stored, never sent
    assert store.save() is None
    again = EtagStore(tmp_path)
    assert again.load() == []
    assert again.lookup("http://h/a.txt", saved) == '"t1"'
    assert again.lookup("http://h/evil", saved) is None
    assert again.lookup("http://h/a.txt", tmp_path / "other.txt") is None  # another file
    os.utime(saved, (1, 1))  # touched by hand
    assert again.lookup("http://h/a.txt", saved) is None
    again.remember("http://h/a.txt", saved, None)  # saved again without an ETag: forgotten
    assert again.save() is None and (tmp_path / STATE_NAME).read_text() == ""


def test_a_damaged_state_file_costs_only_its_bad_lines(tmp_path: Path) -> None:
    saved = tmp_path / "a.txt"
    saved.write_bytes(b"alpha")
    store = EtagStore(tmp_path)
    store.remember("http://h/a.txt", saved, '"t1"')
    store.save()
    with open(tmp_path / STATE_NAME, "a") as state:
        state.write('{"url": "http://h/b", "etag": "no quotes", "path": "b", "size": 1, "mtime": 1}\n{"half\n')
    again = EtagStore(tmp_path)
    assert again.load() == [f"fetch: {tmp_path / STATE_NAME} line 2: not an ETag record; ignored",
                            f"fetch: {tmp_path / STATE_NAME} line 3: not an ETag record; ignored"]  # fmt: skip
    assert again.lookup("http://h/a.txt", saved) == '"t1"'


def test_the_type_of_a_saved_file_is_kept_with_or_without_a_tag(tmp_path: Path) -> None:
    """A 304 names no type: the state says whether the local copy (`index`, no suffix) is a page."""
    page, plain = tmp_path / "index", tmp_path / "notes"
    page.write_bytes(b"<a href=x>x</a>")
    plain.write_bytes(b"text")
    store = EtagStore(tmp_path)
    store.remember("http://h/", page, None, "text/html; charset=utf-8")
    store.remember("http://h/notes", plain, '"n1"', "text/plain")
    store.remember("http://h/evil", plain, None, "text/html\r\nX-Injected: 1")  # not a type: nothing kept
    assert store.save() is None
    again = EtagStore(tmp_path)
    assert again.load() == []
    assert again.content_type("http://h/", page) == "text/html; charset=utf-8"
    assert again.lookup("http://h/", page) is None  # no tag to send
    assert again.lookup("http://h/notes", plain) == '"n1"'
    assert again.content_type("http://h/notes", plain) == "text/plain"
    assert again.content_type("http://h/evil", plain) is None
    os.utime(page, (1, 1))  # changed locally: the record no longer describes it
    assert again.content_type("http://h/", page) is None
