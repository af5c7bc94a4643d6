"""The engine contract: the one interface through which ``dpexplorer.data`` touches rows.

An engine evaluates an *aggregate request* (a frozen, hashable value: the cache key of its
answer) on a *dataset reference*, after an optional chain of *row steps*, and returns only the
aggregate: a few numbers, a vector of counts, or, for order statistics alone, the sorted clipped
column. Everything else (the worst-case neighbour D', sensitivities, noise, accounting, ledger,
export) runs in the app on those aggregates, never in the engine.

Requests (what comes back):

* :class:`RowCount` -- rows (satisfying ``where``, if given): an int. Never sorts.
* :class:`ClippedMoments` -- (n, sum, min, max) of a column clipped to [lower, upper], missing
  values counted at the midpoint: a :class:`Moments`. Never sorts; enough for the exact
  worst-case neighbour of a sum or mean (dpexplorer.core.neighbours: only the smallest and
  largest rows and the bounds are candidates).
* :class:`SortedClipped` -- the clipped column sorted ascending (float64 array of n values):
  what the order statistics (median, quantile, trimmed mean) and the data-dependent mechanisms
  (smooth sensitivity, PTR) need. The one request that sorts and holds the column in memory.
* :class:`OrderWindow` -- n, the smallest and largest value, and the few order statistics
  around the q-quantile's rank of the clipped column: what the true answer of a quantile and of
  its worst-case neighbours need. Found by selection (counts over fine bins, then a sort of the
  rows in the bins that hold those ranks), never by sorting the column.
* :class:`CellCounts` -- rows per cell of the universe of ``axes`` (row-major): a float array.

The grouped requests (:class:`CellCounts`, :class:`GroupedCentredSums`,
:class:`GroupedSortedClipped`) answer every cell of the universe, empty ones too; with
``sparse``, only the cells that hold a row, as (their indices ascending, their answers): the
universe of privately selected keys is the cross product of the values that occur in each key
column, far larger than the combinations that occur, and is never built (:func:`by_cell`).

Sums for a release (``exact=True`` on :class:`ClippedMoments`, :class:`CentredSums`,
:class:`GroupedCentredSums`): a float sum depends on the order in which an engine adds, and
polars' (threaded, chunked) and Spark's (partitioned) orders change with the data, so a group
that a neighbour does not touch can get a sum a few ulps apart on D and D'. A release rounds
sums to its grid, so that could move an untouched group by one grid step: a sensitivity the
release path does not charge. With ``exact``, each row's value is first mapped to an integer
on a fixed-point :class:`Lattice` chosen from the public bounds alone, clamped so that it stays
in the declared per-row range, and the integers are added exactly (128-bit in polars, decimal in
Spark): the sum is a function of the multiset of rows, the same on every engine and in every
order, and one row moves it by at most the declared per-row range.

Row steps (applied in order before the aggregate): :class:`Filter` keeps the rows satisfying a
predicate. Contribution bounding per privacy unit and grouping are further steps/requests of the
same shape (see /work/notes/engine.md and :class:`Engine`).

Semantics every engine must share (tests/data/test_engine_parity.py checks them on every
engine): a comparison is false on a missing value, ``Not`` counts it (queries.py); a missing
numeric value counts as the midpoint of the declared bounds; clipping is to the closed interval
[lower, upper]; NaN and infinities were made missing when the data was read."""

from __future__ import annotations

import functools
import math
import secrets
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, TypeAlias

import numpy as np
import polars as pl

from dpexplorer.core.neighbours import SortedWindow
from dpexplorer.core.sensitivity import QUANTILE_RADIUS, window_of_sorted
from dpexplorer.data.axes import as_written, key_columns, text_read_columns
from dpexplorer.data.cells import cell_number
from dpexplorer.data.load import ColumnInfo
from dpexplorer.data.queries import Axis, Predicate

__all__ = [
    "BoundContributions",
    "CellCounts",
    "CentredSums",
    "ClippedMoments",
    "DatasetSummary",
    "DistinctCount",
    "DistinctValues",
    "Engine",
    "Filter",
    "GroupedCentredSums",
    "GroupedSortedClipped",
    "MeanParts",
    "Moments",
    "OrderWindow",
    "PersonContributions",
    "Request",
    "RowCount",
    "RowStep",
    "SortedClipped",
    "Window",
]
"""The contract the engines implement and the data layer uses (re-exported by the package)."""


