"""Why differential privacy: three attacks on exact (or weakly noisy) answers, and the same
attacks against a DP mechanism. Exploration only: every function here reads the secret it
attacks (to score the attack) and releases nothing.

* Differencing: two counts that differ only by one person reveal that person's value. Under
  noise the attacker's posterior belief is computed exactly and stays below the epsilon-DP bound
  prior e^eps / (prior e^eps + 1 - prior) (:func:`dpexplorer.core.risk.posterior_bound`;
  Dwork & Roth 2014, Section 1 and Definition 2.4).
* Reconstruction (Dinur & Nissim 2003): Q random subset sums of a secret 0/1 column of n rows,
  answered with error at most E, let an attacker who solves a linear program recover all but
  O(E^2) rows (their Theorem 2: noise o(sqrt(n)) per answer is blatantly non-private). The same
  queries answered by the Laplace mechanism with the total epsilon split over them (basic
  composition, Dwork & Roth 2014, Theorem 3.16) recover no more than the best guess without
  queries. The US Census Bureau ran this attack on its own 2010 tables (Abowd et al. 2023,
  "The 2010 Census Confidentiality Protections Failed, Here's How and Why").
* Membership inference: the likelihood-ratio test between M(D) and M(D') (the most powerful
  test, Neyman-Pearson) on repeated releases; its true- and false-positive rates lie in the
  epsilon-DP region TPR <= e^eps FPR + delta, 1 - FPR <= e^eps (1 - TPR) + delta (Wasserman &
  Zhou 2010; Kairouz, Oh & Viswanath 2015, Theorem 2.1; :mod:`dpexplorer.core.risk`).

Every function takes a numpy Generator (the exploration RNG, never a release's); the long ones a
cancel token and a progress callback (:mod:`dpexplorer.core.cancel`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.checks import check_real, check_whole, shown
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.mechanisms.gaussian import gaussian_sigma_analytic
from dpexplorer.core.mechanisms.laplace import laplace_scale
from dpexplorer.core.risk import posterior_bound

Noise = Literal["exact", "bounded", "laplace", "gaussian"]
NOISES: tuple[str, ...] = ("exact", "bounded", "laplace", "gaussian")
MAX_ROWS = 5_000
"""Largest secret column the reconstruction LP is run on (n = 5,000 with Q = 2n queries is a
dense 10^4 x 5,000 system: tens of seconds with HiGHS)."""
MAX_QUERIES = 2 * MAX_ROWS
"""Most subset queries one reconstruction asks (the dense Q x n matrix at n = MAX_ROWS: 400 MB)."""
MAX_TRIALS = 10_000_000
"""Most releases a membership or differencing run draws of each (its rates' sampling error is
then below 2e-4; more only takes longer)."""


def _check_noise(noise: Any) -> None:
    if not isinstance(noise, str) or noise not in NOISES:
        raise InvalidParameterError(f"noise must be one of {', '.join(NOISES)}; got {shown(noise)}")


EPSILON_RANGE = (1e-6, 100.0)
"""The total epsilon an attack runs at. Outside it the noise leaves double precision's useful
range (measured: at 1e-300 the reconstruction's LP fails in HiGHS, at 1e308 the membership
thresholds overflow to NaN and every rate reads 0, at 5e-324 eps/2 is 0); at both ends of it
every attack runs to a result (measured on 8 to 200 rows and 16 to 10,000 queries)."""


def _check_epsilon(epsilon: Any) -> float:
    """``epsilon`` as a float if it is a number in :data:`EPSILON_RANGE` (the TypeError flavour
    of InvalidParameterError for text, None, a boolean)."""
    eps = check_real(epsilon, "epsilon")
    low, high = EPSILON_RANGE
    if not low <= eps <= high:
        raise InvalidParameterError(f"epsilon (ε) must be from {low:g} to {high:g}; got {shown(epsilon)}")
    return eps


def _check_delta(delta: Any) -> None:
    if not 0 < check_real(delta, "delta") < 1:
        raise InvalidParameterError(
            f"delta (δ) must be strictly between 0 and 1 for Gaussian noise; got {shown(delta)}"
        )


def _check_trials(trials: Any) -> int:
    return check_whole(trials, "trials", 1, MAX_TRIALS)


def _check_bits(bits: np.ndarray) -> np.ndarray:
    values = np.asarray(bits)
    if values.ndim != 1 or values.size == 0:
        raise InvalidParameterError("the secret column must be a non-empty 1-D array of 0s and 1s")
    if not np.all((values == 0) | (values == 1)):
        raise InvalidParameterError("the secret column must hold only 0s and 1s")
    return values.astype(np.int64)


def noise_scale(noise: Noise, per_query_epsilon: float, delta: float = 1e-6) -> float:
    """The per-answer noise scale of a sensitivity-1 count at ``per_query_epsilon``: Laplace
    b = 1 / eps (Dwork & Roth 2014, Theorem 3.6), Gaussian sigma (analytic calibration, Balle &
    Wang 2018); 0 for exact answers. ("bounded" noise has no epsilon: its scale is B.)"""
    _check_noise(noise)
    if noise == "laplace":
        return laplace_scale(per_query_epsilon, 1.0)
    if noise == "gaussian":
        _check_delta(delta)
        return gaussian_sigma_analytic(per_query_epsilon, delta, 1.0)
    if noise == "exact":
        return 0.0
    raise InvalidParameterError("bounded noise is set by its magnitude B, not by ε")


def _draw_noise(noise: Noise, scale: float, size: int, rng: np.random.Generator) -> np.ndarray:
    if noise == "exact" or scale == 0:
        return np.zeros(size)
    if noise == "bounded":
        return rng.uniform(-scale, scale, size)
    if noise == "laplace":
        return rng.laplace(0.0, scale, size)
    return rng.normal(0.0, scale, size)


# ---------------------------------------------------------------- differencing
@dataclass(frozen=True)
class DifferencingResult:
    """Two counts, "everyone with the value" and "everyone but the person with the value", as
    the attacker saw them (exact or noisy), and what the attacker concludes.

    ``posterior`` is the attacker's exact belief that the person has the value given the two
    answers (prior ``prior``); ``bound`` the epsilon-DP ceiling on any attacker's belief
    (:func:`dpexplorer.core.risk.posterior_bound`, 1 for exact answers); ``guess`` the value the
    attacker would state (posterior above 1/2); ``truth`` the person's real value."""

    count_all: float
    count_others: float
    difference: float
    posterior: float
    bound: float
    guess: int
    truth: int
    noise: str
    epsilon: float | None
    scale: float


