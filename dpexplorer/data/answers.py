"""True answers of a query on D and on its worst-case neighbour D', packed as the mechanisms'
inputs (``dpexplorer.core.mechanisms.base``).

D' is found by formula (dpexplorer.core.neighbours: a few extreme candidates, or +-1 on a count),
never by recomputing the query on all n neighbours. The answers here are exact and PRIVATE: they
feed the exploration views and the release path's noise, never an export."""

from __future__ import annotations

import math
import threading
from fractions import Fraction
from typing import Any

import numpy as np

from dpexplorer.core.mechanisms.base import (
    CentredMoments,
    NumericInput,
    QueryInput,
    Relation,
    SelectionInput,
    WorkloadInput,
)
from dpexplorer.core.neighbours import (
    NeighbourChange,
    candidate_changes,
    check_relation,
    worst_case_neighbour,
)
from dpexplorer.core.sensitivity import (
    global_sensitivity,
    quantile_of_window,
    statistic_function,
    worst_case_quantile_neighbour,
)
from dpexplorer.data.aggregates import aggregate, aggregate_parts
from dpexplorer.data.axes import as_written, visit_values
from dpexplorer.data.conditions import Compare, unmatched
from dpexplorer.data.engine import (
    CellCounts,
    CentredSums,
    ClippedMoments,
    MeanParts,
    Moments,
    OrderWindow,
    RowCount,
    SortedClipped,
    Window,
)
from dpexplorer.data.engine.base import written_text
from dpexplorer.data.errors import DataError
from dpexplorer.data.group_by import group_answer, group_input
from dpexplorer.data.queries import (
    ArgMax,
    Axis,
    Count,
    GroupBy,
    Histogram,
    Mean,
    PredicateCount,
    Quantile,
    Query,
    Sum,
    TopK,
    TrimmedMean,
    Variance,
    Workload,
)

Answer = float | np.ndarray | str | tuple[str, ...]
ClippedQuery = Sum | Mean | Quantile | TrimmedMean


def _checked(dataset: Any, query: Query) -> None:
    """DataError unless ``query`` fits ``dataset``'s columns and types, before anything is read
    or charged: its text compared as written on declared text columns (as the engine reads it),
    and on a file that declares its types, no text compared with a numeric column
    (:func:`dpexplorer.data.conditions.unmatched`)."""
    query = as_written(query, written_text(dataset))
    schema = dataset.schema
    query.check(schema)
    if getattr(dataset, "types_declared", False):

        def typed(value: object) -> None:
            if isinstance(value, Compare):
                why = unmatched(value, schema.get(value.column), typed=True)
                if why is not None:
                    raise DataError(why)

        visit_values(query, typed)


# ---------------------------------------------------------------- the data each query needs
def clipped_sorted_values(dataset: Any, query: ClippedQuery) -> np.ndarray:
    """The column clipped to [lower, upper], missing values set to the midpoint, sorted (float)."""
    return aggregate(dataset, SortedClipped(query.column, query.lower, query.upper))


def quantile_window(dataset: Any, query: Quantile) -> Window:
    """n, the ends and the order statistics around the quantile's rank (selection, no sort)."""
    q = 0.5 if query.statistic == "median" else query.q
    return aggregate(dataset, OrderWindow(query.column, query.lower, query.upper, q))


