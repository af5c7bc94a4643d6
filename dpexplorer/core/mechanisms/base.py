"""The Mechanism contract of DESIGN.md: what every mechanism module offers.

Inputs are immutable values built by ``dpexplorer.data`` from a query on D and its worst-case
neighbour D' (core never reads files). Outputs are plain arrays the views draw as they are."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

import numpy as np

from dpexplorer.core.accounting.guarantees import ApproxDP, Guarantee, PureDP
from dpexplorer.core.mechanisms.params import Param, validate_params
from dpexplorer.core.partition_selection import Candidates

if TYPE_CHECKING:  # a synthetic-data query's input (MST, AIM); core.marginals loads only for them
    from dpexplorer.core.marginals import MarginalInput

Relation = Literal["add_remove", "replace"]


# ---------------------------------------------------------------- inputs (from the data layer)
@dataclass(frozen=True)
class CentredMoments:
    """The aggregates a noisy-sum-over-noisy-count mechanism needs, on one dataset: the number
    of rows and the sums of the column clipped to [lower, upper] and centred on the midpoint
    c = (lower + upper) / 2, y = x - c in [-h, h], h = (upper - lower) / 2. ``centred_squares``
    is sum(y^2 - h^2 / 2) (in [-h^2/2, h^2/2] per row). The float sums are the engine's, exact up
    to its summation order; ``exact_sums``, when the data layer computed them for a release, are
    (centred sum, centred squares) added exactly on a fixed-point lattice, each row's value kept
    in its declared range (dpexplorer.data.engine.base: the same on D and D' for a group the
    neighbour does not touch). By group the squares are not summed: NaN, and None in
    ``exact_sums``. ``clipped_low``/``clipped_high`` count the rows clipped at each
    bound and ``raw_mean`` is the unclipped column's mean (exploration only: it shows the
    clipping bias)."""

    count: int
    centred_sum: float
    centred_squares: float = 0.0
    clipped_low: int = 0
    clipped_high: int = 0
    raw_mean: float | None = None
    exact_sums: tuple[Fraction, Fraction | None] | None = None

    def changed(
        self, removed: float | None, added: float | None, lower: float, upper: float
    ) -> CentredMoments:
        """The moments after taking out a row of (clipped) value ``removed`` and putting in one of
        value ``added`` (None: no such row), as a neighbouring dataset D' differs from D."""
        mid, half = (lower + upper) / 2.0, (upper - lower) / 2.0
        count, total, squares = self.count, self.centred_sum, self.centred_squares
        for value, sign in ((removed, -1), (added, 1)):
            if value is not None:
                y = min(max(value, lower), upper) - mid
                count, total, squares = (
                    count + sign,
                    total + sign * y,
                    squares + sign * (y * y - half * half / 2),
                )
        return CentredMoments(count, total, squares)


@dataclass(frozen=True, eq=False)
class NumericInput:
    """A real- or vector-valued statistic on D and on its worst-case neighbour D'.

    ``value_d``/``value_d_prime`` have shape (d,) (d = 1 for a scalar). The sensitivities are
    global sensitivities under ``relation``. Data-dependent mechanisms (smooth sensitivity, PTR,
    Dist2Instability) also get the clipped column of D and D', sorted ascending, with ``bounds``
    and the statistic's name (``"median"``, ``"quantile"``, ``"trimmed_mean"``, ...)."""

    value_d: np.ndarray
    value_d_prime: np.ndarray
    sensitivity_l1: float
    sensitivity_l2: float
    n: int
    statistic: str
    relation: Relation = "add_remove"
    output_range: tuple[float, float] | None = None
    bounds: tuple[float, float] | None = None
    sorted_values_d: np.ndarray | None = None
    sorted_values_d_prime: np.ndarray | None = None
    quantile: float = 0.5
    trim_fraction: float = 0.0
    differing_row: str = ""
    labels: tuple[str, ...] = ()
    moments: tuple[CentredMoments, ...] | None = None
    """Count and centred sums of D, one per coordinate (a mean, or a mean per group), else None."""
    moments_prime: tuple[CentredMoments, ...] | None = None
    """The same on D' (set with ``moments``)."""
    moment_sensitivities: tuple[float, float] | None = None
    """(l1 sensitivity of the vector of centred sums, of the vector of counts), set with
    ``moments``. A count sensitivity of 0: the counts are public (one mean under replace)."""
    key_columns: tuple[str, ...] = ()
    """The grouping columns of a statistic by group (empty otherwise)."""
    group_keys: tuple[tuple[str, ...], ...] = ()
    """Each coordinate's key values, one per key column (a statistic by group)."""
    group_values_d: tuple[np.ndarray, ...] | None = None
    """An order statistic by group: each group's sorted clipped values on D (the exponential
    mechanism scores each group on its own); ``sorted_values_d`` stays None, so the mechanisms
    built for one column's order statistic refuse a vector of them."""
    group_values_d_prime: tuple[np.ndarray, ...] | None = None
    group_contribution: tuple[int, int] | None = None
    """An order statistic by group with a privacy unit: (k', r), the groups one person may change
    and the rows they may bring to each (None: one row, one group; two under replace)."""
    partition: Candidates | None = None
    """Set when the group keys are private: the coordinates are the candidate keys (a private
    set), to be released only where a noisy threshold keeps them (partition selection)."""
    exact_values: tuple[Fraction, ...] | None = None
    """``value_d`` exactly, where the data layer computed it from exact sums for a release (a sum
    or a mean: dpexplorer.data.engine.base, exact requests): the release rounds these, not the
    floats, to its grid, so one row moves them by at most the declared sensitivity."""


