"""Smooth-sensitivity release of a median, quantile or trimmed mean with admissible noise.

M(x) = f(x) + (S_t(x) / s) * Z, where S_t is the t-smooth sensitivity (beta = t) of f at x
(Nissim, Raskhodnikova & Smith 2007; seed 003), computed exactly by
:func:`dpexplorer.core.sensitivity.smooth_sensitivity`, and Z is one of (Bun & Steinke 2019,
"Average-case averages", section 3; seed 003):

- Student's t with d degrees of freedom: pure epsilon-DP with epsilon = (d + 1) t + s (d+1)/(2 sqrt d).
  Derivation (the two admissibility properties of seed 003, Definition 2.5): the log-density
  -(d+1)/2 ln(1 + z^2/d) has slope at most (d+1)/(2 sqrt d), so a shift by at most s (since
  |f(x) - f(x')| <= LS(x) <= S_t(x)) costs at most s (d+1)/(2 sqrt d) ("sliding"); a change of
  scale by a factor within e^{+-t} (S_t(x') <= e^t S_t(x)) costs at most d |t| <= (d+1) |t|
  ("dilation"). We use Bun & Steinke's (d+1) t.
- Cauchy: Student's t with d = 1, so epsilon = 2 t + s.
- Laplace-log-normal LLN(sigma), Z = X e^{sigma Y} with X ~ Lap(1), Y ~ N(0, 1): (1/2) eps^2-CDP
  (zCDP with rho = eps^2 / 2) for eps = t / sigma + e^{3 sigma^2 / 2} s (seed 003, Proposition 3;
  Bun & Steinke 2019, Theorem 18).

Each mechanism splits its epsilon equally between the sliding and the dilation terms.
The output law on D' uses S_t(D'): the privacy loss between M(D) and M(D') is the log-ratio of
two location-scale densities with different scales, computed exactly by :mod:`accuracy`."""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np
from scipy import optimize, stats

from dpexplorer.core import accuracy as acc
from dpexplorer.core.accounting.guarantees import ZCDP, Guarantee, PureDP
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import AccuracyReport, NumericInput, QueryInput
from dpexplorer.core.mechanisms.params import DELTA, EPSILON, Param, log_float, whole_number
from dpexplorer.core.mechanisms.registry import register
from dpexplorer.core.memo import cached
from dpexplorer.core.sensitivity import smooth_sensitivity

T = TypeVar("T")

SMOOTH_STATISTICS = ("median", "quantile", "trimmed_mean")
_CHUNK = 256
"""Rows of |z| per block of the quadrature: 256 x (at most 1,001) terms, one buffer reused."""
_FEW = 8
"""Up to this many points (root finding asks for one) are summed over every node, unsorted."""


# ---------------------------------------------------------------- the Laplace-log-normal law
def _logsumexp_rows_in_place(terms: np.ndarray) -> np.ndarray:
    """ln sum_j exp(terms[i, j]) for each row, shifted by the row's maximum as
    scipy.special.logsumexp does; ``terms`` is overwritten. In place in one reused buffer:
    fresh temporaries of this size cost a page fault per 4 kB, and this ran in 1.6 ms instead of
    3.6 ms on a 4,001-point grid (same values to the last bit)."""
    top = np.max(terms, axis=-1)
    top[~np.isfinite(top)] = 0.0
    terms -= top[:, None]
    np.exp(terms, out=terms)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(terms, axis=-1)) + top


NEGLIGIBLE = 40.0
"""A node whose log-term is this far below a row's largest is left out of that row's sum: all
such nodes (at most 1,001, at sigma = 2) together change it by < 1001 e^-40 < 5e-15 relative."""


def _nodes_that_matter(weights: np.ndarray, factors: np.ndarray, z_low: float, z_high: float) -> np.ndarray:
    """The nodes j whose term w_j - z f_j can come within NEGLIGIBLE of the row's largest term
    for some z in [z_low, z_high]. Each term is linear in z, so over the interval it is at most
    its larger endpoint value and at least its smaller one; the row's largest term is therefore
    at least L = max_j min(endpoint values). A node is left out only if its larger endpoint value
    is below L - NEGLIGIBLE, i.e. below every row's largest term by more than NEGLIGIBLE."""
    at_low, at_high = weights - z_low * factors, weights - z_high * factors
    floor = np.max(np.minimum(at_low, at_high))
    return np.maximum(at_low, at_high) >= floor - NEGLIGIBLE


