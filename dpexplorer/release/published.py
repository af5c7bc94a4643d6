"""What a release publishes, after the draw: every value's interval and the steward's declared
post-processing (DESIGN.md, "What a person reads").

**Intervals.** Every released number gets an interval at the release's level, of one of these
kinds (:data:`KINDS`), from public facts and DP outputs only:

* ``noise``: the noise law's interval around the value (Laplace and Gaussian paths, PTR's
  answer, the noisy mean's and variance's intervals from their noisy parts);
* ``exact``: the value is the exact answer (Dist2Instability's median, when its test passes):
  [v, v], which covers with probability one;
* ``range``: no accuracy interval exists without the data (the smooth-sensitivity mechanisms,
  whose noise scale is data-dependent; the exponential mechanism's quantile, whose accuracy is in
  ranks; synthetic data and PMW's fractions): the declared range of the statistic, which holds
  the (clipped) answer always. Conservative by design. (A value outside it, when clamping is
  declared off, lies outside its interval.) A DP quantile adds a rank interval
  (``rank_within``): with probability at least the level, the rows below the released value
  differ from q n by at most ``rank_within`` more than at the best candidate of the grid
  (Dwork & Roth 2014, Thm 3.11).

Categories, ⊥ and an empty group have no interval (None).

**Declared post-processing** (``post_processing`` in a plan entry, fixed before the charge,
recorded in the provenance): functions of the released values and public facts only, so free
under DP; each is applied to the value and its interval, and the interval stays honest because
the true (clipped) answer satisfies every constraint imposed:

* ``clamp_to_range`` (default true): a statistic with a declared range (a mean, a quantile, a
  trimmed mean, a variance, by group too; PMW's and MWEM's fractions of rows: [0, 1]) is
  clamped to it, and its interval moved with the value onto the range and intersected with it
  (:func:`clamped`: it holds the interval's own intersection with the range, and the true
  clipped answer lies in the range, so it covers at least when the interval did); an interval
  that ends equal to the whole range is of kind "range" (issue 41: no estimate better than the
  declared range, and said so);
* ``non_negative`` (default true): a count (a count, a histogram's bins, a count by group, a
  noisy mean's noisy count, MST's and AIM's noisy marginal counts) below zero is published as
  zero, its interval moved with it and cut at zero (:func:`clamped`: a Laplace count at ε = 1
  drawn at -7 reads 0 [0, 3], never 0 [0, 0], which no draw of the noise supports);
* ``integer`` (default false): counts rounded to whole numbers, intervals outward to whole
  numbers (a true count is whole);
* ``empty_groups`` (default true): by group, with a noisy count per group (noisy_mean,
  noisy_variance), a group whose noisy count is below one row (the release's own estimate is
  that it has no rows) publishes :data:`~dpexplorer.release.presentation.EMPTY` for every value
  of the group (no interval) rather than a mean held at a bound of the range.

* ``total_from_entry`` (default none; a histogram released by Laplace or Gaussian noise, given
  the number N of an earlier entry of the plan that releases the count of all rows by Laplace or
  Gaussian noise): the bins are made to add up to that released total T: the least change, a
  common shift (T - sum) / k of the k bins, or with ``non_negative`` the Euclidean projection on
  {x >= 0, sum x = max(T, 0)}, max(x_i - tau, 0). Interval: with h the bins' half-width and h_T
  the total's, both at level 1 - (1 - level) / (k + 1) (a union bound: all k + 1 noises within
  them together with probability >= level), every published bin is within 2 h + h_T of its true
  count (the shift or tau lies in [-(h + h_T / k), h + h_T], since the true bins add up to the
  true total and are >= 0), so x'_i +- (2 h + h_T) covers at the level. Wider than the bin's own
  interval: consistency costs accuracy in the worst case.

Declare an option false to publish without it (e.g. unbiased counts that may be negative, for a
later sum). What was declared is not always what was done: :attr:`Published.applied` says, per
option, whether it was applied to this release, declared off, or had nothing to act on (no
count, no declared range, ...), and the provenance records both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.release.presentation import EMPTY

KINDS = ("noise", "exact", "range")
DEFAULTS: dict[str, Any] = {
    "clamp_to_range": True,
    "non_negative": True,
    "integer": False,
    "empty_groups": True,
    "total_from_entry": None,
}
"""The declared post-processing options and their defaults."""

MARGINAL_COUNTS = "marginals (synthetic data)"
"""The statistic of MST's and AIM's noisy marginals released as they are (release.py's
``_public_facts``): every value a noisy count of the rows in a cell."""
COUNT_STATISTICS = frozenset({"count", "predicate_count", "histogram", MARGINAL_COUNTS})
"""Statistics whose values are counts of rows (public_facts ``statistic``)."""
WHOLE_STATISTICS = frozenset({"synthetic table"})
"""Statistics whose every value is a whole number without being a noisy count (a synthetic
table's numbers of records and of measured marginals: release/synthetic_tables.py)."""
EXACT_MECHANISMS = frozenset({"dist2instability"})
"""Mechanisms that release the exact answer when they answer."""
FRACTION_MECHANISMS = frozenset({"pmw", "mwem"})
"""Mechanisms that release fractions of the rows (each in [0, 1])."""
HELPER_SUFFIX = "(noisy)"
"""Labels of helper values (a noisy count, a noisy centred sum) end so."""
COUNT_HELPER = "count (noisy)"


def declared(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The full set of options: ``options`` over :data:`DEFAULTS`; InvalidParameterError for an
    unknown option, a value that is not true/false, or a ``total_from_entry`` that is not an
    entry number (a whole number >= 1)."""
    given = dict(options or {})
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise InvalidParameterError(
            f"unknown post-processing option {unknown[0]!r}; known: {', '.join(DEFAULTS)}"
        )
    for key, value in given.items():
        if key == "total_from_entry":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise InvalidParameterError(
                    f"total_from_entry must be a plan entry's number (1, 2, ...), got {value!r}"
                )
            continue
        if not isinstance(value, bool):
            raise InvalidParameterError(
                f"post-processing option {key!r} must be true or false, got {value!r}"
            )
    return {**DEFAULTS, **given}


@dataclass(frozen=True)
class Published:
    """The values a release publishes, each with its interval (None for none) and the interval's
    kind (:data:`KINDS`, None with no interval); ``rank_within`` (a DP quantile) the rank
    interval's half-width in rows; ``changed`` whether post-processing changed a value;
    ``applied`` per option of :data:`DEFAULTS`, what was done (:func:`applied_words`)."""

    values: tuple[float | str, ...]
    intervals: tuple[tuple[float, float] | None, ...]
    kinds: tuple[str | None, ...]
    rank_within: int | None = None
    changed: bool = False
    applied: Mapping[str, str] = field(default_factory=dict)


def _finite_range(facts: Mapping[str, Any], mechanism: str = "") -> tuple[float, float] | None:
    """The statistic's declared range when both ends are finite ([0, 1] for fractions of rows)."""
    if mechanism in FRACTION_MECHANISMS:
        return 0.0, 1.0
    span = facts.get("output_range")
    if not span or span[0] is None or span[1] is None:
        return None
    low, high = float(span[0]), float(span[1])
    return (low, high) if math.isfinite(low) and math.isfinite(high) else None


def _is_helper(label: str) -> bool:
    return label.endswith(HELPER_SUFFIX)


def _is_count(label: str, statistic: str) -> bool:
    return label.endswith(COUNT_HELPER) or (statistic in COUNT_STATISTICS and not _is_helper(label))


def integral_flags(statistic: str, labels: Sequence[str]) -> tuple[bool, ...]:
    """Which released values are whole numbers, shown without decimals: counts of rows, and every
    value of a :data:`WHOLE_STATISTICS` statistic."""
    return tuple(statistic in WHOLE_STATISTICS or _is_count(label, statistic) for label in labels)


@dataclass(frozen=True)
class Drawn:
    """A release's drawn values with what their intervals are read from: the mechanism, the
    public facts, the provenance and DP outputs of its exact path, and ``noise``, the noise
    law's intervals (fixed-width ones) if the path has them. Public facts and DP outputs only."""

    mechanism: str
    public_facts: Mapping[str, Any]
    provenance: Mapping[str, Any]
    dp_outputs: Mapping[str, Any]
    labels: Sequence[str]
    values: Sequence[float | str]
    noise: Sequence[tuple[float, float] | None] | None


def raw_intervals(drawn: Drawn) -> tuple[list[tuple[float, float] | None], list[str | None]]:
    """Each value's interval and its kind before post-processing (module docstring)."""
    mechanism, labels, values, noise = drawn.mechanism, drawn.labels, drawn.values, drawn.noise
    computed = drawn.dp_outputs.get("confidence_intervals")
    span = _finite_range(drawn.public_facts, mechanism)
    intervals: list[tuple[float, float] | None] = []
    kinds: list[str | None] = []
    for i, value in enumerate(values):
        if not isinstance(value, float | int) or isinstance(value, bool):
            intervals.append(None)
            kinds.append(None)
            continue
        v = float(value)
        if noise is not None and noise[i] is not None:
            low, high = noise[i]  # type: ignore[misc]
            intervals.append((float(low), float(high)))
            kinds.append("noise")
        elif computed is not None and i < len(computed) and computed[i] is not None:
            intervals.append((float(computed[i][0]), float(computed[i][1])))
            kinds.append("noise")
        elif mechanism in EXACT_MECHANISMS:
            intervals.append((v, v))
            kinds.append("exact")
        elif span is not None and not _is_helper(labels[i]):
            intervals.append(span)
            kinds.append("range")
        elif mechanism == "blr":  # counts of a synthetic dataset of a declared size
            intervals.append((0.0, float(sum(float(x) for x in values if is_number(x)))))
            kinds.append("range")
        else:
            intervals.append(None)
            kinds.append(None)
    return intervals, kinds


def _cut(interval: tuple[float, float], low: float, high: float) -> tuple[float, float]:
    """``interval`` intersected with [low, high] (when disjoint: the nearer end, twice)."""
    a = min(max(interval[0], low), high)
    b = min(max(interval[1], low), high)
    return a, b


def clamped(
    value: float, interval: tuple[float, float] | None, low: float, high: float
) -> tuple[float, tuple[float, float] | None]:
    """``value`` clamped to [low, high] and its interval: the interval moved with the value
    (the same distances below and above it), joined with the interval itself, then cut to
    [low, high]. Guaranteed: it contains ``interval`` cut to [low, high], so it covers the true
    (clipped) answer, which lies in [low, high], whenever ``interval`` did (a plain cut would
    cover as often, but a noisy count far below zero made it [0, 0]: certainty the noise never
    gives). A value inside [low, high] keeps its interval's cut unchanged."""
    v = min(max(value, low), high)
    if interval is None:
        return v, None
    shift = v - value
    moved = (min(interval[0], interval[0] + shift), max(interval[1], interval[1] + shift))
    return v, _cut(moved, low, high)


def publish(
    drawn: Drawn,
    *,
    options: Mapping[str, Any] | None = None,
    groups: int = 0,
    level: float = 0.95,
    consistent: tuple[float, Callable[[float], float], Callable[[float], float]] | None = None,
) -> Published:
    """The published values, intervals and kinds: :func:`raw_intervals`, then the declared
    post-processing ``options`` (:func:`declared`; module docstring). ``groups`` the number of
    released groups of a statistic by group (0 otherwise): its values are one group after
    another, all of a group's parts together. ``consistent``: (released total, its half-width at
    a level, the bins' half-width at a level) for ``total_from_entry``."""
    chosen = declared(options)
    labels, values = drawn.labels, drawn.values
    statistic = str(drawn.public_facts.get("statistic", ""))
    intervals, kinds = raw_intervals(drawn)
    out: list[float | str] = list(values)
    if consistent is not None:
        out, intervals = _consistent(out, consistent, level, non_negative=chosen["non_negative"])
        kinds = ["noise"] * len(out)
    span = _finite_range(drawn.public_facts, drawn.mechanism)
    acted = {"total_from_entry": consistent is not None}
    for i, value in enumerate(out):
        if not isinstance(value, float | int) or isinstance(value, bool):
            continue
        v, ci = float(value), intervals[i]
        ranged = span is not None and not _is_helper(labels[i])
        acted["clamp_to_range"] = acted.get("clamp_to_range", False) or ranged
        if chosen["clamp_to_range"] and span is not None and ranged:
            v, ci = clamped(v, ci, *span)
            if ci == span and kinds[i] == "noise":  # the clamp filled the range: no estimate in it
                kinds[i] = "range"
        if _is_count(labels[i], statistic):
            acted["non_negative"] = acted["integer"] = True
            if chosen["non_negative"]:
                v, ci = clamped(v, ci, 0.0, math.inf)
            if chosen["integer"]:
                v = float(round(v))
                ci = None if ci is None else (float(math.floor(ci[0])), float(math.ceil(ci[1])))
        out[i], intervals[i] = v, ci
    acted["empty_groups"] = bool(groups) and any(label.endswith(COUNT_HELPER) for label in labels)
    if chosen["empty_groups"] and groups:
        _mark_empty(values, out, intervals, kinds, labels, groups)
    rank = drawn.provenance.get("rank_within_rows")
    changed = any(a != b for a, b in zip(out, values, strict=True))
    return Published(
        tuple(out),
        tuple(intervals),
        tuple(kinds),
        None if rank is None else int(rank),
        changed,
        applied_words(chosen, acted),
    )


NOTHING_TO_ACT_ON = {
    "clamp_to_range": "not applicable: no value has a declared range",
    "non_negative": "not applicable: no value is a count of rows",
    "integer": "not applicable: no value is a count of rows",
    "empty_groups": "not applicable: no group has a noisy count",
    "total_from_entry": "not declared",
}
"""Why a declared option did nothing to a release (:func:`applied_words`)."""


def applied_words(chosen: Mapping[str, Any], acted: Mapping[str, bool]) -> dict[str, str]:
    """Per option of :data:`DEFAULTS`: ``"applied"`` when it is declared on (true, or an entry
    number) and the release has values it acts on (``acted``), ``"off (declared false)"``, or
    why it had nothing to act on (:data:`NOTHING_TO_ACT_ON`). "Applied" says the option was
    imposed, not that it changed a value (``values_before`` says that)."""
    words = {}
    for option in DEFAULTS:
        declared_on = chosen[option] is not None and chosen[option] is not False
        if declared_on and acted.get(option, False):
            words[option] = "applied"
        elif option != "total_from_entry" and not declared_on:
            words[option] = "off (declared false)"
        else:
            words[option] = NOTHING_TO_ACT_ON[option]
    return words


def _consistent(
    values: Sequence[float | str],
    consistent: tuple[float, Callable[[float], float], Callable[[float], float]],
    level: float,
    *,
    non_negative: bool,
) -> tuple[list[float | str], list[tuple[float, float] | None]]:
    """The bins made to add up to the released total, and their intervals (module docstring)."""
    total, total_at, bins_at = consistent
    x = np.asarray([float(v) for v in values])
    k = len(x)
    shared = 1 - (1 - level) / (k + 1)
    reach = 2 * bins_at(shared) + total_at(shared)
    if non_negative:
        adjusted = _simplex(x, max(float(total), 0.0))
    else:
        adjusted = x + (float(total) - float(x.sum())) / k
    return [float(v) for v in adjusted], [(float(v) - reach, float(v) + reach) for v in adjusted]


def _simplex(x: np.ndarray, total: float) -> np.ndarray:
    """The Euclidean projection of ``x`` on {y >= 0, sum y = total}: max(x - tau, 0) for the tau
    that makes it add up (sort-based; Held, Wolfe & Crowder 1974)."""
    if total == 0:
        return np.zeros_like(x)
    ordered = np.sort(x)[::-1]
    sums = np.cumsum(ordered) - total
    index = np.arange(1, len(x) + 1)
    last = int(np.nonzero(ordered - sums / index > 0)[0][-1])
    tau = sums[last] / (last + 1)
    return np.maximum(x - tau, 0.0)


def _mark_empty(
    drawn: Sequence[float | str],
    out: list[float | str],
    intervals: list[tuple[float, float] | None],
    kinds: list[str | None],
    labels: Sequence[str],
    groups: int,
) -> None:
    """Every value of a group whose noisy count is below one row -> EMPTY (the count as drawn,
    before ``non_negative``: :func:`publish` passes the values before post-processing)."""
    per = len(out) // groups
    for g in range(groups):
        part = range(g * per, (g + 1) * per)
        counts = [j for j in part if labels[j].endswith(COUNT_HELPER)]
        if not counts:
            continue
        if float(drawn[counts[0]]) < 1:
            for k in part:
                out[k], intervals[k], kinds[k] = EMPTY, None, None


def is_number(value: Any) -> bool:
    """A released value that is a number (not a category, ⊥ or EMPTY)."""
    return isinstance(value, float | int) and not isinstance(value, bool)
