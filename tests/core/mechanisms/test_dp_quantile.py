"""DP quantile over a declared grid (exponential mechanism): the pmf against its closed form,
the privacy loss never above epsilon on worst-case neighbours, the score and its sensitivity by
hand, simulation against the exact pmf."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.core.mechanisms.dp_quantile import candidates, score_sensitivity, scores

MECH = registry.get("dp_quantile")


def _input(values: list[float], extra: float, q: float = 0.5, relation: str = "add_remove") -> NumericInput:
    d = np.sort(np.asarray(values, dtype=float))
    dp = np.sort(np.r_[d, extra])
    truth = np.quantile(d, q)
    return NumericInput(
        np.array([truth]), np.array([np.quantile(dp, q)]), 1.0, 1.0, d.size, "quantile",
        relation=relation, bounds=(0.0, 10.0), sorted_values_d=d, sorted_values_d_prime=dp, quantile=q,
    )  # fmt: skip


def test_scores_by_hand() -> None:
    data = np.array([1.0, 2.0, 2.0, 7.0])
    # c = 2: one value below, one above (the two 2s are ties): -|0.5*1 - 0.5*1| = 0
    # c = 0: none below, four above: -|0 - 0.5*4| = -2;  c = 10: -|0.5*4 - 0| = -2
    assert scores(data, np.array([0.0, 2.0, 10.0]), 0.5).tolist() == [-2.0, 0.0, -2.0]
    # q = 0.25 at c = 7: three below, none above: -|0.75*3| = -2.25
    assert scores(data, np.array([7.0]), 0.25).tolist() == [-2.25]
    assert score_sensitivity(0.25, "add_remove") == 0.75
    assert score_sensitivity(0.25, "replace") == 1.0
    assert candidates((0.0, 10.0), 4).tolist() == [0.0, 2.5, 5.0, 7.5, 10.0]


def test_pmf_is_the_exponential_mechanism_closed_form() -> None:
    query = _input([1.0, 2.0, 2.0, 7.0, 9.0], 5.0, q=0.3)
    params = MECH.validate({"epsilon": 0.8, "bins": 10})
    out = MECH.output_distribution(params, query)
    points = np.linspace(0, 10, 11)
    below = np.array([np.sum(query.sorted_values_d < c) for c in points])
    above = np.array([np.sum(query.sorted_values_d > c) for c in points])
    weights = np.exp(0.8 * -np.abs(0.7 * below - 0.3 * above) / (2 * 0.7))
    np.testing.assert_allclose(out.grid, points)
    np.testing.assert_allclose(out.density_d, weights / weights.sum(), rtol=1e-12)


@pytest.mark.parametrize("q", [0.05, 0.5, 0.9])
@pytest.mark.parametrize("extra", [0.0, 5.0, 10.0])
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_privacy_loss_is_at_most_epsilon(q: float, extra: float, relation: str) -> None:
    rng = np.random.default_rng(3)
    values = np.round(rng.uniform(0, 10, 40), 1).tolist() + [5.0] * 6
    query = _input(values, extra, q=q, relation=relation)
    params = MECH.validate({"epsilon": 1.0, "bins": 20})
    loss = MECH.output_distribution(params, query).privacy_loss
    assert np.max(np.abs(loss)) <= 1.0 + 1e-9
    assert MECH.delta_at(params, query, 1.0) == pytest.approx(0.0, abs=1e-12)
    assert MECH.epsilon_delta(params, query) == (1.0, 0.0)


def test_the_loss_check_sees_a_wrong_sensitivity() -> None:
    """With the score's sensitivity halved, the neighbour with a row added at the bottom exceeds
    epsilon (the loss nearly doubles, to 1.98): the test above can fail. At epsilon = 1 the
    correct factor is eps / (2 * 0.5) = 1; halving Delta doubles it."""
    rng = np.random.default_rng(3)
    query = _input(np.round(rng.uniform(0, 10, 40), 1).tolist() + [5.0] * 6, 0.0, q=0.5)
    points = candidates((0.0, 10.0), 20)
    log = [2.0 * scores(v, points, 0.5) for v in (query.sorted_values_d, query.sorted_values_d_prime)]
    log = [x - np.logaddexp.reduce(x) for x in log]
    assert np.max(np.abs(log[0] - log[1])) > 1.5


def test_simulation_follows_the_exact_pmf() -> None:
    query = _input(list(np.linspace(1, 9, 50)), 5.0, q=0.5)
    params = MECH.validate({"epsilon": 0.5, "bins": 10})
    out = MECH.output_distribution(params, query)
    draws = MECH.simulate(params, query, np.random.default_rng(11), 20_000)
    counts = np.array([np.sum(draws == c) for c in out.grid])
    keep = out.density_d * draws.size >= 5
    observed = np.r_[counts[keep], counts[~keep].sum()]
    expected = np.r_[out.density_d[keep], out.density_d[~keep].sum()] * draws.size
    assert stats.chisquare(observed[expected > 0], expected[expected > 0]).pvalue > 1e-3


def test_accepts_only_quantiles_with_bounds() -> None:
    query = _input([1.0, 2.0], 3.0)
    assert MECH.accepts(query) is None
    count = NumericInput(np.array([3.0]), np.array([4.0]), 1.0, 1.0, 3, "count")
    assert "median or quantile" in MECH.accepts(count)
    with pytest.raises(InvalidParameterError):
        MECH.output_distribution(MECH.validate({}), count)


def test_accuracy_reports_the_exact_error_law() -> None:
    query = _input(list(np.linspace(1, 9, 200)), 5.0, q=0.5)
    report = MECH.accuracy(MECH.validate({"epsilon": 1.0, "bins": 100}), query)
    assert 0.0 <= report.ci_halfwidth <= 1.0  # 200 evenly spread rows: the median within a unit
    assert report.error_vs_epsilon[0].y[0] >= report.error_vs_epsilon[0].y[-1]
