"""Statistics by group (:class:`~dpexplorer.data.queries.GroupBy`) on D and on a neighbour D',
with their sensitivities, from the engine's per-group aggregates.

Keys are declared (public), so every group is released. One row lies in exactly one group, so a
neighbour changes one group (add/remove) or two (replace moves a row between groups): parallel
composition (McSherry 2009, Theorem 4) gives the vector's sensitivities below, for values clipped
to [L, U], M = max(|L|, |U|), W = U - L, h = W / 2 (each exact: reached by the D' named):

| statistic | add/remove l1 = l2 | replace l1 | replace l2 |
| --- | --- | --- | --- |
| count | 1 | 2 | sqrt 2 |
| sum | M | max(W, 2M) | max(W, sqrt 2 M) |
| mean (empty group: the midpoint) | h | W | W |

and, for the noisy sum over noisy count (``moment_sensitivities``), the centred sums and the
counts: (h, 1) under add/remove, (2h, 2) under replace (the group sizes stay private).

With a privacy unit (:class:`~dpexplorer.data.queries.PrivacyUnit`: at most k groups per person,
at most r rows per person in each, after :class:`~dpexplorer.data.engine.BoundContributions`)
the relation is add/remove one person with all their rows, and one person changes at most
k' = min(k, number of groups) groups, each by at most r rows:

| statistic | l1 | l2 |
| --- | --- | --- |
| count | k' r | sqrt(k') r |
| sum | k' r M | sqrt(k') r M |
| mean | k' r W / (r + 1) | sqrt(k') r W / (r + 1) |

(a group {L} joined by r rows at U moves its mean by r W / (r + 1), at least h for r >= 1, which
also covers an empty group), and (k' r h, k' r) for the centred sums and counts. D' removes the
person who moves the statistic most (l1 over the groups).

Private keys (:class:`~dpexplorer.data.queries.PrivateKeys`) are resolved in
:mod:`dpexplorer.data.private_groups`: the groups (:class:`Groups`) are then the combinations of
key values that keep a row after bounding, found sparsely (never the cross product of each
column's values), and the builders below run on those alone. Their number is private, so k' = k
(not min(k, groups)) in every sensitivity: nothing public depends on the candidates. A quantile
by private keys carries each candidate's sorted clipped values on D and D' (D' adds a person to
a candidate group, the one whose quantile moves most); each candidate's exponential mechanism
then runs at epsilon / k with the score sensitivity times r, as for declared keys."""

from __future__ import annotations

import itertools
import math
import secrets
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.mechanisms.base import CentredMoments, NumericInput, Relation
from dpexplorer.core.sensitivity import quantile_rank
from dpexplorer.data.aggregates import aggregate
from dpexplorer.data.engine import (
    BoundContributions,
    CellCounts,
    DistinctCount,
    GroupedCentredSums,
    GroupedSortedClipped,
    PersonContributions,
    RowCount,
    RowStep,
)
from dpexplorer.data.errors import DataError
from dpexplorer.data.queries import GroupBy

Steps = tuple[RowStep, ...]

EXPLORATION_SEED = 20261124
"""The seed of the privacy unit's random choice of rows in the exploration (reproducible views);
a release passes no seed, so :func:`checked_seed` draws one from the OS CSPRNG (``secrets``), once
per release, for every aggregate of that release."""


def bounding_steps(query: GroupBy, seed: int | None) -> Steps:
    """The row steps of the query's privacy unit (none without one)."""
    if query.unit is None:
        return ()
    unit = query.unit
    return (BoundContributions(unit.column, query.keys, unit.max_groups, unit.max_rows, seed),)


def group_moments(
    dataset: Any, query: GroupBy, steps: Steps = (), exact: bool = False
) -> tuple[CentredMoments, ...]:
    """Per-group :class:`CentredMoments` of the clipped column (row-major over the keys); with
    ``exact``, their exact lattice sums as well (engine/base.py: for a release)."""
    request = GroupedCentredSums(
        str(query.column),
        float(query.lower),  # type: ignore[arg-type]
        float(query.upper),  # type: ignore[arg-type]
        query.keys,
        exact=exact,
    )
    return aggregate(dataset, request, steps)