def _difference_likelihood(noise: Noise, scale: float, z: np.ndarray) -> np.ndarray:
    """Density of Y1 - Y2 at ``z`` for two independent noises of the given scale: what a count
    difference a - b is off by. Laplace(b) - Laplace(b): (1 + |z|/b) e^(-|z|/b) / (4b) (the
    convolution of two Laplace densities); Gaussian: N(0, 2 sigma^2)."""
    if noise == "laplace":
        r = np.abs(z) / scale
        return (1 + r) * np.exp(-r) / (4 * scale)
    from scipy import stats

    return stats.norm.pdf(z, scale=math.sqrt(2) * scale)


def differencing_posterior(
    difference: np.ndarray | float, noise: Noise, scale: float, prior: float
) -> np.ndarray:
    """The attacker's posterior that the person's bit is 1 after seeing the difference of the
    two noisy counts: prior f(d - 1) / (prior f(d - 1) + (1 - prior) f(d)), f the density of the
    difference of the two noises (:func:`_difference_likelihood`). The attacker knows nothing of
    the others' count (flat prior on it, which integrates it out). For Laplace noise of scale
    2/eps on each count the ratio f(d - 1) / f(d) is at most e^(eps/2), so the posterior never
    exceeds :func:`posterior_bound` at eps."""
    d = np.asarray(difference, dtype=float)
    if noise == "exact":
        return np.where(np.isclose(d, 1.0), 1.0, 0.0)
    one = prior * _difference_likelihood(noise, scale, d - 1.0)
    zero = (1 - prior) * _difference_likelihood(noise, scale, d)
    total = one + zero
    return np.where(total > 0, one / np.where(total > 0, total, 1.0), prior)