class SortedColumn:
    """The clipped column of D sorted ascending, or of D' (``change`` applied), evaluated the first
    time something reads it (``np.asarray(column)``; the engine's SortedClipped, cached per
    dataset), then kept. What a quantile's NumericInput carries for the mechanisms that read the
    whole column (smooth sensitivity, PTR, the exponential quantile, the views); the true answers
    on D and D' come from :func:`quantile_window` without it. ``len`` is n without a sort."""

    def __init__(
        self, dataset: Any, request: SortedClipped, n: int, change: NeighbourChange | None = None
    ) -> None:
        self._dataset, self._request, self._n, self._change = dataset, request, n, change
        self._values: np.ndarray | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    @property
    def size(self) -> int:
        return self._n

    @property
    def shape(self) -> tuple[int]:
        return (self._n,)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        with self._lock:  # the window's two workers may read it at once: one sort
            if self._values is None:
                values = aggregate(self._dataset, self._request)
                if self._change is not None:
                    values = self._change.apply(values)
                    values.flags.writeable = False
                self._values = values
        out = self._values if dtype is None else self._values.astype(dtype, copy=False)
        return out.copy() if copy else out

    def __iter__(self) -> Any:
        return iter(np.asarray(self))

    def __getitem__(self, index: Any) -> Any:
        return np.asarray(self)[index]


def clipped_moments(dataset: Any, query: ClippedQuery, exact: bool = False) -> Moments:
    """(n, sum, min, max) of the clipped column: no sort (sums and means need nothing more); with
    ``exact``, the exact lattice sum as well (engine/base.py: for a release)."""
    return aggregate(dataset, ClippedMoments(query.column, query.lower, query.upper, exact=exact))


def _statistic(query: ClippedQuery) -> tuple[str, float, float]:
    """(statistic name, quantile, trim fraction)."""
    if isinstance(query, Quantile):
        return query.statistic, query.q, 0.0
    if isinstance(query, TrimmedMean):
        return "trimmed_mean", 0.5, query.trim_fraction
    return query.kind, 0.5, 0.0


def n_rows(dataset: Any) -> int:
    """The number of rows (PRIVATE under add/remove)."""
    return int(aggregate(dataset, RowCount()))


def predicate_count(dataset: Any, query: PredicateCount) -> int:
    return int(aggregate(dataset, RowCount(query.predicate)))


def cell_counts(dataset: Any, axes: tuple[Axis, ...]) -> np.ndarray:
    """Rows per cell of the universe of ``axes`` (row-major over their labels)."""
    return aggregate(dataset, CellCounts(tuple(axes)))


def _category_counts(dataset: Any, query: ArgMax | TopK) -> np.ndarray:
    """Rows per declared category (the histogram over them without its "(any other)" cell)."""
    return cell_counts(dataset, (Axis(query.column, categories=query.categories),))[:-1]


def workload_matrix(query: Workload) -> np.ndarray:
    """The (k, N) 0/1 matrix: row i marks the cells counted by query i."""
    shape = query.shape
    rows = []
    for q in query.queries:
        mask = np.ones(shape, dtype=bool)
        for a, bins in q.conditions:
            along = np.zeros(shape[a], dtype=bool)
            along[list(bins)] = True
            mask &= along.reshape([-1 if i == a else 1 for i in range(len(shape))])
        rows.append(mask.ravel())
    return np.array(rows, dtype=float)


# ---------------------------------------------------------------- true answers
def true_answer(dataset: Any, query: Query) -> Answer:
    """f(D), exact. Count/predicate count/sum/mean/quantile/trimmed mean: a float; histogram and
    workload: the vector of counts (labels from the query); argmax: the category (as text);
    top-k: the k categories, most common first (ties: declared order)."""
    _checked(dataset, query)
    if isinstance(query, Count):
        return float(n_rows(dataset))
    if isinstance(query, PredicateCount):
        return float(predicate_count(dataset, query))
    if isinstance(query, Sum | Mean):
        m = clipped_moments(dataset, query)
        return _moment_statistic(query)(m.n, m.total)
    if isinstance(query, Quantile):
        q = 0.5 if query.statistic == "median" else query.q
        return quantile_of_window(quantile_window(dataset, query).window, q, query.lower)
    if isinstance(query, TrimmedMean):
        name, q, trim = _statistic(query)
        return statistic_function(name, query.lower, query.upper, quantile=q, trim_fraction=trim)(
            clipped_sorted_values(dataset, query)
        )
    if isinstance(query, Variance):
        return float(_variance_input(dataset, query, "add_remove").value_d[0])
    if isinstance(query, Histogram):
        return cell_counts(dataset, (query.axis,)).copy()
    if isinstance(query, ArgMax | TopK):
        order = _ranking(_category_counts(dataset, query))
        names = tuple(str(query.categories[i]) for i in order[: query.k])
        return names[0] if isinstance(query, ArgMax) else names
    if isinstance(query, GroupBy):
        return group_answer(dataset, query)
    if isinstance(query, Workload):
        return workload_matrix(query) @ cell_counts(dataset, query.axes)
    raise DataError(f"no single true answer for {query.describe()}")


