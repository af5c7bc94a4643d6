"""The synthetic-table release of MST and AIM (issue 30): the marginals counted through the
engine, the privacy unit, the charge before anything is drawn or written, the refusal, the
accountant's conversion, and the exact discrete Gaussian's variance. Small data and the dense
estimator (no JAX compile)."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpexplorer.core.accounting.guarantees import ZCDP, ApproxDP
from dpexplorer.core.accounting.single import zcdp_to_epsilon
from dpexplorer.core.marginals import record_marginal
from dpexplorer.core.mechanisms import registry
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.marginals import Marginals, adult_marginals, marginal_input
from dpexplorer.data.queries import Axis, PrivacyUnit, query_from_dict
from dpexplorer.release.charge import ReleaseFailedError, execute
from dpexplorer.release.ledger import BudgetExceededError, Ledger
from dpexplorer.release.release import dataset_key
from dpexplorer.release.samplers import SeededBitSource
from dpexplorer.release.synthetic_tables import (
    discrete_gaussian_parameters,
    prepare_table,
    release_synthetic,
)

AXES = (
    Axis("c", categories=("a", "b", "c")),
    Axis("x", edges=(0.0, 5.0, 10.0)),
    Axis("k", categories=("u", "v")),
)
PARAMS = {"epsilon": 2.0, "estimator": "dense", "iterations": 100}


def _frame(n: int = 600, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    c = rng.choice(["a", "b", "c", "z"], n, p=[0.5, 0.3, 0.15, 0.05])
    x = np.where(c == "a", rng.uniform(0, 5, n), rng.uniform(0, 10, n))
    x[::50] = np.nan
    k = np.where(rng.random(n) < 0.7, "u", "v")
    person = np.repeat(np.arange(n // 3), 3)[:n]
    return pl.DataFrame({"c": c, "x": x, "k": k, "person": person})


@pytest.fixture
def dataset(tmp_path: Path) -> Any:
    path = tmp_path / "d.csv"
    _frame().write_csv(path)
    return load_dataset(path)


def _cell_indices(frame: pl.DataFrame) -> np.ndarray:
    c = np.array([{"a": 0, "b": 1, "c": 2}.get(v, 3) for v in frame["c"].to_list()])
    xs = frame["x"].to_numpy()
    x = np.where(np.isnan(xs), 2, np.where(xs >= 5.0, 1, 0))
    k = np.array([{"u": 0, "v": 1}[v] for v in frame["k"].to_list()])
    return np.stack([c, x, k], axis=1)


def test_marginals_are_counted_through_the_engine_as_brute_force_counts(dataset: Any) -> None:
    query = Marginals(AXES, ways=2)
    built = marginal_input(dataset, query, bounding_seed=1)
    records = _cell_indices(_frame())
    assert built.sizes == (4, 3, 3) and built.n == 600
    for clique, counts in built.marginals_d.items():
        assert np.array_equal(counts, record_marginal(records, built.sizes, clique).astype(np.int64)), clique
    assert (built.sensitivity_l1, built.sensitivity_l2_squared) == (1, 1)
    assert marginal_input(dataset, query, "replace", bounding_seed=1).sensitivity_l2_squared == 2


def test_a_person_with_several_rows_is_bounded_first(dataset: Any) -> None:
    """Each person has 3 rows: bounded to 2, every marginal counts 2 rows per person and one
    marginal moves by 2 (l1) and 4 (l2^2) between neighbours."""
    query = Marginals(AXES, unit=PrivacyUnit("person", max_rows=2))
    built = marginal_input(dataset, query, bounding_seed=7)
    assert built.n == 400
    assert all(int(v.sum()) == 400 for v in built.marginals_d.values())
    assert (built.sensitivity_l1, built.sensitivity_l2_squared, built.max_rows) == (2, 4, 2)
    with pytest.raises(DataError, match="add/remove"):
        marginal_input(dataset, query, "replace")


def test_the_query_round_trips_and_refuses_bad_input() -> None:
    query = Marginals(AXES, workload=(("c", "x"), ("x", "k")), unit=PrivacyUnit("person", max_rows=3))
    assert query_from_dict(json.loads(json.dumps(query.to_dict()))) == query
    assert query.cliques() == ((0, 1), (1, 2))
    assert adult_marginals(3).cliques()[0] == (0, 1, 2) and len(adult_marginals(3).cliques()) == 56
    for bad in (
        lambda: Marginals(AXES[:1]),
        lambda: Marginals(AXES, workload=(("c", "nope"),)),
        lambda: Marginals(AXES, ways=4),
    ):
        with pytest.raises(DataError):
            bad()


class Watching:
    """A bit source that records, at its first use, what the ledger said (the noise must come
    after the charge)."""

    def __init__(self, ledger: Ledger, key: str) -> None:
        self.inner, self.ledger, self.key = SeededBitSource(5), ledger, key
        self.name = self.inner.name
        self.seen: list[str] | None = None

    def _look(self) -> None:
        if self.seen is None:
            self.seen = [m.status for m in self.ledger.measurements(self.key)]

    def randbelow(self, n: int) -> int:
        self._look()
        return self.inner.randbelow(n)

    def words(self, count: int) -> np.ndarray:
        self._look()
        return self.inner.words(count)


@pytest.mark.parametrize("mechanism", ["mst", "aim"])
def test_the_table_is_charged_before_anything_is_drawn_or_written(
    dataset: Any, tmp_path: Path, mechanism: str
) -> None:
    query = Marginals(AXES, ways=2)
    built = marginal_input(dataset, query, bounding_seed=3)
    prepared = prepare_table(built, mechanism, PARAMS, fingerprint="f" * 32, query=query.to_dict())
    out = tmp_path / "out"
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget("f" * 32, 5.0, 1e-6, "zcdp")
        bits = Watching(ledger, "f" * 32)
        result = execute(prepared, ledger=ledger, out_dir=out, bits=bits)
        rows = ledger.measurements("f" * 32)
    assert bits.seen == ["charged"], "the noise was drawn before the ledger was charged"
    rho = registry.get(mechanism).rho(registry.get(mechanism).validate(PARAMS))  # type: ignore[attr-defined]
    assert [m.status for m in rows] == ["released"]
    assert rows[0].guarantee == ZCDP(rho) and result.guarantee == ZCDP(rho)
    table = pl.read_csv(result.files["csv"])
    assert table.columns == ["c", "x", "k"] and len(table) == result.rows > 0
    assert set(table["c"].to_list()) <= {"a", "b", "c", "(any other)"}
    sidecar = json.loads(result.files["provenance"].read_text(encoding="utf-8"))
    assert sidecar["rho"] == rho and sidecar["guarantee_charged"]["rho"] == rho
    assert sidecar["epsilon"] == pytest.approx(zcdp_to_epsilon(rho, 1e-9)) and sidecar["epsilon"] <= 2.0
    assert sidecar["discretisation"]["workload"] == [["c", "x"], ["c", "k"], ["x", "k"]]
    assert sidecar["dp_outputs"]["rho_spent"] <= rho
    measured = json.loads(result.files["json"].read_text(encoding="utf-8"))["measurements"]
    assert [m["marginal"] for m in measured] == result.selected


def test_a_release_over_the_budget_is_refused_with_nothing_charged_or_written(
    dataset: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget("f" * 32, 1.0, 1e-6, "basic")
        built = marginal_input(dataset, Marginals(AXES), bounding_seed=3)
        prepared = prepare_table(built, "mst", PARAMS, fingerprint="f" * 32, query={})
        with pytest.raises(BudgetExceededError):
            execute(prepared, ledger=ledger, out_dir=out, bits=SeededBitSource(1))
        assert ledger.measurements("f" * 32) == []
    assert not out.exists() or not any(out.iterdir())


def test_release_synthetic_end_to_end_needs_a_budget(dataset: Any, tmp_path: Path) -> None:
    from dpexplorer.release.ledger import NoBudgetError

    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        kwargs: dict[str, Any] = {"ledger": ledger, "out_dir": tmp_path / "o", "dataset_name": "small"}
        with pytest.raises(NoBudgetError):
            release_synthetic(dataset, Marginals(AXES), "mst", PARAMS, bits=SeededBitSource(2), **kwargs)
        assert ledger.measurements(dataset_key(dataset, ledger, "small")) == []
        key = dataset_key(dataset, ledger, "small")
        ledger.set_budget(key, 3.0, 1e-6, "basic")
        result = release_synthetic(dataset, Marginals(AXES), "mst", PARAMS, bits=SeededBitSource(2), **kwargs)
        assert [m.status for m in ledger.measurements(key)] == ["released"]
    assert len(pl.read_csv(result.files["csv"])) == result.rows


def test_a_failure_after_the_charge_marks_the_row_failed_and_leaves_no_file(
    dataset: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dpexplorer.release.synthetic_tables as tables

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the estimator failed")

    monkeypatch.setattr(tables, "synthesise", broken)
    built = marginal_input(dataset, Marginals(AXES), bounding_seed=3)
    prepared = prepare_table(built, "mst", PARAMS, fingerprint="f" * 32, query={})
    out = tmp_path / "out"
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget("f" * 32, 5.0, 1e-6, "pld")
        with pytest.raises(ReleaseFailedError, match="the estimator failed"):
            execute(prepared, ledger=ledger, out_dir=out, bits=SeededBitSource(1))
        (row,) = ledger.measurements("f" * 32)
    assert row.status == "failed"
    assert isinstance(row.guarantee, ApproxDP) and row.guarantee.epsilon <= 2.0  # pld: rho converted
    assert not any(p.suffix in {".csv", ".json"} for p in out.iterdir())


@pytest.mark.parametrize("kind", ["statistic", "synthetic"])
def test_a_ledger_that_cannot_record_the_files_fails_a_table_as_a_statistic(
    dataset: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Nothing fails silently after the charge (issue 32): when the ledger cannot mark the row
    released, a synthetic table raises ReleaseFailedError with its files written, as a
    statistic does; the row still says 'charged', so the budget is counted."""
    from dpexplorer.release.ledger import LedgerError
    from dpexplorer.release.release import prepare

    def read_only(self: Ledger, row_id: int, path: object) -> None:
        raise LedgerError("attempt to write a readonly database")

    monkeypatch.setattr(Ledger, "mark_released", read_only)
    if kind == "synthetic":
        built = marginal_input(dataset, Marginals(AXES), bounding_seed=3)
        prepared: Any = prepare_table(built, "mst", PARAMS, fingerprint="f" * 32, query={})
    else:
        count = query_from_dict({"type": "count"})
        prepared = dataclasses.replace(
            prepare(dataset, count, "laplace", {"epsilon": 0.5}), fingerprint="f" * 32
        )
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget("f" * 32, 5.0, 1e-6, "zcdp")
        with pytest.raises(ReleaseFailedError, match="could not record it") as raised:
            execute(prepared, ledger=ledger, out_dir=tmp_path / "out", bits=SeededBitSource(1))
        (row,) = ledger.measurements("f" * 32)
    assert raised.value.files_written and row.status == "charged"
    assert list((tmp_path / "out").glob("*.provenance.json"))