# ---------------------------------------------------------------- row steps
@dataclass(frozen=True)
class Filter:
    """Keep the rows where ``predicate`` holds (a missing value makes a comparison false)."""

    predicate: Predicate


@dataclass(frozen=True)
class BoundContributions:
    """Bound each person's contribution: rows with the same ``unit`` value are one person; keep
    at most ``max_groups`` of the person's groups (cells of ``keys``) and at most ``max_rows`` of
    the person's rows in each kept group, each choice uniformly at random (ordinal ranks of
    random keys: ties cannot keep more). Rows with a missing identifier are dropped (and counted
    by the caller). ``seed``: a reproducible choice (exploration); None draws the random keys'
    seeds from the OS CSPRNG (releases; :func:`dpexplorer.data.grouped.checked_seed` draws one seed
    per release, so all its aggregates see the same rows). The choice for one person depends
    only on that person's rows and the randomness, so bounding is stable: adding or removing a
    person changes only that person's kept rows (in law: the random keys are seeded hashes, of
    the row number on polars and of the row's content and its occurrence among identical rows
    on Spark, so the kept rows are not the same bits on both engines, but each engine's choice
    is uniform and independent across persons)."""

    unit: str
    keys: tuple[Axis, ...]
    max_groups: int
    max_rows: int
    seed: int | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.labels) for a in self.keys)

    def hash_seeds(self) -> tuple[int, int]:
        """The two 63-bit seeds of the random keys (pairs, rows): derived from ``seed``, or
        drawn from the OS CSPRNG (``secrets``) when it is None. The same on every engine."""
        if self.seed is None:
            return secrets.randbits(63), secrets.randbits(63)
        first, second = np.random.default_rng(self.seed).integers(0, 2**63, size=2)
        return int(first), int(second)


RowStep: TypeAlias = Filter | BoundContributions


# ---------------------------------------------------------------- aggregate requests
@dataclass(frozen=True)
class RowCount:
    """The number of rows, or of rows where ``where`` holds. Returns an int."""

    where: Predicate | None = None


@dataclass(frozen=True)
class _Clipped:
    column: str
    lower: float
    upper: float

    @property
    def midpoint(self) -> float:
        """The value a missing entry counts as (queries.py: a fixed in-range value)."""
        return (self.lower + self.upper) / 2.0


@dataclass(frozen=True)
class Lattice:
    """Fixed-point values 2^exponent * t, t an integer in [low, high]: the per-row values of an
    exact sum (module docstring). Built from a public per-row range [lo, hi] alone
    (:meth:`for_range`), so that t * 2^exponent lies in [lo, hi] exactly and |t| < 2^52 (every t
    is an exact float, and the float steps of :meth:`round_float` are exact)."""

    exponent: int
    low: int
    high: int

    @classmethod
    def for_range(cls, lo: Fraction, hi: Fraction) -> Lattice:
        """The finest lattice with |t| <= 2^51 on [lo, hi] (a resolution of 2^-51 of the range's
        magnitude: far below any release grid, which is 2^-10 of the noise)."""
        magnitude = float(max(abs(lo), abs(hi))) or 1.0
        exponent = math.frexp(magnitude)[1] - 51
        step = Fraction(2) ** exponent
        return cls(exponent, -((-lo / step).__floor__()), (hi / step).__floor__())

    @property
    def scale(self) -> float:
        """2^-exponent as a float (exact: a power of two)."""
        return math.ldexp(1.0, -self.exponent)

    def value(self, total: int) -> Fraction:
        """The exact sum total * 2^exponent."""
        return Fraction(total) * Fraction(2) ** self.exponent


def exact_lattices(request: _Clipped) -> tuple[Lattice, Lattice, Lattice]:
    """The lattices of an exact request's three sums: the clipped value v in [lower, upper]; the
    centred value y = v - c in [-h, h]; the centred square y^2 - h^2/2 in [-h^2/2, h^2/2]
    (h = (upper - lower) / 2, exactly as a rational)."""
    return _lattices(request.lower, request.upper)


