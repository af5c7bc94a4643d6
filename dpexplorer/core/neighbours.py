"""Neighbouring relations and the worst-case neighbour D' of a dataset D.

Two relations (Dwork & Roth 2014, section 2.3; DESIGN.md): "add_remove" (D' = D plus or minus
one row; the size n is private) and "replace" (D' = D with one row changed; n is public).

For a statistic f of a numeric column that is symmetric and nondecreasing in every value (sum,
mean, trimmed mean, every order statistic), with values clipped to [lower, upper], the largest
|f(D) - f(D')| over all neighbours is reached at one of a few extreme neighbours: add a row at
``lower`` or ``upper``, remove the smallest or the largest row (add/remove); change the smallest
row to ``upper`` or the largest to ``lower`` (replace). Monotonicity is the whole argument:
adding v moves f monotonically in v, removing x_i moves it monotonically in i. The local
sensitivity at D is therefore exact from these 2-4 candidates, each computed once (O(n)),
never by recomputing f on all n neighbours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from dpexplorer.core.checks import described, shown
from dpexplorer.core.errors import InvalidParameterError, ParameterTypeError
from dpexplorer.core.mechanisms.base import Relation

RELATIONS: tuple[Relation, ...] = ("add_remove", "replace")
RELATION_LABELS = {
    "add_remove": "add or remove one row",
    "replace": "change one row",
}


def check_relation(relation: str) -> Relation:
    """``relation`` if it is one of :data:`RELATIONS`, else InvalidParameterError."""
    if not isinstance(relation, str):
        raise ParameterTypeError(f"relation must be add_remove or replace, not {described(relation)}")
    if relation not in RELATIONS:
        raise InvalidParameterError(
            f"unknown neighbouring relation {shown(relation)}: use add_remove or replace"
        )
    return relation


@dataclass(frozen=True)
class NeighbourChange:
    """How D' differs from D on one numeric column: the value of the row taken out (None if a row
    is added) and of the row put in (None if a row is removed). Replace has both."""

    relation: Relation
    removed: float | None
    added: float | None

    def apply(self, sorted_values: np.ndarray) -> np.ndarray:
        """The sorted values of D' (O(n))."""
        x = np.asarray(sorted_values, dtype=float)
        if self.removed is not None:
            i = int(np.searchsorted(x, self.removed, side="left"))
            if i >= len(x) or x[i] != self.removed:
                raise InvalidParameterError(f"D has no row with value {self.removed} to take out")
            x = np.delete(x, i)
        if self.added is not None:
            x = np.insert(x, int(np.searchsorted(x, self.added, side="left")), self.added)
        return x

    def describe(self, column: str) -> str:
        """The change in words, e.g. "D' = D plus one row with age = 90"."""
        if self.removed is None:
            return f"D' = D plus one row with {column} = {_fmt(self.added)}"
        if self.added is None:
            return f"D' = D minus one row with {column} = {_fmt(self.removed)}"
        return f"D' = D with one row changed: {column} {_fmt(self.removed)} -> {_fmt(self.added)}"


def _fmt(v: float | None) -> str:
    return "" if v is None else f"{v:g}"


def candidate_changes(
    sorted_values: np.ndarray, lower: float, upper: float, relation: Relation
) -> tuple[NeighbourChange, ...]:
    """The extreme neighbours among which a monotone symmetric statistic changes most (module
    docstring). Empty under replace when D is empty (it has no neighbour then)."""
    check_relation(relation)
    x = np.asarray(sorted_values, dtype=float)
    if relation == "add_remove":
        out = [NeighbourChange(relation, None, float(upper)), NeighbourChange(relation, None, float(lower))]
        if len(x):
            out += [
                NeighbourChange(relation, float(x[0]), None),
                NeighbourChange(relation, float(x[-1]), None),
            ]
        return tuple(out)
    if not len(x):
        return ()
    return (
        NeighbourChange(relation, float(x[0]), float(upper)),
        NeighbourChange(relation, float(x[-1]), float(lower)),
    )