@pytest.mark.parametrize("sigma2", [Fraction(1, 3), Fraction(2), Fraction(12345, 7), Fraction(10**9, 3)])
def test_the_discrete_gaussian_variance_is_never_below_the_accounted_one(sigma2: Fraction) -> None:
    t, p, q = discrete_gaussian_parameters(sigma2)
    drawn = Fraction(t * p, q)
    assert sigma2 <= drawn <= sigma2 * (1 + Fraction(1, 2**19))


def test_a_plan_entry_of_kind_synthetic_releases_a_table_through_the_cli(
    dataset: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dpexplorer release` with an entry {"kind": "synthetic", ...} beside a statistic: both
    charged (the plan's total checked first), the table written as CSV with its sidecar."""
    from dpexplorer.cli import main

    data = tmp_path / "d.csv"
    _frame().write_csv(data)
    synthetic = {
        "kind": "synthetic",
        "query": Marginals(AXES).to_dict(),
        "mechanism": "mst",
        "parameters": PARAMS,
    }
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([synthetic, {"query": {"type": "count"}, "mechanism": "laplace"}]))
    out, ledger_path = tmp_path / "out", tmp_path / "ledger.sqlite"
    base = ["release", str(plan), "--data", str(data), "--out", str(out), "--ledger", str(ledger_path)]
    assert main([*base, "--budget-epsilon", "0.5", "--budget-delta", "1e-6"]) == 3  # over budget
    assert not out.exists() or not any(out.iterdir())
    assert main([*base, "--budget-epsilon", "4", "--budget-delta", "1e-6"]) == 0
    printed = capsys.readouterr().out
    assert "synthetic records = " in printed and "measured marginals = 5" in printed
    (csv,) = out.glob("*-mst-synthetic.csv")
    assert pl.read_csv(csv).columns == ["c", "x", "k"]
    sidecar = json.loads(next(out.glob("*-mst-synthetic.provenance.json")).read_text(encoding="utf-8"))
    assert sidecar["guarantee_charged"]["rho"] == sidecar["rho"]
    assert sidecar["post_processing"]["applied"].startswith("none to the measurements")
    plan.write_text(json.dumps([{**synthetic, "kind": "table"}]))
    assert main(base) == 2
    assert "kind must be one of statistic, synthetic" in capsys.readouterr().err
    # declared post-processing would do nothing to a table: refused, not silently ignored
    plan.write_text(json.dumps([{**synthetic, "post_processing": {"non_negative": False}}]))
    assert main(base) == 2
    assert "post_processing is for released values" in capsys.readouterr().err


@pytest.mark.parametrize("mechanism", ["mst", "aim"])
def test_plain_noisy_marginals_apply_non_negative_and_say_what_was_applied(
    dataset: Any, tmp_path: Path, mechanism: str
) -> None:
    """The audit's finding: a plain MST/AIM entry (the noisy marginals, not a table) declared
    non_negative and published counts of -17. Now the option acts on the noisy counts (free:
    post-processing of DP outputs), the drawn values are kept in values_before, and the
    provenance says per option what was applied, not only what was declared."""
    from dpexplorer.release.release import prepare

    query = Marginals(AXES, ways=2)
    params = {**PARAMS, "epsilon": 0.05}  # sigma of tens of rows: empty cells go below zero
    sidecars = {}
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        key = dataset_key(dataset, ledger)
        ledger.set_budget(key, 5.0, 1e-6, "zcdp")
        for option in (True, False):
            prepared = prepare(
                dataset, query, mechanism, params, ledger=ledger, post_processing={"non_negative": option}
            )
            result = execute(prepared, ledger=ledger, out_dir=tmp_path / str(option), bits=SeededBitSource(4))
            sidecars[option] = json.loads(result.files["provenance"].read_text(encoding="utf-8"))
            written = json.loads(result.files["json"].read_text(encoding="utf-8"))["values"]
            sidecars[option]["released"] = [v["value"] for v in written]
    kept, raw = sidecars[True], sidecars[False]
    assert min(kept["released"]) == 0 and min(raw["released"]) < 0
    assert kept["post_processing"]["declared"]["non_negative"] is True
    assert kept["post_processing"]["applied"]["non_negative"] == "applied"
    assert kept["post_processing"]["applied"]["clamp_to_range"].startswith("not applicable")
    before = kept["post_processing"]["values_before"]
    assert min(before) < 0, "the draw had no negative count: the test shows nothing"
    assert raw["post_processing"]["applied"]["non_negative"] == "off (declared false)"
    assert raw["post_processing"]["values_before"] is None  # nothing changed: published as drawn


def test_the_cli_and_the_report_say_the_epsilon_the_ledger_subtracts(
    dataset: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An MST entry declares epsilon 2 (delta 1e-9) but the ledger subtracts its rho converted at
    the budget's delta 1e-6: the CLI says both before anything is charged (a Laplace count,
    which costs what it declares, gets no line), the figure is what the ledger then spent for
    it, and the run's report says it too."""
    from dpexplorer.cli import main
    from dpexplorer.release.ledger import total_epsilon
    from dpexplorer.release.presentation import privacy_number
    from dpexplorer.release.report import render_html
    from dpexplorer.release.report_run import report_of_run

    data = tmp_path / "d.csv"
    _frame().write_csv(data)
    plan = tmp_path / "plan.json"
    mst = {"query": Marginals(AXES).to_dict(), "mechanism": "mst", "parameters": PARAMS}
    plan.write_text(json.dumps([mst, {"query": {"type": "count"}, "mechanism": "laplace"}]))
    ledger_path = tmp_path / "ledger.sqlite"
    command = ["release", str(plan), "--data", str(data), "--out", str(tmp_path / "out")]
    assert (
        main([*command, "--ledger", str(ledger_path), "--budget-epsilon", "4", "--budget-delta", "1e-6"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    with Ledger(ledger_path) as ledger:
        key = dataset_key(load_dataset(data), ledger)
        first, _ = ledger.measurements(key)
        spent = float(total_epsilon([first.guarantee], "basic", 1e-6))
        report = report_of_run(ledger, first.id)
    said = f"plan entry 1 (mst): declared ε = 2; the ledger subtracts ε = {privacy_number(spent)} ("
    assert privacy_number(spent) != "2"
    (note,) = [line for line in lines if line.startswith("plan entry")]
    assert note.startswith(said) and "converted at the budget's δ = 1e-6 under basic composition" in note
    assert lines.index(note) < next(i for i, line in enumerate(lines) if line.startswith("[1/2]"))
    assert report.items[0].subtracted == pytest.approx(spent, rel=1e-9) and report.items[1].subtracted is None
    page = render_html(report)
    assert f"the ledger subtracted ε = {privacy_number(spent)}" in page
    assert f"(ledger: {privacy_number(spent)})" in page