@dataclass(frozen=True, eq=False)
class SelectionInput:
    """Choose one (or k) of several candidates by score, e.g. the most common category.

    ``scores_d``/``scores_d_prime`` are the utilities u(D, r) and u(D', r); ``sensitivity`` is
    Delta_u = max over r and neighbours of |u(D, r) - u(D', r)|; ``monotone`` says every score
    moves in the same direction between any two neighbours (allows epsilon = Delta_u / sigma)."""

    candidates: tuple[str, ...]
    scores_d: np.ndarray
    scores_d_prime: np.ndarray
    sensitivity: float
    monotone: bool
    n: int
    statistic: str = "argmax"
    relation: Relation = "add_remove"
    differing_row: str = ""


@dataclass(frozen=True, eq=False)
class WorkloadInput:
    """k counting queries over a discretised universe of N cells (for BLR and PMW).

    ``histogram_d``/``histogram_d_prime`` count the rows in each cell (length N);
    ``workload`` is a (k, N) 0/1 matrix: query i counts the cells j with workload[i, j] = 1.
    Queries are normalised (answers are fractions of n) by the mechanisms that need it."""

    cell_labels: tuple[str, ...]
    query_labels: tuple[str, ...]
    histogram_d: np.ndarray
    histogram_d_prime: np.ndarray
    workload: np.ndarray
    n: int
    relation: Relation = "add_remove"
    differing_row: str = ""


QueryInput: TypeAlias = "NumericInput | SelectionInput | WorkloadInput | MarginalInput"


def with_key_selection(epsilon: float, query: QueryInput, delta: float = 0.0) -> tuple[float, float]:
    """(epsilon, delta) of a statistic measured at (``epsilon``, ``delta``) on the keys a private
    partition selection keeps: plus the selection's declared (epsilon, delta) when the query's
    keys are private (adaptive basic composition, Dwork & Roth 2014, Theorem 3.16: the
    measurement is (epsilon, delta)-DP for every fixed key set), else (epsilon, delta)."""
    selection = query.partition if isinstance(query, NumericInput) else None
    if selection is None:
        return epsilon, delta
    return epsilon + selection.epsilon, delta + selection.delta


def key_selection_guarantee(epsilon: float, query: QueryInput) -> PureDP | ApproxDP:
    """:func:`with_key_selection` as a guarantee: PureDP without private keys."""
    total, delta = with_key_selection(epsilon, query)
    return ApproxDP(total, delta) if delta > 0 else PureDP(total)


# ---------------------------------------------------------------- outputs (for the views)
@dataclass(frozen=True)
class PointMass:
    """An output with positive probability, e.g. "⊥" (no answer) of propose-test-release."""

    label: str
    mass_d: float
    mass_d_prime: float
    at: float | None = None
    """The output value the mass sits on, when it is a number (a clamp's bound), in the
    output's coordinates; None for an outcome that is not a number (⊥)."""


@dataclass(frozen=True, eq=False)
class NumericOutput:
    """Output distributions of M(D) and M(D') on a grid, for one coordinate.

    For ``discrete=False`` the arrays are densities; for ``discrete=True`` they are pmfs on the
    grid points. ``privacy_loss`` is ln p_D(o)/p_D'(o) on the grid (±inf where one side is 0).
    ``point_masses`` hold the outputs that are not on the grid (each with its own loss)."""

    grid: np.ndarray
    density_d: np.ndarray
    density_d_prime: np.ndarray
    privacy_loss: np.ndarray
    discrete: bool = False
    point_masses: tuple[PointMass, ...] = ()
    coordinate: int = 0
    note: str = ""
    origin: float = 0.0
    unit: float = 1.0
    """The grid holds (o - origin) / unit for outputs o, and densities are per grid unit:
    origin 0 and unit 1 (the outputs themselves) unless the noise is too small to plot around
    the value (see ``note``)."""
    monte_carlo_runs: int = 0
    """0 for exact densities; else the densities are histograms of this many simulated runs
    per side (estimates: their loss is not the exact privacy loss, and no delta follows)."""
    quantity: str = ""
    """What number the grid's outputs are, in words, when it is not the mechanism's output itself
    (BLR, PMW, MWEM plot the largest error of their released answers): the views' x axis."""

    @property
    def in_output_units(self) -> bool:
        return self.origin == 0.0 and self.unit == 1.0

    @property
    def outputs_resolve_noise(self) -> bool:
        """Whether simulated outputs, as float64 numbers, still carry the noise: a unit at least
        1e-9 of the value keeps (o - origin) / unit to ~1e-7 (the ulp of the value over unit)."""
        return self.unit >= 1e-9 * max(1.0, abs(self.origin))

    def to_grid(self, outputs: np.ndarray | float) -> np.ndarray:
        """Outputs o in the grid's coordinates, (o - origin) / unit."""
        return (np.asarray(outputs, dtype=float) - self.origin) / self.unit