def _ranking(counts: np.ndarray) -> np.ndarray:
    return np.argsort(-counts, kind="stable")


# ---------------------------------------------------------------- inputs on D and D'
def query_input(
    dataset: Any,
    query: Query,
    relation: Relation = "add_remove",
    *,
    bounding_seed: int | None = None,
    exact_sums: bool = False,
) -> QueryInput:
    """The query's true answers on D and on its worst-case neighbour D' under ``relation``, the
    global sensitivities (dpexplorer.core.sensitivity.global_sensitivity, formulas cited there)
    and the row that differs, in words. DataError if the query does not fit the dataset.
    ``bounding_seed``: the reproducible random choice of a privacy unit's rows (exploration);
    None, the default, draws it from the OS CSPRNG (releases). ``exact_sums`` (releases): sums,
    means and variances from the engine's exact requests, with ``exact_values`` and the moments'
    ``exact_sums`` set (dpexplorer.data.engine.base: one row moves them by at most its declared
    range, on every engine and in every summation order)."""
    check_relation(relation)
    _checked(dataset, query)
    if isinstance(query, Count | PredicateCount):
        return _count_input(dataset, query, relation)
    if isinstance(query, Sum | Mean | Quantile | TrimmedMean):
        return _clipped_input(dataset, query, relation, exact_sums)
    if isinstance(query, Variance):
        return _variance_input(dataset, query, relation, exact_sums)
    if isinstance(query, Histogram):
        return _histogram_input(dataset, query, relation)
    if isinstance(query, ArgMax | TopK):
        return _selection_input(dataset, query, relation)
    if isinstance(query, Workload):
        return _workload_input(dataset, query, relation)
    if isinstance(query, GroupBy):
        return group_input(dataset, query, relation, bounding_seed, exact_sums)
    if getattr(query, "kind", None) == "marginals":  # synthetic data over marginals (MST, AIM)
        from dpexplorer.data.marginals import marginal_input

        return marginal_input(dataset, query, relation, bounding_seed=bounding_seed)
    raise DataError(f"unsupported query {query!r}")


def _scalar_input(value: float, value_prime: float, s1: float, s2: float, **kw: object) -> NumericInput:
    return NumericInput(np.array([float(value)]), np.array([float(value_prime)]), s1, s2, **kw)  # type: ignore[arg-type]


def _count_input(dataset: Any, query: Count | PredicateCount, relation: Relation) -> NumericInput:
    """Count: +1 row under add/remove; unchanged (sensitivity 0: n is public) under replace.
    Predicate count: sensitivity 1 (Dwork & Roth 2014, example 3.1); D' adds a matching row, or
    under replace turns a non-matching row into a matching one (the reverse if all match)."""
    n = n_rows(dataset)
    if isinstance(query, Count):
        if relation == "replace":
            row = "D' = D with one row changed: the number of rows cannot change"
            return _scalar_input(n, n, 0.0, 0.0, n=n, statistic="count", relation=relation, differing_row=row)
        return _scalar_input(
            n,
            n + 1,
            1.0,
            1.0,
            n=n,
            statistic="count",
            relation=relation,
            differing_row="D' = D plus one row (any values)",
            output_range=(0.0, math.inf),
        )
    c = predicate_count(dataset, query)
    what = query.predicate.describe()
    if relation == "add_remove":
        c_prime, row = c + 1, f"D' = D plus one row where {what}"
    elif c < n:
        c_prime, row = c + 1, f"D' = D with one row changed so that {what}"
    else:
        c_prime, row = c - 1, f"D' = D with one row changed so that not ({what})"
    return _scalar_input(
        c,
        c_prime,
        1.0,
        1.0,
        n=n,
        statistic="predicate_count",
        relation=relation,
        differing_row=row,
        output_range=(0.0, math.inf),
    )


