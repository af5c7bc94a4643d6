"""A statistic by privately selected keys (:class:`~dpexplorer.data.queries.PrivateKeys`): the
candidate groups and their statistics on D and D', for the release's partition selection
(:mod:`dpexplorer.release.partition_paths`).

The candidates are the combinations of key values that keep at least one row after contribution
bounding: a private set, found SPARSELY. Each key column is resolved to the values that occur in
it (at most the number of rows), which gives every row an integer cell index over the cross
product of those values; the engine aggregates by that index and returns only the cells that
hold a row (``sparse`` requests, :func:`~dpexplorer.data.engine.base.by_cell`). The cross product
itself (10,000 x 10,000 values: 10^8 cells) is never built, so nothing here costs time or memory
in its size, and no limit, refusal or message depends on it or on the number of candidates: both
are private (a person can bring up to k new combinations). Time and memory grow with the rows and
the combinations that occur, as any group-by's.

Each candidate's statistic and D' come from :mod:`dpexplorer.data.grouped` (the same rules as for
declared keys, on the candidates only: D' moves a candidate, since a change in a cell that is
not one would not reach the candidates), with sensitivities from the declared k, never from the
number of groups (``grouped._touched``). The input carries each candidate's number of persons
(rows without a privacy unit) for the noisy threshold
(:class:`~dpexplorer.core.partition_selection.Candidates`).

Private keys need the add/remove relation. The bounding's random keys then name a group by its
cell index, which another person's values can shift: the choice for one person is no longer the
same bits on D and D', but it is the same law (uniform among the person's groups and rows,
independently of the others), which is what the sensitivities need."""

from __future__ import annotations

import secrets
from dataclasses import replace
from typing import Any

import numpy as np

from dpexplorer.core.mechanisms.base import CentredMoments, NumericInput, Relation
from dpexplorer.core.partition_selection import Candidates
from dpexplorer.data.aggregates import aggregate
from dpexplorer.data.engine import (
    CellCounts,
    DistinctValues,
    GroupedCentredSums,
    GroupedSortedClipped,
    PersonContributions,
)
from dpexplorer.data.errors import DataError
from dpexplorer.data.grouped import (
    Groups,
    Steps,
    bounding_steps,
    moments_input,
    quantile_input,
)
from dpexplorer.data.queries import Axis, GroupBy

MISSING_KEY = "(missing)"
"""The label of the group of rows whose key value is missing."""


def resolve_keys(dataset: Any, query: GroupBy) -> GroupBy:
    """``query`` with its private key columns as axes over the values that occur (text; the
    axis' last cell holds the missing values). PRIVATE: used internally, never published. Each
    axis holds one column's distinct values (at most the rows); their product is only the range
    of the cell index, never enumerated."""
    assert query.private is not None
    axes = []
    for column in query.private.columns:
        values = aggregate(dataset, DistinctValues(column))
        # an all-missing column: a placeholder category, which no row matches (count 0)
        axes.append(Axis(column, tuple(values) or ("",), exact_text=True))
    return replace(query, keys=tuple(axes))


def _cell_keys(query: GroupBy, cells: np.ndarray) -> tuple[tuple[str, ...], ...]:
    """The key values of each cell (MISSING_KEY for the missing-value cell)."""
    per_axis = [(*(str(c) for c in a.categories or ()), MISSING_KEY) for a in query.keys]
    index = np.unravel_index(np.asarray(cells, dtype=np.int64), query.shape)
    return tuple(
        tuple(per_axis[j][int(index[j][i])] for j in range(len(query.keys))) for i in range(cells.size)
    )


def _persons(dataset: Any, query: GroupBy, steps: Steps, groups: Groups, rows: np.ndarray) -> np.ndarray:
    """Distinct persons in each group after bounding (its rows without a privacy unit)."""
    if query.unit is None:
        return rows.astype(np.int64)
    request = PersonContributions("", 0.0, 1.0, query.keys, query.unit.column)
    _, cells, _, _, _ = aggregate(dataset, request, steps)
    at = groups.positions(cells)
    if (at < 0).any():  # the same steps: every bounded row's cell is a candidate
        raise DataError("the engine's persons and groups disagree; please report this")
    return np.bincount(at, minlength=len(groups.labels))


def private_input(
    dataset: Any, query: GroupBy, relation: Relation, seed: int | None, exact_sums: bool = False
) -> NumericInput:
    """The statistic on every candidate key (module docstring), with the candidates' numbers of
    persons for the release's threshold. One bounding (one seed, from the OS CSPRNG in a
    release) serves every aggregate, so the counts and the statistics see the same rows."""
    assert query.private is not None
    if relation != "add_remove":
        raise DataError(
            "private keys are selected under 'add or remove one person (row)': under replace the "
            "key set of D and D' can differ by two keys; choose add/remove or declare the keys"
        )
    seed = secrets.randbits(63) if seed is None else seed
    resolved = resolve_keys(dataset, query)
    steps = bounding_steps(resolved, seed)
    column, keys = str(query.column), resolved.keys
    bounds = (float(query.lower or 0.0), float(query.upper or 0.0))
    values: tuple[np.ndarray, ...] = ()
    moments: tuple[CentredMoments, ...] = ()
    if query.statistic == "quantile":
        cells, values = aggregate(dataset, GroupedSortedClipped(column, *bounds, keys, sparse=True), steps)
        rows = np.array([v.size for v in values], dtype=np.int64)
    elif query.statistic == "count":
        cells, counts = aggregate(dataset, CellCounts(keys, sparse=True), steps)
        moments = tuple(CentredMoments(int(c), 0.0) for c in counts)
        rows = counts.astype(np.int64)
    else:
        request = GroupedCentredSums(column, *bounds, keys, exact=exact_sums, sparse=True)
        cells, moments = aggregate(dataset, request, steps)
        rows = np.array([m.count for m in moments], dtype=np.int64)
    found = _cell_keys(resolved, cells)
    columns = query.private.columns
    labels = tuple(", ".join(f"{c} = {v}" for c, v in zip(columns, k, strict=True)) for k in found)
    groups = Groups(labels, found, cells)
    persons = _persons(dataset, resolved, steps, groups, rows)
    if query.statistic == "quantile":
        full = quantile_input(dataset, resolved, relation, steps, values, groups)
    else:
        full = moments_input(dataset, resolved, relation, steps, moments, groups, release=exact_sums)
    candidates = Candidates(
        tuple(int(p) for p in persons),
        found,
        query.unit.max_groups if query.unit is not None else 1,
        float(query.private.epsilon),
        float(query.private.delta),
    )
    return replace(
        full,
        partition=candidates,
        differing_row=f"{full.differing_row.rstrip().rstrip('.')}. Keys selected privately: {len(found):,} "
        "candidate group(s) occur after bounding (a private fact: the release keeps those whose "
        "noisy number of persons reaches the threshold).",
    )
