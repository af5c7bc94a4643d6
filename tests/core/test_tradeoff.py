"""The attacker's trade-off curve of a composed list (dpexplorer/core/tradeoff.py), against
computations that share none of its code: the closed forms through scipy.stats, the Laplace
curve by sweeping the Neyman-Pearson threshold over scipy's Laplace laws, compositions by
convolving the privacy-loss law on a fine grid of its own, and the tight mu-GDP of one pure or
Laplace release solved by hand (dp_accounting is not installed here)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import signal, stats

from dpexplorer.core.accounting.guarantees import (
    ZCDP,
    ApproxDP,
    GaussianNoise,
    LaplaceNoise,
    PureDP,
    Subsampled,
)
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.tradeoff import (
    EXACT,
    FPR_GRID,
    GDP_BOUND,
    GDP_EXACT,
    PLD_BOUND,
    PROFILE_BOUND,
    gaussian_tradeoff,
    tradeoff_of,
)

FINE = np.linspace(0.0, 1.0, 20001)


# ------------------------------------------------------------------ independent references
def gaussian_reference(mu: float, alphas: np.ndarray) -> np.ndarray:
    """Phi(Phi^-1(1 - a) - mu) through scipy.stats."""
    return stats.norm.cdf(stats.norm.ppf(1 - alphas) - mu)


def pure_reference(epsilon: float, alphas: np.ndarray) -> np.ndarray:
    """Kairouz, Oh & Viswanath's region for epsilon-DP: max(0, 1 - e^eps a, e^-eps (1 - a))."""
    return np.maximum.reduce(
        [np.zeros_like(alphas), 1 - math.exp(epsilon) * alphas, math.exp(-epsilon) * (1 - alphas)]
    )


def laplace_reference(epsilon: float, alphas: np.ndarray) -> np.ndarray:
    """The most powerful test of Lap(0, 1) against Lap(epsilon, 1) rejects for large x: sweep
    its threshold t, fpr = P_0(X > t), fnr = P_eps(X <= t), read at ``alphas``."""
    t = np.linspace(-40.0, 40.0, 400001)
    fpr = stats.laplace.sf(t)
    fnr = stats.laplace.cdf(t, loc=epsilon)
    return np.interp(alphas, fpr[::-1], fnr[::-1])


def _laplace_loss(epsilon: float, step: float) -> tuple[np.ndarray, np.ndarray]:
    """The P-law of the privacy loss of one Laplace release on the grid ``step`` (from -eps):
    L = |x - eps| - |x| for x ~ Lap(0, 1): an atom eps (x < 0), an atom -eps (x > eps) and
    eps - 2x between, integrated exactly over each cell of x."""
    n = round(2 * epsilon / step)
    masses = np.zeros(n + 1)
    masses[n] += 0.5
    masses[0] += math.exp(-epsilon) / 2
    # L in cell j (centre -eps + j step) <=> x in [(eps - l - step/2)/2, (eps - l + step/2)/2]
    centres = -epsilon + np.arange(n + 1) * step
    low = np.clip((epsilon - centres - step / 2) / 2, 0, epsilon)
    high = np.clip((epsilon - centres + step / 2) / 2, 0, epsilon)
    masses += (np.exp(-low) - np.exp(-high)) / 2
    return centres, masses


def composed_reference(epsilon: float, k: int, mu: float = 0.0, step: float = 2e-4) -> np.ndarray:
    """The trade-off curve of k Laplace releases (and a Gaussian one of parameter mu) from the
    privacy-loss law convolved on a fine grid: the test rejecting for small loss is most
    powerful; fpr and fnr are its P- and Q-masses (dQ = e^-L dP), read at FINE."""
    losses, masses = _laplace_loss(epsilon, step)
    total, pmf = losses, masses
    for _ in range(k - 1):
        pmf = np.maximum(signal.fftconvolve(pmf, masses), 0.0)
        total = total[0] + losses[0] + np.arange(pmf.size) * step
    if mu > 0:
        grid = np.arange(-12 * mu - mu**2, 12 * mu + mu**2, step)
        gaussian = stats.norm.pdf(grid, mu**2 / 2, mu) * step
        pmf = np.maximum(signal.fftconvolve(pmf, gaussian / gaussian.sum()), 0.0)
        total = total[0] + grid[0] + np.arange(pmf.size) * step
    keep = pmf > 1e-300
    total, pmf = total[keep], pmf[keep] / pmf[keep].sum()
    fpr = np.concatenate([[0.0], np.cumsum(pmf)])
    q = pmf * np.exp(-total)
    fnr = np.concatenate([[1.0], 1 - np.cumsum(q) / q.sum()])
    return np.interp(FINE, fpr, fnr)


