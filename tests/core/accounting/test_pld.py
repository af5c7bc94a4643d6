"""The tight PLD accountant against independent computations: closed forms evaluated with
scipy.stats, numerical integration of the output densities, brute-force convolution."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from dpexplorer.core.accounting.compose import delta_at, epsilon_at
from dpexplorer.core.accounting.guarantees import ApproxDP, GaussianNoise, LaplaceNoise, PureDP
from dpexplorer.core.accounting.pld import compose_pld, epsilon_of_atoms
from dpexplorer.core.errors import NotApplicableError

DELTA = 1e-6


def exact_gaussian_epsilon(sigma: float, delta: float) -> float:
    """One Gaussian of noise sigma, sensitivity 1: the exact epsilon at delta (Balle & Wang 2018),
    written here with scipy.stats independently of the package."""

    def profile(eps: float) -> float:
        upper = stats.norm.cdf(-eps * sigma + 1 / (2 * sigma))
        return upper - math.exp(eps + stats.norm.logcdf(-eps * sigma - 1 / (2 * sigma)))

    if profile(0.0) <= delta:
        return 0.0
    high = 1 / (2 * sigma**2) + 20 / sigma
    return optimize.brentq(lambda e: profile(e) - delta, 0.0, high, xtol=1e-15, rtol=1e-15)


def integrated_delta(p_pdf, q_pdf, eps: float, points: list[float]) -> float:
    """delta(eps) = integral of (p - e^eps q)_+ by adaptive quadrature."""
    value, _ = integrate.quad(
        lambda y: max(p_pdf(y) - math.exp(eps) * q_pdf(y), 0.0),
        -60,
        60,
        points=points,
        limit=400,
        epsabs=1e-14,
        epsrel=1e-12,
    )
    return value


def test_closed_form_gaussian_profile_matches_integration():
    sigma, eps = 1.3, 0.7
    by_quad = integrated_delta(
        stats.norm(0, sigma).pdf, stats.norm(1, sigma).pdf, eps, [0.5 + eps * sigma**2]
    )
    assert delta_at([GaussianNoise(sigma)], "pld", eps) == pytest.approx(by_quad, rel=1e-9)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 5.0])
@pytest.mark.parametrize("k", [1, 10, 100, 1000])
def test_k_fold_gaussian_matches_one_gaussian_of_sigma_over_root_k(sigma, k):
    exact = exact_gaussian_epsilon(sigma / math.sqrt(k), DELTA)
    ours = epsilon_at([GaussianNoise(sigma)] * k, "pld", DELTA)
    assert ours >= exact * (1 - 1e-9)
    assert ours <= exact * (1 + 1e-4)


def laplace_profile_by_integration(eps0: float, eps: float) -> float:
    b = 1.0 / eps0
    p, q = stats.laplace(0, b).pdf, stats.laplace(1, b).pdf
    crossing = (1 - eps * b) / 2  # where p / q = e^eps inside (0, 1)
    points = [0.0, 1.0] + ([crossing] if 0 < crossing < 1 else [])
    return integrated_delta(p, q, eps, points)


@pytest.mark.parametrize("eps", [0.0, 0.05, 0.3, 0.9])
def test_one_laplace_matches_integration(eps):
    ours = delta_at([LaplaceNoise(1.0)], "pld", eps)
    truth = laplace_profile_by_integration(1.0, eps)
    assert ours >= truth - 1e-12
    assert ours == pytest.approx(truth, rel=1e-8, abs=1e-12)


def laplace_pdf(y: float, loc: float, b: float) -> float:
    return math.exp(-abs(y - loc) / b) / (2 * b)


def laplace_like_delta(b: float, eps: float) -> float:
    """delta(eps) of one Laplace (scale b, sensitivity 1) by quadrature of (p - e^eps q)_+."""
    value, _ = integrate.quad(
        lambda y: max(laplace_pdf(y, 0, b) - math.exp(eps) * laplace_pdf(y, 1, b), 0.0),
        -40,
        40,
        points=[0.0, 1.0],
        limit=200,
        epsabs=1e-13,
    )
    return value


def test_two_laplace_matches_nested_integration():
    """delta_2(eps) = E_{y ~ Lap(0,b)}[delta_1(eps - L(y))], L(y) = log p(y)/q(y); L is constant
    (+-1/b) outside (0, 1), so the outer integral splits into two point terms and (0, 1)."""
    b, eps = 2.0, 0.6
    outside = 0.5 * laplace_like_delta(b, eps - 1 / b) + 0.5 * math.exp(-1 / b) * laplace_like_delta(
        b, eps + 1 / b
    )
    inside, _ = integrate.quad(
        lambda y: laplace_pdf(y, 0, b) * laplace_like_delta(b, eps - (abs(y - 1) - abs(y)) / b),
        0,
        1,
        epsabs=1e-13,
    )
    truth = outside + inside
    ours = delta_at([LaplaceNoise(b)] * 2, "pld", eps)
    assert ours >= truth - 1e-12
    assert ours == pytest.approx(truth, rel=1e-6)


def brute_force_laplace(eps0: float, k: int, step: float, round_up: bool) -> np.ndarray:
    """k-fold Laplace PLD on a grid by direct (non-FFT) convolution, every loss rounded up
    (pessimistic) or down (optimistic). With Y ~ Lap(0, b), L = (|Y - 1| - |Y|)/b and
    P(L <= l) = P(Y >= (1 - b l)/2) on [-eps0, eps0), P(L < l) = P(Y > (1 - b l)/2) on (-eps0, eps0]."""
    b = 1.0 / eps0
    n = round(eps0 / step)
    j = np.arange(-n, n + 1)
    sf = stats.laplace(0, b).sf((1 - b * j * step) / 2)
    if round_up:  # mass of (g_{j-1}, g_j] on g_j
        cdf = np.where(j == n, 1.0, sf)
        mass = np.diff(cdf, prepend=0.0)
    else:  # mass of [g_j, g_{j+1}) on g_j
        left = np.append(np.where(j == -n, 0.0, sf), 1.0)
        mass = np.diff(left)
    total = np.ones(1)
    for _ in range(k):
        total = np.convolve(total, mass)
    losses = (np.arange(total.size) - k * n) * step
    return np.vstack([losses, total])


def test_ten_laplace_between_optimistic_and_pessimistic_brute_force():
    eps0, k = 0.5, 10
    low = brute_force_laplace(eps0, k, eps0 / 400, round_up=False)
    high = brute_force_laplace(eps0, k, eps0 / 400, round_up=True)
    lower = epsilon_of_atoms(low[0], low[1], DELTA)
    upper = epsilon_of_atoms(high[0], high[1], DELTA)
    ours = epsilon_at([LaplaceNoise(1 / eps0)] * k, "pld", DELTA)
    assert lower <= ours <= upper
    assert upper - lower < 0.02  # the brute force itself is tight enough to mean something


def test_randomized_response_matches_kov_exactly():
    ours = epsilon_at([PureDP(0.2)] * 50, "pld", DELTA)
    optimal = epsilon_at([PureDP(0.2)] * 50, "optimal", DELTA)
    assert optimal <= ours <= optimal * (1 + 1e-5)


def test_laplace_is_tighter_than_its_pure_relaxation():
    assert epsilon_at([LaplaceNoise(5.0)] * 40, "pld", DELTA) < epsilon_at([PureDP(0.2)] * 40, "pld", DELTA)


def test_mixed_laplace_gaussian_matches_integration():
    """PLD of Laplace (b) then Gaussian (sigma): delta(eps) = E_{y~Lap}[delta_G(eps - L(y))]."""
    b, sigma, eps = 1.5, 1.2, 1.0
    p, q = stats.laplace(0, b), stats.laplace(1, b)

    def gaussian_delta(e: float) -> float:
        mu = 1 / sigma
        return stats.norm.cdf(-e / mu + mu / 2) - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2)

    truth, _ = integrate.quad(
        lambda y: p.pdf(y) * gaussian_delta(eps - (p.logpdf(y) - q.logpdf(y))),
        -40,
        40,
        points=[0, 1],
        limit=200,
        epsabs=1e-14,
    )
    ours = delta_at([LaplaceNoise(b), GaussianNoise(sigma)], "pld", eps)
    assert ours >= truth - 1e-12
    assert ours == pytest.approx(truth, rel=1e-6)


def test_approximate_dp_adds_its_delta_as_infinite_loss():
    pld = compose_pld(((ApproxDP(0.5, 1e-3), 3),))
    assert pld.infinity == pytest.approx(1 - (1 - 1e-3) ** 3)
    with pytest.raises(NotApplicableError, match="already spend"):
        pld.epsilon(1e-3)


def test_epsilon_of_atoms_inverts_the_profile():
    losses = np.array([-1.0, 0.5, 2.0, 3.0])
    masses = np.array([0.4, 0.3, 0.2, 0.1])
    eps = epsilon_of_atoms(losses, masses, 0.05)
    direct = sum(m * max(0.0, 1 - math.exp(eps - x)) for x, m in zip(losses, masses, strict=True))
    assert direct == pytest.approx(0.05, rel=1e-12)


def test_cross_check_against_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_accounting.LaplaceDpEvent(4.0), 20)
    accountant.compose(dp_accounting.GaussianDpEvent(3.0), 20)
    reference = accountant.get_epsilon(DELTA)
    ours = epsilon_at([LaplaceNoise(4.0)] * 20 + [GaussianNoise(3.0)] * 20, "pld", DELTA)
    assert ours <= reference * (1 + 1e-4)  # at most 0.01% above the reference upper bound
    assert ours == pytest.approx(reference, rel=1e-3)


@pytest.mark.parametrize("first", [-17, -16, -1, 0, 1, 5, 33])
@pytest.mark.parametrize("factor", [1, 2, 3, 8])
def test_spread_keeps_mass_and_mean_of_exp_minus_loss_between_neighbours(first, factor):
    from dpexplorer.core.accounting.pld import spread

    step = 0.01
    pmf = np.random.default_rng(first + 100 * factor).random(23)
    low, coarse_step, coarse = spread(first, step, pmf, factor)
    fine_losses = (first + np.arange(pmf.size)) * step
    coarse_losses = (low + np.arange(coarse.size)) * coarse_step
    assert coarse_step == pytest.approx(step * factor)
    assert coarse.sum() == pytest.approx(pmf.sum(), rel=1e-12)
    kept = np.dot(coarse, np.exp(-coarse_losses))
    assert kept == pytest.approx(np.dot(pmf, np.exp(-fine_losses)), rel=1e-12)
    support = coarse_losses[coarse > 0]
    assert support.min() > fine_losses.min() - coarse_step and support.max() < fine_losses.max() + coarse_step


@pytest.mark.parametrize("path", ["family", "one law"])
def test_a_step_below_float_resolution_keeps_the_pmf_finite_and_pessimistic(path: str) -> None:
    """Fuzzing `account pure:epsilon=5.6e-17:k=1e14` met a grid step so fine that e^-L took the
    same float value at both ends of a cell: 0/0 made the pmf NaN (np.maximum keeps NaN). Now
    such a cell's mass stays at its right (higher-loss) end: finite, all mass kept, and never
    moved below the law's own mean loss."""
    from dpexplorer.core.accounting.grid import discretise, discretise_all
    from dpexplorer.core.accounting.losses import laplace_law

    law, step = laplace_law(1e-17), 1e-19
    first, pmf = (
        discretise(law, step) if path == "one law" else discretise_all([law, laplace_law(2e-17)], step)[0]
    )
    assert np.all(np.isfinite(pmf)) and np.all(pmf >= 0)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert float(pmf @ ((first + np.arange(pmf.size)) * step)) >= law.mean