@functools.lru_cache(maxsize=64)
def _lattices(low: float, high: float) -> tuple[Lattice, Lattice, Lattice]:
    """:func:`exact_lattices` of the bounds, computed once per bounds (not once per group of a
    grouped request: 20,000 groups spent 5 s in rational arithmetic)."""
    lower, upper = Fraction(low), Fraction(high)
    half = (upper - lower) / 2
    return (
        Lattice.for_range(lower, upper),
        Lattice.for_range(-half, half),
        Lattice.for_range(-half * half / 2, half * half / 2),
    )


@dataclass(frozen=True)
class ClippedMoments(_Clipped):
    """n, sum, min and max of the column clipped to [lower, upper] (missing: the midpoint).
    Returns :class:`Moments` (with ``exact``: also the exact lattice sum, module docstring)."""

    exact: bool = False


@dataclass(frozen=True)
class CentredSums(_Clipped):
    """Count and sums of the clipped column centred on the midpoint c, y = v - c: sum(y) and
    sum(y^2 - h^2/2), h = (upper - lower) / 2; the rows below lower and above upper; the
    unclipped mean (missing at c). Returns
    :class:`~dpexplorer.core.mechanisms.base.CentredMoments` (noisy sum over noisy count); with
    ``exact``, its ``exact_sums`` hold the two sums on their lattices (module docstring)."""

    exact: bool = False
    squares: ClassVar[bool] = True
    """Whether the engine sums the centred squares (GroupedCentredSums does not)."""


@dataclass(frozen=True)
class MeanParts(_Clipped):
    """:class:`ClippedMoments` and :class:`CentredSums` of one column together (a mean's input
    needs both): one pass instead of two where the engine can. Returns (Moments,
    CentredMoments), each equal to its own request's answer (``exact``: as theirs)."""

    exact: bool = False

    @property
    def parts(self) -> tuple[ClippedMoments, CentredSums]:
        bounds = (self.column, self.lower, self.upper, self.exact)
        return ClippedMoments(*bounds), CentredSums(*bounds)


@dataclass(frozen=True)
class _ByCell(_Clipped):
    """A request on the clipped column in every cell of the universe of ``axes``."""

    axes: tuple[Axis, ...] = ()
    sparse: bool = False
    """Only the cells with rows (module docstring)."""

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.labels) for a in self.axes)


@dataclass(frozen=True)
class GroupedCentredSums(_ByCell):
    """:class:`CentredSums` in every cell of the universe of ``axes`` (row-major, as
    :class:`CellCounts`). Returns a tuple of
    :class:`~dpexplorer.core.mechanisms.base.CentredMoments`, one per cell (empty cells too),
    without the centred squares (``squares``: no statistic by group reads them; their float sum
    is NaN and their exact sum None, so a reader cannot take them for zero)."""

    exact: bool = False
    squares: ClassVar[bool] = False


@dataclass(frozen=True)
class DistinctCount:
    """The number of distinct non-missing values of ``column`` (persons). Returns an int."""

    column: str


@dataclass(frozen=True)
class DistinctValues:
    """The distinct non-missing values of ``column``, as text, sorted (candidate group keys of a
    private partition selection: a private fact, never published). Returns a tuple of str."""

    column: str


@dataclass(frozen=True)
class PersonContributions(_Clipped):
    """Per (person, cell of ``axes``) with rows: the person's code (0..persons-1, in no
    meaningful order), the cell, the row count and the centred sum of the clipped column (0
    when ``column`` is "": a count).
    Returns (codes, cells, counts, centred sums) as arrays, and the persons' identifiers
    as text (for naming the person D' removes: the steward's own view)."""

    axes: tuple[Axis, ...] = ()
    unit: str = ""

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.labels) for a in self.axes)


@dataclass(frozen=True)
class SortedClipped(_Clipped):
    """The column clipped to [lower, upper] (missing: the midpoint), sorted ascending, as a
    float64 numpy array. O(n) memory and one sort: only order statistics ask for it."""


