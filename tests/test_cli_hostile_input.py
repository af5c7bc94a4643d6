"""Issue 43 (hostile input), through the CLI's ``main`` in-process: a condition nested as deep
as the reader accepts is released, one level more is one line and exit 2 (it was exit 70, a
RecursionError, from 500 levels); a ledger edited by hand is one line naming it and exit 2,
and never gives a budget back (a dropped ``measurements`` table was created again, empty); the
same table with its missing cells spelled ``null``, ``N/A``, ``None``... is one dataset with
one budget; a file whose lines end with CR alone is read (it was Python's csv message about
"universal-newline mode")."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dpexplorer.cli import main
from dpexplorer.data.conditions import MAX_DEPTH

COUNT = {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}}
BUDGET = ("--budget-epsilon", "1", "--budget-delta", "0")


@pytest.fixture
def work(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "d.csv"
    data.write_text("x\n" + "".join(f"{i % 7}\n" for i in range(40)))
    return {"data": data, "ledger": tmp_path / "ledger.sqlite", "dir": tmp_path}


def _release(work: dict[str, Path], entries: list[dict] | str, *extra: str, data: Path | None = None) -> int:
    plan = work["dir"] / "plan.json"
    plan.write_text(entries if isinstance(entries, str) else json.dumps(entries))
    out = work["dir"] / f"out{len(list(work['dir'].glob('out*')))}"
    args = ["release", str(plan), "--data", str(data or work["data"]), "--out", str(out)]
    return main([*args, "--ledger", str(work["ledger"]), *extra])


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _rows(work: dict[str, Path]) -> int:
    with sqlite3.connect(work["ledger"]) as db:
        return int(db.execute("SELECT count(*) FROM measurements").fetchone()[0])


# ---------------------------------------------------------------- nesting
def _count_where(levels: int) -> str:
    """A plan of one count under ``x == 3`` inside ``levels - 1`` nots (written as text: the
    test's own json.dumps would run out of stack first)."""
    predicate = (
        '{"not": ' * (levels - 1) + '{"compare": "==", "column": "x", "value": 3}' + "}" * (levels - 1)
    )
    query = f'{{"type": "predicate_count", "predicate": {predicate}}}'
    return f'[{{"query": {query}, "mechanism": "laplace", "parameters": {{"epsilon": 0.1}}}}]'


def test_a_condition_as_deep_as_the_limit_is_released(work, capsys) -> None:
    assert _release(work, _count_where(MAX_DEPTH), *BUDGET) == 0, capsys.readouterr().err
    assert _rows(work) == 1


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 500, 800])
def test_a_condition_deeper_than_the_limit_is_one_line_and_exit_2(work, capsys, levels) -> None:
    """Past the limit, the condition is refused (or, deeper than the JSON reader goes, the plan
    file): one line, exit 2, nothing charged."""
    code = _release(work, _count_where(levels), *BUDGET)
    line = _one_line(capsys.readouterr().err)
    assert code == 2 and "nested" in line and "internal error" not in line
    if levels == MAX_DEPTH + 1:
        assert f"more than {MAX_DEPTH} levels" in line
    assert not work["ledger"].exists() or _rows(work) == 0


# ---------------------------------------------------------------- a ledger edited by hand
TAMPERING = {
    "infinite budget": ("UPDATE budgets SET epsilon = 9e999", "epsilon inf"),
    "negative budget": ("UPDATE budgets SET epsilon = -1", "epsilon -1.0"),
    "budget as text": ("UPDATE budgets SET epsilon = 'lots'", "epsilon 'lots'"),
    "unknown accountant": ("UPDATE budgets SET method = 'magic'", "accountant 'magic'"),
    "guarantee not JSON": ("UPDATE measurements SET guarantee = 'nope'", "row 1"),
    "smaller guarantee": (
        """UPDATE measurements SET guarantee = '{"type": "PureDP", "epsilon": 0.0}'""",
        "row 1 of dataset",
    ),
    "row removed": ("DELETE FROM measurements WHERE id = 1", "recorded 2"),
    "row moved": ("UPDATE measurements SET fingerprint = 'elsewhere' WHERE id = 2", "recorded 2"),
    "all rows and the tally": ("DELETE FROM measurements; DELETE FROM tallies", "recorded 2"),
    "measurements dropped": ("DROP TABLE measurements", "measurements are missing"),
    "budgets dropped": ("DROP TABLE budgets", "budgets are missing"),
    "tallies dropped": ("DROP TABLE tallies", "tallies are missing"),
    "seal column dropped": ("ALTER TABLE measurements DROP COLUMN seal", "lacks the column(s) seal"),
    "version mark reset": ("PRAGMA user_version = 0", "version mark"),
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_a_ledger_edited_by_hand_is_one_line_and_never_refills(work, capsys, case) -> None:
    """Two releases of 0.5 spend the budget of 1; after the edit, the next run is refused with
    one line naming the ledger and what is wrong (exit 2), before anything is charged, and the
    ledger is left as it was (no table created again, no row added)."""
    assert _release(work, [COUNT], *BUDGET) == 0 and _release(work, [COUNT]) == 0
    assert _release(work, [COUNT]) == 3  # spent
    sql, word = TAMPERING[case]
    with sqlite3.connect(work["ledger"]) as db:
        db.executescript(sql)
    before = sorted(sqlite3.connect(work["ledger"]).execute("SELECT name FROM sqlite_master").fetchall())
    rows = _rows(work) if case != "measurements dropped" else None
    capsys.readouterr()
    code = _release(work, [COUNT])
    line = _one_line(capsys.readouterr().err)
    assert code == 2, line
    assert str(work["ledger"]) in line and word in line and "internal error" not in line
    after = sorted(sqlite3.connect(work["ledger"]).execute("SELECT name FROM sqlite_master").fetchall())
    assert after == before
    assert rows is None or _rows(work) == rows


# ---------------------------------------------------------------- one table, one budget
def test_a_table_with_nulls_spelled_otherwise_shares_the_budget(work, capsys) -> None:
    """The same people with missing cells written empty, then as ``null``, then ``None``: one
    budget of 1, spent by two releases of 0.5, refuses the third (before, each spelling was a
    fresh dataset with a fresh budget)."""
    empty, spelled, other = (work["dir"] / f"{n}.csv" for n in ("empty", "null", "none"))
    rows = [("39", "Male"), ("", "Female"), ("52", ""), ("", "")]
    for path, word in ((empty, ""), (spelled, "null"), (other, "None")):
        path.write_text("age,sex\n" + "".join(f"{a or word},{s or word}\n" for a, s in rows))
    assert _release(work, [COUNT], *BUDGET, data=empty) == 0
    assert _release(work, [COUNT], data=spelled) == 0
    capsys.readouterr()
    assert _release(work, [COUNT], data=other) == 3  # refused by the budget: the same dataset
    note, refusal = capsys.readouterr().err.strip().splitlines()
    assert "'None' (4) are read as missing" in note and "epsilon 0 left" in refusal


# ---------------------------------------------------------------- CR line endings
def test_a_file_with_cr_line_endings_is_read_as_its_lf_twin(work, capsys) -> None:
    cr = work["dir"] / "mac.csv"
    cr.write_bytes(work["data"].read_bytes().replace(b"\n", b"\r"))
    assert _release(work, [COUNT], *BUDGET, data=cr) == 0, capsys.readouterr().err
    assert _release(work, [COUNT], data=work["data"]) == 0  # the same dataset: its budget
    capsys.readouterr()
    assert _release(work, [COUNT], data=cr) == 3
    assert "universal-newline" not in capsys.readouterr().err
