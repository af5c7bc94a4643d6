"""The mean of a clipped column as a noisy sum over a noisy count (its error shrinks as 1/n).

Values are clipped to [lower, upper] and centred on the midpoint c: y = x - c in [-h, h],
h = (upper - lower) / 2. Under add/remove (n private) the mechanism releases

    S~ = sum(y) + Z1, Z1 ~ Lap(h / eps1)      (one row moves sum(y) by at most h)
    n~ = n + Z2,      Z2 ~ Lap(1 / eps2)      (one row moves n by 1)

with eps1 = share * eps, eps2 = (1 - share) * eps: eps-DP by basic composition (Dwork & Roth 2014,
Theorems 3.6 and 3.16), and the mean c + S~ / max(n~, 1) clamped to [lower, upper] is
post-processing (Proposition 2.1), as is every interval computed from (S~, n~) alone.

Centring halves the sum's sensitivity (h instead of max(|lower|, |upper|)). The default share 1/2
minimises the worst-case mean squared error of the first-order error (Z1 - m Z2) / n,
m = sum(y) / n in [-h, h]: 2 (h/eps1)^2 + 2 m^2 (1/eps2)^2 <= 2 h^2 (1/eps1^2 + 1/eps2^2) is least
at eps1 = eps2; it uses only the declared bounds (the data's m is private). The share that
would be best for THIS data is shown in the accuracy notes, not used.

Under replace n is public: no count is measured and c + (sum(y) + Lap(2h / eps)) / n is released
(one changed row moves sum(y) by at most upper - lower = 2h), clamped.

The output law on D and D' is computed by numerical integration over the count's noise (the
density of a ratio has no closed form here); :meth:`NoisyMeanMechanism.simulate` draws it
exactly (Monte Carlo). The privacy profile is that of the pair (S~, n~), an upper bound for the
ratio (post-processing), via :func:`dpexplorer.core.mechanisms.laplace.vector_laplace_delta`."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from dpexplorer.core import accuracy as acc
from dpexplorer.core.accounting.guarantees import ApproxDP, PureDP
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import (
    AccuracyReport,
    CentredMoments,
    Curve,
    NumericInput,
    NumericOutput,
    PointMass,
    QueryInput,
    key_selection_guarantee,
    with_key_selection,
)
from dpexplorer.core.mechanisms.laplace import LAPLACE_EPSILON, pure_laplace_profile
from dpexplorer.core.mechanisms.params import Param, probability
from dpexplorer.core.mechanisms.registry import register

SUM_SHARE = probability(
    "sum_share",
    "share of ε for the sum",
    default=0.5,
    log_scale=False,
    slider=(0.05, 0.95),
    help=(
        "How ε is split between the noisy sum (this share) and the noisy count (the rest), under "
        "add/remove. 0.5 gives the smallest error in the worst case over all data within the "
        "bounds; the accuracy view says which share would suit this data best. Ignored under "
        "replace, where the number of rows is public and the whole ε goes to the sum."
    ),
)

Z2_CELLS = 801
"""Cells of the count-noise discretisation in the numerical integration (Z2 over +-40 scales,
cell masses exact; each cell's value taken at its centre)."""

Z2_REACH = 40.0
"""The integration leaves out P(|Z2| > 40 b2) = e^-40 < 5e-18."""


def split(epsilon: float, share: float, counts_public: bool) -> tuple[float, float]:
    """(eps1, eps2): the sums' and the counts' epsilon (everything to the sums when the counts
    are public: one mean under replace)."""
    if counts_public:
        return float(epsilon), 0.0
    return float(epsilon) * share, float(epsilon) * (1.0 - share)


def scales(epsilon: float, share: float, sensitivities: tuple[float, float]) -> tuple[float, float]:
    """(b1, b2): Laplace scales of each centred sum and each count, b = l1 sensitivity / its
    epsilon (b2 = 0 when the counts are public, count sensitivity 0)."""
    sum_l1, count_l1 = sensitivities
    eps1, eps2 = split(epsilon, share, count_l1 == 0)
    return sum_l1 / eps1, (count_l1 / eps2 if count_l1 > 0 else 0.0)


@dataclass(frozen=True)
class RatioLaw:
    """The law of R = clamp(c + (s + Z1) / max(n + Z2, 1), lower, upper), Z1 ~ Lap(b1),
    Z2 ~ Lap(b2) (b2 = 0: Z2 = 0). ``s`` is the true centred sum, ``n`` the true count."""

    lower: float
    upper: float
    s: float
    n: int
    b1: float
    b2: float

    @property
    def centre(self) -> float:
        return (self.lower + self.upper) / 2.0

    @functools.cached_property
    def _noise_cells(self) -> tuple[np.ndarray, np.ndarray]:
        return self._count_noise()

    def _count_noise(self) -> tuple[np.ndarray, np.ndarray]:
        """Denominators max(n + z, 1) at the cell centres of Z2's discretisation and the cells'
        exact masses (a single cell of mass 1 when b2 = 0)."""
        if self.b2 == 0:
            return np.array([max(float(self.n), 1.0)]), np.array([1.0])
        edges = np.linspace(-Z2_REACH, Z2_REACH, Z2_CELLS + 1)
        cdf = np.where(edges < 0, 0.5 * np.exp(np.minimum(edges, 0)), 1 - 0.5 * np.exp(-np.maximum(edges, 0)))
        mass = np.diff(cdf)
        mass /= mass.sum()
        centres = (edges[:-1] + edges[1:]) / 2 * self.b2
        return np.maximum(self.n + centres, 1.0), mass

    def unclamped_cdf(self, r: np.ndarray) -> np.ndarray:
        """P(c + (s + Z1) / max(n + Z2, 1) <= r) (numerical integration over Z2)."""
        r = np.atleast_1d(np.asarray(r, dtype=float))
        den, mass = self._noise_cells
        x = ((r - self.centre)[:, None] * den[None, :] - self.s) / self.b1
        f1 = np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0)), 1 - 0.5 * np.exp(-np.maximum(x, 0)))
        return np.clip(f1 @ mass, 0.0, 1.0)

    def cdf(self, r: np.ndarray) -> np.ndarray:
        """P(R <= r), the atoms at the bounds included."""
        r = np.atleast_1d(np.asarray(r, dtype=float))
        return np.where(r < self.lower, 0.0, np.where(r >= self.upper, 1.0, self.unclamped_cdf(r)))

    def pdf(self, r: np.ndarray) -> np.ndarray:
        """Density of R inside (lower, upper) (its continuous part)."""
        r = np.atleast_1d(np.asarray(r, dtype=float))
        den, mass = self._noise_cells
        x = ((r - self.centre)[:, None] * den[None, :] - self.s) / self.b1
        dens = (np.exp(-np.abs(x)) / (2 * self.b1) * den[None, :]) @ mass
        return np.where((r > self.lower) & (r < self.upper), dens, 0.0)

    def atoms(self) -> tuple[float, float]:
        """(P(R = lower), P(R = upper)): the mass the clamp moves onto each bound."""
        below, at_upper = self.unclamped_cdf(np.array([self.lower, self.upper]))
        return float(below), float(1.0 - at_upper)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        z1 = rng.laplace(0.0, self.b1, size)
        z2 = rng.laplace(0.0, self.b2, size) if self.b2 > 0 else np.zeros(size)
        return np.clip(self.centre + (self.s + z1) / np.maximum(self.n + z2, 1.0), self.lower, self.upper)

    def error_tail(self, truth: float, alphas: np.ndarray) -> np.ndarray:
        """P(|R - truth| > alpha) at each alpha."""
        alphas = np.asarray(alphas, dtype=float)
        high = self.cdf(truth + alphas)
        below = truth - alphas  # P(R < below): the atom at lower counts only if below > lower
        strictly = np.where(below > self.lower, self.cdf(np.nextafter(below, -np.inf)), 0.0)
        return np.clip(1.0 - (high - strictly), 0.0, 1.0)

    def ci_halfwidth(self, truth: float, level: float, rtol: float = 1e-10) -> float:
        """The smallest alpha with P(|R - truth| <= alpha) >= level (root finding, to ``rtol``
        of the rough noise scale; the curves ask for 1e-4)."""
        reach = self.upper - self.lower
        if self.error_tail(truth, np.array([0.0]))[0] <= 1 - level:
            return 0.0
        xtol = max(rtol * self.spread(), 1e-300)
        from scipy import optimize  # imported on first use (start-up cost)

        return float(
            optimize.brentq(
                lambda a: self.error_tail(truth, np.array([a]))[0] - (1 - level), 0.0, reach, xtol=xtol
            )
        )

    def moments_about(self, truth: float) -> tuple[float, float]:
        """(E[R] - truth, E[(R - truth)^2]) by integrating the density on a fine grid (plus the
        two atoms)."""
        grid = self.grid(1201)
        dens = self.pdf(grid)
        low, high = self.atoms()
        weight = np.trapezoid(dens, grid)
        scale = (1.0 - low - high) / weight if weight > 0 else 0.0
        mean = scale * np.trapezoid(grid * dens, grid) + low * self.lower + high * self.upper
        second = (
            scale * np.trapezoid((grid - truth) ** 2 * dens, grid)
            + low * (self.lower - truth) ** 2
            + high * (self.upper - truth) ** 2
        )
        return float(mean - truth), float(second)

    def spread(self) -> float:
        """A rough noise scale of R: b1 / n plus |s / n| b2 / n (first-order error)."""
        n = max(float(self.n), 1.0)
        return self.b1 / n + abs(self.s / n) * self.b2 / n

    def grid(self, points: int = 1201) -> np.ndarray:
        """Points inside (lower, upper) covering the centre +- 30 rough scales."""
        centre = self.centre + self.s / max(float(self.n), 1.0)
        reach = 30.0 * self.spread()
        low, high = max(self.lower, centre - reach), min(self.upper, centre + reach)
        return np.linspace(low, high, points)