def differencing_attack(
    bits: np.ndarray,
    person: int,
    rng: np.random.Generator,
    *,
    noise: Noise = "exact",
    epsilon: float = 1.0,
    delta: float = 1e-6,
    prior: float = 0.5,
) -> DifferencingResult:
    """The differencing attack on ``person`` (a row index of ``bits``): count(bit = 1) over all
    rows minus count(bit = 1) over all rows but the person is the person's bit, exactly. Under
    ``noise`` ("laplace" or "gaussian") each count is answered by that mechanism at eps/2 (delta/2
    for Gaussian), so the pair is (eps, delta)-DP by basic composition (Dwork & Roth 2014,
    Theorem 3.16), and the posterior is bounded by :func:`posterior_bound` (eps, delta, prior)."""
    values = _check_bits(bits)
    person = check_whole(person, "the person's row", 0, values.size - 1)
    if not 0 < check_real(prior, "the prior") < 1:
        raise InvalidParameterError(f"the prior must lie strictly between 0 and 1; got {prior}")
    if noise not in ("exact", "laplace", "gaussian"):
        raise InvalidParameterError(f"differencing takes exact, laplace or gaussian answers; got {noise!r}")
    total = float(values.sum())
    others = total - float(values[person])
    if noise == "exact":
        scale, eps, bound = 0.0, None, 1.0
    else:
        epsilon = _check_epsilon(epsilon)
        scale = noise_scale(noise, epsilon / 2, delta / 2)
        eps = float(epsilon)
        bound = posterior_bound(epsilon, 0.0 if noise == "laplace" else delta, prior)
    a = total + _draw_noise(noise, scale, 1, rng)[0]
    b = others + _draw_noise(noise, scale, 1, rng)[0]
    posterior = float(differencing_posterior(a - b, noise, scale, prior))
    return DifferencingResult(
        a, b, a - b, posterior, bound, int(posterior > 0.5), int(values[person]), noise, eps, scale
    )


def differencing_trials(
    bits: np.ndarray,
    person: int,
    trials: int,
    rng: np.random.Generator,
    *,
    noise: Noise = "laplace",
    epsilon: float = 1.0,
    delta: float = 1e-6,
    prior: float = 0.5,
) -> np.ndarray:
    """The attacker's posterior in ``trials`` independent repetitions of
    :func:`differencing_attack` (vectorised): the spread the view draws under the bound."""
    values = _check_bits(bits)
    trials = _check_trials(trials)
    truth = float(values[check_whole(person, "the person's row", 0, values.size - 1)])
    if noise == "exact":
        return differencing_posterior(np.full(trials, truth), noise, 0.0, prior)
    epsilon = _check_epsilon(epsilon)
    scale = noise_scale(noise, epsilon / 2, delta / 2)
    d = truth + _draw_noise(noise, scale, trials, rng) - _draw_noise(noise, scale, trials, rng)
    return differencing_posterior(d, noise, scale, prior)


# ---------------------------------------------------------------- reconstruction
@dataclass(frozen=True)
class ReconstructionResult:
    """One run of the Dinur-Nissim attack: ``recovered`` is the fraction of rows whose bit the
    attacker got right; ``baseline`` the fraction right by guessing the majority value for
    everyone (the best guess without queries); ``scale`` the per-answer noise (B for bounded
    noise, the Laplace b or Gaussian sigma, 0 for exact); ``guess`` the attacker's 0/1 column."""

    recovered: float
    baseline: float
    rows: int
    queries: int
    noise: str
    scale: float
    epsilon: float | None
    guess: np.ndarray