def _moment_statistic(query: Sum | Mean) -> Any:
    """f(n, sum) of the clipped column: the sum, or the mean (the midpoint when n = 0, as
    dpexplorer.core.sensitivity's convention for the empty dataset)."""
    if isinstance(query, Sum):
        return lambda n, total: float(total)
    mid = (query.lower + query.upper) / 2.0
    return lambda n, total: float(total) / n if n else mid


def _exact_moment_statistic(query: Sum | Mean, n: int, total: Fraction) -> Fraction:
    """:func:`_moment_statistic` on the exact lattice sum (each row's part in [lower, upper])."""
    if isinstance(query, Sum):
        return total
    return total / n if n else (Fraction(query.lower) + Fraction(query.upper)) / 2


def _moment_neighbour(
    m: Moments, query: Sum | Mean, relation: Relation
) -> tuple[NeighbourChange | None, float]:
    """(change, f(D')) of the neighbour moving the sum or mean most, from aggregates alone.

    The candidates are dpexplorer.core.neighbours.candidate_changes (add a row at a bound,
    remove or change the smallest or largest row), which only read the smallest and largest
    values; f(D') follows from n and the sum moved by the one row. Same candidates, same order
    and same ties as worst_case_neighbour on the sorted column, without sorting it."""
    f = _moment_statistic(query)
    f_d = f(m.n, m.total)
    ends = np.array([m.smallest, m.largest], dtype=float) if m.n else np.empty(0)
    best: tuple[NeighbourChange | None, float, float] = (None, f_d, 0.0)
    for change in candidate_changes(ends, query.lower, query.upper, relation):
        removed, added = change.removed, change.added
        n = m.n - (removed is not None) + (added is not None)
        f_dp = f(n, m.total - (removed or 0.0) + (added or 0.0))
        if best[0] is None or abs(f_dp - f_d) > best[2]:
            best = (change, f_dp, abs(f_dp - f_d))
    return best[0], best[1]


