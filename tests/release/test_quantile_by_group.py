"""A quantile by declared group (issue 16): the vector's sensitivities against brute force, the
exponential mechanism's law in every group of a release (epsilon / m each, m the groups one
neighbour changes), the CLI's CSV with one row per group, and the refusals that depend only on
the query."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats
from scipy.special import softmax

from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.dp_quantile import candidates, scores
from dpexplorer.data.answers import query_input
from dpexplorer.data.errors import DataError
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import Axis, GroupBy, PrivacyUnit
from dpexplorer.release.plans import exact_release
from dpexplorer.release.samplers import SeededBitSource
from tests.data.test_privacy_unit import CELLS, _persons

LOW, HIGH = 0.0, 4.0
AXIS = Axis("g", categories=("a", "b"))  # cells a, b, other


def _quantiles(rows: list[tuple[str, float]], q: float) -> np.ndarray:
    """Each cell's q-quantile by its definition: rank max(1, ceil(q n)) of the clipped values."""
    out = []
    for cell in CELLS:
        values = sorted(min(max(v, LOW), HIGH) for g, v in rows if g == cell)
        out.append(values[max(1, math.ceil(q * len(values))) - 1] if values else LOW)
    return np.array(out)


DATASETS = [
    [],
    [("a", 1.0)],
    [("a", 0.0), ("a", 4.0)],  # replace moves a's quantile from one bound to the other, and b's
    [("a", 0.0), ("b", 4.0), ("b", 2.0)],
    [("a", 1.0), ("a", 3.0), ("z", 2.0)],
]
ROWS = [(g, v) for g in CELLS for v in (-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0)]


@pytest.mark.parametrize("q", [0.5, 0.9])
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_sensitivities_against_brute_force(tmp_path, relation: str, q: float) -> None:
    """Every neighbour of small datasets (one row added under add/remove, one row changed to any
    group and value under replace): the largest change of the vector of quantiles equals the
    declared l1 and l2 (so they are upper bounds, and reached)."""
    query = GroupBy((AXIS,), "quantile", "v", LOW, HIGH, q=q)
    worst = np.zeros(2)
    for rows in DATASETS:
        base = _quantiles(rows, q)
        if relation == "add_remove":
            others = [[*rows, row] for row in ROWS]
        else:
            others = [[*rows[:i], row, *rows[i + 1 :]] for i in range(len(rows)) for row in ROWS]
        for other in others:
            diff = _quantiles(other, q) - base
            worst = np.maximum(worst, [np.abs(diff).sum(), np.sqrt((diff**2).sum())])
    path_rows = [("a", 1.0), ("a", 3.0), ("z", 2.0)]
    pl.DataFrame({"g": [g for g, _ in path_rows], "v": [v for _, v in path_rows]}).write_csv(
        tmp_path / "d.csv"
    )
    inp = query_input(load_dataset(tmp_path / "d.csv"), query, relation)
    assert np.array_equal(inp.value_d, _quantiles(path_rows, q))
    assert worst[0] == pytest.approx(inp.sensitivity_l1) and worst[1] == pytest.approx(inp.sensitivity_l2)


@pytest.mark.parametrize(("k", "r"), [(1, 2), (2, 1), (2, 2)])
def test_sensitivities_with_a_privacy_unit_against_brute_force(tmp_path, k: int, r: int) -> None:
    """Adding one person (at most k groups, r rows in each): the vector moves by at most the
    declared (k' W, sqrt(k') W), reached; each group's score -|(1 - q) L(c) - q G(c)| by at
    most r max(q, 1 - q) at every candidate, reached (the exponential mechanism's Delta_u)."""
    q = 0.75
    query = GroupBy((AXIS,), "quantile", "v", LOW, HIGH, PrivacyUnit("p", k, r), q=q)
    points = candidates((LOW, HIGH), 8)
    worst, worst_score = np.zeros(2), 0.0
    for rows in DATASETS:
        base = _quantiles(rows, q)
        for person in _persons(k, r):
            diff = _quantiles(rows + person, q) - base
            worst = np.maximum(worst, [np.abs(diff).sum(), np.sqrt((diff**2).sum())])
            for cell in CELLS:
                before = np.sort([min(max(v, LOW), HIGH) for g, v in rows if g == cell])
                after = np.sort([min(max(v, LOW), HIGH) for g, v in rows + person if g == cell])
                worst_score = max(
                    worst_score, float(np.abs(scores(after, points, q) - scores(before, points, q)).max())
                )
    pl.DataFrame({"p": [1, 1, 2], "g": ["a", "a", "z"], "v": [1.0, 3.0, 2.0]}).write_csv(tmp_path / "d.csv")
    inp = query_input(load_dataset(tmp_path / "d.csv"), query, "add_remove", bounding_seed=1)
    assert worst[0] == pytest.approx(inp.sensitivity_l1) and worst[1] == pytest.approx(inp.sensitivity_l2)
    assert inp.group_contribution == (k, r)
    assert worst_score == pytest.approx(registry.get("dp_quantile").sensitivity(inp))


