"""The exact release of a mean as noisy sum over noisy count: charged epsilon never above the
claim, nothing public depends on n under add/remove, intervals from the released values hold
their level, the auditor stays below the charge, and the Adult acceptance figure in a
provenance written by the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from dpexplorer.core.audit import audit
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import CentredMoments, NumericInput
from dpexplorer.release.plans import exact_release
from dpexplorer.release.samplers import SeededBitSource

MECH = registry.get("noisy_mean")


def _input(values: np.ndarray, lower: float, upper: float, relation: str = "add_remove") -> NumericInput:
    clipped = np.clip(np.asarray(values, dtype=float), lower, upper)
    moments = CentredMoments(len(clipped), float(np.sum(clipped - (lower + upper) / 2)))
    mean = np.array([clipped.mean()])
    half = (upper - lower) / 2
    return NumericInput(
        mean,
        mean,
        half,
        half,
        len(clipped),
        "mean",
        relation=relation,
        bounds=(lower, upper),
        moments=(moments,),
        moment_sensitivities=(2 * half, 0.0) if relation == "replace" else (half, 1.0),
    )


@pytest.mark.parametrize("epsilon", [0.01, 0.3, 1.0, 7.0])
@pytest.mark.parametrize("share", [0.05, 0.5, 0.9])
def test_charge_never_exceeds_the_claim(epsilon: float, share: float) -> None:
    params = MECH.validate({"epsilon": epsilon, "sum_share": share})
    release = exact_release(MECH, params, _input(np.arange(50.0), 0.0, 37.3))
    assert Fraction(release.epsilon) <= Fraction(epsilon)
    assert release.epsilon > 0.995 * epsilon  # the rounding costs < 0.5 %


def test_nothing_published_before_the_draw_depends_on_the_private_n() -> None:
    params = MECH.validate({"epsilon": 1.0, "sum_share": 0.4})
    small = exact_release(MECH, params, _input(np.array([20.0, 30.0]), 17.0, 90.0))
    large = exact_release(MECH, params, _input(np.full(100_000, 61.0), 17.0, 90.0))
    assert small.provenance == large.provenance
    assert (small.epsilon, small.labels, small.sampler) == (large.epsilon, large.labels, large.sampler)
    assert small.ci_halfwidth is None and small.dp_outputs == {}  # intervals come with the draw


def test_intervals_cover_the_clipped_mean() -> None:
    """2,000 releases of a 40-row mean: the interval (union bound, conservative) holds the true
    clipped mean in at least 95 % of them, less 3.5 standard errors (0.017)."""
    data = np.r_[np.full(25, 30.0), np.full(15, 70.0)]
    query = _input(data, 17.0, 90.0)
    release = exact_release(MECH, MECH.validate({"epsilon": 1.0}), query, 0.95)
    bits = SeededBitSource(11)
    truth = float(query.value_d[0])
    hits = 0
    for _ in range(2000):
        values = release.draw(bits)
        low, high = release.dp_outputs["confidence_intervals"][0]
        assert 17.0 <= values[0] <= 90.0 and low <= values[0] <= high
        hits += low <= truth <= high
    assert hits / 2000 >= 0.95 - 0.017


def test_replace_uses_the_public_n_and_spends_all_on_the_sum() -> None:
    query = _input(np.arange(100.0), 0.0, 99.0, relation="replace")
    release = exact_release(MECH, MECH.validate({"epsilon": 1.0, "sum_share": 0.2}), query)
    assert release.labels == ("mean", "centred sum (noisy)")
    assert release.provenance["public_n"] == 100
    assert release.provenance["epsilon_sum"] == 1.0


def test_auditor_stays_below_the_charge_and_sees_the_loss() -> None:
    params = MECH.validate({"epsilon": 1.0})
    data = np.array([2.0, 3.0, 5.0])
    paths = [exact_release(MECH, params, _input(d, 0.0, 10.0)) for d in (data, np.append(data, 0.0))]

    def sampler(path):
        return lambda rng, size: path.simulate(SeededBitSource(int(rng.integers(2**32))), size)

    result = audit(sampler(paths[0]), sampler(paths[1]), 0.0, rng=np.random.default_rng(5), n_draws=200_000)
    assert 0.2 < result.epsilon_lb <= paths[0].epsilon


def _release_from_the_cli(tmp_path, plan, data) -> object:
    """Run `dpexplorer release` on ``plan`` and ``data`` with a fresh ledger (budget epsilon 1);
    the output directory."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "dpexplorer.cli", "release", str(plan), "--data", str(data)]
    command += ["--out", str(out), "--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "1"]
    command += ["--budget-delta", "1e-6", "--accountant", "basic"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return out


def test_adult_mean_age_release_from_the_cli(tmp_path) -> None:
    from dpexplorer.data.default import default_dataset_path

    plan = tmp_path / "plan.json"
    query = {"type": "mean", "column": "age", "lower": 17, "upper": 90}
    plan.write_text(json.dumps([{"query": query, "mechanism": "noisy_mean", "parameters": {"epsilon": 1.0}}]))
    out = _release_from_the_cli(tmp_path, plan, default_dataset_path())
    (provenance,) = out.glob("*.provenance.json")
    sidecar = json.loads(provenance.read_text())
    low, high = sidecar["dp_outputs"]["confidence_intervals"][0]
    assert sidecar["dp_outputs"]["confidence_level"] == 0.95
    assert (high - low) / 2 <= 0.05
    assert 17 <= low <= high <= 90
    assert sidecar["epsilon"] <= 1.0


def test_group_mean_with_a_privacy_unit_from_the_cli(tmp_path) -> None:
    """The user guide's worked example (docs/guide/statistics.md) on tests/fixtures/visits.csv:
    every mean inside its bounds,
    the provenance names the unit, its bounds and the keys' origin, and the charge is epsilon."""
    from pathlib import Path

    data = Path(__file__).parents[1] / "fixtures" / "visits.csv"
    query = {
        "type": "group_by",
        "keys": [{"column": "department", "categories": ["GP", "Cardiology", "Orthopaedics", "Dermatology"]}],
        "statistic": "mean",
        "column": "cost",
        "lower": 0,
        "upper": 500,
        "unit": {"column": "patient_id", "max_groups": 2, "max_rows": 3},
    }
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([{"query": query, "mechanism": "noisy_mean", "parameters": {"epsilon": 1.0}}]))
    out = _release_from_the_cli(tmp_path, plan, data)
    (provenance,) = out.glob("*.provenance.json")
    sidecar = json.loads(provenance.read_text())
    assert (
        sidecar["query"]["unit"] == query["unit"] and sidecar["query"]["keys_origin"] == "declared (public)"
    )
    assert sidecar["discretisation"]["sum_sensitivity_l1"] == 2 * 3 * 250.0
    assert sidecar["discretisation"]["count_sensitivity_l1"] == 6.0
    (csv,) = out.glob("*.csv")  # one row per value: the group's key, the part, value, interval
    header, *rows = [line.split(",") for line in csv.read_text().splitlines()]
    assert header == ["department", "label", "value", "ci_low", "ci_high", "interval"]
    means = [r for r in rows if r[1] == "mean"]
    assert [r[0] for r in means] == ["GP", "Cardiology", "Orthopaedics", "Dermatology", "(any other)"]
    for key, _label, value, low, high, _kind in means:
        if value == "empty":  # the group's noisy count fell below one row (empty_groups, the default)
            assert (low, high) == ("", ""), key
            continue
        assert 0 <= float(value) <= 500 and float(low) <= float(value) <= float(high), key
    assert any(r[2] != "empty" for r in means[:4])  # the declared groups hold hundreds of visits
    assert sidecar["epsilon"] <= 1.0


def test_group_release_publishes_the_same_facts_on_neighbouring_datasets(tmp_path) -> None:
    """A mean by group with a privacy unit, released on D and on D' = D plus one person with many
    rows (same random bits): every published field but the values and the intervals computed from
    them (``dp_outputs``) is equal."""
    import polars as pl

    from dpexplorer.data.answers import query_input
    from dpexplorer.data.load import load_dataset
    from dpexplorer.data.queries import query_from_dict
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.release import execute, prepare_input

    rng = np.random.default_rng(3)
    base = pl.DataFrame(
        {"p": rng.integers(0, 40, 200), "g": rng.choice(["a", "b", "c"], 200), "x": rng.uniform(-5, 15, 200)}
    )
    person = pl.DataFrame({"p": [999] * 12, "g": ["a", "b", "c"] * 4, "x": [10.0] * 12})
    query = query_from_dict(
        {
            "type": "group_by",
            "keys": [{"column": "g", "categories": ["a", "b"]}],
            "statistic": "mean",
            "column": "x",
            "lower": 0,
            "upper": 10,
            "unit": {"column": "p", "max_groups": 2, "max_rows": 2},
        }
    )
    sidecars = []
    for i, frame in enumerate((base, pl.concat([base, person]))):
        frame.write_csv(tmp_path / f"{i}.csv")
        # one bounding seed for both: the replay couples D and D' on every random choice
        built = query_input(
            load_dataset(tmp_path / f"{i}.csv"), query, "add_remove", exact_sums=True, bounding_seed=11
        )
        prepared = prepare_input(built, "noisy_mean", {}, fingerprint="ab" * 32, query=query.to_dict())
        with Ledger(tmp_path / f"{i}.sqlite") as ledger:
            ledger.set_budget("ab" * 32, 10.0, 1e-6, "basic")
            result = execute(prepared, ledger=ledger, out_dir=tmp_path / f"out{i}", bits=SeededBitSource(5))
        sidecar = json.loads(result.files["provenance"].read_text())
        assert len(sidecar["dp_outputs"]["confidence_intervals"]) == 3 * 3
        # "files": names carry a random id per release (issue 20), drawn independently of the data
        drop = {
            "time",
            "ledger_path",
            "dataset_id",
            "dp_outputs",
            "files",
            "confidence_interval",
            "interval_kinds",
        }
        # confidence_interval and interval_kinds (whether an interval is the declared range):
        # computed from the released values (DP outputs) and public facts (release/published.py)
        sidecar["post_processing"].pop("values_before")  # the values before clamping: DP outputs
        sidecars.append({k: v for k, v in sidecar.items() if k not in drop})
    assert sidecars[0] == sidecars[1]