# ------------------------------------------------------------------ 10,000 distinct releases
LEDGER = [LaplaceNoise(100.0 + i) if i % 2 == 0 else GaussianNoise(20.0 + i) for i in range(10_000)]
"""The audit's ledger (benchmarks/accounting.py, case "ledger"): Laplace(b = 100 + i) for even i,
Gaussian(sigma = 20 + i) for odd i, every release distinct."""


def connect_the_dots(eps0: float, step: float) -> tuple[int, np.ndarray]:
    """One Laplace loss (sensitivity / scale = eps0) on the whole grid j * step covering
    [-eps0, eps0], pessimistically: each cell's mass split between its two ends keeping its mass
    and E[e^-L] (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022), written here from the law
    itself (atom e^-eps0 / 2 at -eps0, density e^((l - eps0)/2) / 4 between, atom 1/2 at eps0),
    independently of dpexplorer.core.accounting.grid. (first index, pmf)."""
    first, last = math.floor(-eps0 / step), math.ceil(eps0 / step)
    x = np.arange(first, last + 1) * step
    inner = np.clip(x, -eps0, eps0)
    # P(L <= x) and E[e^-L; L <= x], atoms included
    cdf = np.where(x >= eps0, 1.0, np.where(x >= -eps0, 0.5 * np.exp((inner - eps0) / 2), 0.0))
    partial = np.where(x >= eps0, 1.0, np.where(x >= -eps0, 1 - 0.5 * np.exp(-(inner + eps0) / 2), 0.0))
    mass, weight = np.diff(cdf), np.diff(partial)  # cells (x_j, x_j+1]
    left_y, right_y = np.exp(-x[:-1]), np.exp(-x[1:])
    to_left = np.clip((weight - mass * right_y) / (left_y - right_y), 0.0, mass)
    pmf = np.zeros(x.size)
    pmf[:-1] += to_left
    pmf[1:] += mass - to_left
    pmf[0] += cdf[0]  # an atom at -eps0 on the grid's first point
    return first, pmf


