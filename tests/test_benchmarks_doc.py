"""BENCHMARKS.md stays one short table whose commands run as written (issue 46): at most 150
lines, and every command in the table names a script under benchmarks/ and only flags that the
script's argparse accepts, read from its ``add_argument`` calls with ast (nothing is imported or
run). Every script has a row, and benchmarks/README.md, the notes beside it, stays short."""

from __future__ import annotations

import ast
import functools
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "BENCHMARKS.md"
NOTES = ROOT / "benchmarks" / "README.md"
MAX_LINES = 150
NOTES_MAX_LINES = 120
SCRIPT = re.compile(r"benchmarks/(\w+)\.py")
ENV = re.compile(r"[A-Z_][A-Z0-9_]*=")


@functools.cache
def script_flags(script: Path) -> frozenset[str]:
    """The option strings of every ``add_argument`` call in ``script`` (exact: no prefixes)."""
    flags = {"-h", "--help"}
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr == "add_argument":
            flags |= {
                arg.value
                for arg in node.args
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.startswith("-")
            }
    return frozenset(flags)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def table_commands(text: str) -> list[list[str]]:
    """The commands (inline code spans) of each row's ``command`` cell, row by row."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    column = _cells(lines[0]).index("command")
    return [re.findall(r"`([^`]+)`", _cells(line)[column]) for line in lines[2:]]


def command_problems(command: str, scripts: Path) -> list[str]:
    """Why ``command`` would not run as written from the repository root (empty if it would)."""
    words = shlex.split(command)
    while words and ENV.match(words[0]):
        words.pop(0)
    if len(words) < 2 or words[0] != "python" or not (match := SCRIPT.fullmatch(words[1])):
        return [f"{command!r}: not `python benchmarks/NAME.py ...`"]
    script = scripts / f"{match.group(1)}.py"
    if not script.is_file():
        return [f"{command!r}: no {script.name} under benchmarks/"]
    accepted = script_flags(script)
    return [
        f"{command!r}: {script.name} has no flag {flag}"
        for flag in (word.split("=", 1)[0] for word in words[2:] if word.startswith("-"))
        if flag not in accepted
    ]


def table_problems(text: str, scripts: Path) -> list[str]:
    """Every row with no command or with a command that would not run, and every script with no row."""
    problems, named = [], set()
    for number, commands in enumerate(table_commands(text), start=1):
        if not commands:
            problems.append(f"row {number}: no command")
        for command in commands:
            problems += command_problems(command, scripts)
            named |= set(SCRIPT.findall(command))
    problems += [f"{path.name} has no row" for path in sorted(scripts.glob("*.py")) if path.stem not in named]
    return problems


def test_benchmarks_doc_is_short_and_one_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= MAX_LINES
    assert len(re.findall(r"^\|[-|: ]+\|$", text, re.MULTILINE)) == 1  # one header separator: one table
    assert len(NOTES.read_text(encoding="utf-8").splitlines()) <= NOTES_MAX_LINES


def test_every_table_command_names_a_script_and_its_flags() -> None:
    assert table_problems(DOC.read_text(encoding="utf-8"), ROOT / "benchmarks") == []


def test_the_check_catches_a_bad_command() -> None:
    scripts = ROOT / "benchmarks"
    table = (
        "| benchmark | command |\n|---|---|\n"
        "| a | `python benchmarks/load.py --json --rows=10 --nope` |\n"
        "| b | `python benchmarks/missing.py --json` |\n"
        "| c | `python -m dpexplorer release` |\n"
        "| d | the window |\n"
        "| e | `QT_QPA_PLATFORM=offscreen python benchmarks/soak.py --json --dynamic-heap` |\n"
    )
    problems = table_problems(table, scripts)
    assert any("load.py has no flag --nope" in p for p in problems)
    assert not any("has no flag --rows" in p or "soak.py has no flag" in p for p in problems)
    assert any("no missing.py" in p for p in problems)
    assert any("not `python benchmarks/NAME.py" in p for p in problems)
    assert "row 4: no command" in problems
    assert "accounting.py has no row" in problems and "soak.py has no row" not in problems


def test_relative_links_of_the_benchmark_pages_reach_files() -> None:
    for page in (DOC, NOTES):
        for link in re.findall(r"\]\(([^)\s#]+)", page.read_text(encoding="utf-8")):
            if "://" not in link:
                assert (page.parent / link).exists(), f"{page.name}: {link}"
