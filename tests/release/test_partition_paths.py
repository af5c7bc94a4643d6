"""Statistics by privately selected keys (partition selection): the candidates the data layer
finds, the sensitivities it derives from public facts only, the release's threshold rule, and a
release from the CLI on the visits fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpexplorer.cli import main
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.partition_selection import keep_probability, selection_delta
from dpexplorer.data.answers import query_input
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.release import partition_paths
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.plans import exact_release
from dpexplorer.release.release import execute, prepare_input
from dpexplorer.release.samplers import SeededBitSource

VISITS = Path(__file__).parents[1] / "fixtures" / "visits.csv"


def _query(unit: dict[str, Any] | None = None, delta: float = 1e-6, **private: Any) -> Any:
    d: dict[str, Any] = {
        "type": "group_by",
        "keys": [],
        "private_keys": {"columns": ["g"], "epsilon": 1.0, "delta": delta, **private},
        "statistic": "mean",
        "column": "x",
        "lower": 0,
        "upper": 10,
    }
    if unit is not None:
        d["unit"] = unit
    return query_from_dict(d)


def _dataset(tmp_path: Path, frame: pl.DataFrame, name: str = "d.csv") -> Any:
    frame.write_csv(tmp_path / name)
    return load_dataset(tmp_path / name)


def _frame(seed: int = 3, n: int = 300) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "p": rng.integers(0, 60, n),
            "g": rng.choice(["a", "b", "c", "d"], n, p=[0.5, 0.3, 0.15, 0.05]),
            "x": rng.uniform(-5, 15, n),
        }
    )


def test_candidates_are_the_keys_that_occur_with_their_persons(tmp_path: Path) -> None:
    """Bounds that drop nothing: each candidate's persons = distinct persons with a row in that key
    (brute force), missing keys form their own candidate, and the query is round-tripped."""
    frame = pl.concat([_frame(), pl.DataFrame({"p": [7], "g": [None], "x": [1.0]}, schema=_frame().schema)])
    built = query_input(
        _dataset(tmp_path, frame),
        _query({"column": "p", "max_groups": 100, "max_rows": 1000}),
        "add_remove",
        exact_sums=True,
    )
    truth = frame.group_by("g").agg(pl.col("p").n_unique().alias("n"))
    expected = {("(missing)",) if g is None else (g,): n for g, n in truth.iter_rows()}
    assert built.partition is not None
    assert dict(zip(built.partition.keys, built.partition.persons, strict=True)) == expected
    assert built.labels == tuple(f"g = {k[0]}" for k in built.partition.keys)
    assert len(built.moments) == len(built.labels)
    assert _query().to_dict()["keys_origin"] == "selected privately (noisy threshold)"
    assert query_from_dict(_query().to_dict()) == _query()


def test_bounding_to_one_key_per_person_counts_each_person_once(tmp_path: Path) -> None:
    built = query_input(
        _dataset(tmp_path, _frame()),
        _query({"column": "p", "max_groups": 1, "max_rows": 2}),
        "add_remove",
        exact_sums=True,
    )
    assert built.partition is not None
    assert sum(built.partition.persons) == _frame()["p"].n_unique()
    assert built.partition.max_keys == 1


def test_sensitivities_use_the_declared_bound_not_the_number_of_keys(tmp_path: Path) -> None:
    """Two keys occur, five keys per person allowed: every sensitivity uses k = 5 (the number of
    keys is private), where declared keys would use min(5, groups)."""
    frame = _frame().filter(pl.col("g").is_in(["a", "b"]))
    built = query_input(
        _dataset(tmp_path, frame),
        _query({"column": "p", "max_groups": 5, "max_rows": 2}),
        "add_remove",
        exact_sums=True,
    )
    assert len(built.labels) == 2
    assert built.moment_sensitivities == (5 * 2 * 5.0, 10.0)
    assert built.sensitivity_l1 == pytest.approx(5 * 2 * 10 / 3)


def test_private_keys_refuse_replace_and_other_mechanisms_whatever_the_data(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, _frame())
    with pytest.raises(DataError, match="add or remove"):
        query_input(dataset, _query(), "replace", exact_sums=True)
    built = query_input(dataset, _query(), "add_remove", exact_sums=True)
    laplace = registry.get("laplace")
    with pytest.raises(NotApplicableError, match="privately selected keys"):
        exact_release(laplace, laplace.validate({"epsilon": 1.0}), built)


def test_threshold_rule_is_public_and_its_delta_is_exact() -> None:
    """The rule from (k, epsilon, delta) alone: the exact delta is at most the declared one, one
    step lower would exceed it, and it equals 1 - (1 - P(kept | 1 person))^k."""
    from dpexplorer.core.partition_selection import Candidates

    for k, epsilon, delta in ((1, 1.0, 1e-6), (3, 0.5, 1e-8), (20, 2.0, 1e-5)):
        t, s, threshold, exact = partition_paths.rule(Candidates((), (), k, epsilon, delta))
        assert k * s / t <= epsilon
        assert exact <= delta < selection_delta(t, s, threshold - 1, k)
        assert exact == pytest.approx(1 - (1 - keep_probability(1, t, s, threshold)) ** k, rel=1e-12)


def test_each_key_is_kept_with_its_probability(tmp_path: Path) -> None:
    """4,000 releases: every key's keep frequency within 4.5 standard errors of the exact
    keep probability of its number of persons; every released mean inside [lower, upper]."""
    keys = ["a"] + ["b"] * 2 + ["c"] * 3 + ["d"] * 4  # rows per key (each row a person): 1 to 4
    frame = pl.DataFrame({"p": range(10), "g": keys, "x": np.linspace(-5, 15, 10)})
    built = query_input(_dataset(tmp_path, frame), _query(delta=0.12), "add_remove", exact_sums=True)
    mech = registry.get("noisy_mean")
    release = exact_release(mech, mech.validate({"epsilon": 1.0}), built)
    t, s, threshold, _ = partition_paths.rule(built.partition)
    assert threshold == 3
    kept = dict.fromkeys(built.partition.keys, 0)
    bits, draws = SeededBitSource(11), 4_000
    for _ in range(draws):
        values = release.draw(bits)
        labels = release.released_labels()
        assert len(labels) == len(values) == 3 * len(release.dp_outputs["kept_keys"])
        assert all(0 <= v <= 10 for v, lab in zip(values, labels, strict=True) if lab.endswith(": mean"))
        for key in release.dp_outputs["kept_keys"]:
            kept[tuple(key)] += 1
    probabilities = built.partition.keep_probabilities(t, s, threshold)
    assert min(probabilities) > 0.05 and max(probabilities) < 0.999  # the test can fail
    for key, p in zip(built.partition.keys, probabilities, strict=True):
        error = 4.5 * np.sqrt(p * (1 - p) / draws)
        assert abs(kept[key] / draws - p) <= error, (key, kept[key] / draws, p)


@pytest.mark.parametrize(("statistic", "mechanism"), [("mean", "noisy_mean"), ("count", "laplace")])
def test_release_publishes_the_same_provenance_when_a_person_brings_new_keys(
    tmp_path: Path, statistic: str, mechanism: str
) -> None:
    """D against D' = D plus one person with 12 rows in five keys, three of them new (same random
    bits): every published field outside ``dp_outputs`` is equal (a mean, and a count)."""
    base = _frame()
    person = pl.DataFrame({"p": [999] * 12, "g": ["a", "b", "e", "f", "h", "a"] * 2, "x": [10.0] * 12})
    as_dict = _query({"column": "p", "max_groups": 3, "max_rows": 2}).to_dict()
    if statistic == "count":
        as_dict = {k: v for k, v in as_dict.items() if k not in {"column", "lower", "upper"}}
    query = query_from_dict({**as_dict, "statistic": statistic})
    sidecars = []
    for i, frame in enumerate((base, pl.concat([base, person]))):
        built = query_input(_dataset(tmp_path, frame, f"{i}.csv"), query, "add_remove", exact_sums=True)
        prepared = prepare_input(
            built, mechanism, {"epsilon": 1.0}, fingerprint="ab" * 32, query=query.to_dict()
        )
        with Ledger(tmp_path / f"{i}.sqlite") as ledger:
            ledger.set_budget("ab" * 32, 10.0, 1e-3, "basic")
            result = execute(prepared, ledger=ledger, out_dir=tmp_path / f"out{i}", bits=SeededBitSource(5))
        sidecar = json.loads(result.files["provenance"].read_text())
        assert sidecar["guarantee_charged"]["type"] == "ApproxDP"
        assert sidecar["guarantee_charged"]["delta"] == 1e-6
        assert sidecar["discretisation"]["keys_selection"]["keys_per_person"] == 3
        assert len(result.labels) == len(result.values)
        drop = {
            "time",
            "ledger_path",
            "dataset_id",
            "dp_outputs",
            "files",
            "confidence_interval",
            "interval_kinds",
        }
        # confidence_interval: computed from the released values (DP outputs), as dp_outputs;
        # interval_kinds: one per released value, as many as the kept keys (a DP output)
        sidecar["post_processing"].pop("values_before")  # the values before clamping: DP outputs
        # files: names carry a random token
        sidecars.append({k: v for k, v in sidecar.items() if k not in drop})
    assert sidecars[0] == sidecars[1]


def release_by_private_department(
    tmp_path: Path, statistic: dict[str, Any], mechanism: str, parameters: dict[str, Any]
) -> tuple[dict[str, Any], set[str], pl.DataFrame]:
    """``statistic`` of visits.csv's cost in [0, 500] by department, keys selected privately
    (epsilon 0.5, delta 1e-6), each patient bounded to 2 departments and 3 visits, released
    through the CLI: (provenance, kept departments, CSV), after checking the selection's delta
    and that only departments of the file are kept."""
    query = {
        "type": "group_by",
        "keys": [],
        "private_keys": {"columns": ["department"], "epsilon": 0.5, "delta": 1e-6},
        **statistic,
        "column": "cost",
        "lower": 0,
        "upper": 500,
        "unit": {"column": "patient_id", "max_groups": 2, "max_rows": 3},
    }
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"query": query, "mechanism": mechanism, "parameters": parameters}]))
    out = tmp_path / "out"
    args = ["release", str(plan), "--data", str(VISITS), "--out", str(out)]
    args += ["--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "2", "--budget-delta", "1e-5"]
    assert main(args) == 0
    (provenance,) = out.glob("*.provenance.json")
    sidecar = json.loads(provenance.read_text())
    selection = sidecar["discretisation"]["keys_selection"]
    assert selection["delta_exact"] <= selection["delta_declared"] == 1e-6
    kept = {k[0] for k in sidecar["dp_outputs"]["kept_keys"]}
    assert kept <= {"GP", "Cardiology", "Orthopaedics", "Dermatology"}
    (csv,) = out.glob("*.csv")
    return sidecar, kept, pl.read_csv(csv)


def test_group_mean_by_private_keys_from_the_cli(tmp_path: Path) -> None:
    """visits.csv by department, keys selected privately: only kept keys in the CSV, every mean
    inside its bounds, the threshold and the delta in the provenance, epsilon and delta charged."""
    sidecar, kept, table = release_by_private_department(
        tmp_path, {"statistic": "mean"}, "noisy_mean", {"epsilon": 1.0}
    )
    assert sidecar["epsilon"] <= 1.5 and sidecar["delta"] == 1e-6
    assert table.columns == ["department", "label", "value", "ci_low", "ci_high", "interval"]
    means = table.filter(pl.col("label") == "mean")
    assert set(means["department"]) == kept and means.height == len(kept)
    assert table.height == 3 * len(kept)  # the mean, the noisy count and the noisy centred sum
    assert means["value"].is_between(0, 500).all()
    assert (means["ci_low"] <= means["value"]).all() and (means["value"] <= means["ci_high"]).all()


def test_value_rows_put_one_value_per_row_with_its_groups_keys() -> None:
    """Two key columns, three parts per group with intervals (rounded by the one rule); a
    release without intervals leaves the interval cells empty."""
    from dpexplorer.release.export import value_rows

    labels = [f"{g}: {p}" for g in ("a, x", "b, y") for p in ("mean", "count (noisy)", "sum")]
    values = [1.04, 10.0, 5.0, 2.0, 20.0, 40.0]
    intervals = [(v - 1, v + 1) for v in values]
    header, rows = value_rows(
        labels, values, intervals, key_columns=("k1", "k2"), groups=(("a", "x"), ("b", "y"))
    )
    assert header == ["k1", "k2", "label", "value", "ci_low", "ci_high", "interval"]
    assert rows[0] == ["a", "x", "mean", "1.0", "0.0", "2.1", "95 % noise"]
    assert [r[:3] for r in rows[3:]] == [["b", "y", "mean"], ["b", "y", "count (noisy)"], ["b", "y", "sum"]]
    assert value_rows(
        ["k = a", "k = b"], [3.0, 4.0], None, key_columns=("k",), groups=(("a",), ("b",)), part="count"
    ) == (
        ["k", "label", "value", "ci_low", "ci_high", "interval"],
        [["a", "count", "3", "", "", ""], ["b", "count", "4", "", "", ""]],
    )


def test_the_stewards_view_lists_each_candidate_with_its_chance(tmp_path: Path) -> None:
    """The accuracy notes (the steward's own view) name every candidate, its persons and its
    chance of being kept, by the same rule as the release; the guarantee adds the selection's."""
    keys = ["a"] + ["b"] * 2 + ["c"] * 3 + ["d"] * 4
    frame = pl.DataFrame({"p": range(10), "g": keys, "x": np.linspace(-5, 15, 10)})
    built = query_input(
        _dataset(tmp_path, frame), _query(delta=0.12), "add_remove", bounding_seed=0, exact_sums=True
    )
    mech = registry.get("noisy_mean")
    params = mech.validate({"epsilon": 1.0})
    notes = " ".join(mech.accuracy(params, built).notes)
    assert "reaches 3" in notes and "g = a: 1 persons, kept with probability 0.0989" in notes
    assert "g = d: 4 persons, kept with probability 0.9" in notes
    assert mech.epsilon_delta(params, built) == (2.0, 0.12)


def test_eager_and_streaming_polars_find_the_same_candidates(tmp_path: Path) -> None:
    """The same file read eagerly and as a streaming scan: identical candidates, persons and
    statistics (the privacy unit's bounding seeded, as in the exploration)."""
    _frame().write_parquet(tmp_path / "d.parquet")
    query = _query({"column": "p", "max_groups": 2, "max_rows": 2})
    inputs = [
        query_input(
            load_dataset(tmp_path / "d.parquet", lazy=lazy),
            query,
            "add_remove",
            bounding_seed=4,
            exact_sums=True,
        )
        for lazy in (False, True)
    ]
    assert inputs[0].partition == inputs[1].partition
    assert inputs[0].labels == inputs[1].labels
    assert np.array_equal(inputs[0].value_d, inputs[1].value_d)