Y_LIMIT = 20.0
"""The quadrature over Y ~ N(0, 1) runs over [-Y_LIMIT, Y_LIMIT]: beyond it the Gaussian weight
is below e^-200, and every term that matters is within NEGLIGIBLE of its row's largest."""
STEP_TIMES_SIGMA = 0.08
"""The trapezoid step in y is min(MAX_STEP, STEP_TIMES_SIGMA / sigma). The integrand is analytic
in a strip |Im y| < d with d shrinking like 1/sigma (exp(-|z| e^{-sigma y}) blows up once
sigma |Im y| > pi/2), and the trapezoid rule's error decays like exp(-2 pi d / h), so the step
scales with 1/sigma. Measured against a step four times finer on [-30, 30], for sigma from 0.05
to 2 and |z| up to ten times the 1e-16 quantile: sigma h = 0.1 leaves ln p exact to rounding
(1e-13), sigma h = 0.15 errs by up to 8e-10; 0.08 keeps a margin (the tests check it)."""
MAX_STEP = 0.4
"""For small sigma the Gaussian weight sets the smoothness: its trapezoid error is
exp(-2 pi^2 / h^2) < 1e-50 at h = 0.4."""


@functools.lru_cache(maxsize=64)
def quadrature_nodes(sigma: float, step: float, limit: float = Y_LIMIT) -> tuple[np.ndarray, np.ndarray]:
    """Trapezoid nodes y on [-limit, limit] and their log weights ln(phi(y) h) for E over Y
    (cached, read-only: each release builds a new law object for the same sigma)."""
    count = int(np.ceil(2 * limit / step)) + 1
    nodes = np.linspace(-limit, limit, count)
    log_weights = stats.norm.logpdf(nodes) + np.log(nodes[1] - nodes[0])
    nodes.flags.writeable = log_weights.flags.writeable = False
    return nodes, log_weights


