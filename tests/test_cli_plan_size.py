"""Issue 32: plans of any size. A plan of more than MAX_PLAN_ENTRIES entries is refused in one
line before anything is checked or charged; a large plan says it is being checked from its first
entry (a 100,000-entry plan ran a minute with no output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpexplorer.cli import main
from dpexplorer.release.plan_run import MAX_PLAN_ENTRIES

COUNT = {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.001}}


def _release(tmp_path: Path, entries: list[dict]) -> int:
    data = tmp_path / "d.csv"
    data.write_text("x\n" + "1\n" * 50)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(entries))
    args = ["release", str(plan), "--data", str(data), "--out", str(tmp_path / "out")]
    return main([*args, "--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "1000"])


def test_a_plan_over_the_entry_limit_is_refused_before_anything(tmp_path: Path, capsys, monkeypatch) -> None:
    from dpexplorer.data import queries

    read: list[object] = []  # refused on reading, not after checking 10,001 queries
    real = queries.query_from_dict
    monkeypatch.setattr(queries, "query_from_dict", lambda d: read.append(d) or real(d))
    assert _release(tmp_path, [COUNT] * (MAX_PLAN_ENTRIES + 1)) == 2
    assert read == [], "no entry's query was read"
    out, err = capsys.readouterr()
    (line,) = err.strip().splitlines()
    assert f"the plan has {MAX_PLAN_ENTRIES + 1:,} entries" in line and "split it" in line
    assert out == ""  # not one entry checked
    assert not (tmp_path / "out").exists() and not (tmp_path / "l.sqlite").exists()


def test_a_large_plan_shows_progress_from_its_first_entry(tmp_path: Path, capsys) -> None:
    """100 entries, the last one wrong: the run says it is checking from entry 1, then refuses
    the plan before any charge."""
    bad = {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": -1}}
    assert _release(tmp_path, [COUNT] * 99 + [bad]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "checking plan entry 1 of 100 (nothing charged yet)"
    assert "plan entry 100" in err
    assert not list(tmp_path.glob("out/release-*"))


def test_a_plan_at_the_limit_is_read(tmp_path: Path) -> None:
    from dpexplorer.release.plan_run import read_plan_file

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([COUNT] * MAX_PLAN_ENTRIES))
    entries, rate = read_plan_file(plan)
    assert len(entries) == MAX_PLAN_ENTRIES and rate is None


# ---------------------------------------------------------------- issue 43: no legal plan takes the machine
def _plan(tmp_path: Path, entries: list[dict], columns: int = 0) -> list[str]:
    """The release command of ``entries`` on 200 rows of columns a, b (and c0, c1, ...)."""
    names = ["a", "b", *(f"c{j}" for j in range(columns))]
    data = tmp_path / "d.csv"
    rows = "".join(f"{i % 40},{i % 3}{',7' * columns}\n" for i in range(200))
    data.write_text(",".join(names) + "\n" + rows)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(entries))
    return ["release", str(plan), "--data", str(data), "--out", str(tmp_path / "out")]


def _charged(tmp_path: Path) -> list:
    from dpexplorer.data.load import load_dataset
    from dpexplorer.release.ledger import Ledger

    if not (tmp_path / "l.sqlite").exists():
        return []
    with Ledger(tmp_path / "l.sqlite") as ledger:
        return ledger.measurements(load_dataset(tmp_path / "d.csv").content_fingerprint)


def _ledger(tmp_path: Path) -> list[str]:
    return ["--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "10", "--budget-delta", "1e-6"]


def _stop_after(monkeypatch, module: object, name: str, calls: int) -> list[int]:
    """``module.name`` counted, raising after ``calls`` calls: a run that would take minutes
    (one step per category, a search that never ends) stops early and fails its test."""
    original, seen = getattr(module, name), []

    def counted(*args: object, **kwargs: object) -> object:
        seen.append(1)
        if len(seen) > calls:
            raise RuntimeError(f"{name} called more than {calls} times")
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return seen


def _nodes(expr, cap: int) -> int:  # type: ignore[no-untyped-def]
    count, stack = 0, [expr]
    while stack and count < cap:
        count += 1
        stack.extend(stack.pop().meta.pop())
    return count


def test_ten_thousand_number_categories_are_released_from_a_small_file(tmp_path, monkeypatch, capsys) -> None:
    """A histogram of 10,000 categories that spell numbers: released, one value per category
    and "other", counted by expressions of a few hundred nodes (before: one when/then per
    category, 10,000 deep; 1,000 took 35 s and 4.6 GB)."""
    from dpexplorer.data.load import Dataset

    sizes: list[int] = []
    select = Dataset.select

    def measured(self: Dataset, *exprs: object) -> object:
        sizes.extend(_nodes(e, 5_000) for e in exprs)
        if max(sizes, default=0) >= 5_000:
            raise RuntimeError("an expression of one node per category")
        return select(self, *exprs)  # type: ignore[arg-type]

    monkeypatch.setattr(Dataset, "select", measured)
    axis = {"column": "a", "categories": [str(i) for i in range(10_000)]}
    entry = {
        "query": {"type": "histogram", "axis": axis},
        "mechanism": "laplace",
        "parameters": {"epsilon": 1},
    }
    assert main([*_plan(tmp_path, [entry]), *_ledger(tmp_path)]) == 0, capsys.readouterr().err
    (released,) = (tmp_path / "out").glob("release-*-laplace.csv")
    assert len(released.read_text().splitlines()) == 1 + 10_001
    assert sizes and max(sizes) < 1_000
    assert len(_charged(tmp_path)) == 1


def _marginals(axes: list[dict], mechanism: str = "mst", epsilon: float = 1.0, ways: int = 1) -> dict:
    return {
        "kind": "synthetic",
        "query": {"type": "marginals", "ways": ways, "axes": axes},
        "mechanism": mechanism,
        "parameters": {"epsilon": epsilon, "delta": 1e-9},
    }


def _refused(tmp_path: Path, entries: list[dict], capsys, columns: int = 0) -> str:  # type: ignore[no-untyped-def]
    assert main([*_plan(tmp_path, entries, columns), *_ledger(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert not list(tmp_path.glob("out/release-*")) and _charged(tmp_path) == []
    return line


def test_a_million_declared_categories_are_refused_before_any_is_read(tmp_path, monkeypatch, capsys) -> None:
    """10^6 categories of one synthetic column: refused on their number (one line, exit 2,
    nothing charged) before a single one is read (before: read one by one, minutes)."""
    from dpexplorer.data import conditions

    one_by_one = _stop_after(monkeypatch, conditions, "_spelled", 1_000)
    axes = [
        {"column": "a", "categories": [str(i) for i in range(10**6)]},
        {"column": "b", "categories": ["0"]},
    ]
    line = _refused(tmp_path, [_marginals(axes)], capsys)
    assert "1,000,000 categories" in line and "limit 999,999" in line
    assert one_by_one == []


def test_every_pair_mst_and_aim_count_is_held_to_the_cell_limit(tmp_path, monkeypatch, capsys) -> None:
    """Two columns of 100,000 categories, a workload of their 1-way marginals: every pair of
    columns is counted before MST or AIM runs (10^10 cells here), so the plan is refused, after
    one reading of each column's categories (before: read one by one, then counted)."""
    from dpexplorer.data import conditions

    one_by_one = _stop_after(monkeypatch, conditions, "_spelled", 1_000)
    cats = [str(i) for i in range(100_000)]
    axes = [{"column": "a", "categories": cats}, {"column": "b", "categories": cats}]
    line = _refused(tmp_path, [_marginals(axes, "aim")], capsys)
    assert "every column and pair is counted" in line and "a × b has 10,000,200,001 cells" in line
    assert len(one_by_one) < 10


