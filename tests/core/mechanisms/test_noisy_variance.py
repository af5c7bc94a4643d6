"""The variance / standard deviation from three noisy sums: the estimator, the parts'
sensitivities against brute force, the exact release's interval range, coverage and charge."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import CentredMoments, NumericInput
from dpexplorer.core.mechanisms.noisy_variance import estimate, part_sensitivities
from dpexplorer.release.plans import exact_release
from dpexplorer.release.ratio_paths import _variance_range
from dpexplorer.release.samplers import SeededBitSource

LOWER, UPPER = 2.0, 10.0


def _moments(x: np.ndarray) -> CentredMoments:
    c, h = (LOWER + UPPER) / 2, (UPPER - LOWER) / 2
    y = np.clip(x, LOWER, UPPER) - c
    return CentredMoments(x.size, float(y.sum()), float((y * y - h * h / 2).sum()))


def _input(x: np.ndarray, std: bool = False) -> NumericInput:
    m = _moments(x)
    value = float(
        estimate(
            np.array([m.count]), np.array([m.centred_sum]), np.array([m.centred_squares]), LOWER, UPPER, std
        )[0]
    )
    width = 4.0 if std else 16.0
    return NumericInput(
        np.array([value]), np.array([value]), width, width, x.size, "std" if std else "variance",
        output_range=(0.0, width), bounds=(LOWER, UPPER), moments=(m,), moments_prime=(m,),
    )  # fmt: skip


def test_estimate_is_the_clipped_population_variance() -> None:
    x = np.random.default_rng(0).uniform(0, 12, 500)
    m = _moments(x)
    got = estimate(
        np.array([m.count]), np.array([m.centred_sum]), np.array([m.centred_squares]), LOWER, UPPER, False
    )
    assert got[0] == pytest.approx(np.var(np.clip(x, LOWER, UPPER)), rel=1e-9)
    assert estimate(np.array([0.0]), np.array([0.0]), np.array([-1e9]), LOWER, UPPER, True)[0] == 0.0


def test_part_sensitivities_against_brute_force() -> None:
    """Every dataset of up to 3 rows on a grid of values, every neighbour (one row added or
    removed; one row replaced): the parts move by at most the declared sensitivities, and reach them."""
    values = np.linspace(0, 12, 7)
    worst = {"add_remove": np.zeros(3), "replace": np.zeros(3)}
    for size in range(0, 4):
        for rows in itertools.product(values, repeat=size):
            m = _moments(np.array(rows))
            for v in values:
                a = _moments(np.array([*rows, v]))
                diff = np.abs(
                    [a.count - m.count, a.centred_sum - m.centred_sum, a.centred_squares - m.centred_squares]
                )
                worst["add_remove"] = np.maximum(worst["add_remove"], diff)
                if size:
                    r = _moments(np.array([*rows[1:], v]))
                    diff = np.abs([0, r.centred_sum - m.centred_sum, r.centred_squares - m.centred_squares])
                    worst["replace"] = np.maximum(worst["replace"], diff)
    for relation, public in (("add_remove", False), ("replace", True)):
        assert worst[relation] == pytest.approx(part_sensitivities(LOWER, UPPER, public))


def test_variance_range_contains_every_point_of_the_box() -> None:
    rng = np.random.default_rng(1)
    half = (UPPER - LOWER) / 2
    for _ in range(200):
        n, s, q = rng.uniform(2, 40), rng.uniform(-30, 30), rng.uniform(-200, 200)
        halves = (rng.uniform(0, 1.5), rng.uniform(0, 20), rng.uniform(0, 100))
        low, high = _variance_range(n, s, q, halves, half)
        m = n + rng.uniform(-1, 1, 5000) * halves[0]
        ss = s + rng.uniform(-1, 1, 5000) * halves[1]
        qq = q + rng.uniform(-1, 1, 5000) * halves[2]
        inside = np.clip(qq / m + half * half / 2 - (ss / m) ** 2, 0, half * half)
        assert low - 1e-9 <= inside.min() and inside.max() <= high + 1e-9


@pytest.mark.parametrize("std", [False, True])
def test_release_intervals_cover_and_the_charge_is_epsilon(std: bool) -> None:
    """300 exact releases: the 95 % interval holds the clipped statistic at least 90 % of the time
    (binomial: P(<= 270 of 300 | 0.95) < 1e-4); values within the range; charged <= epsilon."""
    x = np.random.default_rng(2).uniform(0, 12, 60)
    query = _input(x, std)
    mech = registry.get("noisy_variance")
    release = exact_release(mech, mech.validate({"epsilon": 1.0}), query)
    assert release.epsilon <= 1.0
    bits, hits = SeededBitSource(3), 0
    truth = float(query.value_d[0])
    for _ in range(300):
        value = release.draw(bits)[0]
        low, high = release.dp_outputs["confidence_intervals"][0]
        assert 0 <= low <= value <= high <= (4.0 if std else 16.0)
        hits += low <= truth <= high
    assert hits >= 270


def test_standard_deviation_of_age_on_adult_from_the_cli(tmp_path) -> None:
    """Adult's age in [17, 90] at epsilon 1 through `dpexplorer release`: the standard deviation
    and its interval inside [0, h], the interval under dp_outputs, epsilon charged <= 1."""
    import json

    from dpexplorer.cli import main
    from dpexplorer.data.default import default_dataset_path

    plan = tmp_path / "plan.json"
    query = {"type": "variance", "column": "age", "lower": 17, "upper": 90, "std": True}
    plan.write_text(
        json.dumps([{"query": query, "mechanism": "noisy_variance", "parameters": {"epsilon": 1.0}}])
    )
    out = tmp_path / "out"
    args = ["release", str(plan), "--data", str(default_dataset_path()), "--out", str(out)]
    assert main([*args, "--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "1"]) == 0
    (provenance,) = out.glob("*.provenance.json")
    sidecar = json.loads(provenance.read_text())
    low, high = sidecar["dp_outputs"]["confidence_intervals"][0]
    assert 0 <= low <= high <= 36.5 and high - low < 0.1
    assert sidecar["epsilon"] <= 1.0 and sidecar["query"] == query
