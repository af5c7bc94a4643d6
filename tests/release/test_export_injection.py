"""Issue 43, hostile input: the exported script and notebook (File > Export Analysis) are
data-safe by construction. A file name, column name, category label or statistic label full of
quotes, triple quotes, backslashes, newlines, ``\\r``, U+2028, braces, ``%`` and ``#`` reaches the
code only as a string constant (``repr``), never in the docstring, as code or able to end a
comment; in markdown it cannot start a block or a cell. Many inputs are checked in process
(``compile`` + the AST: the string constants are those of the same analysis with harmless names,
each harmless name swapped for the hostile one); a few exports are run for real (the script and
the notebook release the plan into a ledger), their payloads each trying to create a canary
file."""

from __future__ import annotations

import ast
import copy
import io
import os
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dpexplorer.api import Plan
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.release.analysis_export import (
    Analysis,
    Statistic,
    markdown_code,
    markdown_text,
    notebook,
    script_text,
    shown,
)
from dpexplorer.release.ledger import Ledger

CANARY = "PWNED"
"""What every payload tries to create (relative to the folder the export runs in)."""

PAYLOADS = [
    f'sales""";open("{CANARY}","w");"""x',
    f"s'''\nopen('{CANARY}','w')\n'''",
    f'n\nopen("{CANARY}", "w")  #',
    f'r\ropen("{CANARY}", "w")  #',
    f'ls\u2028open("{CANARY}", "w")  #',
    f'ps\u2029\x85\x0c\x0bopen("{CANARY}","w")',
    f'{{open("{CANARY}","w")}}%s%(x)s{{0}}',
    "back\\x\\N\\",  # in a docstring: an invalid escape, a script that does not compile
    "q'\"#`*<img src=x onerror=alert(1)>&amp;$x$|~[l](javascript:x)",
]
"""Hostile names (valid file names: no ``/``, no NUL), each trying to run code if it were
written into the export unquoted."""


@dataclass(frozen=True)
class Names:
    """Every string of an analysis that a user or a file supplies."""

    data: str
    measure: str
    category: str
    first: str
    second: str
    person: str
    label: str
    note: str

    def swapped(self, other: Names) -> dict[str, str]:
        return {getattr(self, k): getattr(other, k) for k in self.__dataclass_fields__}


HARMLESS = Names(*(f"harmless{i}" for i in range(8)))


def _analysis(names: Names, budget: tuple[float, float, str] | None = (5.0, 1e-6, "basic")) -> Analysis:
    categories = [names.first, names.second]
    statistics = [
        Statistic(
            {"type": "histogram", "axis": {"column": names.category, "categories": categories}},
            "laplace",
            {"epsilon": 0.25},
            names.label,
        ),
        Statistic(
            {"type": "mean", "column": names.measure, "lower": 0, "upper": 100},
            "laplace",
            {"epsilon": 0.25},
            names.note,
        ),
        Statistic(
            {
                "type": "group_by",
                "keys": [{"column": names.category, "categories": categories}],
                "statistic": "count",
                "unit": {"column": names.person, "max_groups": 1, "max_rows": 2},
            },
            "laplace",
            {"epsilon": 0.25},
        ),
        Statistic(
            {
                "type": "predicate_count",
                "predicate": {"compare": "==", "column": names.category, "value": names.second},
            },
            "laplace",
            {"epsilon": 0.25},
        ),
    ]
    return Analysis(names.data, statistics, budget=budget, created="2025-01-02T03:04:05+00:00")


