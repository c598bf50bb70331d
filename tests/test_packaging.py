"""The distribution: `python -m build` makes a wheel and an sdist; the wheel works in a fresh venv.

Marked `packaging` (deselect with `-m "not packaging"`).  It builds from a
copy of the sources (the checkout is left untouched), needs `build` (the test
extra) and reaches the package index for the build backend (setuptools) and
the wheel's dependencies, as any `pip install` does.
"""

from __future__ import annotations

import email.parser
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import fetcher

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in", "fetcher", "schemes",
           "examples")  # fmt: skip


def run(*command: str | Path, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, cwd=cwd, env=env,
                            timeout=timeout)  # fmt: skip
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build", reason="python -m build needs `build`: pip install -e '.[test]'")
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    run(sys.executable, "-m", "build", "--outdir", work / "dist", source, cwd=work, timeout=300)
    return work / "dist"


def only(directory: Path, pattern: str) -> Path:
    found = list(directory.glob(pattern))
    assert len(found) == 1, found
    return found[0]


def test_wheel_holds_the_packages_and_metadata(dist: Path) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wheel = only(dist, "fetcher_rfc1738-*-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(name for name in names if name.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(archive.read(info).decode())
    data = info.split("/")[0].replace(".dist-info", ".data")
    # Scheme code is installed as fetcher.schemes: no top-level package with a generic name.
    assert {name.split("/")[0] for name in names} == {"fetcher", info.split("/")[0], data}
    assert [name for name in names if name.startswith(data)] == [f"{data}/data/share/man/man1/fetch.1"]
    assert "fetcher/py.typed" in names and "fetcher/schemes/py.typed" in names
    assert "fetcher/sync.py" in names and "fetcher/schemes/ftp/__init__.py" in names
    assert not [name for name in names if name.startswith(("tests/", "bench/")) or "__pycache__" in name]
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert metadata["Name"] == project["name"] == "fetcher-rfc1738"
    assert metadata["Version"] == fetcher.__version__
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Requires-Python"] == project["requires-python"] == ">=3.11"
    assert "Typing :: Typed" in metadata.get_all("Classifier")
    assert {requirement for requirement in metadata.get_all("Requires-Dist") if "extra ==" not in requirement} == set(
        project["dependencies"]
    )


def test_sdist_holds_sources_license_and_changelog_but_no_tests(dist: Path) -> None:
    sdist = only(dist, "fetcher_rfc1738-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "fetcher/__init__.py"} <= names
    assert "examples/bulk.py" in names
    assert not [name for name in names if name.startswith(("tests/", "bench/"))]


def test_wheel_installs_in_a_fresh_venv_and_fetches(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # No pip inside (faster); this interpreter's pip installs into it.  The
    # dependencies come from the index (cached after the project's own install).
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    wheel = only(dist, "fetcher_rfc1738-*.whl")
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--disable-pip-version-check", wheel,
        cwd=tmp_path, timeout=300)  # fmt: skip

    where = run(python, "-c", "import fetcher, trio; print(fetcher.__file__)", cwd=tmp_path).stdout.strip()
    assert Path(where).is_relative_to(venv), where  # the installed copy, not the checkout

    version = run(venv / "bin" / "fetch", "--version", cwd=tmp_path)
    # The man page generated at build time is installed where man finds it, and is the parser's page.
    page = (venv / "share" / "man" / "man1" / "fetch.1").read_text()
    assert page.startswith(".TH FETCH 1 ") and "\\fB\\-\\-print\\-completion\\fR" in page
    printed = run(venv / "bin" / "fetch", "--man", cwd=tmp_path).stdout
    assert page.split("\n", 1)[1] == printed.split("\n", 1)[1]  # all but the .TH line's date
    if shutil.which("man"):  # man-db looks in <dir>/../share/man for every <dir> on PATH
        env = {key: value for key, value in os.environ.items() if key != "MANPATH"}
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        found = subprocess.run(["man", "-w", "fetch"], capture_output=True, text=True, env=env, timeout=60)
        assert found.stdout.strip() == str(venv / "share" / "man" / "man1" / "fetch.1"), found
    assert fetcher.__version__ in version.stdout + version.stderr

    document = tmp_path / "hello.txt"
    document.write_bytes(b"Hello from the wheel.\n")
    fetched = run(venv / "bin" / "fetch", f"file://{document}", cwd=tmp_path)
    assert fetched.stdout == "Hello from the wheel.\n"

    saved = run(venv / "bin" / "fetch", "-o", "copy.txt", f"file://{document}", cwd=tmp_path)
    assert saved.returncode == 0
    assert (tmp_path / "copy.txt").read_bytes() == b"Hello from the wheel.\n"

    blocking = run(python, "-c", f"import fetcher; print(fetcher.fetch_sync('file://{document}').text, end='')",
                   cwd=tmp_path)  # fmt: skip
    assert blocking.stdout == "Hello from the wheel.\n"