def _exact_statistic(query: GroupBy, moments: tuple[CentredMoments, ...]) -> tuple[Fraction, ...] | None:
    """The per-group sum or mean exactly, from the exact centred sums (None without them). Each
    row adds y + c, y on its lattice in [-h, h] and c = (lower + upper) / 2 as a rational, so a
    row's part of a group's sum lies in [lower, upper] exactly, as the sensitivity assumes."""
    if query.statistic not in ("sum", "mean") or any(m.exact_sums is None for m in moments):
        return None
    mid = (Fraction(query.lower) + Fraction(query.upper)) / 2  # type: ignore[arg-type]
    sums = [m.exact_sums[0] for m in moments]  # type: ignore[index]
    if query.statistic == "sum":
        return tuple(s + m.count * mid for s, m in zip(sums, moments, strict=True))
    return tuple(mid + s / m.count if m.count else mid for s, m in zip(sums, moments, strict=True))


def _statistic(query: GroupBy, moments: tuple[CentredMoments, ...]) -> np.ndarray:
    """Per-group sum or mean (an empty group's mean is the midpoint) from the centred sums."""
    mid = (float(query.lower) + float(query.upper)) / 2  # type: ignore[arg-type]
    counts = np.array([m.count for m in moments], dtype=float)
    sums = np.array([m.centred_sum for m in moments])
    if query.statistic == "sum":
        return sums + counts * mid
    return mid + np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)


def declared_answer(dataset: Any, query: GroupBy, bounding_seed: int | None = None) -> np.ndarray:
    """f(D) for declared keys: the statistic in every group (exact, after the privacy unit's
    bounding)."""
    steps = bounding_steps(query, bounding_seed)
    if query.statistic == "count":
        return aggregate(dataset, CellCounts(query.keys), steps).copy()
    if query.statistic == "quantile":
        return np.array([_quantile(query, v) for v in group_values(dataset, query, steps)])
    return _statistic(query, group_moments(dataset, query, steps))


def _touched(query: GroupBy) -> int:
    """k' = min(groups per person, number of groups); k itself when the keys are private (their
    number is private)."""
    assert query.unit is not None
    if query.private is not None:
        return query.unit.max_groups
    return min(query.unit.max_groups, len(query.labels))


def sensitivities(query: GroupBy, relation: Relation) -> tuple[float, float]:
    """(l1, l2) of the vector of group statistics (module docstring)."""
    if query.unit is not None:
        k, r = _touched(query), query.unit.max_rows
        if query.statistic == "count":
            per = float(r)
        else:
            low, high = float(query.lower), float(query.upper)  # type: ignore[arg-type]
            per = r * max(abs(low), abs(high)) if query.statistic == "sum" else r * (high - low) / (r + 1)
        return k * per, math.sqrt(k) * per
    if query.statistic == "count":
        return (1.0, 1.0) if relation == "add_remove" else (2.0, math.sqrt(2.0))
    low, high = float(query.lower), float(query.upper)  # type: ignore[arg-type]
    big, width = max(abs(low), abs(high)), high - low
    if query.statistic == "sum":
        if relation == "add_remove":
            return big, big
        return max(width, 2 * big), max(width, math.sqrt(2) * big)
    return (width / 2, width / 2) if relation == "add_remove" else (width, width)


def moment_sensitivities(query: GroupBy, relation: Relation) -> tuple[float, float]:
    """(l1 of the centred sums, l1 of the counts) (module docstring)."""
    half = (float(query.upper) - float(query.lower)) / 2  # type: ignore[arg-type]
    if query.unit is not None:
        k, r = _touched(query), query.unit.max_rows
        return k * r * half, float(k * r)
    return (half, 1.0) if relation == "add_remove" else (2 * half, 2.0)