def independent_profile(points: int) -> tuple[Callable[[float], float], np.ndarray, np.ndarray]:
    """delta(eps) of LEDGER, an upper bound on the true one computed without the package: the
    Laplace losses by :func:`connect_the_dots` on a common grid of ``points`` steps over their
    whole support (no window, no wrap-around), added by FFT (scipy.signal) in a balanced tree,
    then the Gaussians' exact loss N(mu^2/2, mu^2) (Balle & Wang 2018) integrated against it:
    delta(eps) = sum_l w_l delta_G(eps - l). Returns (delta, losses, masses)."""
    import heapq

    from scipy import signal, special

    eps0s = [g.sensitivity / g.scale for g in LEDGER if isinstance(g, LaplaceNoise)]
    mu = math.sqrt(sum((g.sensitivity / g.sigma) ** 2 for g in LEDGER if isinstance(g, GaussianNoise)))
    step = 2 * sum(eps0s) / points
    heap = [
        (pmf.size, n, first, pmf) for n, (first, pmf) in enumerate(connect_the_dots(e, step) for e in eps0s)
    ]
    heapq.heapify(heap)
    order = len(heap)
    while len(heap) > 1:
        _, _, first_a, a = heapq.heappop(heap)
        _, _, first_b, b = heapq.heappop(heap)
        summed = np.maximum(signal.fftconvolve(a, b), 0.0)  # negative round-off up to 0: only raises delta
        order += 1
        heapq.heappush(heap, (summed.size, order, first_a + first_b, summed))
    _, _, first, pmf = heap[0]
    losses = (first + np.arange(pmf.size)) * step

    def delta(eps: float) -> float:
        x = eps - losses
        gaussian = special.ndtr(mu / 2 - x / mu) - np.exp(x + special.log_ndtr(-mu / 2 - x / mu))
        return float((pmf * np.maximum(gaussian, 0.0)).sum())

    return delta, losses, pmf


