"""The habits the code keeps, checked on every test run (so by the README's test command and CI):
``ruff check`` (lint), ``ruff format --check`` (layout) and ``mypy`` (types, configured in
pyproject.toml's [tool.mypy]). Each check is one command run from the project root with the
project's own configuration; the same command is then run on a small copy of the project with a
planted error, to prove that the configuration catches that kind of error (a check that passes on
everything would pass here too).

mypy keeps an incremental cache under .pytest_cache/mypy: a cold run over the package takes about
a minute on a loaded two-core machine, a warm one a few seconds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# name -> (arguments after ``python -m``); each runs with cwd = the project root, reading
# pyproject.toml there, over the paths its configuration names (mypy: [tool.mypy] files)
CHECKS: dict[str, list[str]] = {
    "lint": ["ruff", "check", "--no-cache", "."],
    "format": ["ruff", "format", "--check", "--no-cache", "."],
    "types": ["mypy"],
}


def run_check(name: str, root: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    """Run one check on the project at ``root`` (its pyproject.toml, its paths)."""
    args = [sys.executable, "-m", *CHECKS[name]]
    if name == "types":
        args += ["--cache-dir", str(cache)]
    return subprocess.run(args, cwd=root, capture_output=True, text=True, timeout=900, check=False)


def _failure(result: subprocess.CompletedProcess[str]) -> str:
    return f"{' '.join(result.args[2:])} failed (exit {result.returncode}):\n{result.stdout}{result.stderr}"


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_the_project_passes(name: str) -> None:
    result = run_check(name, ROOT, ROOT / ".pytest_cache" / "mypy")
    assert result.returncode == 0, _failure(result)


# A module that passes all three checks, and one planted error per check.
CLEAN = '''"""A clean module."""


def double(x: int) -> int:
    """Twice x."""
    return 2 * x
'''
PLANTED = {
    # F401 (an unused import) and E711 (a comparison to None)
    "lint": CLEAN + "\n\nimport os\n\n\ndef is_none(x: object) -> bool:\n    return x == None\n",
    # well-formed code laid out as ruff format would not lay it out
    "format": CLEAN + "\n\ndef triple( x:int )->int :\n    return 3*x\n",
    # a str returned where an int is promised
    "types": CLEAN + '\n\ndef half(x: int) -> int:\n    """Half of x."""\n    return str(x // 2)\n',
}


def _copy_of_project(tmp_path: Path, module: str) -> Path:
    """A small project under tmp_path with this project's configuration and a one-module package."""
    root = tmp_path / "project"
    package = root / "dpexplorer"
    package.mkdir(parents=True)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    (package / "__init__.py").write_text('"""A copy."""\n')
    (package / "planted.py").write_text(module)
    return root


def test_the_clean_copy_passes_every_check(tmp_path: Path) -> None:
    root = _copy_of_project(tmp_path, CLEAN)
    for name in CHECKS:
        result = run_check(name, root, tmp_path / "cache")
        assert result.returncode == 0, _failure(result)


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_each_check_fails_on_its_planted_error(name: str, tmp_path: Path) -> None:
    root = _copy_of_project(tmp_path, PLANTED[name])
    result = run_check(name, root, tmp_path / "cache")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "planted.py" in output
    expected = {"lint": ("F401", "E711"), "format": ("would be reformatted",), "types": ("return-value",)}
    for code in expected[name]:
        assert code in output, output
    # and only this check catches it: the others pass the same module
    for other in set(CHECKS) - {name}:
        assert run_check(other, root, tmp_path / "cache").returncode == 0, other