@pytest.mark.parametrize("relation", ["add_remove", "replace", "unit"])
def test_every_group_is_drawn_from_the_exponential_mechanism_at_its_share(tmp_path, relation) -> None:
    """2,000 releases: each group's values follow exp(eps / m * u / (2 Delta_u)) over the grid
    (chi-square p > 1e-4), m = 1 under add/remove, 2 under replace, k' = 2 with a privacy unit
    of 2 groups and 3 rows (Delta_u then 3 * 0.5); charged epsilon."""
    rng = np.random.default_rng(3)
    frame = pl.DataFrame(
        {"p": rng.integers(0, 15, 40), "g": rng.choice(["a", "b"], 40), "v": rng.uniform(0, 4, 40).round(2)}
    )
    frame.write_csv(tmp_path / "d.csv")
    unit = PrivacyUnit("p", 2, 3) if relation == "unit" else None
    query = GroupBy((AXIS,), "quantile", "v", LOW, HIGH, unit, q=0.5)
    inp = query_input(
        load_dataset(tmp_path / "d.csv"), query, "add_remove" if unit else relation, bounding_seed=2
    )
    mech = registry.get("dp_quantile")
    params = mech.validate({"epsilon": 1.0, "bins": 4})
    release = exact_release(mech, params, inp)
    split, delta_u = {"add_remove": (1, 0.5), "replace": (2, 1.0), "unit": (2, 1.5)}[relation]
    assert release.epsilon == 1.0 and release.provenance["groups_one_neighbour_changes"] == split
    bits = SeededBitSource(5)
    draws = np.array([release.draw(bits) for _ in range(2_000)])
    points = candidates((LOW, HIGH), 4)
    share = 1.0 / (2 * split * delta_u)
    for g, values in enumerate(inp.group_values_d):  # type: ignore[arg-type]
        expected = softmax(share * scores(values, points, 0.5)) * len(draws)
        observed = np.array([(draws[:, g] == p).sum() for p in points])
        assert observed.sum() == len(draws)
        keep = expected > 0
        assert stats.chisquare(observed[keep], expected[keep]).pvalue > 1e-4


def test_quantile_by_group_from_the_cli(tmp_path) -> None:
    """The user guide's median age by race (docs/guide/statistics.md) on Adult through
    `dpexplorer release`: one CSV row per
    group, every value a whole year inside the bounds (the grid of 73 steps), within 3 years of
    the true median in the three large groups (the exponential mechanism's error there is a grid
    step or two: thousands of rows per group), charged epsilon, the sharing in the provenance."""
    import subprocess
    import sys

    from dpexplorer.data.answers import true_answer
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.data.queries import query_from_dict

    races = ["White", "Black", "Asian-Pac-Islander"]
    query = {
        "type": "group_by",
        "keys": [{"column": "race", "categories": races}],
        "statistic": "quantile",
        "column": "age",
        "lower": 17,
        "upper": 90,
        "q": 0.5,
    }
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps([{"query": query, "mechanism": "dp_quantile", "parameters": {"epsilon": 1.0, "bins": 73}}])
    )
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "dpexplorer.cli",
        "release",
        str(plan),
        "--data",
        str(default_dataset_path()),
    ]
    command += ["--out", str(out), "--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "1"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    (provenance,) = out.glob("*.provenance.json")
    sidecar = json.loads(provenance.read_text())
    assert sidecar["epsilon"] == 1.0 and sidecar["query"]["q"] == 0.5
    (csv,) = out.glob("*.csv")
    header, *rows = [line.split(",") for line in csv.read_text().splitlines()]
    assert header[:3] == ["race", "label", "value"]
    assert [r[0] for r in rows] == [*races, "(any other)"]
    released = np.array([float(r[2]) for r in rows])  # rounded to the declared range's unit
    assert (
        np.allclose(released, np.round(released), atol=1e-9) and ((released >= 17) & (released <= 90)).all()
    )
    truth = true_answer(load_dataset(default_dataset_path()), query_from_dict(query))
    assert np.abs(released[:3] - truth[:3]).max() <= 3


def test_a_quantile_by_group_refuses_what_this_version_cannot_bound() -> None:
    with pytest.raises(DataError, match=r"in \(0, 1\]"):
        GroupBy((AXIS,), "quantile", "v", LOW, HIGH, q=0.0)


def test_median_cost_by_department_with_a_privacy_unit() -> None:
    """On tests/fixtures/visits.csv (patients with 1 to 20 visits), each patient bounded to 2
    departments and 3 visits in each: every department drawn at epsilon / 2 with score
    sensitivity 3 * 0.5; values on the grid inside the bounds; D' adds a patient."""
    data = Path(__file__).parents[1] / "fixtures" / "visits.csv"
    departments = ("GP", "Cardiology", "Orthopaedics", "Dermatology")
    query = GroupBy(
        (Axis("department", categories=departments),),
        "quantile",
        "cost",
        0,
        500,
        PrivacyUnit("patient_id", 2, 3),
    )
    inp = query_input(load_dataset(data), query, "add_remove")
    assert inp.group_contribution == (2, 3) and inp.sensitivity_l1 == 2 * 500
    assert "plus one patient_id with 3 row(s)" in inp.differing_row and "The bounds keep" in inp.differing_row
    mech = registry.get("dp_quantile")
    release = exact_release(mech, mech.validate({"epsilon": 1.0, "bins": 50}), inp)
    assert release.provenance["epsilon_per_group"] == 0.5 and release.provenance["score_sensitivity"] == 1.5
    values = release.draw(SeededBitSource(1))
    grid = set(np.round(candidates((0.0, 500.0), 50), 9))
    assert len(values) == 5 and all(round(v, 9) in grid for v in values)