def checked_seed(query: GroupBy, relation: Relation, bounding_seed: int | None) -> int | None:
    """The bounding seed every aggregate of one input uses: ``bounding_seed``, or with a privacy
    unit and None, one draw from the OS CSPRNG. DataError for a privacy unit under any relation
    but add/remove (one whole person)."""
    if query.unit is not None and relation != "add_remove":
        raise DataError(
            "with a privacy unit, neighbouring datasets differ by one whole person: choose "
            "'add or remove one person'"
        )
    if query.unit is not None and bounding_seed is None:
        # one draw for the whole release: the counts, the statistics and the "bounds keep N
        # rows" text all see the same bounded rows
        bounding_seed = secrets.randbits(63)
    return bounding_seed


def declared_input(
    dataset: Any, query: GroupBy, relation: Relation, seed: int | None, exact_sums: bool = False
) -> NumericInput:
    """For declared keys: the statistic per group on D and on D' (module docstring), the
    sensitivities, and, for a mean, the per-group moments of D and D' for the noisy sum over
    noisy count; called as :func:`~dpexplorer.data.private_groups.private_input` is, by
    :func:`dpexplorer.data.group_by.group_input`, with the input's one bounding ``seed``
    (:func:`checked_seed`). With ``exact_sums`` (a release), sums come from the engine's exact
    requests."""
    steps = bounding_steps(query, checked_seed(query, relation, seed))
    groups = Groups.declared(query)
    if query.statistic == "quantile":
        return quantile_input(dataset, query, relation, steps, group_values(dataset, query, steps), groups)
    if query.statistic == "count":
        counts = aggregate(dataset, CellCounts(query.keys), steps)
        moments = tuple(CentredMoments(int(c), 0.0) for c in counts)
    else:
        moments = group_moments(dataset, query, steps, exact_sums)
    return moments_input(dataset, query, relation, steps, moments, groups, release=exact_sums)


@dataclass(frozen=True, eq=False)
class Groups:
    """The groups of a statistic by group, in the order of its coordinates: every cell of the
    declared keys (``cells`` None: the engine's row-major cells), or the cells that occur
    (private keys: the engine's cell indices of those, ascending; never the whole universe)."""

    labels: tuple[str, ...]
    keys: tuple[tuple[str, ...], ...]
    cells: np.ndarray | None = None

    @classmethod
    def declared(cls, query: GroupBy) -> Groups:
        """Every cell of the declared keys (or the one group of all rows)."""
        keys = tuple(itertools.product(*(a.labels for a in query.keys))) if query.keys else ()
        return cls(query.labels, keys)

    def positions(self, cells: np.ndarray) -> np.ndarray:
        """Each engine cell index's coordinate among the groups (-1: not one of them)."""
        cells = np.asarray(cells, dtype=np.int64)
        if self.cells is None:
            return cells
        if not self.cells.size:
            return np.full(cells.size, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.cells, cells), self.cells.size - 1)
        return np.where(self.cells[at] == cells, at, -1)