WORKLOAD_ERROR = "largest error over the workload, max |released − true| (fractions of the rows)"
"""What BLR, PMW and MWEM plot (NumericOutput.quantity): their released answers' largest error."""


@dataclass(frozen=True, eq=False)
class CategoricalOutput:
    """Selection probabilities of M(D) and M(D') over named outcomes, with the loss of each."""

    labels: tuple[str, ...]
    pmf_d: np.ndarray
    pmf_d_prime: np.ndarray
    privacy_loss: np.ndarray
    note: str = ""


OutputDistribution = NumericOutput | CategoricalOutput


@dataclass(frozen=True, eq=False)
class Curve:
    """A named curve for a plot: y against x, with axis names; ``kind`` says whether it is the
    exact value, a proven bound or a Monte-Carlo estimate."""

    x: np.ndarray
    y: np.ndarray
    x_label: str
    y_label: str
    name: str
    kind: Literal["exact", "bound", "monte_carlo"] = "exact"


@dataclass(frozen=True, eq=False)
class AccuracyReport:
    """Accuracy of the mechanism at its current parameters, on D.

    ``error_tail``: P(|error| > alpha) against alpha (exact); ``error_tail_bound``: the
    seed's bound for the same, when the seed proves one. ``ci_halfwidth`` is the half-width of
    the interval that holds the error with probability ``ci_level``; ``mse`` the mean squared
    error (inf where undefined, e.g. Cauchy noise). ``error_vs_epsilon`` and ``error_vs_n``
    are curves of a typical error (the report says which in its ``y_label``)."""

    error_tail: Curve
    error_tail_bound: Curve | None
    ci_level: float
    ci_halfwidth: float
    mse: float
    error_vs_epsilon: tuple[Curve, ...] = ()
    error_vs_n: tuple[Curve, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


OutputKind = Literal["numeric", "categorical", "synthetic", "transcript"]


class Mechanism(ABC):
    """One mechanism. Subclasses set the class attributes and implement the abstract methods;
    methods take already validated parameters (use :meth:`validate`)."""

    name: ClassVar[str]
    label: ClassVar[str]
    summary: ClassVar[str]
    input_type: ClassVar[type]
    output_kind: ClassVar[OutputKind]
    params: ClassVar[tuple[Param, ...]]
    order: ClassVar[int] = 100
    """Position in the picker (smaller first)."""

    def validate(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Defaults filled in, each value checked against its declaration."""
        return validate_params(self.params, values)

    def accepts(self, query: QueryInput) -> str | None:
        """None if the mechanism applies to ``query``, else the reason it does not."""
        if isinstance(query, self.input_type):
            return None
        return f"{self.label} needs a {self.input_type.__name__} query"

    @abstractmethod
    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> Guarantee:
        """The privacy guarantee, in the richest form available (for the accountant)."""

    @abstractmethod
    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        """The (epsilon, delta) the mechanism claims (the number the auditor checks)."""

    @abstractmethod
    def output_distribution(self, params: Mapping[str, Any], query: QueryInput) -> OutputDistribution:
        """Exact output distributions of M(D) and M(D') with the privacy loss."""

    @abstractmethod
    def delta_at(self, params: Mapping[str, Any], query: QueryInput, epsilon: float) -> float:
        """Exact hockey-stick divergence sup_S P[M(D) in S] - e^epsilon P[M(D') in S],
        the larger of the two directions D->D' and D'->D."""

    def privacy_profile(
        self, params: Mapping[str, Any], query: QueryInput, epsilons: np.ndarray
    ) -> np.ndarray:
        """delta(epsilon) at each epsilon (exact, on this pair D, D')."""
        return np.array([self.delta_at(params, query, float(e)) for e in epsilons])

    @abstractmethod
    def accuracy(
        self, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
    ) -> AccuracyReport:
        """Accuracy on D: error tail, CI, MSE, error against epsilon and n, the seed's bound."""

    @abstractmethod
    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        """``size`` independent outputs of M(D) (or M(D')), vectorised. Numeric: shape (size,)
        for the shown coordinate, NaN for "⊥"; categorical: candidate indices, -1 for "⊥"."""


class PureEpsilonMechanism(Mechanism):
    """A mechanism that is epsilon-DP for its declared ``epsilon`` parameter (delta = 0): the
    exponential mechanism, noisy max, top-k, sparse vector, PMW, MWEM, BLR. Each subclass's
    docstring cites the theorem; the auditor and the exact privacy loss check the claim."""

    def guarantee(self, params: Mapping[str, Any], query: QueryInput) -> PureDP:
        return PureDP(float(params["epsilon"]))

    def epsilon_delta(self, params: Mapping[str, Any], query: QueryInput) -> tuple[float, float]:
        return float(params["epsilon"]), 0.0