def worst_neighbour(moments: CentredMoments, lower: float, upper: float, relation: str) -> CentredMoments:
    """A D' moving both measurements most, for when the data layer gives none. Add/remove: one
    row added at the bound farther from D's mean (count + 1, centred sum +- h, the largest shifts
    of both). Replace: one row moved from one bound to the other (centred sum +- 2h)."""
    to_lower = moments.centred_sum >= 0
    value, other = (lower, upper) if to_lower else (upper, lower)
    if relation == "replace":
        return moments.changed(other, value, lower, upper)
    return moments.changed(None, value, lower, upper)


def _moments_query(query: QueryInput) -> NumericInput:
    query = acc.numeric_query(query)
    if query.moments is None or query.bounds is None or query.moment_sensitivities is None:
        raise NotApplicableError("a noisy sum over a noisy count needs a mean of a clipped column")
    return query


def _primes(query: NumericInput) -> tuple[CentredMoments, ...]:
    assert query.moments is not None and query.bounds is not None
    if query.moments_prime is not None:
        return query.moments_prime
    return tuple(worst_neighbour(m, *query.bounds, query.relation) for m in query.moments)


@register
class NoisyMeanMechanism(acc.ProfileMechanism):
    """Mean as noisy centred sum over noisy count (module docstring): pure epsilon-DP."""

    name: ClassVar[str] = "noisy_mean"
    label: ClassVar[str] = "Noisy sum / noisy count"
    summary: ClassVar[str] = (
        "A mean as a noisy sum over a noisy count (Laplace noise on each, ε split between them), "
        "clamped to the bounds. Pure ε-DP; the error shrinks as 1/n."
    )
    input_type: ClassVar[type] = NumericInput
    output_kind: ClassVar[Literal["numeric"]] = "numeric"
    params: ClassVar[tuple[Param, ...]] = (LAPLACE_EPSILON, SUM_SHARE)
    order: ClassVar[int] = 12

    def accepts(self, query: QueryInput) -> str | None:
        if isinstance(query, NumericInput) and query.moments is not None and query.bounds is not None:
            return None if query.moment_sensitivities is not None else "the query gives no sensitivities"
        return f"{self.label} releases the mean of a clipped column; choose a mean query"

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> PureDP | ApproxDP:
        """PureDP(eps1 + eps2) = PureDP(epsilon) (basic composition, D&R Theorem 3.16); with
        private keys, plus the key selection's declared (epsilon, delta) (adaptive basic
        composition: the means are measured on the kept keys)."""
        return key_selection_guarantee(float(params["epsilon"]), query)

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        return with_key_selection(float(params["epsilon"]), query)

    def all_laws(self, params: Mapping[str, Any], query: QueryInput) -> list[tuple[RatioLaw, RatioLaw]]:
        """The output laws on D and on D' of every coordinate (one per group; D' the query's,
        else :func:`worst_neighbour`)."""
        query = _moments_query(query)
        lower, upper = query.bounds  # type: ignore[misc]
        b1, b2 = scales(params["epsilon"], params["sum_share"], query.moment_sensitivities)  # type: ignore[arg-type]
        return [
            (
                RatioLaw(lower, upper, m.centred_sum, m.count, b1, b2),
                RatioLaw(lower, upper, mp.centred_sum, mp.count, b1, b2),
            )
            for m, mp in zip(query.moments, _primes(query), strict=True)  # type: ignore[arg-type]
        ]

    def laws(self, params: Mapping[str, Any], query: QueryInput) -> tuple[RatioLaw, RatioLaw]:
        """The laws of the coordinate the views show (where D and D' differ most)."""
        i, _ = acc.shown_coordinate(_moments_query(query))
        return self.all_laws(params, query)[i]

    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> NumericOutput:
        """Densities of M(D) and M(D') by numerical integration over the count's noise; the
        clamp's atoms at the bounds as point masses (when above 1e-12)."""
        p, q = self.laws(params, query)
        grid = np.unique(np.concatenate([p.grid(), q.grid()]))
        dp, dq = p.pdf(grid), q.pdf(grid)
        with np.errstate(divide="ignore"):
            loss = acc.privacy_loss(np.log(dp), np.log(dq))
        masses = []
        for (mp, mq), bound in zip(zip(p.atoms(), q.atoms(), strict=True), (p.lower, p.upper), strict=True):
            if max(mp, mq) > 1e-12:
                masses.append(PointMass(f"clamped to {bound:g}", mp, mq, at=float(bound)))
        note = "Densities by numerical integration over the count's noise (no closed form). "
        note += acc.shown_coordinate(_moments_query(query))[1]
        query = _moments_query(query)
        i = acc.shown_coordinate(query)[0]
        if len(query.labels) > i and len(query.labels) > 1:
            note += f" Shown: {query.labels[i]}."
        return NumericOutput(grid, dp, dq, loss, point_masses=tuple(masses), coordinate=i, note=note.strip())

    def privacy_profile(
        self, params: Mapping[str, Any], query: QueryInput, epsilons: np.ndarray
    ) -> np.ndarray:
        """delta(eps) of the pair (S~, n~) between D and D': 0 at eps >= epsilon (pure DP), else
        :func:`vector_laplace_delta` (an upper bound within ~1e-4). The released ratio is
        post-processing of the pair, so this bounds its delta too."""
        shifts = []
        for p, q in self.all_laws(params, query):
            shifts += [(p.s - q.s) / p.b1] + ([(p.n - q.n) / p.b2] if p.b2 > 0 else [])
        return pure_laplace_profile(epsilons, np.array(shifts), float(params["epsilon"]))

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        p, q = self.laws(params, query)
        return (p if on == "D" else q).sample(rng, size)

    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """Error of the released mean against the clipped mean of D: exact tail (numerical
        integration), its CI and MSE; the biases from clipping and from the ratio beside it."""
        query = _moments_query(query)
        i, _ = acc.shown_coordinate(query)
        law = self.laws(params, query)[0]
        truth = float(np.atleast_1d(query.value_d)[i])
        alphas = np.linspace(0.0, max(10 * law.spread(), 1e-12), 200)
        tail = Curve(alphas, law.error_tail(truth, alphas), "α", "P(|error| > α)", "numerical integration")
        half = law.ci_halfwidth(truth, ci_level)
        bias, mse = law.moments_about(truth)
        share = float(params["sum_share"])

        def halfwidth_at(eps: float) -> float:
            b1, b2 = scales(eps, share, query.moment_sensitivities)  # type: ignore[arg-type]
            return RatioLaw(law.lower, law.upper, law.s, law.n, b1, b2).ci_halfwidth(truth, ci_level, 1e-4)

        def halfwidth_at_n(n: float) -> float:  # the same clipped mean over n rows
            s = law.s / max(law.n, 1) * n
            return RatioLaw(law.lower, law.upper, s, int(n), law.b1, law.b2).ci_halfwidth(
                truth, ci_level, 1e-4
            )

        ns = np.unique(np.geomspace(max(law.n / 100, 10), max(law.n, 1) * 10, 20).astype(int))
        return AccuracyReport(
            error_tail=tail,
            error_tail_bound=None,
            ci_level=ci_level,
            ci_halfwidth=half,
            mse=mse,
            error_vs_epsilon=(acc.error_vs_epsilon(halfwidth_at, ci_level),),
            error_vs_n=(
                acc.curve_over(
                    ns,
                    halfwidth_at_n,
                    x_label="n (people)",
                    y_label=f"error bound at {ci_level:.0%}",
                    name="CI half-width (same mean)",
                ),
            ),
            notes=self._notes(params, query, i, bias),
        )

    @staticmethod
    def _notes(params: Mapping[str, Any], query: NumericInput, i: int, bias: float) -> tuple[str, ...]:
        assert query.moments is not None and query.moment_sensitivities is not None
        moments = query.moments[i]
        where = f" (in {query.labels[i]})" if len(query.moments) > 1 and len(query.labels) > i else ""
        clipped = moments.clipped_low + moments.clipped_high
        notes = [f"The error is measured against the clipped mean{where}."]
        if query.partition is not None:
            notes.append(query.partition.describe(query.labels))
        if moments.raw_mean is not None:
            clip_bias = float(np.atleast_1d(query.value_d)[i]) - moments.raw_mean
            notes.append(
                f"Bias from clipping (and from bounding each person's rows, with a privacy unit): "
                f"{clip_bias:+.4g} ({clipped:,} of {moments.count:,} rows outside the bounds); it is "
                "not in the error above."
            )
        notes.append(f"Bias from the ratio and the clamp: {bias:+.3g} (E[output] − clipped mean).")
        sum_l1, count_l1 = query.moment_sensitivities
        if count_l1 > 0:
            m = moments.centred_sum / max(moments.count, 1)
            # minimise (sum_l1/eps1)^2 + m^2 (count_l1/eps2)^2 over eps1 + eps2 = eps:
            # eps1/eps = 1/(1 + (|m| count_l1 / sum_l1)^(2/3))
            best = 1.0 / (1.0 + (abs(m) * count_l1 / sum_l1) ** (2 / 3))
            notes.append(
                f"ε split: {params['sum_share']:.2f} to the sum, the rest to the count. For this "
                f"data a share of {best:.2f} would minimise the error; 0.50 is best when nothing "
                "is known about the mean (it uses only the bounds)."
            )
        else:
            notes.append(f"n = {query.n:,} is public under replace: only the sum is noised.")
        return tuple(notes)