def _strings(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _skeleton(tree: ast.AST) -> str:
    """The code without its strings: what user text must never change."""
    bare = copy.deepcopy(tree)
    for node in ast.walk(bare):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(bare)


def _comments(source: str) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [t.string for t in tokens if t.type == tokenize.COMMENT]


def _same_code(hostile: str, harmless: str, swap: dict[str, str]) -> None:
    """``hostile`` is ``harmless`` with each harmless name's constant swapped for the hostile one:
    the same code and docstring; comments of printable characters only, in the same paragraphs
    (wrapped at other places: the names' lengths differ)."""
    tree, model = ast.parse(hostile), ast.parse(harmless)
    assert _skeleton(tree) == _skeleton(model)
    expected = _strings(model)
    assert not [s for s in expected if s not in swap and any(name in s for name in swap)]
    assert _strings(tree) == [swap.get(s, s) for s in expected]
    comments = _comments(hostile)  # tokenize ends each at a line break Python reads as one
    assert comments.count("#") == _comments(harmless).count("#")  # the same paragraphs
    assert all(c.isprintable() for c in comments)


def _plan_of(analysis: Analysis) -> Any:
    return Plan.from_json(analysis.plan_json()).to_json()


def _markdown_of(source: str, names: Names) -> str:
    """A markdown cell of the harmless analysis with each harmless name swapped for the hostile
    one, quoted as the export quotes user text (a code span, or escaped running text)."""
    for field, name in zip(Names.__dataclass_fields__, names.__dict__.values(), strict=True):
        harmless = getattr(HARMLESS, field)
        shown_as = Path(name).name if field == "data" else name  # the header names the file only
        source = source.replace(f"`{harmless}`", markdown_code(shown_as)).replace(
            harmless, markdown_text(name)
        )
    return source


def _check_export(names: Names) -> None:
    analysis, model = _analysis(names), _analysis(HARMLESS)
    swap = HARMLESS.swapped(names)
    script = script_text(analysis, ledger=names.label, out=names.note)
    _same_code(script, script_text(model, ledger=HARMLESS.label, out=HARMLESS.note), swap)
    namespace: dict[str, Any] = {"__name__": "exported"}  # the settings and the plan, not the release
    exec(compile(script, "analysis.py", "exec"), namespace)
    assert (namespace["DATA"], namespace["LEDGER"], namespace["OUT"]) == (names.data, names.label, names.note)
    assert namespace["PLAN"].to_json() == _plan_of(analysis)

    book, page = notebook(analysis), notebook(model)
    assert [c.cell_type for c in book.cells] == [c.cell_type for c in page.cells]
    code = "\n".join(c.source for c in book.cells if c.cell_type == "code")
    _same_code(code, "\n".join(c.source for c in page.cells if c.cell_type == "code"), swap)
    for cell, twin in zip(book.cells, page.cells, strict=True):
        if cell.cell_type == "markdown":  # user text only as the quoting functions write it
            assert cell.source == _markdown_of(twin.source, names)
            assert all(line.isprintable() for line in cell.source.split("\n"))


def _valid(names: Names) -> bool:
    try:
        for stat in _analysis(names).statistics:
            query_from_dict(stat.query)
    except DPExplorerError:
        return False
    return len({names.measure, names.category, names.person}) == 3


FRAGMENTS = ['"', "'", '"""', "'''", "\\", "\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0c", "\x0b"]
FRAGMENTS += ["\x00", "\t", "\u202e", "\udc80", "{}", "{0}", "%s", "%", "#", "`", "```", "*", "<b>", "&", "$"]
TEXT = st.lists(st.sampled_from(FRAGMENTS) | st.text(min_size=1, max_size=3), min_size=1, max_size=5).map(
    "".join
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(st.builds(Names, *([TEXT] * 8)))
def test_hostile_names_reach_the_code_only_as_string_constants(names: Names) -> None:
    assume(_valid(names))
    _check_export(names)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_each_payload_in_every_place(payload: str) -> None:
    names = Names(
        f"/data/{payload}.csv",
        f"{payload}m",
        f"{payload}c",
        f"{payload}1",
        f"{payload}2",
        f"{payload}p",
        payload,
        f"{payload} note",
    )
    _check_export(names)


MARKUP = set("\\`*_[]<>&~$|#")
"""What can start inline markup in CommonMark (or close a heading)."""


@given(TEXT)
def test_quoted_markdown_shows_the_text_and_makes_no_markup(text: str) -> None:
    escaped = markdown_text(text)
    assert escaped.isprintable()  # one line: it starts no block
    assert not MARKUP & set(re.sub(r"\\.", "", escaped))  # every markup character escaped
    assert re.sub(r"\\(.)", r"\1", escaped) == shown(text)  # and it renders as the text, shown
    code = markdown_code(text)
    fence = re.match("`+", code)
    assert fence is not None and code.endswith(fence.group()) and code.isprintable()
    inner = code[len(fence.group()) : -len(fence.group())]
    assert inner in (shown(text), f" {shown(text)} ")
    assert inner[:1] != "`" and inner[-1:] != "`"  # the fences stay as long as they are
    assert all(len(run) < len(fence.group()) for run in re.findall("`+", inner))  # none closes it
    assert shown(text).encode("ascii", "backslashreplace").decode("unicode_escape") == text


# ---------------------------------------------------------------- real runs
def _hostile_data(folder: Path, names: Names) -> Names:
    """A Parquet file named ``names.data`` in ``folder``, its columns and categories the hostile
    names; returns the names with the data's full path."""
    folder.mkdir(parents=True)
    path = folder / f"{names.data}.parquet"
    people = 120
    pl.DataFrame(
        {
            names.measure: [20 + i % 50 for i in range(2 * people)],
            names.category: [(names.first, names.second, "plain")[i % 3] for i in range(2 * people)],
            names.person: [i // 2 for i in range(2 * people)],
        }
    ).write_parquet(path)
    return Names(str(path), *(getattr(names, k) for k in list(Names.__dataclass_fields__)[1:]))


def _released(names: Names, ledger: Path, runs: int) -> None:
    """The ledger holds ``runs`` releases of the analysis's plan, with every hostile name intact."""
    key = load_dataset(names.data).content_fingerprint
    with Ledger(ledger) as book:
        rows = book.measurements(key)
    expected = [query_from_dict(s.query).to_dict() for s in _analysis(names).statistics]
    assert len(rows) == runs * len(expected) and all(r.status == "released" for r in rows)
    assert [r.query for r in rows] == expected * runs


def _no_canary(folder: Path) -> None:
    assert not [p for p in folder.rglob("*") if p.name == CANARY], "a payload ran"


ROLES = [  # payload indices for (file, measure, category, first, second, person, label, note)
    (0, 2, 3, 4, 5, 6, 7, 8),
    (1, 8, 2, 0, 6, 7, 4, 3),
    (7, 0, 6, 2, 1, 3, 8, 5),
]


@pytest.mark.parametrize("roles", ROLES)
def test_an_exported_script_with_hostile_names_releases_and_runs_no_payload(
    tmp_path: Path, roles: tuple[int, ...]
) -> None:
    names = _hostile_data(tmp_path / "run", Names(*(PAYLOADS[i] for i in roles)))
    ledger = tmp_path / "ledger.sqlite"
    script = tmp_path / "run" / "analysis.py"
    script.write_text(script_text(_analysis(names), ledger=str(ledger), out=names.note), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=script.parent,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path.cwd())},
    )
    _no_canary(tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("provenance.json") == 4
    assert len(list((script.parent / names.note).glob("*.provenance.json"))) == 4
    _released(names, ledger, runs=1)


def test_an_exported_notebook_with_hostile_names_releases_and_runs_no_payload(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    names = _hostile_data(tmp_path / "run", Names(*(PAYLOADS[i] for i in ROLES[1])))
    ledger = tmp_path / "ledger.sqlite"
    path = tmp_path / "run" / "analysis.ipynb"
    path.write_text(nbformat.writes(notebook(_analysis(names), ledger=str(ledger), out=names.note)))
    book = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(  # generous timeouts: a loaded machine starts a kernel slowly
        book,
        timeout=300,
        startup_timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    _no_canary(tmp_path)
    _released(names, ledger, runs=1)