# ------------------------------------------------------------------ exact cases
def test_gaussian_composition_is_exact_with_mu_one() -> None:
    """The issue's acceptance: gaussian:sigma=10:k=100 has mu = sqrt(100) / 10 = 1, and its
    fnr at fpr 0.01 is Phi(Phi^-1(0.99) - 1)."""
    result = tradeoff_of([(GaussianNoise(10.0), 100)])
    assert result.kind == EXACT and result.gdp_kind == GDP_EXACT
    assert result.gdp_mu == pytest.approx(1.0, abs=0.01)
    assert result.fnr_at(0.01) == pytest.approx(stats.norm.cdf(stats.norm.ppf(0.99) - 1), abs=0.005)
    np.testing.assert_allclose(result.fnr, gaussian_reference(1.0, FPR_GRID), atol=1e-9)


def test_gaussian_sensitivities_add_in_mu_squared() -> None:
    result = tradeoff_of([(GaussianNoise(2.0, sensitivity=3.0), 4), GaussianNoise(1.0)])
    mu = math.sqrt(4 * 1.5**2 + 1)
    assert result.gdp_mu == pytest.approx(mu, rel=1e-12)
    np.testing.assert_allclose(result.fnr, gaussian_reference(mu, FPR_GRID), atol=1e-9)


def test_pure_epsilon_is_its_closed_form() -> None:
    result = tradeoff_of([PureDP(1.0)])
    assert result.kind == EXACT
    np.testing.assert_allclose(result.fnr, pure_reference(1.0, FPR_GRID), atol=0.005)
    assert result.fnr_at(0.25) == pytest.approx(1 - math.e / 4, abs=1e-12)


def test_laplace_is_its_closed_form() -> None:
    result = tradeoff_of([LaplaceNoise(1.0)])
    assert result.kind == EXACT
    np.testing.assert_allclose(result.fnr, laplace_reference(1.0, FPR_GRID), atol=0.005)
    # the middle piece, e^-eps / (4 a), where the pure-DP curve is the straight line
    assert result.fnr_at(0.25) == pytest.approx(math.exp(-1), abs=1e-12)
    scaled = tradeoff_of([LaplaceNoise(4.0, sensitivity=2.0)])  # epsilon = 1/2
    np.testing.assert_allclose(scaled.fnr, laplace_reference(0.5, FPR_GRID), atol=0.005)


def test_one_approximate_guarantee_is_its_region() -> None:
    eps, delta, a = 0.5, 1e-3, FPR_GRID
    expected = np.maximum.reduce(
        [np.zeros_like(a), 1 - delta - math.exp(eps) * a, math.exp(-eps) * (1 - delta - a)]
    )
    result = tradeoff_of([ApproxDP(eps, delta)])
    assert result.kind == EXACT
    np.testing.assert_allclose(result.fnr[1:], expected[1:], atol=1e-12)
    assert result.gdp_mu is None and "delta > 0" in result.gdp_note


def test_nothing_released_is_random_guessing() -> None:
    result = tradeoff_of([])
    assert result.kind == EXACT and result.gdp_mu == 0.0
    np.testing.assert_array_equal(result.fnr, 1 - FPR_GRID)


# ------------------------------------------------------------------ bounds from the PLD
@pytest.mark.parametrize(("epsilon", "k", "mu"), [(1.0, 3, 0.0), (0.5, 2, 1.0)])
def test_composition_is_a_sound_and_tight_lower_bound(epsilon: float, k: int, mu: float) -> None:
    """Never above the attacker's true fnr (up to the reference's own grid, 2e-4 of loss:
    well under 1e-3 of fnr), and within 0.005 of it."""
    items = [(LaplaceNoise(1 / epsilon), k)] + ([GaussianNoise(1 / mu)] if mu else [])
    result = tradeoff_of(items, FINE)
    reference = composed_reference(epsilon, k, mu)
    assert result.kind == PLD_BOUND
    assert np.max(result.fnr - reference) <= 1e-3
    assert np.max(reference - result.fnr) <= 0.005