def log_mixture(
    z: np.ndarray | float, sigma: float, extra: float, nodes: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """ln sum_j w_j exp(extra (-sigma y_j) - |z| e^{-sigma y_j}) - ln 2 over the quadrature
    ``nodes`` (y_j, ln w_j), vectorised over the distinct values of |z|, sorted, in chunks
    (bounded memory), each summed only over the nodes that can matter to it
    (:func:`_nodes_that_matter`). A grid symmetric about 0 costs half: z and -z are one |z|."""
    flat = np.abs(np.asarray(z, dtype=float)).ravel()
    shift = -sigma * nodes[0]
    weights, factors = nodes[1] + extra * shift, np.exp(shift)
    if flat.size <= _FEW:  # root finding asks one point at a time: skip the sorting and pruning
        return (_logsumexp_rows_in_place(weights - flat[:, None] * factors) - np.log(2)).reshape(np.shape(z))
    order = np.argsort(flat)
    ordered = flat[order]
    new_value = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    distinct = ordered[new_value]
    values = np.empty(distinct.size)
    buffer = np.empty(min(distinct.size, _CHUNK) * weights.size)
    for start in range(0, distinct.size, _CHUNK):
        part = distinct[start : start + _CHUNK]
        keep = _nodes_that_matter(weights, factors, part[0], part[-1])
        terms = buffer[: part.size * int(keep.sum())].reshape(part.size, -1)
        np.multiply(part[:, None], factors[keep], out=terms)
        np.subtract(weights[keep], terms, out=terms)  # w_j - |z| f_j
        values[start : start + part.size] = _logsumexp_rows_in_place(terms)
    out = np.empty(flat.size)
    out[order] = values[np.cumsum(new_value) - 1]
    return (out - np.log(2)).reshape(np.shape(z))


@dataclass(frozen=True)
class LaplaceLogNormal:
    """Z = X e^{sigma Y}, X ~ Lap(1), Y ~ N(0, 1) independent (Bun & Steinke 2019, section 3.1).

    Density and tails are the exact mixtures over Y, integrated numerically in log space by the
    trapezoid rule on y in [-20, 20] with step min(0.4, 0.08 / sigma) (:data:`STEP_TIMES_SIGMA`:
    the rule converges geometrically on this smooth integrand; ln p is exact to rounding, as
    the tests check against a four times finer step and against adaptive quadrature):
    p(z) = E[e^{-sigma Y} exp(-|z| e^{-sigma Y})] / 2 and P(Z > z) = E[exp(-z e^{-sigma Y})] / 2."""

    sigma: float

    @property
    def nodes(self) -> tuple[np.ndarray, np.ndarray]:
        """The quadrature nodes over Y for this sigma (:func:`quadrature_nodes`, cached)."""
        return quadrature_nodes(self.sigma, min(MAX_STEP, STEP_TIMES_SIGMA / self.sigma))

    def _log_mix(self, z: np.ndarray | float, extra: float) -> np.ndarray:
        """ln E[exp(extra * (-sigma Y) - |z| e^{-sigma Y})] - ln 2 (:func:`log_mixture`)."""
        return log_mixture(z, self.sigma, extra, self.nodes)

    def logpdf(self, z: np.ndarray) -> np.ndarray:
        return self._log_mix(z, 1.0)

    def pdf(self, z: np.ndarray) -> np.ndarray:
        return np.exp(self.logpdf(z))

    def sf(self, z: np.ndarray) -> np.ndarray:
        z = np.asarray(z, dtype=float)
        tail = np.exp(self._log_mix(z, 0.0))
        return np.where(z >= 0, tail, 1.0 - tail)

    def cdf(self, z: np.ndarray) -> np.ndarray:
        return self.sf(-np.asarray(z, dtype=float))

    def isf(self, q: float) -> float:
        """The z with P(Z > z) = q (brentq on the log tail)."""
        if q >= 0.5:
            return -self.isf(1.0 - q)
        target = np.log(q)
        high = 1.0
        while float(self._log_mix(high, 0.0)) > target:
            high *= 4.0
        return float(optimize.brentq(lambda z: float(self._log_mix(z, 0.0)) - target, 0.0, high, rtol=1e-12))

    def ppf(self, q: float) -> float:
        return -self.isf(q)

    def var(self) -> float:
        """E[X^2] E[e^{2 sigma Y}] = 2 e^{2 sigma^2}."""
        return 2.0 * np.exp(2.0 * self.sigma**2)

    def rvs(self, size: int, random_state: np.random.Generator) -> np.ndarray:
        return random_state.laplace(0.0, 1.0, size) * np.exp(self.sigma * random_state.standard_normal(size))


# ---------------------------------------------------------------- shared machinery
def _sorted_side(query: NumericInput, on: Literal["D", "D'"]) -> np.ndarray:
    values = query.sorted_values_d if on == "D" else query.sorted_values_d_prime
    if values is None or query.bounds is None:
        raise NotApplicableError(
            "this mechanism needs the column's values and its bounds (a median, quantile or "
            "trimmed mean of a bounded numeric column)"
        )
    return np.asarray(values, dtype=float)


def check_data_query(query: QueryInput, label: str) -> NumericInput:
    """The query as a NumericInput on a median/quantile/trimmed mean with data and bounds."""
    query = acc.numeric_query(query)
    if query.statistic not in SMOOTH_STATISTICS:
        raise NotApplicableError(
            f"{label} releases a median, quantile or trimmed mean; this query is a {query.statistic}"
        )
    if query.statistic == "trimmed_mean" and query.relation != "replace":
        raise NotApplicableError(
            f"{label} supports the trimmed mean only when neighbours replace a row (n public); "
            "choose the 'replace' relation"
        )
    _sorted_side(query, "D")
    _sorted_side(query, "D'")
    return query


def data_sensitivity(query: NumericInput, on: Literal["D", "D'"], beta: float) -> float:
    """S_beta of the query's statistic on D or D' (beta = 0 gives max_k A(k); exact, from
    :mod:`dpexplorer.core.sensitivity`), floored at the smallest positive float so that an
    underflow can only enlarge the noise."""
    value = column_measure(query, on, smooth_sensitivity, beta)
    return max(float(value), float(np.finfo(float).tiny))


def column_measure(
    query: NumericInput, on: Literal["D", "D'"], measure: Callable[..., T], parameter: float
) -> T:
    """``measure`` (a column measure of :mod:`dpexplorer.core.sensitivity`: smooth_sensitivity,
    distance_to_high_sensitivity) of the query's sorted column on D or D' at ``parameter``, for
    the query's statistic, relation, quantile and trimming; memoised on the query."""
    lower, upper = query.bounds  # type: ignore[misc]
    return cached(
        query,
        (measure.__name__, on, parameter),
        lambda: measure(
            _sorted_side(query, on),
            lower,
            upper,
            parameter,
            query.statistic,
            trim_fraction=query.trim_fraction,
            relation=query.relation,
            quantile=query.quantile,
        ),
    )


def resampled(query: NumericInput, n: int) -> NumericInput:
    """A dataset of size n with the same empirical distribution (its n evenly spaced quantiles):
    the stand-in used by the error-against-n curves of data-dependent mechanisms."""
    column = _sorted_side(query, "D")
    ranks = np.ceil((np.arange(n) + 0.5) / n * column.size).astype(int) - 1  # inverse empirical CDF
    values = column[np.clip(ranks, 0, column.size - 1)]
    return replace(query, n=n, sorted_values_d=values, sorted_values_d_prime=values)


def sizes_up_to(n: int, count: int = 8) -> np.ndarray:
    """Up to ``count`` geometrically spaced dataset sizes from n/100 (at least 10) to n."""
    return np.unique(np.geomspace(max(10, n // 100), max(n, 11), count).astype(int))


class DataStatisticMechanism(acc.NoisyReleaseMechanism):
    """Base of the releases of a median, quantile or trimmed mean whose noise follows the data
    (smooth sensitivity, propose-test-release): they need the column's values and bounds."""

    input_type: ClassVar[type] = NumericInput
    output_kind: ClassVar[Literal["numeric"]] = "numeric"

    def accepts(self, query: QueryInput) -> str | None:
        try:
            check_data_query(query, self.label)
        except NotApplicableError as error:
            return str(error)
        return None

    def release_d(self, params: Mapping[str, Any], query: NumericInput) -> acc.NoisyRelease:
        """The output law on D (the one the accuracy report describes)."""
        return self.releases(params, query).d

    sweep_step: ClassVar[int] = 5
    """The error-against-ε curve visits every ``sweep_step``-th ε of the sweep."""
    halfwidth_caveat: ClassVar[str] = "confidence"
    """Ends the curves' axis label "error bound at 95% ..."."""
    accuracy_notes: ClassVar[tuple[str, ...]] = (
        "Error against n: the column's distribution resampled to n rows.",
    )

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """The exact error law on D (no proven tail bound in the seeds), with the CI half-width
        at ``ci_level`` against ε and against n (the column resampled to n rows, :func:`resampled`)."""
        query = check_data_query(query, self.label)
        release = self.release_d(params, query)
        y_label = f"error bound at {ci_level:.0%} {self.halfwidth_caveat}"

        def halfwidth(p: Mapping[str, Any], q: NumericInput) -> float:
            at = self.release_d(p, q)
            return acc.ci_halfwidth(at, at.loc, ci_level)

        vs_epsilon = acc.curve_over(
            acc.EPSILON_SWEEP[:: self.sweep_step],
            lambda e: halfwidth({**params, "epsilon": e}, query),
            x_label="ε",
            y_label=y_label,
            name="CI half-width",
        )
        vs_n = acc.curve_over(
            sizes_up_to(query.n),
            lambda n: halfwidth(params, resampled(query, int(n))),
            x_label="n (people)",
            y_label=y_label,
            name="CI half-width (data resampled to size n)",
        )
        return acc.release_accuracy(
            release,
            release.loc,
            ci_level,
            curves_vs_epsilon=(vs_epsilon,),
            curves_vs_n=(vs_n,),
            notes=self.accuracy_notes,
        )


class SmoothSensitivityMechanism(DataStatisticMechanism):
    """Base of the smooth-sensitivity mechanisms: f(x) + S_t(x)/s * Z for a standard noise Z."""

    @abstractmethod
    def noise(self, params: Mapping[str, Any]) -> Any:
        """The standard noise Z (a frozen scipy.stats law or :class:`LaplaceLogNormal`)."""

    @abstractmethod
    def smoothing(self, params: Mapping[str, Any]) -> tuple[float, float]:
        """(t, s): the smoothing parameter beta = t and the noise divisor s."""

    def noise_scale(self, params: Mapping[str, Any], query: QueryInput) -> float:
        """S_t(D) / s, the scale of the noise on D."""
        t, s = self.smoothing(params)
        return data_sensitivity(check_data_query(query, self.label), "D", t) / s

    def release_on(
        self, params: Mapping[str, Any], query: NumericInput, on: Literal["D", "D'"]
    ) -> acc.NoisyRelease:
        """The output law on D or D': f + S_t/s * Z with S_t of that dataset."""
        t, s = self.smoothing(params)
        value = query.value_d if on == "D" else query.value_d_prime
        scale, centre = data_sensitivity(query, on, t) / s, float(np.atleast_1d(value)[0])
        return acc.NoisyRelease(self.noise(params), centre, scale)

    def releases(self, params: Mapping[str, Any], query: QueryInput) -> acc.ReleasePair:
        query = check_data_query(query, self.label)
        t, s = self.smoothing(params)
        note = f"Noise scale S(D)/s on D and S(D')/s on D' (t = {t:.4g}, s = {s:.4g})."
        return acc.ReleasePair(
            self.release_on(params, query, "D"), self.release_on(params, query, "D'"), 0, note
        )

    def release_d(self, params: Mapping[str, Any], query: NumericInput) -> acc.NoisyRelease:
        return self.release_on(params, query, "D")


# ---------------------------------------------------------------- Student's t and Cauchy
def student_t_epsilon(t: float, s: float, dof: float) -> float:
    """Pure epsilon of f + S_t/s * T(dof): (dof + 1) t + s (dof + 1) / (2 sqrt(dof))."""
    return (dof + 1) * t + s * (dof + 1) / (2 * np.sqrt(dof))


DEGREES = whole_number(
    "dof",
    "degrees of freedom",
    default=3,
    low=1,
    high=100,
    help=(
        "Shape of the Student's t noise. 1 is the Cauchy law (very heavy tails, no variance); "
        "3 or more gives a finite variance. Higher values smooth less per unit of ε."
    ),
)

SMOOTH_EPSILON = EPSILON.with_note(
    "Half of ε pays for the noise, half for letting the noise scale follow the data."
)


class _StudentTBase(SmoothSensitivityMechanism):
    """Shared by the Cauchy and Student's t mechanisms (pure epsilon-DP)."""

    def dof(self, params: Mapping[str, Any]) -> float:
        return float(params.get("dof", 1))

    def noise(self, params: Mapping[str, Any]) -> Any:
        return acc.student_t(self.dof(params))

    def smoothing(self, params: Mapping[str, Any]) -> tuple[float, float]:
        """Half of epsilon to each term: t = eps / (2 (d+1)), s = eps sqrt(d) / (d + 1)."""
        d, eps = self.dof(params), float(params["epsilon"])
        return eps / (2 * (d + 1)), eps * np.sqrt(d) / (d + 1)

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> Guarantee:
        return PureDP(self.epsilon_delta(params, query)[0])

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        t, s = self.smoothing(params)
        return float(student_t_epsilon(t, s, self.dof(params))), 0.0


@register
class SmoothCauchy(_StudentTBase):
    """Smooth sensitivity with Cauchy noise: pure epsilon-DP, heavy tails (no finite variance)."""

    name: ClassVar[str] = "smooth_cauchy"
    label: ClassVar[str] = "Smooth sensitivity (Cauchy)"
    summary: ClassVar[str] = (
        "Median or trimmed mean with noise scaled to the data's smooth sensitivity, drawn from "
        "the Cauchy law. Pure ε-DP; often far less noise than the global sensitivity needs."
    )
    params: ClassVar[tuple[Param, ...]] = (SMOOTH_EPSILON,)
    order: ClassVar[int] = 40


@register
class SmoothStudentT(_StudentTBase):
    """Smooth sensitivity with Student's t noise: pure epsilon-DP."""

    name: ClassVar[str] = "smooth_student_t"
    label: ClassVar[str] = "Smooth sensitivity (Student's t)"
    summary: ClassVar[str] = (
        "Median or trimmed mean with noise scaled to the data's smooth sensitivity, drawn from "
        "Student's t law. Pure ε-DP; lighter tails than Cauchy as the degrees of freedom grow."
    )
    params: ClassVar[tuple[Param, ...]] = (SMOOTH_EPSILON, DEGREES)
    order: ClassVar[int] = 41

    def dof(self, params: Mapping[str, Any]) -> float:
        return float(params["dof"])


# ---------------------------------------------------------------- Laplace-log-normal (zCDP)
CDP_EPSILON = replace(
    EPSILON,
    label="ε (concentrated DP)",
    help=(
        "The mechanism satisfies ½ε²-zero-concentrated DP (ρ = ε²/2), which composes tightly "
        "over many releases. Smaller ε means stronger privacy and more noise."
    ),
)

LLN_SIGMA = log_float(
    "sigma",
    "σ (log-normal spread)",
    default=0.5,
    low=0.05,
    high=2.0,
    slider=(0.1, 2.0),
    help=(
        "Spread of the log-normal factor of the noise. Larger σ lets the noise scale follow the "
        "data more closely but makes the noise heavier-tailed; 0.3 to 1 is usual."
    ),
)

CONVERSION_DELTA = replace(
    DELTA,
    help=(
        "Only used to state the zCDP guarantee as (ε, δ)-DP (ε_DP = ρ + 2√(ρ ln(1/δ))); it does "
        "not change the noise. " + DELTA.help
    ),
)


def zcdp_to_approx(rho: float, delta: float) -> float:
    """rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta)), delta)-DP (Bun & Steinke 2016, Prop. 1.3)."""
    return float(rho + 2 * np.sqrt(rho * np.log(1 / delta)))


@register
class SmoothLaplaceLogNormal(SmoothSensitivityMechanism):
    """Smooth sensitivity with Laplace-log-normal noise: (1/2) eps^2-zCDP (seed 003, Prop. 3)."""

    name: ClassVar[str] = "smooth_lln"
    label: ClassVar[str] = "Smooth sensitivity (Laplace-log-normal)"
    summary: ClassVar[str] = (
        "Median or trimmed mean with Laplace noise times a log-normal factor, scaled to the "
        "smooth sensitivity. Concentrated DP (½ε²-zCDP), with finite variance."
    )
    params: ClassVar[tuple[Param, ...]] = (CDP_EPSILON, LLN_SIGMA, CONVERSION_DELTA)
    order: ClassVar[int] = 42

    def noise(self, params: Mapping[str, Any]) -> Any:
        return LaplaceLogNormal(float(params["sigma"]))

    def smoothing(self, params: Mapping[str, Any]) -> tuple[float, float]:
        """Half of eps to each term of eps = t/sigma + e^{3 sigma^2/2} s."""
        eps, sigma = float(params["epsilon"]), float(params["sigma"])
        return eps * sigma / 2, eps * np.exp(-1.5 * sigma**2) / 2

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> ZCDP:
        t, s = self.smoothing(params)
        eps = t / float(params["sigma"]) + np.exp(1.5 * float(params["sigma"]) ** 2) * s
        return ZCDP(rho=float(eps**2 / 2))

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        rho = self.guarantee(params, query).rho
        return zcdp_to_approx(rho, float(params["delta"])), float(params["delta"])
