"""Exact release paths of the synthetic-data mechanisms BLR and MWEM.

BLR (Blum, Ligett & Roth 2013; the net mechanism, Dwork & Roth 2014, Section 4.1) is the
exponential mechanism (McSherry & Talwar 2007) over all C(N + m - 1, m) histograms h of m
synthetic rows with weight exp(u(h) / sigma), u = -max_i |q_i(D) - q_i(h)|, sigma = 2 / (n eps),
that is exp(-(eps / 2) n max_i |q_i(D) - q_i(h)|): a score in counts of sensitivity 1 with the
private n inside it (:mod:`dpexplorer.core.mechanisms.blr`, "No public n"). The error is
v(h) / (n_D m) with an integer v (:class:`~dpexplorer.core.mechanisms.blr.ErrorLevels`), so the
weight is exp(-c v) with the rational c = eps / (2 m). Exact sampling: one pass
counts the N_v candidates at each level v; the level is drawn with probability exactly
N_v exp(-c (v - v_min)) / sum (:func:`~.lazy.pick_index`: inversion of the CDF with a lazy uniform
against rigorous interval bounds of the weights); then a candidate uniformly among the N_v of that
level (an exact uniform integer, and a second pass to find it). So P(h) = exp(-c v(h)) / Z
exactly. Charged PureDP(eps), the mechanism's claim (seed 000, Theorem 12.6).

MWEM (Hardt, Ligett & McSherry 2012, Algorithm 1), T rounds of two steps each:

0. the denominator n_hat: the public n under replace; under add/remove, where n is private, a
   noisy row count bought with the declared share of eps (:mod:`.row_count`), eps' the rest;
1. selection by the exponential mechanism at eps' / (2T), utility |q_r(A) - c_r / n_hat| (c_r
   the integer count; q_r(A) is computed in floats from past noisy measurements only, so it is
   public, and exact as a Fraction), Delta_u = 1/n_hat, sigma = 2 / (n_hat eps' / (2T)):
   exact rejection sampling (:func:`.selection_paths.exponential_pick`, CKS 2020 Bernoulli);
2. measurement of c_r with discrete Laplace noise (Canonne, Kamath & Steinke 2020, Algorithm 2)
   of scale t/s >= 2T / eps' counts (:func:`.exact.discrete_scale`; sensitivity 1 count), so
   (s/t)-DP with s/t <= eps' / (2T); the noisy share (c_r + Z) / n_hat feeds the update;
3. the multiplicative-weights update (:func:`~dpexplorer.core.mechanisms.mwem.mw_update`; floats:
   post-processing).

Released: the average of A_1..A_T over the cells, as the core releases it. Charged
PureDP(eps_n + eps' / 2 + T s / t), rounded up to a float, which is <= eps (basic composition;
Dwork & Roth 2014, Theorem 3.16). Nothing before the charge depends on n."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
from mpmath.ctx_iv import MPIntervalContext

from dpexplorer.core.mechanisms.base import Mechanism, WorkloadInput
from dpexplorer.core.mechanisms.blr import BLR, ErrorLevels
from dpexplorer.core.mechanisms.mwem import mw_update
from dpexplorer.core.mechanisms.pmw import workload_answers
from dpexplorer.core.stages import stage
from dpexplorer.release import samplers
from dpexplorer.release.exact import ExactRelease, discrete_scale, finite_fractions
from dpexplorer.release.lazy import Bounds, fraction_bounds, pick_index, rational
from dpexplorer.release.rational import float_up
from dpexplorer.release.row_count import Denominator, true_counts
from dpexplorer.release.samplers import BitSource
from dpexplorer.release.selection_paths import exponential_pick, gaps

BLR_SAMPLER = (
    "BLR exponential mechanism, exact: error level by CDF inversion with a lazy uniform against "
    "interval bounds of N_v exp(-c v), then a uniform candidate of that level"
)
MWEM_SAMPLER = (
    "MWEM with exact exponential-mechanism selection (rejection, CKS 2020 Bernoulli(exp(-gamma))) "
    "and CKS 2020 discrete Laplace measurements of the counts"
)


# ------------------------------------------------------------------ BLR
def _outward(bounds: Bounds | None, bits: int) -> Bounds:
    """``bounds`` widened outward to multiples of 2^-bits (still rigorous; keeps the Fractions
    small when a weight is as tiny as exp(-20000))."""
    assert bounds is not None  # exp of a finite argument is finite
    scale = 1 << bits
    return Fraction(math.floor(bounds[0] * scale), scale), Fraction(math.ceil(bounds[1] * scale), scale)


def level_weights(levels: Sequence[int], numbers: Sequence[int], c: Fraction) -> Callable[..., list[Bounds]]:
    """``weight_bounds`` for :func:`pick_index`: rigorous bounds of N_v exp(-c (v - v_min)) per
    level (mpmath interval arithmetic at the context's precision p, rounded outward to multiples
    of 2^-p: the largest weight is N_vmin >= 1, so the bounds still tighten as p grows). A
    weight with gamma >= 0.7 (p + b), b the bit length of N_v, is below 2^-p (0.7 > ln 2) and
    gets [0, 2^-p] without evaluating exp."""
    low = min(levels)

    def bounds(ctx: MPIntervalContext) -> list[Bounds]:
        out = []
        for v, number in zip(levels, numbers, strict=True):
            gamma = c * (v - low)
            if gamma >= Fraction(7, 10) * (ctx.prec + number.bit_length()):
                out.append((Fraction(0), Fraction(1, 1 << ctx.prec)))
                continue
            weight = ctx.exp(-rational(ctx, gamma)) * number
            out.append(_outward(fraction_bounds(weight), ctx.prec))
        return out

    return bounds


def blr_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: WorkloadInput, ci_level: float
) -> ExactRelease:
    """BLR's synthetic histogram (m rows over the cells), drawn exactly (module docstring);
    refused like the mechanism (more than ``max_candidates`` candidates, or too large a universe)
    before anything is charged. The counting pass runs in ``draw`` (after the charge)."""
    assert isinstance(mechanism, BLR)
    m = mechanism.check_size(params, query)
    levels = ErrorLevels(query, m)
    epsilon = float(params["epsilon"])
    c = levels.exponent(epsilon)

    @cache
    def counts() -> dict[int, int]:  # one pass, shared by repeated draws of this release
        with stage("BLR: scoring every candidate synthetic dataset") as report:
            return levels.counts(progress=report)

    def draw(bits: BitSource) -> np.ndarray:
        by_level = counts()
        level = list(by_level)[pick_index(level_weights(list(by_level), list(by_level.values()), c), bits)]
        return levels.candidate(level, bits.randbelow(by_level[level]))

    provenance = {
        "synthetic_rows_m": m,
        "candidates": str(levels.total),
        "utility": "-max_i |c_i(D) - n(D) q_i(h)| in counts, sensitivity 1 (no public n needed)",
        "released": "synthetic histogram: rows per cell, summing to m",
    }
    return _cells_release(epsilon, BLR_SAMPLER, query, draw, provenance)


def _cells_release(
    epsilon: float,
    sampler: str,
    query: WorkloadInput,
    draw: Callable[[BitSource], np.ndarray],
    provenance: dict[str, Any],
    **fields: Any,
) -> ExactRelease:
    """A pure ``epsilon``-DP release of one number per cell of the query's universe (BLR's
    synthetic histogram, MWEM's distribution): ``draw`` gives the cells' values after the
    charge, released as floats labelled by the cells; ``fields`` as :class:`ExactRelease`'s."""
    return ExactRelease.pure(
        epsilon,
        sampler=sampler,
        labels=tuple(query.cell_labels),
        draw=lambda bits: [float(x) for x in draw(bits)],
        provenance=provenance,
        **fields,
    )


