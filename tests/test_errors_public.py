"""The error classes a user catches are public, and every exit code is documented in both places a user looks."""

from __future__ import annotations

import re
from pathlib import Path

import fetcher
from fetcher import errors

ROOT = Path(__file__).resolve().parent.parent


def _codes(text: str, heading: str) -> set[int]:
    """The exit codes in the first table after `heading`."""
    table = text[text.index(heading) :]
    codes: set[int] = set()
    for line in table.splitlines()[1:]:
        if codes and not line.startswith("|"):
            break
        match = re.match(r"\| (\d+) \|", line)
        if match:
            codes.add(int(match.group(1)))
    return codes


def test_every_exit_code_class_is_exported_from_fetcher() -> None:
    """A class that brings its own exit code is one a script wants to catch by name: `fetcher.<Name>`."""
    own_code = [
        cls
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.FetchError)
        and all(cls.exit_code != base.exit_code for base in cls.__mro__[1:] if issubclass(base, errors.FetchError))
    ]  # fmt: skip
    names = {cls.__name__ for cls in own_code}
    assert "OutputError" in names
    for cls in own_code:
        assert cls.__name__ in fetcher.__all__, cls.__name__
        assert getattr(fetcher, cls.__name__) is cls


def test_docs_errors_page_lists_every_exit_code() -> None:
    """Every code an error class carries, success (0) and a reader that closed stdout (141): no more, no fewer."""
    page = _codes((ROOT / "docs" / "errors.md").read_text(), "| code | meaning")
    carried = {
        cls.exit_code for cls in vars(errors).values() if isinstance(cls, type) and issubclass(cls, errors.FetchError)
    }
    assert {9, 141} <= page
    assert page == carried | {0, 141}
    assert "`OutputError`" in (ROOT / "docs" / "errors.md").read_text()