def _clipped_input(
    dataset: Any, query: ClippedQuery, relation: Relation, exact: bool = False
) -> NumericInput:
    """f(D) and the neighbour moving f most (exact for these monotone statistics: see
    dpexplorer.core.neighbours). Sum and mean come from the engine's aggregates (n, sum, min,
    max: no sort); a quantile's from the order statistics around its rank (selection, no sort;
    the same floats as from the whole column: dpexplorer.core.sensitivity.
    worst_case_quantile_neighbour), with the clipped sorted column of D and D' for the
    data-dependent mechanisms as a :class:`SortedColumn` (sorted when first read); the trimmed
    mean's from the sorted column."""
    name, q, trim = _statistic(query)
    exact_values = None
    values: Any
    if isinstance(query, Sum | Mean):
        if isinstance(query, Mean):
            aggregate_parts(dataset, MeanParts(query.column, query.lower, query.upper, exact))
        m = clipped_moments(dataset, query, exact)
        n, value = m.n, _moment_statistic(query)(m.n, m.total)
        change, f_prime = _moment_neighbour(m, query, relation)
        values = prime = None
        if m.exact_total is not None:
            exact_values = (_exact_moment_statistic(query, m.n, m.exact_total),)
    elif isinstance(query, Quantile):
        found = quantile_window(dataset, query)
        rank_q = 0.5 if name == "median" else q
        change, f_prime, _ = worst_case_quantile_neighbour(
            found.window, found.ends, query.lower, query.upper, rank_q, relation
        )
        n, value = found.window.n, quantile_of_window(found.window, rank_q, query.lower)
        request = SortedClipped(query.column, query.lower, query.upper)
        values = SortedColumn(dataset, request, n)
        prime = SortedColumn(dataset, request, found.window.n - _moved(change), change) if change else values
    else:
        values = clipped_sorted_values(dataset, query)
        f = statistic_function(name, query.lower, query.upper, quantile=q, trim_fraction=trim)
        change, f_prime, _ = worst_case_neighbour(values, query.lower, query.upper, f, relation)
        n, value = len(values), f(values)
        prime = change.apply(values) if change is not None else values
    kind = "quantile" if name == "median" else name
    s1, s2 = global_sensitivity(kind, relation, lower=query.lower, upper=query.upper, n=n, trim_fraction=trim)
    return _scalar_input(
        value,
        f_prime,
        s1,
        s2,
        n=n,
        statistic=name,
        relation=relation,
        output_range=None if name == "sum" else (float(query.lower), float(query.upper)),
        bounds=(float(query.lower), float(query.upper)),
        sorted_values_d=values,
        sorted_values_d_prime=prime,
        quantile=q,
        trim_fraction=trim,
        differing_row=change.describe(query.column) if change is not None else "",
        exact_values=exact_values,
        **(_moments_pair(dataset, query, change, relation, exact) if name == "mean" else {}),
    )


def _moved(change: NeighbourChange) -> int:
    """n(D) - n(D') for ``change``."""
    return (change.removed is not None) - (change.added is not None)


def _moments_pair(
    dataset: Any, query: ClippedQuery, change: NeighbourChange | None, relation: Relation, exact: bool
) -> dict[str, Any]:
    """``moments``, ``moments_prime`` and ``moment_sensitivities`` of a mean's input: the engine's
    centred sums on D, D' from the same ``change`` as the views describe. One row moves the
    centred sum by at most h = (upper - lower) / 2 and the count by 1 (add/remove); under
    replace the sum by 2h, and n is public (count sensitivity 0)."""
    moments: CentredMoments = aggregate(dataset, CentredSums(query.column, query.lower, query.upper, exact))
    prime = (
        moments if change is None else moments.changed(change.removed, change.added, query.lower, query.upper)
    )
    half = (query.upper - query.lower) / 2.0
    sensitivities = (2 * half, 0.0) if relation == "replace" else (half, 1.0)
    return {"moments": (moments,), "moments_prime": (prime,), "moment_sensitivities": sensitivities}


def _variance_input(dataset: Any, query: Variance, relation: Relation, exact: bool = False) -> NumericInput:
    """The clipped column's population variance (or std) from the engine's centred sums, on D and
    on D' (:func:`~dpexplorer.core.mechanisms.noisy_mean.worst_neighbour`: a row added at the
    bound farther from the mean, or moved from one bound to the other). Global sensitivity: the
    width of the statistic's range, h^2 for the variance and h for the std (Popoviciu: a
    variance of values in [lower, upper] lies in [0, h^2], h = (upper - lower) / 2)."""
    from dpexplorer.core.mechanisms.noisy_mean import worst_neighbour
    from dpexplorer.core.mechanisms.noisy_variance import estimate

    low, high = float(query.lower), float(query.upper)
    moments: CentredMoments = aggregate(dataset, CentredSums(query.column, low, high, exact))
    prime = worst_neighbour(moments, low, high, relation)
    std = query.std

    def value(m: CentredMoments) -> float:
        return float(
            estimate(
                np.array([m.count]), np.array([m.centred_sum]), np.array([m.centred_squares]), low, high, std
            )[0]
        )

    half = (high - low) / 2
    width = half if std else half * half
    change = "one row added at" if relation == "add_remove" else "one row moved to"
    return _scalar_input(
        value(moments),
        value(prime),
        width,
        width,
        n=moments.count,
        statistic=query.statistic,
        relation=relation,
        output_range=(0.0, width),
        bounds=(low, high),
        moments=(moments,),
        moments_prime=(prime,),
        differing_row=f"D' = D with {change} the bound of {query.column} farther from its mean",
    )


