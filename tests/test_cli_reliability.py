"""Issue 20's reproductions, through the CLI's ``main`` in-process: no budget spent without a
release (or, if a failure comes after the charge, the ledger and the message say so), nothing
overwritten, one line on stderr and a documented exit code for every bad input, one budget per
dataset whatever its file format."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from dpexplorer.cli import main
from dpexplorer.commands.errors import DOCUMENTED, EXIT_INTERNAL
from dpexplorer.core.accounting.guarantees import PureDP
from dpexplorer.data.load import fingerprint_file, load_dataset
from dpexplorer.release import release as release_module
from dpexplorer.release.ledger import BudgetExceededError, Ledger, LedgerError

COUNT = {"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 0.5}}
MEAN = {
    "query": {"type": "mean", "column": "x", "lower": 0, "upper": 10},
    "mechanism": "laplace",
    "parameters": {"epsilon": 0.5},
}


@pytest.fixture
def work(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "threes_and_sevens.csv"
    data.write_text("x\n" + "3\n" * 32 + "7\n" * 32)
    return {"data": data, "out": tmp_path / "out", "ledger": tmp_path / "ledger.sqlite", "dir": tmp_path}


def _plan(work: dict[str, Path], entries: list[dict], name: str = "plan.json") -> Path:
    path = work["dir"] / name
    path.write_text(json.dumps(entries))
    return path


def _release(work: dict[str, Path], plan: Path, *extra: str, data: Path | None = None) -> int:
    args = ["release", str(plan), "--data", str(data or work["data"]), "--out", str(work["out"])]
    return main([*args, "--ledger", str(work["ledger"]), *extra])


BUDGET = ("--budget-epsilon", "10", "--budget-delta", "1e-5")


def _rows(work: dict[str, Path], data: Path | None = None) -> list:
    key = load_dataset(data or work["data"]).content_fingerprint
    with Ledger(work["ledger"]) as ledger:
        return ledger.measurements(key)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# ---------------------------------------------------------------- all or nothing
def test_ptr_bottom_is_released_like_any_value(work, capsys) -> None:
    """32 threes and 32 sevens: the median is unstable, PTR's test answers ⊥ (a DP output)."""
    ptr = {
        "query": {"type": "quantile", "column": "x", "lower": 0, "upper": 10, "q": 0.5},
        "mechanism": "ptr",
        "parameters": {"epsilon": 1.0, "delta": 1e-6, "bound": 1.0},
    }
    code = _release(work, _plan(work, [ptr]), *BUDGET)
    assert code == 0, capsys.readouterr().err
    sidecar = json.loads(next(work["out"].glob("*.provenance.json")).read_text())
    values = json.loads(next(work["out"].glob("release-*-ptr.json")).read_text())["values"]
    assert values == [{"label": "median", "value": "⊥", "ci_low": None, "ci_high": None}]
    assert sidecar["confidence_interval"] is None  # ⊥ has no interval
    assert [row.status for row in _rows(work)] == ["released"]


@pytest.mark.parametrize("kind", ["existing file", "dangling symlink", "below /dev/null"])
def test_unwritable_output_is_refused_before_the_charge(work, capsys, kind) -> None:
    if kind == "existing file":
        work["out"].write_text("not a directory")
    elif kind == "dangling symlink":
        work["out"].symlink_to(work["dir"] / "nowhere" / "at" / "all")
        (work["dir"] / "nowhere").write_text("a file, so the link's target cannot be made")
    else:
        work["out"] = Path("/dev/null/x")
    code = _release(work, _plan(work, [COUNT, MEAN]), *BUDGET)
    assert code == 2 and "output directory" in _one_line(capsys.readouterr().err)
    assert _rows(work) == []


