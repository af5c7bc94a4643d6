"""Exact paths beyond Laplace/Gaussian: top-k peeling against the mechanism's own pmf, the
discrete distance test of PTR / Dist2Instability against its exact tail, sparse vector against
the mechanism's exact outcome pmf, PMW's transcript, and the refusals."""

from __future__ import annotations

import math
import types
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import NumericInput, SelectionInput, WorkloadInput
from dpexplorer.release.exact import BOTTOM, DistanceTest
from dpexplorer.release.plans import PATHS, exact_release
from dpexplorer.release.samplers import SeededBitSource
from dpexplorer.release.svt_paths import TOP

ALPHA = 1e-3


def _selection() -> SelectionInput:
    scores = np.array([30.0, 28.0, 20.0, 29.0])
    return SelectionInput(("a", "b", "c", "d"), scores, scores - 1, 1.0, True, 100)


def _median_query(n_ties: int) -> NumericInput:
    """Median 0 of a column in [-5, 5] with ``n_ties`` zeros in the middle."""
    x = np.r_[-np.ones(40), np.zeros(n_ties), np.ones(40)]
    return NumericInput(
        np.array([0.0]),
        np.array([0.0]),
        10.0,
        10.0,
        x.size,
        "median",
        relation="replace",
        bounds=(-5.0, 5.0),
        sorted_values_d=x,
        sorted_values_d_prime=x,
    )


def _workload(k: int = 4, n: int = 100, relation: str = "add_remove") -> WorkloadInput:
    hist = np.array([12, 9, 11, 5, n - 37])
    workload = np.hstack([np.eye(k, dtype=int), np.zeros((k, 1), dtype=int)])
    labels = tuple(f"q{i}" for i in range(k))
    return WorkloadInput(tuple("abcde"), labels, hist, hist, workload, n, relation=relation)


def _chi_square_p(observed: np.ndarray, pmf: np.ndarray) -> float:
    """Chi-square p-value; outcomes expected fewer than 5 times are lumped into one cell (merged
    into the likeliest outcome if the lump itself expects fewer than 5)."""
    n = observed.sum()
    keep = pmf * n >= 5
    obs, exp = list(observed[keep]), list(pmf[keep] * n)
    rest_obs, rest_exp = observed[~keep].sum(), pmf[~keep].sum() * n
    if rest_exp >= 5:
        obs.append(rest_obs)
        exp.append(rest_exp)
    else:
        top = int(np.argmax(exp))
        obs[top] += rest_obs
        exp[top] += rest_exp
    return float(stats.chisquare(obs, np.asarray(exp) * n / sum(exp)).pvalue)


def _pass_probability(test: DistanceTest, distance: int) -> float:
    """P(distance + Z >= m), Z discrete Laplace of scale t/s: closed-form tail."""
    r = math.exp(-test.s / test.t)
    j = test.m - distance  # need Z >= j
    if j <= 0:
        return 1 - r ** (1 - j) / (1 + r)
    return r**j / (1 + r)


def test_topk_peeling_matches_the_mechanism_pmf() -> None:
    mech = registry.get("topk")
    for method in ("peeling", "gumbel"):
        params = mech.validate({"epsilon": 1.0, "k": 2, "method": method})
        release = exact_release(mech, params, _selection())
        bits = SeededBitSource(3)
        out = mech.output_distribution(params, _selection())
        index = {label: i for i, label in enumerate(out.labels)}
        draws = [index[" > ".join(release.draw(bits))] for _ in range(2000)]
        observed = np.bincount(draws, minlength=len(out.labels))
        assert _chi_square_p(observed, out.pmf_d) > ALPHA


@pytest.mark.parametrize(("epsilon", "delta"), [(0.1, 1e-6), (1.0, 1e-5), (3.0, 1e-9), (0.5, 0.05)])
def test_distance_test_false_pass_is_within_the_continuous_one(epsilon, delta) -> None:
    test = DistanceTest.for_parameters(epsilon, delta)
    assert Fraction(test.s, test.t) <= Fraction(epsilon)  # the test is at most epsilon-DP
    continuous = 0.5 * math.exp(-epsilon * math.log(1 / delta) / epsilon)  # P(Lap > ln(1/d)/e) = d/2
    assert _pass_probability(test, 0) <= continuous
    looser = DistanceTest(test.t, test.s, test.m - 2)
    assert _pass_probability(looser, 0) > continuous  # m is not needlessly large


def test_distance_test_frequency_matches_its_tail() -> None:
    test = DistanceTest.for_parameters(0.5, 1e-3)
    bits = SeededBitSource(8)
    for distance in (test.m - 3, test.m, test.m + 2):
        passes = sum(test.passes(distance, bits) for _ in range(2000))
        assert stats.binomtest(passes, 2000, _pass_probability(test, distance)).pvalue > ALPHA