def worst_case_neighbour(
    sorted_values: np.ndarray,
    lower: float,
    upper: float,
    statistic: Callable[[np.ndarray], float],
    relation: Relation,
) -> tuple[NeighbourChange | None, float, float]:
    """(change, f(D'), |f(D) - f(D')|) for the neighbour D' that moves ``statistic`` most.

    Exact for statistics symmetric and nondecreasing in every value (module docstring): the
    returned difference IS the local sensitivity LS_f(D) (NRS 2007, definition 2.2). Ties go to
    the first candidate (adding ``upper`` first). (None, f(D), 0.0) when D has no neighbour."""
    x = np.asarray(sorted_values, dtype=float)
    changes = candidate_changes(x, lower, upper, relation)
    return largest_change(statistic(x), changes, lambda change: statistic(change.apply(x)))


def largest_change(
    f_d: float, changes: Iterable[NeighbourChange], f_after: Callable[[NeighbourChange], float]
) -> tuple[NeighbourChange | None, float, float]:
    """(change, f(D'), |f(D) - f(D')|) for the change among ``changes`` that moves f most, where
    ``f_after(change)`` is f(D') for D' = change applied to D. Ties go to the first change;
    (None, f(D), 0.0) when there is none."""
    best: tuple[NeighbourChange | None, float, float] = (None, f_d, 0.0)
    for change in changes:
        f_dp = f_after(change)
        if best[0] is None or abs(f_dp - f_d) > best[2]:
            best = (change, f_dp, abs(f_dp - f_d))
    return best


def local_sensitivity(
    sorted_values: np.ndarray,
    lower: float,
    upper: float,
    statistic: Callable[[np.ndarray], float],
    relation: Relation,
) -> float:
    """LS_f(D) = max over neighbours D' of |f(D) - f(D')|, exact for monotone symmetric f."""
    return worst_case_neighbour(sorted_values, lower, upper, statistic, relation)[2]


# ---------------------------------------------------------------- order statistics from a window
@dataclass(frozen=True, eq=False)
class SortedWindow:
    """A run of consecutive order statistics of a dataset of ``n`` values: ``values`` are
    x_(start+1) <= ... <= x_(start+len(values)) of the sorted column (1-based ranks). Enough for
    a quantile of D and of its extreme neighbours without the whole column (selection instead of
    a sort); :meth:`apply` gives the same window of D' as :meth:`NeighbourChange.apply` on the
    whole column would (equal multisets: which copy of a repeated value goes does not matter)."""

    n: int
    start: int
    values: np.ndarray

    @property
    def stop(self) -> int:
        """The rank of the window's last value (``start`` when it is empty)."""
        return self.start + len(self.values)

    def apply(self, change: NeighbourChange) -> SortedWindow:
        """The window of D' (a row taken out and/or put in, as ``change`` says)."""
        window = self
        if change.removed is not None:
            window = window._removed(change.removed)
        if change.added is not None:
            window = window._added(change.added)
        return window

    def _removed(self, u: float) -> SortedWindow:
        w = self.values
        i = int(np.searchsorted(w, u, side="left"))
        if i < len(w) and w[i] == u:
            return SortedWindow(self.n - 1, self.start, np.delete(w, i))
        below, above = len(w) == 0 or u < w[0], len(w) > 0 and u > w[-1]
        if below and self.start > 0:  # a row before the window: every rank in it moves down one
            return SortedWindow(self.n - 1, self.start - 1, w)
        if above and self.stop < self.n:  # a row after the window: the window keeps its ranks
            return SortedWindow(self.n - 1, self.start, w)
        raise InvalidParameterError(f"D has no row with value {u} to take out")

    def _added(self, v: float) -> SortedWindow:
        w = self.values
        if len(w) and v < w[0] and self.start > 0:  # lands before the window
            return SortedWindow(self.n + 1, self.start + 1, w)
        if len(w) and v > w[-1] and self.stop < self.n:  # lands after it
            return SortedWindow(self.n + 1, self.start, w)
        return SortedWindow(self.n + 1, self.start, np.insert(w, int(np.searchsorted(w, v, side="left")), v))

    def order_statistic(self, rank: int) -> float:
        """x_rank (1-based); InvalidParameterError if the window does not hold that rank."""
        if not self.start < rank <= self.stop:
            raise InvalidParameterError(f"rank {rank} is outside the window {self.start + 1}..{self.stop}")
        return float(self.values[rank - self.start - 1])