def test_failure_after_the_charge_is_recorded_and_reported(work, capsys, monkeypatch) -> None:
    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(release_module, "export_release", full_disk)
    code = _release(work, _plan(work, [COUNT, MEAN]), *BUDGET)
    line = _one_line(capsys.readouterr().err)
    assert code == 4
    assert "charged epsilon 0.5" in line and "released nothing" in line and "No space left" in line
    assert "0 of 2 entries" in line
    (row,) = _rows(work)
    assert row.status == "failed" and "No space left on device" in (row.note or "")
    assert not work["out"].exists() or not list(work["out"].glob("release-*"))


def test_ledger_failing_after_the_files_says_so(work, capsys, monkeypatch) -> None:
    def read_only(self: Ledger, row_id: int, path: object) -> None:
        raise LedgerError("attempt to write a readonly database")

    monkeypatch.setattr(Ledger, "mark_released", read_only)
    assert _release(work, _plan(work, [COUNT]), *BUDGET) == 4
    line = _one_line(capsys.readouterr().err)
    assert "released to" in line and "still says 'charged'" in line
    assert [row.status for row in _rows(work)] == ["charged"]


def test_interrupt_marks_the_row_and_says_what_was_released(work, capsys, monkeypatch) -> None:
    calls = {"n": 0}
    original = release_module._draw_and_write

    def interrupted(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(release_module, "_draw_and_write", interrupted)
    code = _release(work, _plan(work, [COUNT, MEAN, COUNT]), *BUDGET)
    out, err = capsys.readouterr()
    assert code == 130 and "1 of 3 entries" in _one_line(err) and "interrupted" in err
    assert "[1/3]" in out
    assert [row.status for row in _rows(work)] == ["released", "failed"]


def test_corrupt_ledger_is_one_line(work, capsys) -> None:
    assert _release(work, _plan(work, [COUNT]), *BUDGET) == 0
    with sqlite3.connect(work["ledger"]) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(work["ledger"].read_bytes())
    raw[4096:8192] = b"\xa5" * 4096  # a malformed page after the header
    work["ledger"].write_bytes(bytes(raw))
    capsys.readouterr()
    code = _release(work, _plan(work, [COUNT]))
    assert code == 2 and "ledger" in _one_line(capsys.readouterr().err)


# ---------------------------------------------------------------- never overwrite
def test_two_ledgers_never_overwrite_each_other(work, capsys) -> None:
    plan = _plan(work, [COUNT, MEAN])
    assert _release(work, plan, *BUDGET) == 0
    first = {p.name: p.read_bytes() for p in work["out"].glob("release-*")}
    work["ledger"] = work["dir"] / "another-ledger.sqlite"
    assert _release(work, plan, *BUDGET) == 0
    after = {p.name: p.read_bytes() for p in work["out"].glob("release-*")}
    assert len(after) == 2 * len(first) == 12
    assert all(after[name] == content for name, content in first.items())


# ---------------------------------------------------------------- one error path
BAD_ENTRIES = {
    "epsilon true": ({**COUNT, "parameters": {"epsilon": True}}, "epsilon"),
    "epsilon as text": ({**COUNT, "parameters": {"epsilon": "0.1"}}, "epsilon"),
    "epsilon 1e-300": ({**MEAN, "parameters": {"epsilon": 1e-300}}, "epsilon"),
    "epsilon 5e-324": ({**MEAN, "parameters": {"epsilon": 5e-324}}, "epsilon"),
    "epsilon 1e-20": ({**MEAN, "parameters": {"epsilon": 1e-20}}, "epsilon"),
    "delta 5e-324": ({**MEAN, "mechanism": "gaussian", "parameters": {"epsilon": 1, "delta": 5e-324}}, ""),
    "bounds 1e308": ({**MEAN, "query": {**MEAN["query"], "lower": -1e308, "upper": 1e308}}, ""),
    "ptr bound 1e308": (
        {
            "query": {"type": "quantile", "column": "x", "lower": 0, "upper": 10, "q": 0.5},
            "mechanism": "ptr",
            "parameters": {"epsilon": 1, "delta": 1e-6, "bound": 1e308},
        },
        "",
    ),
    "unknown key in a query": ({**COUNT, "query": {"type": "count", "colour": "red"}}, "query.colour"),
    "category of 401 digits": (  # found by the fuzz test: polars cannot hold it (was exit 70)
        {**COUNT, "query": {"type": "histogram", "axis": {"column": "x", "categories": [10**400]}}},
        "too large",
    ),
    "topk k twice": (
        {
            "query": {"type": "top_k", "column": "x", "categories": ["3", "7"], "k": 1},
            "mechanism": "topk",
            "parameters": {"epsilon": 1, "k": 2},
        },
        "k",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ENTRIES))
def test_bad_entries_are_one_line_and_exit_2(work, capsys, case) -> None:
    entry, word = BAD_ENTRIES[case]
    code = _release(work, _plan(work, [entry]), *BUDGET)
    line = _one_line(capsys.readouterr().err)
    assert code == 2 and word in line
    assert _rows(work) == []


@pytest.mark.parametrize(
    "text",
    [
        b"\xff\xfe[{}]",  # not UTF-8
        b"[" * 100_000 + b"]" * 100_000,  # nested beyond the recursion limit
        b'[{"query": {"type": "count"}, "mechanism": "laplace", "parameters": {"epsilon": 1'
        + b"0" * 400
        + b"}}]",
    ],
    ids=["not utf-8", "deeply nested", "401 digits"],
)
def test_bad_plan_files_are_one_line(work, capsys, text) -> None:
    plan = work["dir"] / "plan.json"
    plan.write_bytes(text)
    assert _release(work, plan, *BUDGET) == 2
    assert len(_one_line(capsys.readouterr().err)) < 400


@pytest.mark.parametrize(
    "argv",
    [
        ["calibrate", "gaussian", "--epsilon", "1e308", "--delta", "1e-5"],
        ["calibrate", "gaussian", "--epsilon", "x", "--delta", "1e-5"],
        ["calibrate", "gaussian", "--epsilon", "1"],
        ["release", "plan.json"],
    ],
)
def test_bad_arguments_are_one_line(capsys, argv) -> None:
    assert main(argv) == 2
    _one_line(capsys.readouterr().err)


def test_calibrate_json_is_json(capsys) -> None:
    assert main(["calibrate", "gaussian", "--epsilon", "1", "--delta", "5e-324", "--json"]) == 0

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    result = json.loads(capsys.readouterr().out, parse_constant=no_constants)
    assert result["sigma_classical"] is None and result["sigma_analytic"] > 0


def test_a_bug_is_one_line_with_its_own_code(work, capsys, monkeypatch) -> None:
    def bug(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("dpexplorer.commands.release._release_all", bug)
    plan = _plan(work, [{"query": {"type": "count"}, "mechanism": "laplace"}])  # read before the bug
    assert main(["release", str(plan), "--data", "d", "--out", "o"]) == EXIT_INTERNAL
    assert "internal error" in _one_line(capsys.readouterr().err)
    assert EXIT_INTERNAL in DOCUMENTED


# ---------------------------------------------------------------- one budget per dataset
def _variants(work: dict[str, Path]) -> dict[str, Path]:
    frame = pl.read_csv(work["data"])
    crlf = work["dir"] / "crlf.csv"
    crlf.write_bytes(work["data"].read_bytes().replace(b"\n", b"\r\n"))
    shuffled = work["dir"] / "shuffled.csv"
    frame.sample(fraction=1.0, shuffle=True, seed=3).write_csv(shuffled)
    parquet = work["dir"] / "same.parquet"
    frame.write_parquet(parquet)
    return {"crlf": crlf, "shuffled": shuffled, "parquet": parquet}


def test_same_data_in_another_form_shares_the_budget(work, capsys) -> None:
    plan = _plan(work, [{**COUNT, "parameters": {"epsilon": 1.0}}])
    assert _release(work, plan, "--budget-epsilon", "1", "--budget-delta", "0") == 0
    for name, path in _variants(work).items():
        assert load_dataset(path).content_fingerprint == load_dataset(work["data"]).content_fingerprint, name
        capsys.readouterr()
        assert _release(work, plan, data=path) == 3, name
        assert "left" in _one_line(capsys.readouterr().err)


def test_other_data_has_another_identity(work) -> None:
    other = work["dir"] / "other.csv"
    other.write_text("x\n" + "3\n" * 31 + "7\n" * 33)
    assert load_dataset(other).content_fingerprint != load_dataset(work["data"]).content_fingerprint


def test_a_file_keyed_ledger_is_migrated(work, capsys) -> None:
    """Ledgers written before keyed datasets by the file's SHA-256: that budget is found."""
    with Ledger(work["ledger"]) as ledger:
        ledger.set_budget(fingerprint_file(work["data"]), 0.5, 0.0, "basic")
    plan = _plan(work, [{**COUNT, "parameters": {"epsilon": 0.5}}])
    assert _release(work, plan) == 0
    assert _release(work, plan) == 3
    assert len(_rows(work)) == 1


def test_library_callers_migrate_a_file_keyed_ledger_too(work) -> None:
    """The Python API, not the CLI: a release prepared without a ledger and executed against a
    file-keyed ledger finds what that ledger spent (its budget, its measurements), so a budget
    set afresh under the content fingerprint cannot hand the dataset a second budget."""
    from dpexplorer.data.queries import Count

    dataset = load_dataset(work["data"])
    with Ledger(work["ledger"]) as ledger:
        legacy = fingerprint_file(work["data"])
        ledger.set_budget(legacy, 1.0, 0.0, "basic")
        ledger.charge(legacy, query={}, mechanism="laplace", parameters={}, guarantee=PureDP(0.9))
        ledger.set_budget(dataset.content_fingerprint, 10.0, 0.0, "basic")
        prepared = release_module.prepare(dataset, Count(), "laplace", {"epsilon": 0.5})
        assert release_module.price(prepared, ledger).refusal  # 0.9 + 0.5 > 1: the smaller budget
        with pytest.raises(BudgetExceededError):
            release_module.execute(prepared, ledger=ledger, out_dir=work["out"])
        assert len(ledger.measurements(dataset.content_fingerprint)) == 1  # the legacy one, moved
        assert ledger.budget(legacy) is None and ledger.measurements(legacy) == []
        cheap = release_module.prepare(dataset, Count(), "laplace", {"epsilon": 0.05})
        result = release_module.execute(cheap, ledger=ledger, out_dir=work["out"])
        assert len(ledger.measurements(dataset.content_fingerprint)) == 2
        public_id = ledger.public_id(dataset.content_fingerprint)
    sidecar = json.loads(result.files["provenance"].read_text())
    assert sidecar["dataset_id"] == public_id


def test_a_named_dataset_groups_files(work, capsys) -> None:
    other = work["dir"] / "more_rows.csv"
    other.write_text("x\n" + "5\n" * 10)
    plan = _plan(work, [{**COUNT, "parameters": {"epsilon": 1.0}}])
    assert _release(work, plan, "--dataset", "survey", "--budget-epsilon", "1", "--budget-delta", "0") == 0
    assert _release(work, plan, "--dataset", "survey", data=other) == 3
    capsys.readouterr()
    # the first file's content is filed under the name, so it cannot start afresh without it
    assert _release(work, plan) == 3
    assert _release(work, plan, "--dataset", "another") == 2
    assert "survey" in capsys.readouterr().err


def test_cli_prints_the_loading_notes(work, capsys) -> None:
    """The same warnings as the window: text in a numeric column becomes missing, and says so."""
    data = work["dir"] / "mixed.csv"
    data.write_text("x\n" + "4\n" * 40 + "unknown\n")  # ("n/a" is a spelling of missing)
    assert _release(work, _plan(work, [MEAN]), *BUDGET, data=data) == 0
    err = capsys.readouterr().err
    assert "note:" in err and "not a number" in err and "'unknown'" in err
