"""The documentation site builds with no warnings, with a page per use and every public name documented."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fetcher

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("fetch", "download", "listings", "bulk", "mirror", "options", "errors", "safety", "extending", "reference")


def test_every_public_name_has_a_docstring() -> None:
    missing = []
    for name in fetcher.__all__:
        value = getattr(fetcher, name)
        if name.startswith("__"):
            continue
        own = value.__dict__.get("__doc__") if inspect.isclass(value) else value.__doc__
        if not (own or "").strip():
            missing.append(name)
    assert missing == []


def test_site_builds_strictly(tmp_path: Path) -> None:
    try:
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI installs the docs extra (pip install -e '.[test,docs]'); mkdocs is missing")
        pytest.skip("the docs extra is not installed: pip install -e '.[docs]'")
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    for page in PAGES:
        assert (site / page / "index.html").is_file(), page
    reference = (site / "reference" / "index.html").read_text()
    anchors = set(re.findall(r'id="(fetcher\.[A-Za-z_.]+)"', reference))
    # join is rendered from its module (fetcher.url.join shadows it for griffe); errors has its own page
    public = {f"fetcher.{name}" for name in fetcher.__all__ if not name.startswith("__")}
    public -= {"fetcher.errors", "fetcher.join"}
    assert public - anchors == set()
    assert "fetcher.url.join.join" in anchors
    errors_page = (site / "errors" / "index.html").read_text()
    assert 'id="fetcher.errors.NotFound"' in errors_page


def test_docs_and_readme_name_only_files_the_project_has() -> None:
    """Paths in README.md and docs/ exist (bench/results/ is written by `python -m bench`)."""
    top = r"(?:examples|tests|bench|docs|fetcher|schemes)"
    pattern = re.compile(rf"(?<![\w/.])({top}/[\w./-]*\.(?:py|md|toml|yml|txt))")
    missing = []
    for document in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for path in pattern.findall(document.read_text()):
            if not path.startswith("bench/results/") and not (ROOT / path).exists():
                missing.append(f"{document.name}: {path}")
    assert missing == []
    sources = [*ROOT.glob("fetcher/**/*.py"), *ROOT.glob("schemes/**/*.py"), *ROOT.glob("examples/*.py")]
    assert [str(path) for path in sources if "DESIGN.md" in path.read_text()] == []
