"""The typed public API: mypy --strict on a user's script that imports only public names."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import fetcher
from fetcher.settings import Settings, SettingsOverrides

HERE = Path(__file__).parent
ROOT = HERE.parent
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
        # the checkout under test, which may not be the one installed (PYTHONPATH chose it): say where it is
        # (a user needs no MYPYPATH: test_an_editable_install_type_checks_without_mypypath)
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
    package = Path(fetcher.__file__).resolve().parent
    for name in fetcher.__all__:
        value = getattr(fetcher, name)
        assert value is not None, name
        # From this package's own modules (an installed copy of an older layout must not answer for it).
        home = getattr(value, "__module__", None)
        if isinstance(home, str) and home.startswith("fetcher"):
            assert Path(str(sys.modules[home].__file__)).resolve().is_relative_to(package), (name, home)
    assert fetcher.errors.NotFound.exit_code == 6
    assert fetcher.fetch_sync is fetcher.sync.fetch_sync
    with pytest.raises(AttributeError, match="no attribute 'remote_name'"):
        _ = fetcher.remote_name  # type: ignore[attr-defined]
    loaded = "sorted(m for m in ('trio', 'h11', 'fetcher.client', 'fetcher.schemes') if m in sys.modules)"
    code = f"import sys, fetcher; print({loaded})"
    env = {**os.environ, "PYTHONPATH": str(Path(fetcher.__file__).resolve().parent.parent)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_the_package_is_marked_typed() -> None:
    assert (Path(fetcher.__file__).parent / "py.typed").is_file()


# -- settings as keyword arguments (issue 29) ------------------------------------------------------------------

#: Fields `Settings.build` converts, so their keyword takes more than the field's own type.
CONVERTED = {
    "allow_ports": "Iterable[int]",
    "redirect_schemes": "Iterable[str]",
    "limits": "Limits | Mapping[str, int]",
}


def test_the_keywords_are_the_settings_fields_with_their_types() -> None:
    """SettingsOverrides is written out by hand (a TypedDict cannot be derived from a dataclass): it must not drift."""
    import dataclasses

    fields = {item.name: str(item.type) for item in dataclasses.fields(Settings)}
    keywords = {name: ref.__forward_arg__ for name, ref in SettingsOverrides.__annotations__.items()}
    assert set(keywords) == set(fields)
    assert SettingsOverrides.__required_keys__ == frozenset()
    for name, kind in fields.items():
        assert keywords[name] == CONVERTED.get(name, kind), name


def test_mypy_catches_a_misspelt_or_mistyped_setting(tmp_path: Path, cache_dir: Path) -> None:
    script = tmp_path / "settings_misuse.py"
    script.write_text(
        "import fetcher\n"
        "from fetcher import Client, download_sync, fetch_all_sync, fetch_sync\n"
        "fetch_sync('file:///etc/hostname', timout=20)\n"
        "fetch_sync('file:///etc/hostname', timeout='20')\n"
        "download_sync('file:///etc/hostname', 'x', jobs='2')\n"
        "fetch_all_sync(['file:///etc/hostname'], allow_ports=['21'])\n"
        "client = Client(max_size='1M')\n"
        "async def main() -> None:\n"
        "    await fetcher.fetch('file:///etc/hostname', retries=1.5)\n"
        "fine = fetch_sync('file:///etc/hostname', timeout=20, allow_ports={8021}, limits={'pages': 5}, max_time=1)\n"
    )
    result = mypy(tmp_path, cache_dir, script)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert 'settings_misuse.py:3: error: Unexpected keyword argument "timout" for "fetch_sync"' in out
    assert 'settings_misuse.py:4: error: Argument "timeout" to "fetch_sync" has incompatible type "str"; ' \
        'expected "float"' in out
    assert 'settings_misuse.py:5: error: Argument "jobs" to "download_sync" has incompatible type "str"' in out
    assert 'settings_misuse.py:6: error: List item 0 has incompatible type "str"; expected "int"' in out
    assert 'settings_misuse.py:7: error: Argument "max_size" to "Client" has incompatible type "str"' in out
    assert 'settings_misuse.py:9: error: Argument "retries" to "fetch" has incompatible type "float"' in out
    assert "settings_misuse.py:10" not in out
    assert "Found 6 errors in 1 file" in out


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"timout": 20}, "unknown setting 'timout'"),
        ({"timeout": "20"}, "setting timeout='20' has the wrong type: expected float, got str"),
        ({"jobs": True}, "setting jobs=True has the wrong type: expected int, got bool"),
        ({"allow_ports": "8021"}, "setting allow_ports='8021' has the wrong type"),
        ({"headers": [("A", "b")]}, "setting headers=[('A', 'b')] has the wrong type"),
        ({"limits": {"page": 5}}, "setting limits: unknown limit 'page'"),
        ({"password": 1234}, "setting password=*** has the wrong type"),
    ],
)
def test_a_wrong_setting_is_a_usage_error_before_anything_is_sent(settings: dict[str, object], message: str) -> None:
    with pytest.raises(fetcher.UsageError) as caught:
        fetcher.fetch_sync("http://127.0.0.1:9/never-dialled", **settings)  # type: ignore[arg-type]
    assert message in caught.value.message
    assert caught.value.exit_code == 2
    assert isinstance(caught.value, TypeError)  # as a wrong keyword argument is in Python
    with pytest.raises(fetcher.UsageError, match=re.escape(message)):
        fetcher.Client(**settings)  # type: ignore[arg-type]


def test_a_misspelt_setting_names_the_close_one() -> None:
    with pytest.raises(fetcher.UsageError) as caught:
        fetcher.Client(timout=20)  # type: ignore[call-arg]
    assert caught.value.hint == "did you mean timeout=?"
    with pytest.raises(fetcher.UsageError, match="wrong type: expected float"):
        fetcher.Client(Settings(timeout="slow"))  # type: ignore[arg-type]
    assert typing.get_type_hints(SettingsOverrides)["timeout"] is float


def test_the_examples_pass_mypy_strict(cache_dir: Path) -> None:
    """What CI checks of the scripts a user copies: `mypy --strict examples` from the checkout, its own config."""
    pytest.importorskip("mypy", reason="mypy is not installed: python3 -m pip install mypy")
    env = {key: value for key, value in os.environ.items() if key not in ("MYPYPATH", "PYTHONPATH")}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-color-output",
         "--cache-dir", str(cache_dir), "examples"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Success: no issues found in {len(list((ROOT / 'examples').glob('*.py')))} source files" in result.stdout


@pytest.mark.packaging
def test_an_editable_install_type_checks_without_mypypath(tmp_path: Path, cache_dir: Path) -> None:
    """`pip install -e .` puts the checkout on the path with a plain .pth line, which mypy reads (setuptools'
    default for a flat layout is an import hook, which mypy cannot follow: users needed MYPYPATH)."""
    pytest.importorskip("mypy", reason="mypy is not installed: python3 -m pip install mypy")
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("fetcher", "schemes"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    env = {key: value for key, value in os.environ.items() if key not in ("MYPYPATH", "PYTHONPATH", "VIRTUAL_ENV")}
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=120)
    python = venv / "bin" / "python"
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(source)],
                               capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    user = tmp_path / "elsewhere"
    user.mkdir()
    (user / "script.py").write_text(
        "import fetcher\n"
        "content: bytes = fetcher.fetch_sync('file:///etc/hostname', timeout=5).content\n"
        "wrong: str = fetcher.fetch_sync('file:///etc/hostname').content\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python), "--no-color-output",
         "--config-file", os.devnull, "--cache-dir", str(cache_dir / "editable"), "script.py"],
        capture_output=True, text=True, cwd=user, env=env, timeout=300,
    )  # fmt: skip
    assert "script.py:3: error: Incompatible types in assignment" in result.stdout, result.stdout + result.stderr
    assert "Found 1 error in 1 file" in result.stdout, result.stdout