@dataclass(frozen=True)
class OrderWindow(_Clipped):
    """Order statistics of the clipped column (missing: the midpoint) near its q-quantile:
    returns :class:`Window`, whose ``window`` holds the ranks r - radius .. r + radius (within
    1..n) around r = quantile_rank(n, q) (dpexplorer.core.sensitivity), exactly the slice
    :func:`~dpexplorer.core.sensitivity.window_of_sorted` takes of the sorted column."""

    q: float = 0.5
    radius: int = QUANTILE_RADIUS


@dataclass(frozen=True)
class GroupedSortedClipped(_ByCell):
    """:class:`SortedClipped` in every cell of the universe of ``axes`` (row-major, as
    :class:`CellCounts`): a tuple of sorted float64 arrays, one per cell (empty cells too).
    The order statistics by group need them; O(n) memory, as :class:`SortedClipped`."""


@dataclass(frozen=True)
class CellCounts:
    """Rows per cell of the universe of ``axes`` (row-major over their label counts; an
    :class:`~dpexplorer.data.queries.Axis` has an "(any other)"/"missing" cell, so every row lands in
    exactly one cell). Returns a float64 array of length prod(shape)."""

    axes: tuple[Axis, ...]
    sparse: bool = False
    """Only the cells with rows (module docstring)."""

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a.labels) for a in self.axes)


Request: TypeAlias = (
    RowCount
    | ClippedMoments
    | CentredSums
    | MeanParts
    | GroupedCentredSums
    | SortedClipped
    | OrderWindow
    | CellCounts
    | GroupedSortedClipped
    | PersonContributions
    | DistinctCount
    | DistinctValues
)


@dataclass(frozen=True)
class Moments:
    """Aggregates of a clipped column: row count, sum, smallest and largest value (both
    ``None`` when n = 0). ``total`` is a float sum, exact up to the engine's summation order,
    or, for an exact request, the float nearest ``exact_total``."""

    n: int
    total: float
    smallest: float | None
    largest: float | None
    exact_total: Fraction | None = None
    """The sum on its lattice, exactly (requests with ``exact``; module docstring)."""


@dataclass(frozen=True, eq=False)
class Window:
    """The answer of :class:`OrderWindow`: the order statistics around the quantile's rank, and
    the column's smallest and largest values (None when n = 0): the candidates of its worst-case
    neighbours (dpexplorer.core.neighbours.candidate_changes)."""

    window: SortedWindow
    smallest: float | None
    largest: float | None

    @property
    def ends(self) -> tuple[float, float] | None:
        return None if self.smallest is None or self.largest is None else (self.smallest, self.largest)


def window_answer(sorted_values: np.ndarray, request: OrderWindow) -> Window:
    """:class:`Window` from the whole sorted column (small data, and engines without selection)."""
    x = np.asarray(sorted_values, dtype=float)
    window = window_of_sorted(x, request.q, request.radius)
    window.values.flags.writeable = False
    return Window(window, float(x[0]) if len(x) else None, float(x[-1]) if len(x) else None)


@dataclass(frozen=True, eq=False)
class DatasetSummary:
    """NON-PRIVATE facts for the data steward's own eyes (never released): row count, one
    :class:`~dpexplorer.data.load.ColumnInfo` per column, each numeric column's observed range
    (only when min < max) and each other column's most common values."""

    n_rows: int
    columns: tuple[ColumnInfo, ...]
    ranges: dict[str, tuple[float, float]]
    top_values: dict[str, list[str]]