def moments_input(
    dataset: Any,
    query: GroupBy,
    relation: Relation,
    steps: Steps,
    moments: tuple[CentredMoments, ...],
    groups: Groups,
    *,
    release: bool = False,
) -> NumericInput:
    """A count, sum or mean in each of ``groups`` on D (``moments``, after ``steps``) and on D'
    (module docstring), with the sensitivities; for a mean, the moments of D and D' as well.
    ``release`` (with a privacy unit): D' is not computed but set to D, nor the unclipped means:
    a release publishes f(D) only, and the worst person's removal, the bounding's cost, the noise
    the bounds save and the unclipped means are exploration figures, each another scan."""
    s1, s2 = sensitivities(query, relation)
    counts = np.array([m.count for m in moments], dtype=float)
    common: dict[str, Any] = {"statistic": "histogram", "output_range": (0.0, math.inf)}
    if query.statistic != "count":
        common = {
            "statistic": query.statistic,
            "bounds": (float(query.lower), float(query.upper)),  # type: ignore[arg-type]
            "output_range": None if query.statistic == "sum" else (float(query.lower), float(query.upper)),  # type: ignore[arg-type]
        }
    if query.unit is None:
        prime, text = _neighbour(query, moments, relation, groups.labels)
    elif release:
        prime, text = moments, "D' = D without one person: not computed for a release (it publishes f(D))"
    else:
        prime, text = _person_neighbour(dataset, query, moments, steps, groups)
        if query.statistic != "count":  # show clipping and bounding bias together
            raw = _raw_means(dataset, query, groups)
            moments = tuple(replace(m, raw_mean=u) for m, u in zip(moments, raw, strict=True))
    value = counts if query.statistic == "count" else _statistic(query, moments)
    value_prime = (
        np.array([m.count for m in prime], dtype=float)
        if query.statistic == "count"
        else _statistic(query, prime)
    )
    extra: dict[str, Any] = {}
    if query.statistic == "mean":
        extra = {
            "moments": moments,
            "moments_prime": prime,
            "moment_sensitivities": moment_sensitivities(query, relation),
        }
    return NumericInput(
        value,
        value_prime,
        s1,
        s2,
        n=int(counts.sum()),
        relation=relation,
        differing_row=text,
        labels=groups.labels,
        key_columns=tuple(a.column for a in query.keys),
        group_keys=groups.keys,
        exact_values=_exact_statistic(query, moments),
        **common,
        **extra,
    )


def _raw_means(dataset: Any, query: GroupBy, groups: Groups) -> list[float | None]:
    """Each group's unclipped mean before bounding (the bias view), in the order of ``groups``."""
    if groups.cells is None:
        return [m.raw_mean for m in group_moments(dataset, query)]
    low, high = float(query.lower), float(query.upper)  # type: ignore[arg-type]
    request = GroupedCentredSums(str(query.column), low, high, query.keys, sparse=True)
    cells, raw = aggregate(dataset, request)
    out: list[float | None] = [None] * len(groups.labels)
    for at, m in zip(groups.positions(cells).tolist(), raw, strict=True):
        if at >= 0:
            out[at] = m.raw_mean
    return out


# ---------------------------------------------------------------- quantile by group
def group_values(dataset: Any, query: GroupBy, steps: Steps = ()) -> tuple[np.ndarray, ...]:
    """Each group's clipped values, sorted (row-major over the keys), after ``steps``."""
    low, high = float(query.lower), float(query.upper)  # type: ignore[arg-type]
    return aggregate(dataset, GroupedSortedClipped(str(query.column), low, high, query.keys), steps)


def _quantile(query: GroupBy, values: np.ndarray) -> float:
    """The group's q-quantile: the value of rank max(1, ceil(q n)); an empty group's is ``lower``
    (as the scalar quantile, dpexplorer.core.sensitivity.statistic_function)."""
    return float(values[quantile_rank(values.size, query.q) - 1]) if values.size else float(query.lower)  # type: ignore[arg-type]


