"""Private partition selection on the release path: a statistic by group whose keys are private
(:class:`~dpexplorer.data.queries.PrivateKeys`).

The data layer hands over the statistic on every candidate key (the key values that keep a row
after contribution bounding: a private set) and each candidate's number of persons c_i
(:class:`~dpexplorer.core.partition_selection.Candidates`; rows when each row is a person). The
release then

1. draws for each candidate discrete Laplace noise Z_i of scale t/s >= k / eps_sel (k the keys
   per person; rounded up by :func:`~dpexplorer.core.partition_selection.selection_rule`) and
   keeps the candidate when c_i + Z_i >= tau, tau = :func:`~dpexplorer.core.partition_selection.threshold_for`
   (t, s, delta, k): the smallest threshold whose delta, exact for the worst neighbour (a person
   bringing k new keys of count 1), is at most the declared delta;
2. publishes the statistic's own exact path (:mod:`.ratio_paths`) on the kept candidates only.
   That path's noise is independent per coordinate and its grid and scales depend on public facts
   only (k, not min(k, groups)), so publishing the kept coordinates of a draw over all candidates
   is the measurement of the kept keys, with a key absent from D measured as an empty group.

Guarantee: the selection is (k s / t, delta_sel)-DP (Korolova, Kenthapadi, Mishra & Ntoulas
2009; Wilson et al. 2020, Theorem 1; Desfontaines, Voss, Gipson & Mandayam 2022), the measurement
eps_m-DP for every fixed key set; adaptive basic composition (Dwork & Roth 2014, Theorem 3.16)
gives (k s / t + eps_m, delta_sel)-DP, charged as ApproxDP(that epsilon rounded up, the declared
delta >= delta_sel).

Published before the draw (public facts only): the threshold, the noise scale, the declared and
the exact delta, the rule in words and the chance of keeping a key as a function of its number
of persons. The kept keys, their labels and their values are DP outputs (``dp_outputs``).
Never published: the number of candidate keys, their counts, which keys were dropped."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpexplorer.core.accounting.guarantees import ApproxDP
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.partition_selection import (
    Candidates,
    count_at_probability,
    keep_probability,
    selection_rule,
)
from dpexplorer.release import samplers
from dpexplorer.release.exact import ExactRelease, Value
from dpexplorer.release.rational import float_up
from dpexplorer.release.samplers import BitSource

SUPPORTED = {"noisy_mean": "mean", "laplace": "histogram", "dp_quantile": "quantile"}
"""Mechanism -> the statistic by group whose exact path has no public parameter depending on the
number of groups: the noisy mean (its grid and scales use k, not the groups), Laplace on counts
(integers on the unit grid, whose l1 sensitivity on the grid is the count's own), and the DP
quantile (one exponential-mechanism draw per group over the declared grid, at epsilon / k with
the score sensitivity times r: a key absent from D is an empty group, whose draw is uniform)."""

SAMPLER = (
    "partition selection: discrete Laplace on each candidate key's number of persons, kept at a threshold"
)


def refusal(mechanism: str, statistic: str) -> str | None:
    """Why ``mechanism`` cannot release ``statistic`` by private keys (None: it can). Decided
    from the mechanism's name and the declared statistic only, never from the data."""
    if SUPPORTED.get(mechanism) == statistic:
        return None
    return (
        "by privately selected keys, a mean is released with the noisy mean (noisy_mean), a "
        "count with the Laplace mechanism (laplace) and a quantile with the DP quantile "
        "(dp_quantile) for now; declare the keys to use this mechanism"
    )


def rule(candidates: Candidates) -> tuple[int, int, int, float]:
    """(t, s, threshold, exact delta) of the selection: scale t/s >= k / epsilon (module
    docstring). Public facts only: k, epsilon and delta."""
    t, s, threshold, delta = selection_rule(candidates.epsilon, candidates.delta, candidates.max_keys)
    assert Fraction(t, s) >= Fraction(candidates.max_keys) / Fraction(candidates.epsilon)
    return t, s, threshold, delta


def _describe(candidates: Candidates, t: int, s: int, threshold: int, delta: float) -> dict[str, Any]:
    k = candidates.max_keys
    return {
        "keys_selection": {
            "rule": f"a candidate key is released when its number of persons (after bounding each "
            f"person to {k} key(s)) plus discrete Laplace noise of scale {t}/{s} is at least {threshold}",
            "threshold": threshold,
            "noise_discrete_scale": f"{t}/{s}",
            "keys_per_person": k,
            "epsilon_declared": candidates.epsilon,
            "epsilon_charged": float_up(Fraction(k * s, t)),
            "delta_declared": candidates.delta,
            "delta_exact": delta,
            "delta_formula": "1 - (1 - P(1 + Z >= threshold))^k, Z the noise (a person bringing k new keys)",
            "keep_probability_by_persons": {
                str(c): keep_probability(c, t, s, threshold)
                for c in sorted({1, threshold // 2, threshold - 1, threshold, threshold + 5, threshold + 20})
                if c >= 1
            },
            "persons_kept_with_probability_0.5": count_at_probability(t, s, threshold, 0.5),
            "persons_kept_with_probability_0.99": count_at_probability(t, s, threshold, 0.99),
            "not_published": "the number of candidate keys, their counts, and which were dropped",
        }
    }


def select_keys(inner: ExactRelease, candidates: Candidates, level: float) -> ExactRelease:
    """``inner`` (the statistic on every candidate) released on the keys a noisy threshold keeps
    (module docstring). Every interval (one per kept value, at ``level``) goes to ``dp_outputs``:
    how many there are is a DP output too."""
    t, s, threshold, delta = rule(candidates)
    if inner.provenance.get("grid_exponent", 0) != 0 and "sum_noise_scale" not in inner.provenance:
        # a count off the unit grid would add one step per group to the grid's sensitivity
        raise NotApplicableError("the counts' noise is too large for the unit grid: raise epsilon")
    if delta > candidates.delta:  # threshold_for guarantees this; a wrong delta is worse than a crash
        raise NotApplicableError("the key selection's threshold misses its delta")
    d = len(candidates.persons)
    block = len(inner.labels) // d if d else 0
    epsilon = float_up(Fraction(inner.epsilon) + Fraction(candidates.max_keys * s, t))
    facts: dict[str, Any] = {}
    half = inner.ci_halfwidth
    provenance = {**inner.provenance, **_describe(candidates, t, s, threshold, delta)}
    if half is not None:
        provenance["ci_halfwidth"] = half  # the intervals themselves are listed per kept key

    def draw(bits: BitSource) -> list[Value]:
        noise = samplers.discrete_laplace_array(t, s, d, bits)
        kept = [i for i in range(d) if candidates.persons[i] + int(noise[i]) >= threshold]
        values = inner.draw(bits)
        chosen = [j for i in kept for j in range(i * block, (i + 1) * block)]
        facts.clear()
        facts["kept_keys"] = [list(candidates.keys[i]) for i in kept]
        facts["labels"] = [inner.labels[j] for j in chosen]
        intervals = inner.dp_outputs.get("confidence_intervals")
        if intervals is not None:
            facts["confidence_intervals"] = [intervals[j] for j in chosen]
            facts["confidence_level"] = inner.dp_outputs.get("confidence_level")
        elif half is not None:  # a public width around each released value: one per kept key
            facts["confidence_intervals"] = [
                [float(values[j]) - half, float(values[j]) + half] for j in chosen
            ]
            facts["confidence_level"] = level
        return [values[j] for j in chosen]

    return ExactRelease(
        guarantee=ApproxDP(epsilon, candidates.delta),
        epsilon=epsilon,
        delta=candidates.delta,
        rho=None,
        sampler=f"{inner.sampler}; {SAMPLER}",
        labels=(),  # the released labels are a DP output (dp_outputs["labels"])
        draw=draw,
        provenance=provenance,
        dp_outputs=facts,
    )