# ---------------------------------------------------------------- the interface
class Engine(ABC):
    """Evaluates requests on a dataset reference; returns only aggregates.

    The class-level tables ``STEPS`` and ``REQUESTS`` name the method that evaluates each
    row-step type and each request type (type -> method name), once for every engine: an
    implementation defines those methods. Adding an operation (e.g. bounding each privacy
    unit's contribution, or a per-group aggregate) is: a frozen dataclass here, its method's
    name in a table, the method on each engine, and a case in the parity test.
    :meth:`aggregate` refuses a type that is not in the tables, or whose method an engine does
    not define (TypeError), so a missing implementation fails loudly instead of computing
    something else."""

    STEPS: ClassVar[dict[type, str]] = {Filter: "_filter", BoundContributions: "_bound"}
    REQUESTS: ClassVar[dict[type, str]] = {
        RowCount: "_row_count",
        ClippedMoments: "_moments",
        CentredSums: "_centred",
        MeanParts: "_mean_parts",
        GroupedCentredSums: "_grouped_centred",
        GroupedSortedClipped: "_grouped_sorted",
        DistinctCount: "_distinct",
        DistinctValues: "_values",
        PersonContributions: "_persons",
        SortedClipped: "_sorted",
        OrderWindow: "_window",
        CellCounts: "_cells",
    }

    @abstractmethod
    def label(self, dataset: Any) -> str:
        """How the status bar names this engine on ``dataset``, e.g. "polars (streaming)"."""

    @abstractmethod
    def summary(self, dataset: Any, top: int = 16) -> DatasetSummary:
        """The steward's NON-PRIVATE summary of ``dataset`` (see :class:`DatasetSummary`)."""

    @abstractmethod
    def preview(self, dataset: Any, rows: int) -> pl.DataFrame:
        """The first ``rows`` rows as a polars DataFrame (NON-PRIVATE: the steward's view)."""

    def aggregate(self, dataset: Any, request: Request, steps: tuple[RowStep, ...] = ()) -> Any:
        """The answer of ``request`` on ``dataset`` after ``steps`` (see the module docstring
        for each request's return type). DataError if the engine cannot evaluate it."""
        for step in steps:
            self._method(self.STEPS, step)
        written = written_text(dataset)
        request, steps = as_written((request, steps), written)
        dataset = self.with_text(dataset, text_read_columns(request, steps))
        keys = [request.column] if isinstance(request, DistinctValues) else []
        units = unit_columns(dataset, request, steps)
        # a declared text column's cells are their own keys ("01" is not "1"); a person's are
        # always read as the key each cell stands for: two spellings of one id stay one person
        keyed = [c for c in [*keys, *key_columns(request, steps)] if c not in written]
        dataset = self.with_keys(dataset, [*keyed, *units])
        for column in _measured(request):
            if not _holds_numbers(dataset.schema.get(column)):
                dataset = self.as_numbers(dataset, column)
        return self._method(self.REQUESTS, request)(dataset, request, steps)

    def with_text(self, dataset: Any, columns: list[str]) -> Any:
        """``dataset`` with each of ``columns`` (read by a condition or a declared category)
        read as its file's text where the loader read it as numbers and kept the text of the
        cells that are not numbers (``dataset.with_text``, :attr:`dpexplorer.data.load.KEPT`):
        a condition then holds on such a cell by its own text, not by the type the other cells
        gave the column (issue 32). The dataset itself when it keeps no text."""
        with_text = getattr(dataset, "with_text", None)
        return dataset if with_text is None or not columns else with_text(columns)

    def with_keys(self, dataset: Any, columns: list[str]) -> Any:
        """``dataset`` with each of ``columns`` (the key columns of a private key selection:
        its candidate keys, its groups) read as the key each cell stands for
        (``dataset.with_keys``, :func:`dpexplorer.data.cells.text_key`): a number its canonical
        text, other text itself, whatever type the other cells gave the column (issue 32)."""
        with_keys = getattr(dataset, "with_keys", None)
        return dataset if with_keys is None or not columns else with_keys(columns)

    def as_numbers(self, dataset: Any, column: str) -> Any:
        """``dataset`` with ``column`` read as numbers (Float64), cell by cell by the one rule of
        :mod:`dpexplorer.data.cells` (``true``/``false`` 1/0, a number its value, NaN, infinities and
        anything else missing). A statistic with declared bounds measures any column this way, so
        that neither whether it applies (queries.py, ``_measured_column``) nor what a cell counts
        for depends on the type a loader inferred from the values: one person who turns a column
        of booleans into text moves no other row. The polars engine's; Spark has its own."""
        import dataclasses

        number = cell_number(column, dataset.schema[column])
        return dataclasses.replace(
            dataset, frame=dataset.frame.with_columns(number.alias(column)), _encoded={}
        )

    def _method(self, table: dict[type, str], operation: object) -> Any:
        name = table.get(type(operation))
        method = getattr(self, name, None) if name else None
        if method is None:
            raise TypeError(f"{type(self).__name__} does not implement {type(operation).__name__}")
        return method


