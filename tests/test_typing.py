"""The typed public API: mypy --strict on a user's script that imports only public names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import fetcher

HERE = Path(__file__).parent
USER_SCRIPT = HERE / "typing_user_script.py"


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy-cache")


def mypy(tmp_path: Path, cache_dir: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    """mypy --strict on `files`, seeing `fetcher` where Python imports it from, as a user's project would."""
    pytest.importorskip("mypy", reason="mypy is not installed: python3 -m pip install mypy")
    package_root = Path(fetcher.__file__).resolve().parent.parent
    env = {key: value for key, value in os.environ.items() if key not in ("MYPYPATH", "PYTHONPATH")}
    if package_root.name != "site-packages":
        # an editable install or a checkout: mypy cannot follow an import hook, so say where it is
        env["MYPYPATH"] = str(package_root)
    return subprocess.run(
        [
            sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-color-output",
            "--config-file", os.devnull, "--cache-dir", str(cache_dir), *map(str, files),
        ],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip


def test_user_script_passes_mypy_strict(tmp_path: Path, cache_dir: Path) -> None:
    result = mypy(tmp_path, cache_dir, USER_SCRIPT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found in 1 source file" in result.stdout


def test_mypy_sees_the_real_types_of_public_names(tmp_path: Path, cache_dir: Path) -> None:
    """Misuse must be caught: the public names are typed, not Any, and private ones are not exported."""
    script = tmp_path / "misuse.py"
    script.write_text(
        "from fetcher import Client, Settings, fetch_sync, fetch_all_sync\n"
        "from fetcher import remote_name\n"
        "size: int = fetch_sync('file:///etc/hostname').content\n"
        "first: str = fetch_all_sync(['file:///etc/hostname'])[0]\n"
        "async def main() -> None:\n"
        "    async with Client(timeout=1.0) as client:\n"
        "        await client.fetch(42)\n"
        "patient = Client(Settings(timeout='slow'))\n"
    )
    result = mypy(tmp_path, cache_dir, script)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert 'misuse.py:2: error: Module "fetcher" has no attribute "remote_name"' in out
    incompatible = "error: Incompatible types in assignment"
    assert f'misuse.py:3: {incompatible} (expression has type "bytes", variable has type "int")' in out
    assert f'misuse.py:4: {incompatible} (expression has type "Outcome", variable has type "str")' in out
    assert 'misuse.py:7: error: Argument 1 to "fetch" of "Client" has incompatible type "int"' in out
    assert 'misuse.py:8: error: Argument "timeout" to "Settings" has incompatible type "str"; expected "float"' in out
    assert "Found 5 errors in 1 file" in out


def test_user_script_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(fetcher.__file__).resolve().parent.parent)}
    result = subprocess.run(
        [sys.executable, str(USER_SCRIPT), str(tmp_path / "data")], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "fetch_sync: document b'Hello, typed world!\\n'",
        "download_sync: 20 bytes to copy.txt",
        "fetch_all_sync: absent.txt error NotFound",
        "fetch_all_sync: hello.txt ok",
        "NotFound: exit code 6",
        "parse_url: FileURL path ends 'data'",
        "listing: copy.txt, hello.txt",
        "Client.fetch: Hello, typed world!",
        "Client.fetch_all: 20 bytes",
        "fetch: 20 bytes",
        "FetchError: exit code 2",
    ]


def test_every_public_name_resolves_and_importing_loads_no_protocol() -> None:
    for name in fetcher.__all__:
        assert getattr(fetcher, name) is not None, name
    assert fetcher.errors.NotFound.exit_code == 6
    assert fetcher.fetch_sync is fetcher.sync.fetch_sync
    with pytest.raises(AttributeError, match="no attribute 'remote_name'"):
        _ = fetcher.remote_name  # type: ignore[attr-defined]
    loaded = "sorted(m for m in ('trio', 'h11', 'fetcher.client', 'schemes') if m in sys.modules)"
    code = f"import sys, fetcher; print({loaded})"
    env = {**os.environ, "PYTHONPATH": str(Path(fetcher.__file__).resolve().parent.parent)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_the_package_is_marked_typed() -> None:
    assert (Path(fetcher.__file__).parent / "py.typed").is_file()
