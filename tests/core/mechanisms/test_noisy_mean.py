"""The noisy-sum-over-noisy-count mean: its law against simulation, its privacy claim, the
neighbour it uses, and the Adult acceptance figure (95 % half-width at most 0.05 years)."""

from __future__ import annotations

import numpy as np
import pytest

from dpexplorer.core.accounting.guarantees import PureDP
from dpexplorer.core.mechanisms.base import CentredMoments, NumericInput
from dpexplorer.core.mechanisms.noisy_mean import RatioLaw, scales, worst_neighbour
from dpexplorer.core.mechanisms.registry import get

MECH = get("noisy_mean")


def _input(values: np.ndarray, lower: float, upper: float, relation: str = "add_remove") -> NumericInput:
    clipped = np.clip(values, lower, upper)
    mid, half = (lower + upper) / 2, (upper - lower) / 2
    y = clipped - mid
    moments = CentredMoments(
        len(values), float(y.sum()), float((y * y - half * half / 2).sum()), raw_mean=float(values.mean())
    )
    mean = np.array([clipped.mean()])
    return NumericInput(
        mean,
        mean,
        half,
        half,
        len(values),
        "mean",
        relation=relation,
        bounds=(lower, upper),
        moments=(moments,),
        moment_sensitivities=(2 * half, 0.0) if relation == "replace" else (half, 1.0),
    )


def test_law_matches_simulation_with_clamp_atoms() -> None:
    """A small n (ratio far from Gaussian, mass at both bounds): the integrated CDF against 200,000
    draws. KS distance tolerance 0.006 = 1.63 / sqrt(n_draws) * 2 (p ~ 1e-4 per side) plus
    the integration's own error (below 1e-3 with 801 cells)."""
    law = RatioLaw(0.0, 10.0, s=-3.0, n=6, b1=8.0, b2=2.0)
    draws = law.sample(np.random.default_rng(7), 200_000)
    low, high = law.atoms()
    assert low > 0.02 and high > 0.02
    assert abs(np.mean(draws == 0.0) - low) < 0.004
    assert abs(np.mean(draws == 10.0) - high) < 0.004
    grid = np.linspace(0.01, 9.99, 200)
    empirical = np.searchsorted(np.sort(draws), grid, side="right") / draws.size
    assert np.max(np.abs(empirical - law.cdf(grid))) < 0.006


def test_ci_halfwidth_holds_its_level_in_simulation() -> None:
    law = RatioLaw(17.0, 90.0, s=-1500.0, n=100, b1=73.0, b2=2.0)
    truth = law.centre + law.s / law.n
    half = law.ci_halfwidth(truth, 0.95)
    draws = law.sample(np.random.default_rng(3), 100_000)
    inside = np.mean(np.abs(draws - truth) <= half)
    assert abs(inside - 0.95) < 0.004  # 5.8 standard errors of a proportion at 100,000 draws


def test_claim_is_pure_epsilon_and_the_pair_delta_vanishes_there() -> None:
    query = _input(np.arange(30.0), 0.0, 40.0)
    params = MECH.validate({"epsilon": 0.7, "sum_share": 0.3})
    assert MECH.guarantee(params, query) == PureDP(0.7)
    deltas = MECH.privacy_profile(params, query, np.array([0.3, 0.6, 0.7, 1.0]))
    assert deltas[0] > deltas[1] > 0 and deltas[2] == deltas[3] == 0


def test_neighbour_moves_count_by_one_and_sum_by_half_width() -> None:
    prime = worst_neighbour(CentredMoments(10, 12.0), 0.0, 8.0, "add_remove")
    assert (prime.count, prime.centred_sum) == (11, 8.0)
    prime = worst_neighbour(CentredMoments(10, -1.0), 0.0, 8.0, "replace")
    assert (prime.count, prime.centred_sum) == (10, 7.0)


def test_data_layer_neighbour_is_the_one_the_views_name(tmp_path) -> None:
    """The mean's D' (here: a row at 90 removed) gives the moments the mechanism draws."""
    import polars as pl

    from dpexplorer.data.answers import query_input
    from dpexplorer.data.load import load_dataset
    from dpexplorer.data.queries import Mean

    frame = pl.DataFrame({"age": [20.0, 30.0, 90.0, 95.0]})
    frame.write_csv(tmp_path / "ages.csv")
    query = query_input(load_dataset(tmp_path / "ages.csv"), Mean("age", 17, 90), "add_remove")
    assert query.moments is not None and query.moments_prime is not None
    count, total = query.moments_prime[0].count, query.moments_prime[0].centred_sum
    assert count == len(frame) + (1 if "plus" in query.differing_row else -1)
    assert 53.5 + total / count == pytest.approx(query.value_d_prime[0])


def test_centred_sum_sensitivity_against_brute_force() -> None:
    """Every neighbour of a small dataset on a grid of values: the centred sum moves by at most
    h = (upper - lower) / 2 under add/remove and 2h under replace; the count by at most 1."""
    lower, upper = -2.0, 6.0
    data = np.array([-5.0, 0.0, 1.5, 6.0, 9.0])
    values = np.linspace(-10, 10, 41)
    mid, half = (lower + upper) / 2, (upper - lower) / 2

    def centred(x: np.ndarray) -> float:
        return float(np.sum(np.clip(x, lower, upper) - mid))

    base = centred(data)
    added = [abs(centred(np.append(data, v)) - base) for v in values]
    removed = [abs(centred(np.delete(data, i)) - base) for i in range(len(data))]
    replaced = [abs(centred(np.where(np.arange(5) == i, v, data)) - base) for i in range(5) for v in values]
    assert max(added + removed) == pytest.approx(half)
    assert max(replaced) == pytest.approx(2 * half)
    assert scales(1.0, 0.5, (half, 1.0)) == (half / 0.5, 1 / 0.5)
    assert scales(1.0, 0.5, (2 * half, 0.0)) == (2 * half, 0.0)


def test_accuracy_names_both_biases_and_the_best_share() -> None:
    query = _input(np.r_[np.full(40, 20.0), np.full(10, 95.0)], 17.0, 90.0)
    report = MECH.accuracy(MECH.validate({"epsilon": 1.0}), query)
    text = " ".join(report.notes)
    assert "Bias from clipping" in text and "Bias from the ratio" in text and "would minimise" in text
    assert np.all(np.diff(report.error_tail.y) <= 1e-12)


def test_adult_mean_age_at_epsilon_one_is_within_five_hundredths_of_a_year() -> None:
    from dpexplorer.data.answers import query_input
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.data.load import load_dataset
    from dpexplorer.data.queries import Mean

    query = query_input(load_dataset(default_dataset_path()), Mean("age", 17, 90), "add_remove")
    report = MECH.accuracy(MECH.validate({"epsilon": 1.0}), query)
    assert report.ci_halfwidth <= 0.05
    laplace = get("laplace").accuracy({"epsilon": 1.0}, query)
    assert laplace.ci_halfwidth > 100  # the old path: sensitivity (upper - lower) / 2 whatever n


def test_refuses_a_query_without_moments() -> None:
    query = NumericInput(np.array([1.0]), np.array([2.0]), 1.0, 1.0, 10, "median", bounds=(0.0, 1.0))
    assert MECH.accepts(query) is not None