def test_the_marginals_together_are_held_to_a_limit(tmp_path, monkeypatch, capsys) -> None:
    """16 columns of 999 categories: each pair's 10^6 cells fit, the 120 pairs together (120
    million cells, counted and scored in every MST round) do not, and nothing is counted."""
    from dpexplorer.data import marginals

    counted = _stop_after(monkeypatch, marginals, "aggregate", 0)
    axes = [{"column": f"c{j}", "categories": [str(i) for i in range(999)]} for j in range(16)]
    line = _refused(tmp_path, [_marginals(axes)], capsys, columns=16)
    assert "cells together (limit 10,000,000)" in line and counted == []


@pytest.mark.parametrize(
    "entry",
    [
        _marginals(
            [{"column": "a", "categories": ["1", "2"]}, {"column": "b", "categories": ["0"]}], "aim", 1e-300
        ),
        _marginals(
            [{"column": "a", "categories": ["1", "2"]}, {"column": "b", "categories": ["0"]}], "mst", 1e-300
        ),
        {
            **_marginals(
                [{"column": "a", "edges": [0, 20, 40]}, {"column": "b", "edges": [0, 3]}], "mst", 1e-12
            ),
            "kind": "statistic",
        },
        {
            "query": {"type": "count"},
            "mechanism": "gaussian",
            "parameters": {"epsilon": 1e-300, "delta": 1e-6},
        },
        {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 1e-12}},
    ],
    ids=["aim table", "mst table", "mst marginals", "gaussian", "laplace"],
)
def test_an_epsilon_too_small_to_mean_anything_is_refused_for_every_mechanism(
    tmp_path, monkeypatch, capsys, entry
) -> None:
    """One rule (params.MIN_EPSILON, in the ε every mechanism declares): below 1e-10 a release
    would say nothing, and it is refused before the charge in one line, by MST and AIM as by
    every other mechanism (before: their search for ρ never ended at 1e-300; Gaussian released
    at 1e-300; Laplace at 1e-12)."""
    from dpexplorer.core.mechanisms import mst

    _stop_after(monkeypatch, mst, "zcdp_to_epsilon", 1_000)
    line = _refused(tmp_path, [entry], capsys)
    assert "ε (epsilon) must be in [1e-10, 20]" in line


def test_the_api_refuses_them_with_the_project_s_errors(tmp_path, monkeypatch) -> None:
    """The public API: a million categories are a DataError where the query is built, none
    read; AIM at ε = 1e-300 a PlanError naming ε, before the ledger holds a row."""
    import dpexplorer as dpx
    from dpexplorer.data import conditions

    _stop_after(monkeypatch, conditions, "_spelled", 1_000)
    with pytest.raises(dpx.DataError, match="1,000,000 categories"):
        dpx.Axis("a", categories=tuple(str(i) for i in range(10**6)))
    _plan(tmp_path, [])
    axes = [{"column": "a", "categories": ["1", "2"]}, {"column": "b", "edges": [0, 3]}]
    table = dpx.Measurement.from_dict(_marginals(axes, "aim", 1e-300))
    data = dpx.open_dataset(tmp_path / "d.csv")
    with pytest.raises(dpx.PlanError, match=r"plan entry 1: ε \(epsilon\) must be in \[1e-10, 20\]"):
        dpx.release_plan(data, table, out=tmp_path / "out", ledger=tmp_path / "l.sqlite")
    assert _charged(tmp_path) == [] and not (tmp_path / "out").exists()