def test_ten_thousand_distinct_releases_stay_an_upper_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit: at 10,000 distinct releases the ledger's PLD epsilon (0.713569 at delta 1e-6)
    is 1.4e-4 (1.9e-4 relative) below dp_accounting 0.6's pessimistic estimate (0.713708, its
    default 1e-4 grid); below is allowed only if it is still an upper bound. Shown here:

    * an independent pessimistic computation (:func:`independent_profile`: 2^17 steps over the
      whole support, no window) gives delta <= 1e-6 at the ledger's epsilon, so the ledger's
      epsilon is an upper bound by a computation that shares none of its code (only the
      theorem that connecting the dots is pessimistic);
    * the package's own PLD on an 8 times finer grid gives a smaller epsilon (0.713499), less
      than 1e-4 below: the value falls as the grid is refined, towards the true epsilon from
      above, and the ledger's is already within 7e-5 of where it goes;
    * the check resolves the audit's gap: an epsilon 1.9e-4 below the ledger's fails it.

    dp_accounting's pessimistic estimate also falls as its grid is refined (measured: 0.713708
    at 1e-4, 0.713507 at 2e-5, below the ledger's 0.713569): its default grid is the coarser
    one. Its optimistic estimate is no lower bound to compare with here (0.214 at 1e-4: each
    of the 5,000 Laplace losses rounded down by up to a step)."""
    from dpexplorer.core.accounting import compose, pld
    from dpexplorer.release.ledger import total_epsilon

    compose._pld.cache_clear()
    compose._outcome.cache_clear()
    ledger = float(total_epsilon(LEDGER, "pld", DELTA))  # what the ledger compares with its budget
    delta, losses, masses = independent_profile(1 << 17)
    eps0s = [1 / g.scale for g in LEDGER if isinstance(g, LaplaceNoise)]
    assert masses.sum() == pytest.approx(1, abs=1e-12)  # a law, keeping E[e^-L] = 1
    assert (masses * np.exp(-losses)).sum() == pytest.approx(1, abs=1e-12)
    exact_mean = sum(e + math.expm1(-e) for e in eps0s)  # KL divergence of each Laplace
    assert exact_mean <= (masses * losses).sum() <= exact_mean * (1 + 1e-3)  # a spread raises E[L]
    assert delta(ledger) <= DELTA
    assert delta(ledger * (1 - 1.9e-4)) > DELTA
    monkeypatch.setattr(pld, "GRID_POINTS", pld.GRID_POINTS * 8)
    monkeypatch.setattr(pld, "COARSE_POINTS", pld.COARSE_POINTS * 8)
    compose._pld.cache_clear()
    compose._outcome.cache_clear()
    try:
        finer = epsilon_at(LEDGER, "pld", DELTA)
    finally:
        compose._pld.cache_clear()  # the finer grid's PLD must not serve another test
        compose._outcome.cache_clear()
    assert finer < ledger
    assert ledger - finer < 1e-4  # refining moves it less than the audit's gap to dp_accounting