def baseline_fraction(bits: np.ndarray) -> float:
    """The majority value's share: what guessing one value for every row gets right."""
    mean = float(np.mean(_check_bits(bits)))
    return max(mean, 1.0 - mean)


def subset_queries(n: int, queries: int, rng: np.random.Generator) -> np.ndarray:
    """``queries`` x ``n`` 0/1 matrix: each query a uniformly random subset of the rows (each row
    in with probability 1/2, as in Dinur & Nissim 2003)."""
    if n < 1 or queries < 1:
        raise InvalidParameterError(f"rows and queries must be at least 1; got {n} rows, {queries} queries")
    return (rng.random((queries, n)) < 0.5).astype(np.float64)


def answer_queries(
    matrix: np.ndarray,
    bits: np.ndarray,
    rng: np.random.Generator,
    *,
    noise: Noise = "exact",
    magnitude: float = 0.0,
    epsilon: float = 1.0,
    delta: float = 1e-6,
) -> tuple[np.ndarray, float]:
    """The subset sums ``matrix @ bits`` and the per-answer noise scale: exact; plus uniform
    noise on [-B, B] (``magnitude`` B, Dinur & Nissim's bounded perturbation); or by the Laplace
    / Gaussian mechanism with the total (``epsilon``, ``delta``) split evenly over the Q answers
    (basic composition: eps/Q each, sensitivity 1 per subset count; Dwork & Roth 2014, Theorem
    3.16), so that all Q answers together are (epsilon, delta)-DP."""
    _check_noise(noise)
    exact = matrix @ _check_bits(bits).astype(np.float64)
    q = matrix.shape[0]
    if noise == "bounded":
        scale = check_real(magnitude, "the noise magnitude B")
        if scale < 0:
            raise InvalidParameterError(
                f"the noise magnitude B must be a finite number >= 0; got {shown(magnitude)}"
            )
    elif noise == "exact":
        scale = 0.0
    else:
        epsilon = _check_epsilon(epsilon)
        scale = noise_scale(noise, epsilon / q, delta / q)
    return exact + _draw_noise(noise, scale, q, rng), scale


def solve_lp(matrix: np.ndarray, answers: np.ndarray, *, exact: bool = False) -> np.ndarray:
    """The attacker's LP (Dinur & Nissim 2003, Section 3; here minimising the L1 residual):
    minimise sum_j (p_j + m_j) over x in [0, 1]^n, p, m >= 0, subject to A x - p + m = a (so
    p + m >= |A x - a|, with equality at the optimum), solved by scipy's HiGHS; returns the
    fractional x (round at 1/2 for the guess). HiGHS's dual simplex for exact answers, its
    interior point method for noisy ones (measured at n = 500, Q = 1000: 1 s vs 3 s exact,
    8 s vs 28 s at B = 2, on a loaded 2-core machine)."""
    from scipy import optimize, sparse

    q, n = matrix.shape
    eye = sparse.identity(q, format="csc")
    equality = sparse.hstack([sparse.csc_matrix(matrix), -eye, eye], format="csc")
    cost = np.concatenate([np.zeros(n), np.ones(2 * q)])
    bounds = [(0.0, 1.0)] * n + [(0.0, None)] * (2 * q)
    method = "highs-ds" if exact else "highs-ipm"
    result = optimize.linprog(cost, A_eq=equality, b_eq=answers, bounds=bounds, method=method)
    if result.x is None:  # cannot happen (any x in [0, 1]^n with its residual is feasible)
        raise InvalidParameterError(f"the attacker's linear program failed: {result.message}")
    return np.asarray(result.x[:n])


