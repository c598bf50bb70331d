"""Build-time step beside pyproject.toml: the man page fetch(1), generated from the parser.

Everything else about the distribution is in pyproject.toml.  The page is
written to build/man/fetch.1 and installed as share/man/man1/fetch.1 (in a
venv: <venv>/share/man/man1, which `man` finds through PATH; else
`fetch --man | man -l -` shows the same page).  Generating it here, not
keeping a copy in the repository, means it always matches the parser it
ships with; fetcher.cli.manpage needs only the standard library.
"""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fetcher.cli.manpage import render  # noqa: E402  (the source tree, put on the path just above)

page = HERE / "build" / "man" / "fetch.1"
page.parent.mkdir(parents=True, exist_ok=True)
page.write_text(render(), encoding="utf-8")

setup(data_files=[("share/man/man1", [str(page.relative_to(HERE))])])
