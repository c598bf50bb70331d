"""One tally of a bulk run (fetcher/cli/tally.py): the plain and the mirror summary are read off the same counts."""

from __future__ import annotations

from fetcher.cli.tally import Tally, interrupted_line


def test_both_lines_count_the_same_records() -> None:
    tally = Tally()
    tally.count("ok", 10, change="new")
    tally.count("ok", 7, change="updated")
    tally.count("ok", 0, change="unchanged")
    tally.count("ok", None, listed=True)  # a listing that did not change: retrieved, but no file to count
    tally.count("ok", None, change="new", listed=True)
    tally.count("ok", 3)  # a plain run's saved file: new
    tally.count("failed", None)
    tally.count("skipped", None)
    tally.count("interrupted", None)
    plain, mirror = tally.line(), tally.line(mirror=True)
    assert plain.startswith("fetch: 6 retrieved, 1 failed, 1 skipped, 1 interrupted; 20 bytes in ")
    assert mirror.startswith("fetch: mirror: 3 new, 1 updated, 1 unchanged, 2 skipped, 1 failed; 20 bytes in ")


def test_a_plain_run_leaves_out_what_did_not_happen() -> None:
    tally = Tally()
    tally.count("ok", 5)
    assert tally.line().startswith("fetch: 1 retrieved, 0 failed; 5 bytes in ")


def test_the_interrupted_line_names_what_was_kept_and_how_to_go_on() -> None:
    assert interrupted_line(0, None) == (
        "fetch: interrupted; rerun with --manifest FILE next time, then --skip-done FILE, to retrieve the rest\n"
    )
    assert interrupted_line(2, "m.jsonl") == (
        "fetch: interrupted; 2 .part files kept, rerun with -C --skip-done m.jsonl to resume\n"
    )