def reconstruction_attack(
    bits: np.ndarray,
    queries: int,
    rng: np.random.Generator,
    *,
    noise: Noise = "exact",
    magnitude: float = 0.0,
    epsilon: float = 1.0,
    delta: float = 1e-6,
    cancel: CancelToken | None = None,
) -> ReconstructionResult:
    """Draw ``queries`` random subsets, answer them (:func:`answer_queries`), solve the LP
    (:func:`solve_lp`), round at 1/2 and score against the secret ``bits``. With exact answers
    and Q >= n log n-ish random subsets the LP's solution is the secret; with per-answer error E
    at most 4 E^2 rows are wrong (Dinur & Nissim 2003, Theorem 2 with their constants)."""
    values = _check_bits(bits)
    if values.size > MAX_ROWS:
        raise InvalidParameterError(f"reconstruction runs on at most {MAX_ROWS:,} rows; got {values.size:,}")
    queries = check_whole(queries, "queries", 1, MAX_QUERIES)
    checkpoint(cancel)
    matrix = subset_queries(values.size, queries, rng)
    answers, scale = answer_queries(
        matrix, values, rng, noise=noise, magnitude=magnitude, epsilon=epsilon, delta=delta
    )
    checkpoint(cancel)
    guess = (solve_lp(matrix, answers, exact=scale == 0) > 0.5).astype(np.int64)
    return ReconstructionResult(
        float(np.mean(guess == values)),
        baseline_fraction(values),
        int(values.size),
        int(queries),
        noise,
        scale,
        float(epsilon) if noise in ("laplace", "gaussian") else None,
        guess,
    )


@dataclass(frozen=True)
class ReconstructionCurve:
    """Fraction recovered at each of ``xs`` (noise scales or numbers of queries), with the
    baseline: the view's two plots."""

    xs: np.ndarray
    recovered: np.ndarray
    baseline: float
    what: Literal["noise", "queries"]
    noise: str