def test_ptr_and_dist2instability_release_or_bottom() -> None:
    ptr = registry.get("ptr")
    params = ptr.validate({"epsilon": 1.0, "delta": 1e-4, "bound": 0.5})
    stable = exact_release(ptr, params, _median_query(n_ties=30))
    assert stable.guarantee.epsilon == 2.0 and stable.guarantee.delta == 1e-4
    values = [stable.draw(SeededBitSource(i))[0] for i in range(20)]
    assert all(isinstance(v, float) for v in values)  # far from unstable: always answers
    spacing = Fraction(stable.provenance["grid_spacing"])
    assert all((Fraction(v) / spacing).denominator == 1 for v in values)
    d2i = registry.get("dist2instability")
    params = d2i.validate({"epsilon": 1.0, "delta": 1e-4})
    assert exact_release(d2i, params, _median_query(30)).draw(SeededBitSource(0)) == [0.0]
    assert exact_release(d2i, params, _median_query(1)).draw(SeededBitSource(0)) == [BOTTOM]
    mode = registry.get("dist2instability_mode")
    counts = SelectionInput(("x", "y"), np.array([90.0, 10.0]), np.array([89.0, 11.0]), 1.0, False, 100)
    release = exact_release(mode, mode.validate({"epsilon": 1.0, "delta": 1e-4}), counts)
    assert release.draw(SeededBitSource(0)) == ["x"]


def test_sparse_vector_matches_the_mechanism_pmf() -> None:
    mech = registry.get("sparse_vector")
    params = mech.validate({"epsilon": 2.0, "threshold": 0.1, "c": 1})
    query = _workload(relation="replace")  # n public: the release uses the n the exact pmf uses
    release = exact_release(mech, params, query)
    sets = mech.outcome_sets(params, query)
    pmf = mech.output_distribution(params, query).pmf_d
    bits = SeededBitSource(5)
    index = {s: i for i, s in enumerate(sets)}
    draws = []
    for _ in range(2000):
        responses = release.draw(bits)
        draws.append(index[tuple(i for i, r in enumerate(responses) if r == TOP)])
    observed = np.bincount(draws, minlength=len(sets))
    assert _chi_square_p(observed, pmf) > ALPHA


def test_pmw_transcript() -> None:
    mech = registry.get("pmw")
    rng = np.random.default_rng(0)
    hist = rng.multinomial(2000, np.full(16, 1 / 16))
    workload = (rng.random((40, 16)) < 0.3).astype(np.int8)
    query = WorkloadInput(
        tuple(map(str, range(16))), tuple(f"q{i}" for i in range(40)), hist, hist, workload, 2000
    )
    params = mech.validate({"epsilon": 1.0, "threshold": 0.05, "updates": 3})
    release = exact_release(mech, params, query)
    assert release.guarantee.epsilon == 1.0
    answers = release.draw(SeededBitSource(2))
    assert len(answers) == 40
    answered = [a for a in answers if a != BOTTOM]
    assert all(0.0 - 0.5 <= a <= 1.5 for a in answered)
    if BOTTOM in answers:  # only after the L updates are spent
        assert all(a == BOTTOM for a in answers[answers.index(BOTTOM) :])


def test_a_mechanism_without_a_path_is_refused() -> None:
    fake = types.SimpleNamespace(name="added_later", label="Added later", accepts=lambda q: None)
    with pytest.raises(NotApplicableError, match="cannot be released exactly"):
        exact_release(fake, {}, _selection())


def test_every_registered_mechanism_has_an_exact_path() -> None:
    missing = {m.name for m in registry.all_mechanisms()} - set(PATHS)
    assert not missing, f"no exact release path for {sorted(missing)}"


def test_no_refusal_decided_from_the_data_before_the_charge() -> None:
    """Issue 15 item 5: Dist2Instability on an empty column answers ⊥ (after the charge) instead
    of refusing, and a count's exact path takes any answer (counts are integers by construction;
    a refusal on the value would tell something about the data before anything is paid)."""
    d2i = registry.get("dist2instability")
    empty = NumericInput(
        np.array([np.nan]), np.array([0.0]), 10.0, 10.0, 0, "median", bounds=(-5.0, 5.0),
        sorted_values_d=np.array([]), sorted_values_d_prime=np.array([0.0]),
    )  # fmt: skip
    release = exact_release(d2i, d2i.validate({"epsilon": 1.0, "delta": 1e-4}), empty)
    assert release.draw(SeededBitSource(0)) == [BOTTOM]
    laplace = registry.get("laplace")
    count = NumericInput(np.array([10.5]), np.array([11.5]), 1.0, 1.0, 10, "count")
    drawn = exact_release(laplace, laplace.validate({"epsilon": 1.0}), count).draw(SeededBitSource(0))
    assert float(drawn[0]).is_integer()
