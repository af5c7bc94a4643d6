"""Report-noisy-max: add independent noise of scale b to every score and report the argmax.

- Gumbel noise: equal in law to the exponential mechanism with sigma = b (the Gumbel-max trick;
  Dwork & Roth 2014, Section 3.4). epsilon = 2 Delta_u / b, or Delta_u / b for a monotone utility.
- Exponential noise: equal in law to permute-and-flip (McKenna & Sheldon 2020; Ding, Kifer et al.
  2021, "The permute-and-flip mechanism is identical to report-noisy-max with exponential noise").
  Same epsilon as above (McKenna & Sheldon 2020, Theorem 1).
- Laplace noise: epsilon = 2 Delta_u / b in general, Delta_u / b for monotone scores such as
  counts (Dwork & Roth 2014, Claim 3.9).

Exact selection probabilities: Gumbel by the softmax; exponential by the permute-and-flip
formula (elementary symmetric polynomials, no cancellation); Laplace by one-dimensional adaptive
quadrature of f_r(x) prod_{j != r} F_j(x) in logs (numerical, relative error ~1e-9)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal

import numpy as np
from scipy import integrate, optimize

from dpexplorer.core.cancel import poll
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    CategoricalOutput,
    QueryInput,
    SelectionInput,
)
from dpexplorer.core.mechanisms.exponential import (
    USE_MONOTONE,
    NoisyArgmaxMechanism,
    categorical_output,
    check_selection,
    exponential_log_pmf,
    score_selection_accuracy,
    standard_gumbel,
    union_bound_alpha,
)
from dpexplorer.core.mechanisms.params import EPSILON, Param, choice
from dpexplorer.core.mechanisms.registry import register

NOISE = choice(
    "noise",
    "Noise",
    default="gumbel",
    choices=("gumbel", "exponential", "laplace"),
    help=(
        "The noise added to every score before the highest is reported. Gumbel gives exactly "
        "the exponential mechanism; exponential noise (permute-and-flip) is never less accurate "
        "than it at the same ε; Laplace is the classic choice. All three give the same ε."
    ),
)


# ---------------------------------------------------------------- exact pmfs
def permute_and_flip_log_pmf(scores: np.ndarray, scale: float) -> np.ndarray:
    """Exact log P(r) of permute-and-flip (= noisy max with Exponential(scale) noise).

    With p_j = exp((u_j - u*) / scale), r is chosen when it is flipped heads and every candidate
    before it in a uniform random order flipped tails, so
    P(r) = p_r * mean over t of [e_t({1 - p_j : j != r}) / C(n-1, t)]
    (e_t the elementary symmetric polynomial). The averages are built by a stable recursion
    A_t <- ((m+1-t) A_t + t x A_{t-1}) / (m+1) that never overflows."""
    u = np.asarray(scores, dtype=float)
    n = u.size
    log_p = (u - u.max()) / scale
    tails = -np.expm1(log_p)  # 1 - p_j, accurate near p_j = 1
    averages = np.zeros((n, n))
    averages[:, 0] = 1.0
    t = np.arange(1, n)
    processed = np.zeros(n, dtype=int)
    for j in range(n):
        rows = np.arange(n) != j
        m = processed[rows][:, None]
        prev = averages[rows]
        new = prev.copy()
        new[:, 1:] = ((m + 1 - t) * prev[:, 1:] + t * tails[j] * prev[:, :-1]) / (m + 1)
        averages[rows] = new
        processed[rows] += 1
    return log_p + np.log(averages.mean(axis=1))


def log_integral(log_f: Callable[[np.ndarray], np.ndarray], breakpoints: np.ndarray, scale: float) -> float:
    """ln of the integral over the real line of exp(log_f), by adaptive quadrature (scipy quad)
    on the pieces between ``breakpoints`` after subtracting the maximum found on a grid, so the
    result keeps its relative accuracy even when the integral underflows. Numerical (rel. ~1e-9)."""
    points = np.unique(np.asarray(breakpoints, dtype=float))
    grid = np.concatenate([points, np.linspace(points[0] - 40 * scale, points[-1] + 40 * scale, 4001)])
    peak = float(np.max(log_f(grid)))
    edges = np.concatenate([[-np.inf], points, [np.inf]])

    def shifted(x: float) -> float:
        poll()  # scipy's quad cannot be stopped from outside: the integrand raises on Esc
        return float(np.exp(log_f(np.array([x]))[0] - peak))

    total = sum(
        integrate.quad(shifted, lo, hi, epsabs=0.0, epsrel=1e-10, limit=200)[0]
        for lo, hi in itertools.pairwise(edges)
    )
    return peak + float(np.log(total)) if total > 0 else -np.inf


def _laplace_logcdf(z: np.ndarray, scale: float) -> np.ndarray:
    """ln P(Lap(scale) <= z), accurate in both tails (the closed form, vectorised)."""
    z = np.asarray(z, dtype=float) / scale
    with np.errstate(over="ignore"):
        return np.where(z < 0, z - np.log(2.0), np.log1p(-0.5 * np.exp(-np.abs(z))))


def laplace_noisy_max_log_pmf(scores: np.ndarray, scale: float) -> np.ndarray:
    """log P(argmax_j (u_j + Lap(scale)) = r) = ln int f_r(x) prod_{j != r} F_j(x) dx, by
    :func:`log_integral` (numerical, relative error ~1e-9)."""
    u = np.asarray(scores, dtype=float)
    values, first, inverse = np.unique(u, return_index=True, return_inverse=True)
    per_value = np.empty(values.size)
    for index, r in enumerate(first):  # tied candidates have equal probabilities
        others = np.delete(u, r)

        def log_f(x: np.ndarray, r: int = r, others: np.ndarray = others) -> np.ndarray:
            x = np.asarray(x, dtype=float)
            below = _laplace_logcdf(x[:, None] - others[None, :], scale).sum(axis=1)
            return -np.abs(x - u[r]) / scale - np.log(2 * scale) + below

        per_value[index] = log_integral(log_f, u, scale)
    return per_value[inverse]


def noisy_max_log_pmf(scores: np.ndarray, scale: float, noise: str) -> np.ndarray:
    """Exact (Gumbel, exponential) or numerical (Laplace) log selection probabilities."""
    if noise == "gumbel":
        return exponential_log_pmf(scores, scale)
    if noise == "exponential":
        return permute_and_flip_log_pmf(scores, scale)
    return laplace_noisy_max_log_pmf(scores, scale)


def draw_noise(noise: str, rng: np.random.Generator, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """Noise of the named kind and scale."""
    if noise == "gumbel":
        return scale * standard_gumbel(rng, shape)
    if noise == "exponential":
        return rng.exponential(scale=scale, size=shape)
    return rng.laplace(scale=scale, size=shape)


# ---------------------------------------------------------------- accuracy bounds
_BOUND_SOURCE = {
    "gumbel": "Dwork & Roth 2014, Theorem 3.11 (union bound)",
    "exponential": "union bound with P(r) <= exp(-(OPT - u_r)/b) (McKenna & Sheldon 2020)",
    "laplace": "union bound with P(Lap - Lap >= a) = (1 + a/2b) e^(-a/b) / 2",
}
_BOUND_NAME = {
    "gumbel": "union bound |R| e^(−α/b)",
    "exponential": "union bound |R| e^(−α/b)",
    "laplace": "union bound |R| (1 + α/2b) e^(−α/b) / 2",
}


def noisy_max_tail_bound(noise: str, scale: float, n_outcomes: int, alphas: np.ndarray) -> np.ndarray:
    """An upper bound on P(OPT - u(chosen) >= alpha). A candidate alpha below the best wins only if
    it beats the best: P <= e^(-alpha/b) for Gumbel (exponential mechanism) and exponential noise
    (permute-and-flip picks r w.p. at most p_r), and P(Lap - Lap >= alpha) for Laplace noise;
    then the union bound over the candidates."""
    a = np.asarray(alphas, dtype=float) / scale
    single = np.exp(-a) * ((1 + a / 2) / 2 if noise == "laplace" else 1.0)
    return np.minimum(1.0, n_outcomes * single)


def noisy_max_bound_alpha(noise: str, scale: float, n_outcomes: int, beta: float) -> float:
    """The alpha at which :func:`noisy_max_tail_bound` equals beta (upper bound on the
    1 - beta quantile of the error)."""
    if noise != "laplace":
        return union_bound_alpha(scale, n_outcomes, beta)
    target = np.log(2 * beta / n_outcomes)
    if target >= 0:
        return 0.0
    root = optimize.brentq(lambda a: np.log1p(a / 2) - a - target, 0.0, 10 - 2 * target)
    return float(root * scale)


# ---------------------------------------------------------------- the mechanism
@register
class ReportNoisyMax(NoisyArgmaxMechanism):
    """argmax_r u(D, r) + noise_r with noise of scale b = 2 Delta_u / epsilon (Delta_u / epsilon
    for monotone scores): pure epsilon-DP for all three noises (exact claim)."""

    name: ClassVar[str] = "noisy_max"
    label: ClassVar[str] = "Report noisy max"
    summary: ClassVar[str] = "Adds noise to every score and reports which candidate came out on top."
    input_type: ClassVar[type] = SelectionInput
    output_kind: ClassVar[Literal["categorical"]] = "categorical"
    params: ClassVar[tuple[Param, ...]] = (EPSILON, NOISE, USE_MONOTONE)
    order: ClassVar[int] = 41

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> CategoricalOutput:
        assert isinstance(query, SelectionInput)
        check_selection(query)
        scale, noise = self.scale(params, query), params["noise"]
        log_p = noisy_max_log_pmf(query.scores_d, scale, noise)
        log_q = noisy_max_log_pmf(query.scores_d_prime, scale, noise)
        how = "numerical quadrature" if noise == "laplace" else "exact"
        return categorical_output(
            query.candidates, log_p, log_q, f"{how}; {noise} noise of scale {scale:.6g}"
        )

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        assert isinstance(query, SelectionInput)
        noise = params["noise"]
        # The Laplace pmf needs one quadrature per candidate: the sweep uses the Gumbel formula.
        sweep_noise = "gumbel" if noise == "laplace" else noise
        notes = [f"error = OPT − u(chosen); bound: {_BOUND_SOURCE[noise]}"]
        if noise == "laplace":
            notes.append("the exact ε sweep shows Gumbel noise (the exponential mechanism) for speed")
        return score_selection_accuracy(
            query,
            params["epsilon"],
            lambda eps: self.scale({**params, "epsilon": eps}, query),
            lambda scores, scale: noisy_max_log_pmf(scores, scale, noise),
            sweep_log_pmf=lambda scores, scale: noisy_max_log_pmf(scores, scale, sweep_noise),
            ci_level=ci_level,
            tail_bound=lambda scale, count, a: noisy_max_tail_bound(noise, scale, count, a),
            bound_alpha=lambda scale, count, beta: noisy_max_bound_alpha(noise, scale, count, beta),
            bound_name=_BOUND_NAME[noise],
            notes=tuple(notes),
        )

    def noisy_scores(
        self, params: Mapping[str, Any], scores: np.ndarray, scale: float, rng: np.random.Generator, size: int
    ) -> np.ndarray:
        """The scores plus literal noise of the chosen kind and scale b."""
        return scores + draw_noise(params["noise"], rng, (size, scores.size), scale)