def _histogram_input(dataset: Any, query: Histogram, relation: Relation) -> NumericInput:
    """Counts per cell; D' adds a row to the smallest cell (add/remove) or moves one from the
    largest cell to the smallest (replace). l1/l2 from global_sensitivity("histogram")."""
    counts = cell_counts(dataset, (query.axis,))
    labels = query.labels
    small, big = int(np.argmin(counts)), int(np.argmax(counts))
    prime = counts.copy()
    prime[small] += 1
    cell = f"{query.axis.column} {labels[small]}"
    row = f"D' = D plus one row with {cell}"
    if relation == "replace":
        if big == small:  # one cell holds every row: move one to the next cell
            small = (big + 1) % len(labels)
            prime = counts.copy()
            prime[small] += 1
        prime[big] -= 1
        row = f"D' = D with one row changed: {query.axis.column} {labels[big]} -> {labels[small]}"
    s1, s2 = global_sensitivity("histogram", relation)
    return NumericInput(
        counts,
        prime,
        s1,
        s2,
        n=n_rows(dataset),
        statistic="histogram",
        relation=relation,
        differing_row=row,
        labels=labels,
        output_range=(0.0, math.inf),
    )


def _selection_input(dataset: Any, query: ArgMax | TopK, relation: Relation) -> SelectionInput:
    """Scores are counts (sensitivity 1, Dwork & Roth 2014, section 3.4); monotone under
    add/remove (every count moves the same way), not under replace. D' helps the runner-up:
    one more row for it (add/remove), or one row moved to it from the leader (replace)."""
    counts = _category_counts(dataset, query)
    order = _ranking(counts)
    leader, rival = int(order[0]), int(order[1]) if len(order) > 1 else int(order[0])
    names = tuple(str(c) for c in query.categories)
    prime = counts.copy()
    prime[rival] += 1
    row = f"D' = D plus one row with {query.column} = {names[rival]}"
    if relation == "replace":
        if counts[leader] > 0 and leader != rival:
            prime[leader] -= 1
            row = f"D' = D with one row changed: {query.column} {names[leader]} -> {names[rival]}"
        else:
            row = f"D' = D with one row of another {query.column} changed to {names[rival]}"
    return SelectionInput(
        names,
        counts,
        prime,
        1.0,
        relation == "add_remove",
        n_rows(dataset),
        statistic=query.kind,
        relation=relation,
        differing_row=row,
    )


def _workload_input(dataset: Any, query: Workload, relation: Relation) -> WorkloadInput:
    """The data as a histogram over the universe; D' adds a row to the cell counted by the most
    queries (add/remove), or moves one from the busiest non-empty cell to the cell whose queries
    differ most from it (replace)."""
    hist = cell_counts(dataset, query.axes)
    w = workload_matrix(query)
    labels = query.cell_labels()
    load = w.sum(axis=0)
    prime = hist.copy()
    if relation == "add_remove":
        target = int(np.argmax(load))
        prime[target] += 1
        row = f"D' = D plus one row in cell ({labels[target]})"
    else:
        nonempty = np.flatnonzero(hist > 0)
        source = int(nonempty[np.argmax(load[nonempty])])
        target = int(np.argmax(np.abs(w - w[:, [source]]).sum(axis=0)))
        prime[source] -= 1
        prime[target] += 1
        row = f"D' = D with one row moved from cell ({labels[source]}) to cell ({labels[target]})"
    return WorkloadInput(
        labels,
        tuple(q.label for q in query.queries),
        hist,
        prime,
        w,
        n_rows(dataset),
        relation=relation,
        differing_row=row,
    )