# ------------------------------------------------------------------ MWEM
@dataclass(frozen=True)
class MWEMSteps:
    """The two private steps of an MWEM round, exact (module docstring). ``counts`` are the true
    integer counts (never published); ``denominator`` is n_hat (public: the public n, or the
    noisy row count already drawn); ``t / s`` the measurement's discrete Laplace scale."""

    counts: tuple[int, ...]
    denominator: int
    sigma: Fraction
    t: int
    s: int

    def select(self, approx: np.ndarray, bits: BitSource) -> int:
        """A query index drawn with probability exactly proportional to
        exp(|q_r(A) - c_r / n_hat| / sigma) (``approx`` = q(A), public floats)."""
        public = finite_fractions(approx, "synthetic answer")
        utility = [abs(a - Fraction(c, self.denominator)) for a, c in zip(public, self.counts, strict=True)]
        return exponential_pick(gaps(utility, self.sigma), bits)

    def measure(self, choice: int, bits: BitSource) -> Fraction:
        """(c_r + Z) / n_hat with Z discrete Laplace of scale t/s, exactly."""
        noise = samplers.discrete_laplace(Fraction(self.t, self.s), bits)
        return Fraction(self.counts[choice] + noise, self.denominator)


@dataclass(frozen=True)
class MWEMPlan:
    """What is fixed before the charge, from public facts only: the per-step epsilon and the
    measurement's scale (t, s), and the exact total charged."""

    step: Fraction
    t: int
    s: int
    charged: Fraction

    def steps(self, counts: tuple[int, ...], denominator: int) -> MWEMSteps:
        return MWEMSteps(counts, denominator, 2 / (denominator * self.step), self.t, self.s)


