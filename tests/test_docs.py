"""The documentation site builds with no warnings, with a page per use and every public name documented."""

from __future__ import annotations

import inspect
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import fetcher

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("fetch", "download", "listings", "bulk", "mirror", "errors", "safety", "extending", "reference", "tour",
         "options", "command", "cluster", "warc", "library", "benchmarks", "architecture")  # fmt: skip
#: README.md is the front page (and the PyPI description): what fetcher is, the two commands, examples and
#: links; the reference, the safety rules, the benchmarks and the internals live on the docs site.
README_MAX_LINES = 250


def readme_links() -> list[tuple[str, str]]:
    """The README's relative links into the repository, as (path, anchor) pairs ("" when there is no anchor)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", (ROOT / "README.md").read_text())
    local = [target for target in targets if not re.match(r"[a-z]+:", target)]
    return [(target.partition("#")[0], target.partition("#")[2]) for target in local]


def nav_pages() -> list[str]:
    """The pages of the site's navigation, from mkdocs.yml (no YAML parser needed: one `- Title: page.md` a line)."""
    return re.findall(r"^\s+- [^:\n]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), flags=re.MULTILINE)


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
    # Every anchor the README links to (docs/PAGE.md#anchor) is a heading of that page on the site; GitHub
    # derives the same ids from these headings.
    broken = []
    for path, anchor in readme_links():
        if path.startswith("docs/") and anchor:
            built = site / Path(path).relative_to("docs").with_suffix("") / "index.html"
            if f'id="{anchor}"' not in built.read_text():
                broken.append(f"{path}#{anchor}")
    assert broken == []


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


def test_readme_is_a_front_page_that_links_every_page_of_the_site() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < README_MAX_LINES, f"README.md has {len(lines)} lines: move reference text to docs/"
    links = readme_links()
    assert [path for path, _ in links if not (ROOT / path).exists()] == []
    linked = {path for path, _ in links}
    pages = nav_pages()
    assert len(pages) >= len(PAGES) + 1  # the regex read the nav
    assert [page for page in pages if page != "index.md" and f"docs/{page}" not in linked] == []


def test_readme_examples_use_only_real_options() -> None:
    """Every `fetch ...` line of the README's sh blocks (each side of a pipe) parses as the command parses it."""
    from fetcher.cli.options import build_parser

    commands = []
    for block in re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.DOTALL):
        for line in block.splitlines():
            commands += [words for part in line.split(" | ") if (words := shlex.split(part, comments=True))]
    examples = [words[1:] for words in commands if words[0] == "fetch"]
    assert len(examples) >= 12
    schemes = {match.group() for words in examples for word in words if (match := re.match(r"[a-z]+:", word))}
    assert {"ftp:", "https:", "gopher:", "news:", "nntp:", "wais:", "prospero:", "telnet:", "file:"} <= schemes
    refused = []
    for words in examples:
        try:
            build_parser().parse_intermixed_args(words)
        except SystemExit:
            refused.append(" ".join(words))
    assert refused == []