def written_text(dataset: Any) -> frozenset[str]:
    """The dataset's columns of declared text, compared as written
    (:attr:`dpexplorer.data.load.Dataset.written_text`; none for a dataset that does not say)."""
    return frozenset(getattr(dataset, "written_text", frozenset()))


def unit_columns(dataset: Any, request: Request, steps: tuple[RowStep, ...]) -> list[str]:
    """The privacy-unit columns of ``request`` and ``steps`` that are read as the key each cell
    stands for (:meth:`dpexplorer.data.load.Dataset.with_keys`: a number its value, so "01" and
    "1" are one person; other text itself), so that who is one person never depends on the type
    the loader inferred from the other cells (issue 32: one added id that made a column numeric
    made its words missing, dropping their persons). An integer column without kept text is
    left as it is: its cells are already their keys (no text pass over the ids)."""
    units = [s.unit for s in steps if isinstance(s, BoundContributions)]
    unit = getattr(request, "unit", "")
    units += [unit] if unit else []
    kept, schema = set(getattr(dataset, "kept_text", ())), dataset.schema
    integer = {u for u in units if schema.get(u) is not None and schema[u].is_integer()}
    return [u for u in dict.fromkeys(units) if u in kept or u not in integer]


def _measured(request: Request) -> list[str]:
    """The columns ``request`` reads as numbers: a clipped statistic's column and the column of
    each axis binned by declared edges."""
    columns = [request.column] if isinstance(request, _Clipped) and request.column else []
    axes = getattr(request, "axes", ())
    return columns + [a.column for a in axes if a.edges is not None and a.column not in columns]


def _holds_numbers(dtype: pl.DataType | None) -> bool:
    """True for a numeric or boolean column (read as numbers as it is), or an unknown one (the
    engine says so)."""
    return dtype is None or dtype.is_numeric() or dtype == pl.Boolean


def as_moments(
    n: int,
    total: float | None,
    smallest: float | None,
    largest: float | None,
    exact_total: Fraction | None = None,
) -> Moments:
    """A :class:`Moments` from an engine's raw row (sum is None on no rows in some engines). With
    ``exact_total`` (an exact request), ``total`` is its nearest float."""
    if exact_total is not None:
        total = float(exact_total)
    if n == 0:
        return Moments(0, 0.0, None, None, exact_total)
    return Moments(int(n), float(total or 0.0), float(smallest), float(largest), exact_total)  # type: ignore[arg-type]


GroupedRequest: TypeAlias = "CellCounts | GroupedCentredSums | GroupedSortedClipped"


def by_cell(request: GroupedRequest, cells: Any, answers: list[Any], empty: Any) -> Any:
    """A grouped request's answer from its non-empty ``cells`` (any order) and their ``answers``:
    with ``request.sparse``, (the cells ascending as int64, their answers in that order), whose
    size is the number of cells that occur, whatever the universe's; otherwise one answer per
    cell of the universe, ``empty`` where no row (a float array for :class:`CellCounts`)."""
    cells = np.asarray(cells, dtype=np.int64)
    order = np.argsort(cells, kind="stable")
    if request.sparse:
        ranked = [answers[i] for i in order]
        counts = isinstance(request, CellCounts)
        return cells[order], np.array(ranked, dtype=float) if counts else tuple(ranked)
    size = math.prod(request.shape)
    if isinstance(request, CellCounts):
        out = np.zeros(size, dtype=float)
        out[cells] = np.asarray(answers, dtype=float)
        return out
    dense = [empty] * size
    for cell, answer in zip(cells.tolist(), answers, strict=True):
        dense[cell] = answer
    return tuple(dense)


def sorted_array(values: Any) -> np.ndarray:
    """``values`` as a float64 array (already sorted by the engine)."""
    return np.asarray(values, dtype=float)