def quantile_input(
    dataset: Any,
    query: GroupBy,
    relation: Relation,
    steps: Steps,
    values: tuple[np.ndarray, ...],
    groups: Groups,
) -> NumericInput:
    """The q-quantile in each of ``groups`` on D (their sorted clipped ``values``, after
    ``steps``) and on D'. A quantile of values in [L, U]
    moves by at most W = U - L, and a neighbour changes one group (add/remove) or two (replace
    moves a row between groups), so the vector's sensitivities are (W, W) and (2W, sqrt(2) W),
    by parallel composition as in the module docstring (each reached: one row at a bound can
    move a group's quantile from L to U); with a privacy unit, k' groups: (k' W, sqrt(k') W),
    and the input carries (k', r) for the exponential mechanism. D' adds (removes, under
    replace, then adds) the row (with a unit: the person's r rows) at a bound that moves one
    group's quantile most; each group's sorted values on D and D' come along for the
    exponential mechanism (dp_quantile by group)."""
    labels = groups.labels
    low, high = float(query.lower), float(query.upper)  # type: ignore[arg-type]
    width = high - low
    rows = query.unit.max_rows if query.unit is not None else 1
    value = np.array([_quantile(query, v) for v in values])
    changed = [np.sort(np.r_[values[g], [bound] * rows]) for g in range(len(values)) for bound in (low, high)]
    moves = [abs(_quantile(query, c) - value[i // 2]) for i, c in enumerate(changed)]
    who = "row" if query.unit is None else f"{query.unit.column} with {rows} row(s)"
    prime, target, bound = list(values), -1, low
    text = "D' = D (no group holds a row)"  # private keys without a candidate
    if moves:
        best = int(np.argmax(moves))
        target, bound = best // 2, (low, high)[best % 2]
        prime[target] = changed[best]
        text = f"D' = D plus one {who} in group ({labels[target]}) with {query.column} = {bound:g}"
    contribution = None
    if query.unit is not None:
        contribution = (_touched(query), rows)
        kept, total = sum(v.size for v in values), aggregate(dataset, RowCount())
        text += f". The bounds keep {kept:,} of {total:,} rows."
    if relation == "replace":
        source = max(
            (g for g in range(len(values)) if g != target), key=lambda g: values[g].size, default=None
        )
        if source is not None and values[source].size and moves:
            prime[source] = values[source][1:] if bound == high else values[source][:-1]
            text = (
                f"D' = D with one row moved from group ({labels[source]}) to "
                f"({labels[target]}), now {query.column} = {bound:g}"
            )
    s1, s2 = (width, width) if relation == "add_remove" else (2 * width, math.sqrt(2) * width)
    if contribution is not None:
        s1, s2 = contribution[0] * width, math.sqrt(contribution[0]) * width
    return NumericInput(
        value,
        np.array([_quantile(query, v) for v in prime]),
        s1,
        s2,
        n=int(sum(v.size for v in values)),
        statistic="quantile",
        relation=relation,
        output_range=(low, high),
        bounds=(low, high),
        quantile=float(query.q),
        differing_row=text,
        labels=labels,
        key_columns=tuple(a.column for a in query.keys),
        group_keys=groups.keys,
        group_values_d=tuple(values),
        group_values_d_prime=tuple(prime),
        group_contribution=contribution,
    )


def _neighbour(
    query: GroupBy, moments: tuple[CentredMoments, ...], relation: Relation, labels: tuple[str, ...]
) -> tuple[tuple[CentredMoments, ...], str]:
    """D' as per-group moments, and in words. Add/remove: one row added to the group (and at the
    bound) that moves the statistic most. Replace: one row moved from the largest group to the
    smallest (count), or one row of the largest group moved to the group whose statistic moves
    most, taking the bound farther from that group's value (sum, mean)."""
    counts = np.array([m.count for m in moments])
    low = float(query.lower) if query.lower is not None else 0.0
    high = float(query.upper) if query.upper is not None else 1.0
    target, value = _most_moved(query, moments, low, high)
    out = list(moments)
    out[target] = moments[target].changed(None, value, low, high)
    shown = "" if query.statistic == "count" else f" with {query.column} = {value:g}"
    if relation == "add_remove":
        return tuple(out), f"D' = D plus one row in group ({labels[target]}){shown}"
    source = int(np.argmax(counts))
    if source == target:
        source = (target + 1) % len(moments) if len(moments) > 1 else target
    if counts[source] == 0 or source == target:
        return tuple(out), f"D' = D with one row changed to group ({labels[target]}){shown}"
    # the row leaving ``source`` is taken at that group's mean (a value D' could hold)
    leaving = low + (high - low) / 2 + moments[source].centred_sum / counts[source]
    out[source] = moments[source].changed(leaving, None, low, high)
    return tuple(out), f"D' = D with one row moved from group ({labels[source]}) to ({labels[target]}){shown}"


def _most_moved(
    query: GroupBy, moments: tuple[CentredMoments, ...], low: float, high: float
) -> tuple[int, float]:
    """(group, value) of the added row that moves the group's statistic most."""
    counts = np.array([m.count for m in moments], dtype=float)
    if query.statistic == "count":
        return int(np.argmin(counts)), 0.0
    if query.statistic == "sum":
        return int(np.argmin(counts)), (high if abs(high) >= abs(low) else low)
    means = _statistic(query, moments)
    best = (0, high, -1.0)
    for g, (n, m) in enumerate(zip(counts, means, strict=True)):
        for v in (high, low):
            moved = abs(v - m) / (n + 1)
            if moved > best[2]:
                best = (g, v, moved)
    return best[0], best[1]


def _person_neighbour(
    dataset: Any, query: GroupBy, moments: tuple[CentredMoments, ...], steps: Steps, groups: Groups
) -> tuple[tuple[CentredMoments, ...], str]:
    """D' = D without the person (after bounding) whose removal moves the statistic most (l1
    over the groups), with the bounding's cost in rows, in words."""
    assert query.unit is not None
    low = float(query.lower) if query.lower is not None else 0.0
    high = float(query.upper) if query.upper is not None else 1.0
    request = PersonContributions(query.column or "", low, high, query.keys, query.unit.column)
    codes, cells, counts, sums, names = aggregate(dataset, request, steps)
    cells = groups.positions(cells)
    if (cells < 0).any():  # every bounded row's cell is one of the groups: the same steps
        raise DataError("the engine's contributions and groups disagree; please report this")
    effect = _removal_effect(query, moments, cells, counts, sums, low, high)
    person = int(np.argmax(np.bincount(codes, weights=effect))) if codes.size else -1
    out = list(moments)
    mine = np.flatnonzero(codes == person)
    for j in mine:
        m = out[int(cells[j])]
        out[int(cells[j])] = CentredMoments(m.count - int(counts[j]), m.centred_sum - float(sums[j]))
    kept = aggregate(dataset, RowCount(), steps)
    total, persons = aggregate(dataset, RowCount()), aggregate(dataset, DistinctCount(query.unit.column))
    who = (
        f"D' = D without {query.unit.column} {names[person]} ({int(counts[mine].sum())} row(s) in "
        f"{mine.size} group(s) after bounding), the person whose removal moves the statistic most. "
        if person >= 0
        else "D' = D (no person left after bounding). "
    )
    return tuple(out), who + (
        f"The bounds keep {kept:,} of {total:,} rows ({total - kept:,} dropped, rows without a "
        f"{query.unit.column} among them) of {persons:,} persons. " + _noise_saved(dataset, query, request)
    )


def _noise_saved(dataset: Any, query: GroupBy, request: PersonContributions) -> str:
    """What the bounds save: the largest contribution in the unbounded data (groups of one person,
    rows of one person in one group) and how much larger the sensitivities would be there (a
    private fact, shown to the steward only: the noise the bounds save, against their bias)."""
    assert query.unit is not None
    codes, _, counts, _, _ = aggregate(dataset, request)
    if not codes.size:
        return ""
    groups, rows = int(np.bincount(codes).max()), int(counts.max())
    k, r = _touched(query), query.unit.max_rows
    reach = groups if query.private is not None else min(groups, len(query.labels))  # labels: declared
    factor = (reach * rows) / (k * r)
    return (
        f"Unbounded, one person reaches {groups:,} group(s) and {rows:,} row(s) in one: noise "
        f"{factor:.3g}x larger (l1, by those counts) would be needed to protect them; the bounds' "
        "bias is in the accuracy view."
    )


def _removal_effect(
    query: GroupBy,
    moments: tuple[CentredMoments, ...],
    cells: np.ndarray,
    counts: np.ndarray,
    sums: np.ndarray,
    low: float,
    high: float,
) -> np.ndarray:
    """|change of the group's statistic| when each (person, group) entry is removed."""
    if query.statistic == "count":
        return counts
    mid = (low + high) / 2
    if query.statistic == "sum":
        return np.abs(sums + counts * mid)
    n = np.array([m.count for m in moments], dtype=float)[cells]
    s = np.array([m.centred_sum for m in moments])[cells]
    before = s / np.maximum(n, 1)
    rest = n - counts
    after = np.divide(s - sums, rest, out=np.zeros_like(s), where=rest > 0)
    return np.abs(after - before)