def mwem_plan(params: Mapping[str, Any], rows: Denominator) -> MWEMPlan:
    """Steps at epsilon' / (2T) each (epsilon' = what the row count leaves); the measurement's
    scale is rounded up (0.1% at most). Charged: the count's s_n/t_n plus T selections at
    epsilon'/(2T) and T measurements at s/t <= epsilon'/(2T), so at most epsilon."""
    rounds = int(params["rounds"])
    step = rows.rest / (2 * rounds)
    t, s = discrete_scale(1 / step)
    count = Fraction(rows.scale[1], rows.scale[0]) if rows.scale is not None else Fraction(0)
    return MWEMPlan(step, t, s, count + rounds * (step + Fraction(s, t)))


def mwem_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: WorkloadInput, ci_level: float
) -> ExactRelease:
    """MWEM's averaged synthetic distribution over the cells, with exact private steps; the
    denominator is drawn after the charge (module docstring)."""
    rows, rounds = Denominator.for_query(query, params), int(params["rounds"])
    plan = mwem_plan(params, rows)
    counts = true_counts(query)
    cells = query.workload.shape[1]
    facts: dict[str, Any] = {}

    def draw(bits: BitSource) -> np.ndarray:
        steps = plan.steps(counts, rows.draw(bits))
        facts["denominator"] = steps.denominator
        current, total = np.full(cells, 1.0 / cells), np.zeros(cells)
        selected: list[int] = []
        measured: list[float] = []
        with stage("MWEM: selecting and measuring queries, round by round") as report:
            for r in range(rounds):
                report(r / rounds)
                selected.append(steps.select(workload_answers(query.workload, current), bits))
                measured.append(float(steps.measure(selected[-1], bits)))
                current = mw_update(query.workload, current, np.array(selected), np.array(measured))
                total += current
        return total / rounds

    provenance = {
        **rows.describe(),
        "rounds": rounds,
        "selection_epsilon_per_round": float(plan.step),
        "measurement_noise_scale_counts": f"{plan.t}/{plan.s}",
        "released": "average of the T synthetic distributions over the cells (sums to 1)",
    }
    return _cells_release(float_up(plan.charged), MWEM_SAMPLER, query, draw, provenance, dp_outputs=facts)
