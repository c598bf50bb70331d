"""The house's rules (docs/architecture.md), checked rather than remembered.

The import contracts live in pyproject.toml ([tool.importlinter]) and are
checked by `lint-imports` in .ci/run as well; running them here means the
README's test command alone catches a broken layer.  The rest are the
rules import-linter cannot state: module size, the top of `fetcher/`, and
import cycles between modules.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: A module past this many lines becomes a package, cut along the jobs it holds.
MAX_LINES = 500
#: Modules directly in fetcher/: the public front and the small shared layers; the rest live in rooms.
MAX_TOP_MODULES = 15


def _product_modules() -> list[Path]:
    # fetcher/schemes is a link to schemes/ (how scheme code is installed): each file once.
    return sorted({path.resolve() for path in [*(ROOT / "fetcher").rglob("*.py"), *(ROOT / "schemes").rglob("*.py")]})


def test_the_import_contracts_hold() -> None:
    """Layers, the handler contract, the core never importing scheme code, one backend layer."""
    pytest.importorskip("importlinter", reason="pip install -e '.[test]' brings import-linter")
    command = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    done = subprocess.run([sys.executable, "-c", command, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "BROKEN" not in done.stdout


def test_no_module_is_over_500_lines() -> None:
    long = {str(path): count for path in _product_modules()
            if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}  # fmt: skip
    assert long == {}, "cut these along the jobs they hold"


def test_fetcher_keeps_at_most_15_modules_at_its_top() -> None:
    top = sorted(path.name for path in (ROOT / "fetcher").glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_no_runtime_import_cycle() -> None:
    """No module reaches itself again through the imports made at run time (function-level ones included)."""
    grimp = pytest.importorskip("grimp", reason="import-linter brings grimp")
    sys.path.insert(0, str(ROOT))
    try:
        graph = grimp.build_graph("fetcher", exclude_type_checking_imports=True, cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))
    modules = sorted(graph.modules)
    edges = {module: sorted(graph.find_modules_directly_imported_by(module)) for module in modules}
    cycles = _strongly_connected(modules, edges)
    assert cycles == [], cycles


def _strongly_connected(nodes: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's components of more than one node, iteratively (the graph is a few hundred modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, position = work.pop()
            if position == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = edges.get(node, [])
            if position < len(targets):
                work.append((node, position + 1))
                target = targets[position]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found