def recovered_vs_noise(
    bits: np.ndarray,
    queries: int,
    magnitudes: np.ndarray,
    rng: np.random.Generator,
    *,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> ReconstructionCurve:
    """Fraction recovered under bounded noise of each magnitude B in ``magnitudes`` (Q fixed):
    near 1 while B is well below sqrt(n), falling to the baseline above it."""
    xs = np.asarray(magnitudes, dtype=float)
    out = np.empty(xs.size)
    for i, b in enumerate(xs):
        checkpoint(cancel, progress, i / xs.size)
        kind: Noise = "bounded" if b > 0 else "exact"
        out[i] = reconstruction_attack(
            bits, queries, rng, noise=kind, magnitude=float(b), cancel=cancel
        ).recovered
    checkpoint(cancel, progress, 1.0)
    return ReconstructionCurve(xs, out, baseline_fraction(bits), "noise", "bounded")


def recovered_vs_queries(
    bits: np.ndarray,
    query_counts: np.ndarray,
    rng: np.random.Generator,
    *,
    noise: Noise = "exact",
    magnitude: float = 0.0,
    epsilon: float = 1.0,
    delta: float = 1e-6,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> ReconstructionCurve:
    """Fraction recovered with each number of queries Q in ``query_counts`` (same answers
    model each time; under a DP mechanism the total epsilon is split over each Q)."""
    xs = np.asarray(query_counts, dtype=int)
    out = np.empty(xs.size)
    for i, q in enumerate(xs):
        checkpoint(cancel, progress, i / xs.size)
        out[i] = reconstruction_attack(
            bits, int(q), rng, noise=noise, magnitude=magnitude, epsilon=epsilon, delta=delta, cancel=cancel
        ).recovered
    checkpoint(cancel, progress, 1.0)
    return ReconstructionCurve(xs.astype(float), out, baseline_fraction(bits), "queries", noise)


# ---------------------------------------------------------------- membership inference
@dataclass(frozen=True)
class MembershipResult:
    """The likelihood-ratio test's rates over ``trials`` releases from M(D) (the person in) and
    as many from M(D') (out): at each threshold on the log-likelihood ratio, ``tpr`` (share of
    D's releases flagged "in") and ``fpr`` (share of D''s flagged "in"). ``epsilon``/``delta``
    give the DP region the rates must lie in (None for exact answers: no region)."""

    thresholds: np.ndarray
    tpr: np.ndarray
    fpr: np.ndarray
    trials: int
    noise: str
    epsilon: float | None
    delta: float
    scale: float


def dp_region_excess(tpr: np.ndarray, fpr: np.ndarray, epsilon: float, delta: float) -> np.ndarray:
    """How far each (FPR, TPR) lies outside the (epsilon, delta)-DP region, <= 0 inside: the
    larger of TPR - e^eps FPR - delta and (1 - FPR) - e^eps (1 - TPR) - delta (Kairouz, Oh &
    Viswanath 2015, Theorem 2.1; the region of :func:`dpexplorer.core.risk.tradeoff_curve_epsilon_delta`)."""
    grow = math.exp(epsilon)
    t, f = np.asarray(tpr, dtype=float), np.asarray(fpr, dtype=float)
    return np.maximum(t - grow * f - delta, (1 - f) - grow * (1 - t) - delta)


def membership_attack(
    count: float,
    trials: int,
    rng: np.random.Generator,
    *,
    noise: Noise = "laplace",
    epsilon: float = 1.0,
    delta: float = 1e-6,
    thresholds: int = 41,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> MembershipResult:
    """Release the count ``trials`` times from D (``count``, the person in) and from D'
    (``count - 1``, out) through ``noise`` at (epsilon, delta) (sensitivity 1), and run the
    likelihood-ratio test log p_D(y) / p_D'(y) > t at ``thresholds`` values of t spread over
    the attainable losses. Exact answers: the test is perfect (TPR 1 at FPR 0). Drawn in chunks,
    checking ``cancel`` between them."""
    _check_noise(noise)
    if noise == "bounded":
        raise InvalidParameterError("membership inference takes exact, laplace or gaussian releases")
    trials = _check_trials(trials)
    if noise == "exact":
        ts = np.linspace(-1.0, 1.0, thresholds)
        return MembershipResult(ts, np.ones_like(ts), np.zeros_like(ts), trials, noise, None, 0.0, 0.0)
    epsilon = _check_epsilon(epsilon)
    scale = noise_scale(noise, epsilon, delta)
    top = 1.0 / scale if noise == "laplace" else 4.0 / scale + 0.5 / scale**2
    ts = np.linspace(-top, top, thresholds)
    flagged_in = np.zeros(thresholds)
    flagged_out = np.zeros(thresholds)
    chunk = 50_000
    for start in range(0, trials, chunk):
        checkpoint(cancel, progress, start / trials)
        size = min(chunk, trials - start)
        y_in = count + _draw_noise(noise, scale, size, rng)
        y_out = count - 1 + _draw_noise(noise, scale, size, rng)
        flagged_in += (_log_ratio(noise, scale, y_in, count)[:, None] > ts).sum(axis=0)
        flagged_out += (_log_ratio(noise, scale, y_out, count)[:, None] > ts).sum(axis=0)
    checkpoint(cancel, progress, 1.0)
    d = 0.0 if noise == "laplace" else float(delta)
    return MembershipResult(
        ts, flagged_in / trials, flagged_out / trials, trials, noise, float(epsilon), d, scale
    )


def _log_ratio(noise: Noise, scale: float, y: np.ndarray, count: float) -> np.ndarray:
    """ln p_D(y) - ln p_D'(y), D's count ``count`` and D''s ``count - 1``."""
    if noise == "laplace":
        return (np.abs(y - count + 1) - np.abs(y - count)) / scale
    return ((y - count + 1) ** 2 - (y - count) ** 2) / (2 * scale**2)


__all__ = [
    "NOISES",
    "DifferencingResult",
    "MembershipResult",
    "ReconstructionCurve",
    "ReconstructionResult",
    "answer_queries",
    "baseline_fraction",
    "differencing_attack",
    "differencing_posterior",
    "differencing_trials",
    "dp_region_excess",
    "membership_attack",
    "reconstruction_attack",
    "recovered_vs_noise",
    "recovered_vs_queries",
    "solve_lp",
    "subset_queries",
]