def test_the_pld_bound_agrees_with_each_closed_form_it_can_be_compared_with() -> None:
    """A second Laplace release of negligible epsilon sends one Laplace through the PLD path:
    its curve stays within 0.005 below the closed form and never above it (1e-9)."""
    result = tradeoff_of([LaplaceNoise(1.0), LaplaceNoise(1e5)])
    assert result.kind == PLD_BOUND
    reference = laplace_reference(1.0 + 1e-5, FPR_GRID)
    assert np.max(result.fnr - laplace_reference(1.0, FPR_GRID)) <= 1e-9
    assert np.max(reference - result.fnr) <= 0.005


def test_zcdp_falls_back_to_the_accountants_profiles_and_stays_below_gaussian() -> None:
    """rho-zCDP holds for Gaussian noise of mu = sqrt(2 rho), so the bound can never be above
    that Gaussian's curve (it is the worst case the bound must allow for)."""
    result = tradeoff_of([ZCDP(0.5)])
    assert result.kind == PROFILE_BOUND and result.gdp_mu is None
    assert np.all(result.fnr <= gaussian_reference(1.0, FPR_GRID) + 1e-9)


def test_subsampled_mechanisms_have_a_curve_but_no_mu() -> None:
    result = tradeoff_of([(Subsampled(GaussianNoise(1.0), 0.01), 100)])
    assert result.kind == PLD_BOUND and result.gdp_mu is None
    assert np.all(np.diff(result.fnr) <= 1e-12) and np.all(result.fnr <= 1 - FPR_GRID + 1e-12)


# ------------------------------------------------------------------ mu-GDP
@pytest.mark.parametrize(
    ("guarantee", "epsilon", "tight", "reference"),
    [
        # the curves cross the Gaussian one at their symmetric point a = f(a)
        (PureDP(1.0), 1.0, 2 * stats.norm.ppf(math.e / (1 + math.e)), pure_reference),
        (LaplaceNoise(1.0), 1.0, 2 * stats.norm.ppf(1 - math.exp(-0.5) / 2), laplace_reference),
    ],
)
def test_gdp_of_one_release_is_sound_and_tight(guarantee, epsilon, tight, reference) -> None:  # type: ignore[no-untyped-def]
    result = tradeoff_of([guarantee])
    assert result.gdp_kind == GDP_BOUND
    assert tight <= result.gdp_mu <= tight * (1 + 1e-3)
    below = gaussian_reference(result.gdp_mu, FINE[1:-1]) <= reference(epsilon, FINE[1:-1]) + 1e-4
    assert np.all(below)


def test_gdp_of_a_composition_is_below_its_curve_and_adds_gaussians_exactly() -> None:
    laplaces = tradeoff_of([(LaplaceNoise(1.0), 5)], FINE)
    mixed = tradeoff_of([(LaplaceNoise(1.0), 5), (GaussianNoise(3.0), 10)])
    assert laplaces.gdp_mu is not None and mixed.gdp_mu is not None
    assert np.all(gaussian_tradeoff(laplaces.gdp_mu, FINE) <= composed_reference(1.0, 5) + 1e-3)
    assert mixed.gdp_mu == pytest.approx(math.hypot(laplaces.gdp_mu, math.sqrt(10) / 3), rel=1e-12)
    # the central limit: 5 Laplace releases of epsilon 1 are close to Gaussian, mu well below 5 x 1.03
    assert laplaces.gdp_mu < math.sqrt(5) * 1.1


# ------------------------------------------------------------------ reading and JSON
def test_the_grid_reads_at_every_thousandth_near_zero() -> None:
    steps = FPR_GRID[(FPR_GRID >= 0.001) & (FPR_GRID <= 0.1)]
    np.testing.assert_allclose(steps, np.arange(1, 101) * 1e-3, atol=1e-15)
    assert FPR_GRID[0] == 0 and FPR_GRID[-1] == 1 and np.all(np.diff(FPR_GRID) > 0)


def test_reading_between_points_takes_the_next_one_and_bad_rates_are_refused() -> None:
    result = tradeoff_of([LaplaceNoise(1.0)])
    assert result.fnr_at(0.0105) == result.fnr_at(0.011)  # the next listed rate: still a lower bound
    with pytest.raises(InvalidParameterError):
        result.fnr_at(1.5)
    with pytest.raises(InvalidParameterError):
        tradeoff_of([LaplaceNoise(1.0)], np.array([-0.1]))


def test_json_form() -> None:
    out = tradeoff_of([PureDP(0.5)]).as_dict()
    assert out["tradeoff_kind"] == "exact" and out["gdp_kind"] == "upper bound"
    assert out["tradeoff"][0] == {"fpr": 0.0, "fnr": 1.0}
    assert len(out["tradeoff"]) == FPR_GRID.size
