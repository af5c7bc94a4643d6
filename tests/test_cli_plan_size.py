"""Issue 32: plans of any size. A plan of more than MAX_PLAN_ENTRIES entries is refused in one
line before anything is checked or charged; a large plan says it is being checked from its first
entry (a 100,000-entry plan ran a minute with no output)."""

from __future__ import annotations

import json
from pathlib import Path

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
