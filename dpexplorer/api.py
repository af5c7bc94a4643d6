"""The public Python API of dpexplorer: `import dpexplorer as dpx`.

Everything listed in `__all__` here is public and kept; every other module of the package is
private and may change. The API needs no Qt: the window, `dpexplorer release` and the scripts
and notebooks the window exports all run the same code underneath.

Four steps, as in the window:

1. **Open** a dataset: `open_dataset` takes a file path (CSV, TSV, .csv.gz, Parquet), a polars
   or pandas DataFrame, or a Spark table (`engine="spark"`, or a pyspark DataFrame).
2. **Ask**: queries are the plan format's vocabulary as Python values (`Count`, `Mean`,
   `GroupBy`, ...; `query_from_dict` reads the JSON form of `dpexplorer/release/PLAN_FORMAT.md`).
   Bounds, categories and keys are declared, never read from the data.
3. **Explore** a mechanism on the dataset D and its worst-case neighbour D' (`explore`): the
   output distributions, the privacy loss, the exact delta at the claimed epsilon, accuracy.
   Exploration shows true answers: it is for the data steward's eyes only.
4. **Plan and release**: a `Plan` of `Measurement`s is priced against a budget
   (`plan_budget`, every accountant) and released through the budget ledger (`set_budget`,
   `release_plan`): the same exact samplers, checks, files and error messages as
   `dpexplorer release`. Nothing is charged unless the whole plan fits.

Every function and class checks its arguments: a wrong value raises one of the errors listed
here (all `DPExplorerError`s) with a message naming the parameter and what it takes; a value of
the wrong type (text or None for a number, a number for a column name) raises one that is also
a `TypeError` (`InvalidParameterError`, or `DataError` for a query's settings). Not yet: the
fields of `Axis`, `ArgMax`, `TopK`, `Workload` and `marginal_workload` (issue 43), where a
value of the wrong type may still raise Python's own `TypeError` or `ValueError`.

Example (the bundled UCI Adult data; a fresh ledger in a temporary directory):

>>> import tempfile, pathlib
>>> import dpexplorer as dpx
>>> adult = dpx.open_dataset(dpx.example_path())
>>> plan = dpx.Plan([
...     dpx.Measurement(dpx.Count(), "laplace", {"epsilon": 0.5}),
...     dpx.Measurement(dpx.Mean("age", 17, 90), "laplace", {"epsilon": 0.5}),
... ])
>>> report = dpx.plan_budget(adult, plan, epsilon=2.0)
>>> report.fits
True
>>> work = pathlib.Path(tempfile.mkdtemp())
>>> dpx.set_budget(adult, 2.0, ledger=work / "ledger.sqlite")
>>> results = dpx.release_plan(adult, plan, out=work / "released", ledger=work / "ledger.sqlite")
>>> [r.labels for r in results]
[('count',), ('mean',)]
>>> dpx.remaining_budget(adult, ledger=work / "ledger.sqlite")
1.0
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dpexplorer.core.checks import (
    check_choice,
    check_mapping,
    check_path,
    check_real,
    check_text,
    check_whole,
    described,
    instances,
    shown,
)
from dpexplorer.core.errors import (
    DPExplorerError,
    InvalidParameterError,
    NotApplicableError,
    ParameterTypeError,
)
from dpexplorer.data.codebook import (
    Codebook,
    ColumnFacts,
    Fact,
    Unit,
    load_codebook,
    save_codebook,
    shipped_codebook,
)
from dpexplorer.data.errors import DataError, DataTypeError
from dpexplorer.data.queries import (
    And,
    ArgMax,
    Axis,
    Compare,
    Count,
    GroupBy,
    Histogram,
    Mean,
    Median,
    Not,
    Or,
    PredicateCount,
    PrivacyUnit,
    PrivateKeys,
    Quantile,
    Query,
    Sum,
    TopK,
    TrimmedMean,
    Variance,
    Workload,
    marginal_workload,
    query_from_dict,
    where,
)
from dpexplorer.release.plan_run import PlanError

if TYPE_CHECKING:
    from dpexplorer.core.accounting.guarantees import Guarantee
    from dpexplorer.core.attacks import DifferencingResult, MembershipResult, Noise, ReconstructionResult
    from dpexplorer.core.mechanisms.base import AccuracyReport, CategoricalOutput, NumericOutput
    from dpexplorer.core.planning import BudgetReport
    from dpexplorer.core.tradeoff import TradeOff
    from dpexplorer.release.charge import ReleaseFailedError
    from dpexplorer.release.export import ExportError
    from dpexplorer.release.ledger import BudgetExceededError, NoBudgetError
    from dpexplorer.release.release import ReleaseResult
    from dpexplorer.release.replay import PlanAudit

_LAZY = {
    "AccuracyReport": "dpexplorer.core.mechanisms.base",
    "DifferencingResult": "dpexplorer.core.attacks",
    "MembershipResult": "dpexplorer.core.attacks",
    "ReconstructionResult": "dpexplorer.core.attacks",
    "BudgetExceededError": "dpexplorer.release.ledger",
    "BudgetReport": "dpexplorer.core.planning",
    "CategoricalOutput": "dpexplorer.core.mechanisms.base",
    "ExportError": "dpexplorer.release.export",
    "NoBudgetError": "dpexplorer.release.ledger",
    "NumericOutput": "dpexplorer.core.mechanisms.base",
    "ReleaseFailedError": "dpexplorer.release.charge",
    "ReleaseResult": "dpexplorer.release.release",
    "TradeOff": "dpexplorer.core.tradeoff",
    "PlanAudit": "dpexplorer.release.replay",
}
"""Public names defined in heavier modules (scipy, the samplers), imported on first use: the
queries alone cost polars' import, the planner's scipy.optimize more than a second."""


def __getattr__(name: str) -> Any:
    """A public name of :data:`_LAZY`, imported from its module on first use and kept."""
    if name not in _LAZY:
        raise AttributeError(f"module 'dpexplorer.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__docformat__ = "markdown"

__all__ = [
    "AccuracyReport",
    "And",
    "ArgMax",
    "Axis",
    "BudgetExceededError",
    "BudgetReport",
    "CategoricalOutput",
    "Codebook",
    "ColumnFacts",
    "Compare",
    "Count",
    "DPExplorerError",
    "DataError",
    "DifferencingResult",
    "Exploration",
    "ExportError",
    "Fact",
    "GroupBy",
    "Histogram",
    "InvalidParameterError",
    "Mean",
    "Measurement",
    "Median",
    "MembershipResult",
    "NoBudgetError",
    "Not",
    "NotApplicableError",
    "NumericOutput",
    "Or",
    "Plan",
    "PlanAudit",
    "PlanError",
    "PredicateCount",
    "PrivacyUnit",
    "PrivateKeys",
    "Quantile",
    "Query",
    "ReconstructionResult",
    "ReleaseFailedError",
    "ReleaseResult",
    "Sum",
    "TopK",
    "TradeOff",
    "TrimmedMean",
    "Unit",
    "Variance",
    "Workload",
    "attack_differencing",
    "attack_membership",
    "attack_reconstruct",
    "audit_plan",
    "example_path",
    "explore",
    "load_codebook",
    "marginal_workload",
    "mechanism_names",
    "open_dataset",
    "plan_budget",
    "query_from_dict",
    "release_plan",
    "released_risk",
    "remaining_budget",
    "save_codebook",
    "set_budget",
    "shipped_codebook",
    "where",
]

Relation = Literal["add_remove", "replace"]
LedgerLike = str | os.PathLike[str] | None


# ------------------------------------------------------------------ the boundary
# Every public function checks its arguments first (issue 43): a wrong type raises
# ParameterTypeError (an InvalidParameterError and a TypeError) naming the parameter and what it
# takes, never an exception of the internals.
def _path(value: Any, what: str) -> Path:
    return Path(check_path(value, what))


def _codebook(value: Any) -> Codebook | None:
    """``value`` if it is None or a :class:`Codebook` (of :func:`load_codebook`, or built)."""
    if value is None or isinstance(value, Codebook):
        return value
    raise ParameterTypeError(
        f"codebook must be a dpx.Codebook (e.g. from dpx.load_codebook) or None, not {described(value)}"
    )


def _ledger(value: LedgerLike) -> Path | None:
    return None if value is None else _path(value, "ledger")


def _optional_text(value: Any, what: str) -> str | None:
    return None if value is None else check_text(value, what)


def _dataset(value: Any) -> Any:
    """``value`` if it is a dataset handle of :func:`open_dataset`."""
    import sys

    from dpexplorer.data.load import Dataset

    spark = sys.modules.get("dpexplorer.data.engine.spark_engine")
    if isinstance(value, Dataset) or (spark is not None and isinstance(value, spark.SparkDataset)):
        return value
    raise ParameterTypeError(f"dataset must be a dataset opened by dpx.open_dataset, not {described(value)}")


def _query(value: Any, what: str = "query") -> Query:
    """``value`` if it is a query (``Count()``, ``Mean(...)``, ...)."""
    if not isinstance(value, Query):
        raise ParameterTypeError(
            f"{what} must be a query such as dpx.Count() or dpx.Mean('age', 0, 100), not {described(value)}"
        )
    if isinstance(value, Histogram) and not isinstance(value.axis, Axis):
        raise ParameterTypeError(f"a histogram's axis must be an Axis, not {described(value.axis)}")
    return value


def _optional_real(value: Any, what: str) -> float | None:
    return None if value is None else check_real(value, what)


def _parameters(value: Mapping[str, Any] | None, what: str = "parameters") -> dict[str, Any]:
    return {} if value is None else dict(check_mapping(value, what))


def _level(value: Any) -> float:
    level = check_real(value, "ci_level")
    if not 0 < level < 1:
        raise InvalidParameterError(f"ci_level must be in (0, 1), not {shown(value)}")
    return level


def _budget(epsilon: Any, delta: Any) -> tuple[float, float]:
    """(epsilon, delta) of a budget: epsilon > 0 and 0 <= delta < 1, finite numbers."""
    eps, dlt = check_real(epsilon, "epsilon"), check_real(delta, "delta")
    if eps <= 0:
        raise InvalidParameterError(f"epsilon must be positive, not {shown(epsilon)}")
    if not 0 <= dlt < 1:
        raise InvalidParameterError(f"delta must be in [0, 1), not {shown(delta)}")
    return eps, dlt


# ------------------------------------------------------------------ datasets
def example_path() -> Path:
    """The path of the bundled UCI Adult dataset (Parquet, 32,561 rows; licence in
    `dpexplorer/resources/ADULT_LICENSE.md`)."""
    from dpexplorer.data.default import default_dataset_path

    return default_dataset_path()


def open_dataset(
    source: Any,
    *,
    engine: Literal["polars", "spark"] = "polars",
    spark_master: str | None = None,
    name: str = "dataframe",
) -> Any:
    """Open a dataset for exploring and releasing; returns an opaque dataset handle to pass to
    the other functions.

    `source` is one of:

    - a path (str or `os.PathLike`) of a CSV, TSV, .csv.gz or Parquet file; with
      `engine="spark"` also a Parquet directory or the name of a table in Spark's catalog
      (`spark_master`: `local[*]` by default, or `spark://host:7077`);
    - a polars `DataFrame` or `LazyFrame`, or a pandas `DataFrame`: written to a private
      temporary Parquet file named `<name>.parquet` and opened as a file is (the same checks,
      the same identity in the ledger: the content fingerprint, which does not depend on the
      format); the file lives as long as the handle;
    - a pyspark `DataFrame`: opened on its Spark session as a temporary view.

    Guarantees: returns a dataset with at least one row and one column, or raises `DataError`
    saying what is wrong (never another exception for a bad file). Rows or values set aside
    (wrong number of fields, text in a numeric column, NaN) are counted in the handle's
    `warnings`."""
    check_choice(engine, "engine", ("polars", "spark"))
    _optional_text(spark_master, "spark_master")
    check_text(name, "name")
    if isinstance(source, str | os.PathLike):
        from dpexplorer.data.engine import open_dataset as open_source

        if "\0" in str(os.fspath(source)):
            raise DataError(f"the path {shown(source)} holds a NUL character: no file has such a name")
        return open_source(source, engine, spark_master=spark_master)
    module = type(source).__module__
    if module.startswith("pyspark"):
        return _open_spark_frame(source)
    if module.startswith(("polars", "pandas")):
        if engine != "polars":
            raise DataError("a polars or pandas DataFrame is opened with the polars engine")
        return _open_frame(source, name)
    raise DataTypeError(
        f"cannot open a {type(source).__name__}: give a file path, a polars or pandas DataFrame, "
        "or a Spark table"
    )


def _open_frame(frame: Any, name: str) -> Any:
    import polars as pl

    from dpexplorer.data.load import load_dataset

    if type(frame).__module__.startswith("pandas"):
        try:
            frame = pl.from_pandas(frame)
        except (TypeError, ValueError, ImportError, pl.exceptions.PolarsError) as exc:
            raise DataError(f"the pandas DataFrame cannot be read: {exc}") from None
    if isinstance(frame, pl.LazyFrame):
        frame = frame.collect()
    if not isinstance(frame, pl.DataFrame):
        raise DataError(f"not a DataFrame: {type(frame).__name__}")
    if not name or Path(name).name != name:
        raise DataError(f"the dataset's name must be a plain file name, got {name!r}")
    folder = tempfile.TemporaryDirectory(prefix="dpexplorer-frame-")
    path = Path(folder.name) / f"{name}.parquet"
    try:
        frame.write_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        folder.cleanup()
        raise DataError(f"the DataFrame cannot be written for reading: {exc}") from None
    dataset = load_dataset(path, lazy=False)
    weakref.finalize(dataset, folder.cleanup)
    return dataset


def _open_spark_frame(frame: Any) -> Any:
    import secrets

    from dpexplorer.data.engine.spark_engine import open_spark

    view = f"dpexplorer_{secrets.token_hex(6)}"
    frame.createOrReplaceTempView(view)
    return open_spark(view)


# ------------------------------------------------------------------ exploring
def mechanism_names() -> tuple[str, ...]:
    """The names of every mechanism, in the window's menu order (the `mechanism` of a
    `Measurement`, of `explore` and of a plan entry)."""
    from dpexplorer.core.mechanisms import registry

    return tuple(m.name for m in registry.all_mechanisms())


def _mechanism(name: str) -> Any:
    from dpexplorer.core.mechanisms import registry

    try:
        return registry.get(name)
    except KeyError as exc:
        raise InvalidParameterError(str(exc.args[0])) from None


@dataclass(frozen=True, eq=False)
class Exploration:
    """A mechanism on a dataset D and its worst-case neighbour D' (the numbers behind the
    window's views). It holds true answers of the data (the distributions are centred on
    them): for the steward's eyes only, never to publish.

    - `epsilon`, `delta`: what the mechanism claims at `parameters` (validated, defaults filled in);
    - `delta_exact`: the exact hockey-stick divergence at `epsilon` on this pair D, D' (None
      where the mechanism has no exact privacy profile; `delta_note` says why);
    - `output`: `NumericOutput` (a grid, the densities or pmfs of M(D) and M(D'), the privacy
      loss ln p_D / p_D' on the grid) or `CategoricalOutput` (probabilities of each outcome);
    - `accuracy`: the error on D (error tail, confidence interval half-width at `ci_level`,
      mean squared error, error against epsilon and n), None where the mechanism has none;
    - `guarantee`: the mechanism's guarantee in its richest form (what an accountant composes);
    - `differing_row`: the row that differs between D and D', in words."""

    mechanism: str
    parameters: dict[str, Any]
    relation: str
    epsilon: float
    delta: float
    delta_exact: float | None
    delta_note: str
    output: NumericOutput | CategoricalOutput
    accuracy: AccuracyReport | None
    guarantee: Guarantee
    differing_row: str

    @property
    def privacy_loss(self) -> Any:
        """The privacy loss ln p_D(o) / p_D'(o) at each output of `output` (numpy array)."""
        return self.output.privacy_loss

    def delta_at(self, epsilon: float) -> float:
        """The exact delta at ``epsilon`` on this pair (NotApplicableError where none exists)."""
        at = check_real(epsilon, "epsilon")
        if at < 0:
            raise InvalidParameterError(f"epsilon must be at least 0, not {shown(epsilon)}")
        return float(self._mechanism.delta_at(self.parameters, self._input, at))

    _mechanism: Any = field(default=None, repr=False)
    _input: Any = field(default=None, repr=False)


def explore(
    dataset: Any,
    query: Query,
    mechanism: str,
    parameters: Mapping[str, Any] | None = None,
    *,
    relation: Relation = "add_remove",
    ci_level: float = 0.95,
) -> Exploration:
    """Run `mechanism` (a name from `mechanism_names`) at `parameters` on `query` over
    `dataset` and its worst-case neighbour under `relation` (`add_remove`: one row added or
    removed, or one person's rows with a `PrivacyUnit`; `replace`: one row changed). Exact
    where the mechanism allows (densities, loss, delta), as in the window; a privacy unit's
    rows are bounded with the window's fixed exploration seed. Nothing is released or charged.
    Raises `DataError` (the query does not fit the data), `InvalidParameterError`
    (parameters), `NotApplicableError` (the mechanism does not take this query)."""
    from dpexplorer.data.answers import query_input
    from dpexplorer.data.grouped import EXPLORATION_SEED

    _dataset(dataset)
    _query(query)
    chosen = _mechanism(check_text(mechanism, "mechanism"))
    params = chosen.validate(_parameters(parameters))
    _level(ci_level)
    inputs = query_input(dataset, query, relation, bounding_seed=EXPLORATION_SEED)
    reason = chosen.accepts(inputs)
    if reason is not None:
        raise NotApplicableError(reason)
    epsilon, delta = chosen.epsilon_delta(params, inputs)
    try:
        delta_exact, note = float(chosen.delta_at(params, inputs, epsilon)), ""
    except NotApplicableError as exc:
        delta_exact, note = None, str(exc)
    try:
        accuracy = chosen.accuracy(params, inputs, ci_level=ci_level)
    except NotApplicableError:
        accuracy = None
    return Exploration(
        mechanism=chosen.name,
        parameters=params,
        relation=relation,
        epsilon=float(epsilon),
        delta=float(delta),
        delta_exact=delta_exact,
        delta_note=note,
        output=chosen.output_distribution(params, inputs),
        accuracy=accuracy,
        guarantee=chosen.guarantee(params, inputs),
        differing_row=str(getattr(inputs, "differing_row", "")),
        _mechanism=chosen,
        _input=inputs,
    )


# ------------------------------------------------------------------ attacks
def attack_reconstruct(
    dataset: Any,
    column: str,
    value: Any,
    *,
    rows: int,
    queries: int,
    epsilon: float | None = None,
    noise: float | None = None,
    seed: int | None = None,
) -> ReconstructionResult:
    """The Dinur-Nissim reconstruction attack (Dinur & Nissim 2003), as `dpexplorer attack
    reconstruct`: `rows` rows sampled from `dataset`, each secretly 1 where `column == value`;
    `queries` random subset counts of them answered exactly, with uniform noise in
    [-`noise`, `noise`], or by the Laplace mechanism with the total `epsilon` split over the
    queries (not both); the attacker solves a linear program and rounds.

    Returns a `ReconstructionResult`: `recovered` (the fraction of the secret column recovered)
    beside `baseline` (the majority value's share, the best guess without queries). Exploration:
    it reads the true data, releases nothing and charges no ledger.

    >>> adult = open_dataset(example_path())
    >>> exact = attack_reconstruct(adult, "sex", "Female", rows=200, queries=400, seed=1)
    >>> exact.recovered
    1.0
    >>> private = attack_reconstruct(adult, "sex", "Female", rows=200, queries=400, epsilon=1.0, seed=1)
    >>> private.recovered < private.baseline + 0.1
    True
    """
    from dpexplorer.data.attack_rows import reconstruct_column

    eps, magnitude = _optional_real(epsilon, "epsilon"), _optional_real(noise, "noise")
    if eps is not None and magnitude is not None:
        raise InvalidParameterError("give epsilon (Laplace answers) or noise (bounded noise), not both")
    kind: Noise = "laplace" if eps is not None else ("bounded" if magnitude else "exact")
    return reconstruct_column(
        _dataset(dataset),
        column,
        value,
        rows,
        queries,
        noise=kind,
        magnitude=magnitude or 0.0,
        epsilon=1.0 if eps is None else eps,
        seed=seed,
    )


def attack_differencing(
    dataset: Any, column: str, value: Any, *, row: int, epsilon: float | None = None, seed: int | None = None
) -> DifferencingResult:
    """The differencing attack, as `dpexplorer attack differencing`: the count of rows with
    `column == value` minus the same count without row `row` is that person's secret, exactly;
    with `epsilon`, each count is answered by Laplace at `epsilon`/2 and the attacker's
    `posterior` stays at or below `bound`, the epsilon-DP ceiling prior e^eps / (prior e^eps +
    1 - prior). Exploration only: nothing is released or charged."""
    from dpexplorer.data.attack_rows import difference_person

    eps = _optional_real(epsilon, "epsilon")  # 0 is refused, not taken for "no epsilon"
    kind: Noise = "exact" if eps is None else "laplace"
    return difference_person(
        _dataset(dataset), column, value, row, noise=kind, epsilon=1.0 if eps is None else eps, seed=seed
    )


def attack_membership(
    dataset: Any, column: str, value: Any, *, epsilon: float, trials: int = 20_000, seed: int | None = None
) -> MembershipResult:
    """Membership inference, as `dpexplorer attack membership`: the likelihood-ratio test
    between the Laplace-released count of `column == value` on `dataset` (D) and on D less one
    such person, over `trials` releases of each. Its rates (`tpr`, `fpr` at each threshold) lie
    in the epsilon-DP region TPR <= e^eps FPR, 1 - FPR <= e^eps (1 - TPR), up to sampling error.
    Exploration only: nothing is released or charged."""
    from dpexplorer.data.attack_rows import membership_of

    return membership_of(_dataset(dataset), column, value, trials, epsilon=epsilon, seed=seed)


# ------------------------------------------------------------------ plans
@dataclass(frozen=True)
class Measurement:
    """One statistic of a plan: `query` released with `mechanism` (a name from
    `mechanism_names`) at `parameters` (omitted ones take their defaults). Its JSON form
    (`to_dict`) is a plan entry of `dpexplorer release`."""

    query: Query
    mechanism: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    kind: str = "statistic"
    """`statistic`, or `synthetic`: a synthetic table (MST or AIM on a `marginals` query)."""
    post_processing: Mapping[str, Any] | None = None
    """Post-processing the steward declares for the released values (e.g. non-negative,
    integer), applied after the draw and recorded in the provenance (PLAN_FORMAT.md)."""

    def __post_init__(self) -> None:
        _query(self.query)
        check_text(self.mechanism, "mechanism")
        for name, value in check_mapping(self.parameters, "parameters").items():
            if not isinstance(value, str | int | float | bool):
                raise ParameterTypeError(
                    f"parameter {name} must be a number, text or true/false, not {described(value)}"
                )
        check_choice(self.kind, "kind", ("statistic", "synthetic"))
        if self.post_processing is not None:
            check_mapping(self.post_processing, "post_processing")

    def to_dict(self) -> dict[str, Any]:
        """The plan entry: `{"query": ..., "mechanism": ..., "parameters": ...}` (and `"kind"`
        when it is not a statistic, `"post_processing"` when declared)."""
        entry: dict[str, Any] = {
            "query": self.query.to_dict(),
            "mechanism": self.mechanism,
            "parameters": dict(self.parameters),
        }
        if self.kind != "statistic":
            entry["kind"] = self.kind
        if self.post_processing is not None:
            entry["post_processing"] = dict(self.post_processing)
        return entry

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> Measurement:
        """A plan entry read back (`PlanError` for an unknown key or a malformed query)."""
        from dpexplorer.release.plan_run import entry_query, plan_entries

        (checked,), _ = plan_entries([dict(check_mapping(entry, "entry"))])
        try:
            query, params = entry_query(checked)
        except DPExplorerError as exc:
            raise PlanError(f"plan entry 1: {exc}") from None
        kind, post = checked.get("kind", "statistic"), checked.get("post_processing")
        return cls(query, checked["mechanism"], params, kind, post)


@dataclass(frozen=True)
class Plan:
    """A release plan: `measurements` in order, and optionally the steward's claim that the
    data are a secret Poisson sample of a population at `sampling_rate` (each release is then
    charged the amplified guarantee). Written and read in the format of
    `dpexplorer/release/PLAN_FORMAT.md` (`write`, `read`), which `dpexplorer release` runs."""

    measurements: Sequence[Measurement]
    sampling_rate: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "measurements", instances(self.measurements, Measurement, "measurements"))
        if self.sampling_rate is not None:
            rate = check_real(self.sampling_rate, "sampling_rate")
            if not 0 < rate <= 1:
                raise InvalidParameterError(
                    f"sampling_rate must be in (0, 1], not {shown(self.sampling_rate)}"
                )

    def to_json(self) -> Any:
        """The plan as JSON values: a list of entries, or `{"sampling": ..., "measurements": ...}`."""
        entries = [m.to_dict() for m in self.measurements]
        if self.sampling_rate is None:
            return entries
        return {"sampling": {"rate": self.sampling_rate}, "measurements": entries}

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the plan as JSON to `path` (UTF-8); returns the path (`PlanError` if it cannot
        be written: a parameter that is not finite, a folder that does not exist)."""
        target = _path(path, "path")
        try:
            text = json.dumps(self.to_json(), indent=2, allow_nan=False)
        except ValueError as exc:  # a parameter of NaN or an infinity
            raise PlanError(f"the plan cannot be written as JSON: {exc}") from None
        try:
            target.write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise PlanError(f"cannot write the plan {target}: {exc.strerror or exc}") from None
        return target

    @classmethod
    def read(cls, path: str | os.PathLike[str], *, codebook: Codebook | None = None) -> Plan:
        """Read a plan file (`PlanError` saying which entry is wrong and how). With `codebook`,
        an entry that leaves out a public fact (a bound, categories, bin edges) takes it from
        the codebook; one that contradicts it, or uses a fact neither declares, is refused."""
        from dpexplorer.release.plan_run import read_plan_file

        book = _codebook(codebook)
        entries, rate = read_plan_file(_path(path, "path"))
        return cls._of(entries, rate, book)

    @classmethod
    def from_json(cls, value: Any, *, codebook: Codebook | None = None) -> Plan:
        """A plan from JSON values (as `to_json` gives); `codebook` as for `read`."""
        from dpexplorer.release.plan_run import plan_entries

        book = _codebook(codebook)
        entries, rate = plan_entries(value)
        return cls._of(entries, rate, book)

    @classmethod
    def _of(cls, entries: list[dict[str, Any]], rate: float | None, codebook: Codebook | None = None) -> Plan:
        from dpexplorer.release.plan_run import entry_query
        from dpexplorer.release.public_facts import declare_entry

        measurements = []
        for number, entry in enumerate(entries, start=1):
            try:
                if codebook is not None:
                    entry, _facts = declare_entry(entry, codebook)
                query, params = entry_query(entry)
            except DPExplorerError as exc:
                raise PlanError(f"plan entry {number}: {exc}") from None
            kind, post = entry.get("kind", "statistic"), entry.get("post_processing")
            measurements.append(Measurement(query, entry["mechanism"], params, kind, post))
        return cls(measurements, rate)


def _as_plan(plan: Plan | Measurement | Iterable[Measurement]) -> Plan:
    if isinstance(plan, Plan):
        return plan
    if isinstance(plan, Measurement):
        return Plan([plan])
    return Plan(instances(plan, Measurement, "plan (a Plan, a Measurement or a list of Measurements)"))


def plan_budget(
    dataset: Any,
    plan: Plan | Measurement | Iterable[Measurement],
    *,
    epsilon: float,
    delta: float = 0.0,
    ledger: LedgerLike = None,
    relation: Relation = "add_remove",
) -> BudgetReport:
    """Price `plan` against a budget (`epsilon`, `delta`) under every accountant, as the
    window's Budget tab does: each measurement at what its release would be charged (its exact
    release path's guarantee, amplified under the plan's sampling claim), composed with what
    the ledger already holds for this dataset when `ledger` (a path) is given. Nothing is
    charged. The report's `fits`, `best`, `remaining` and `methods` (one total per accountant,
    each an upper bound) say whether and how the plan fits; `message` says it in words.
    Raises `NotApplicableError` for a measurement with no exact release path."""
    from dpexplorer.core.neighbours import check_relation
    from dpexplorer.core.planning import PlannedMeasurement, budget_report, guarantees_by_method
    from dpexplorer.data.answers import query_input
    from dpexplorer.data.grouped import EXPLORATION_SEED
    from dpexplorer.release.release import planned_charge

    _dataset(dataset)
    chosen = _as_plan(plan)
    epsilon, delta = _budget(epsilon, delta)
    _ledger(ledger)
    check_relation(relation)
    planned = [
        PlannedMeasurement(
            f"#{number} {m.query.describe()}",
            m.mechanism,
            dict(m.parameters),
            query_input(dataset, m.query, relation, bounding_seed=EXPLORATION_SEED),
        )
        for number, m in enumerate(chosen.measurements, start=1)
    ]
    rate = chosen.sampling_rate

    from dpexplorer.core.accounting.guarantees import Subsampled

    def charged(item: PlannedMeasurement, method: str | None) -> Guarantee:
        if rate is not None and rate < 1:  # the ledger's rule (charge.charged_for)
            return Subsampled(planned_charge(item.mechanism, item.params, item.query, None), rate)  # type: ignore[arg-type]
        return planned_charge(item.mechanism, item.params, item.query, method)

    released: list[Guarantee] = []
    if ledger is not None:
        from dpexplorer.release.ledger import Ledger
        from dpexplorer.release.release import dataset_key

        with Ledger(ledger) as book:
            released = [m.guarantee for m in book.measurements(dataset_key(dataset, book))]
    return budget_report(guarantees_by_method(planned, charged), released, epsilon, delta)


# ------------------------------------------------------------------ the ledger and releases
def set_budget(
    dataset: Any,
    epsilon: float,
    delta: float = 0.0,
    accountant: str = "basic",
    *,
    ledger: LedgerLike = None,
    name: str | None = None,
) -> None:
    """Set (or replace) the dataset's total budget in the ledger (`ledger`: a path; None, the
    default per-user ledger of `dpexplorer release`), composed with `accountant` (`basic`,
    `advanced`, `optimal`, `zcdp`, `rdp`, `pld`). `name` files the budget under a name
    instead of the content fingerprint (as `--dataset`). Refused (`BudgetExceededError`) if
    what is already spent does not fit under it. What `--budget-epsilon`, `--budget-delta`
    and `--accountant` do."""
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.release import dataset_key

    _dataset(dataset)
    epsilon, delta = check_real(epsilon, "epsilon"), check_real(delta, "delta")
    check_text(accountant, "accountant")
    _optional_text(name, "name")
    with Ledger(_ledger(ledger)) as book:
        book.set_budget(dataset_key(dataset, book, name), epsilon, delta, accountant)


def remaining_budget(dataset: Any, *, ledger: LedgerLike = None, name: str | None = None) -> float:
    """The epsilon left of the dataset's budget in the ledger, under its accountant
    (`NoBudgetError` if no budget is set)."""
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.release import dataset_key

    _dataset(dataset)
    _optional_text(name, "name")
    with Ledger(_ledger(ledger)) as book:
        return float(book.remaining(dataset_key(dataset, book, name)))


def released_risk(dataset: Any, *, ledger: LedgerLike = None, name: str | None = None) -> TradeOff:
    """The risk of everything the ledger holds for the dataset, in an attacker's terms: every
    release composed as one privacy-loss distribution and turned into the trade-off curve (f-DP,
    Dong, Roth & Su 2022): `fnr[i]`, the smallest false-negative rate of any test for one person
    at false-positive rate `fpr[i]` (every 0.001 up to 0.1, then every 0.01). `kind` says whether
    the curve is `"exact"` or a lower bound on the attacker's error (sound for privacy), and
    which; `gdp_mu` is a mu-GDP summary where one is proven (`gdp_kind` `"exact"` or
    `"upper bound"`), else None with `gdp_note` saying why. What `dpexplorer account --ledger L
    --dataset KEY --risk` prints; a dataset with nothing released gives random guessing."""
    from dpexplorer.core.tradeoff import tradeoff_of
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.release import dataset_key

    _dataset(dataset)
    _optional_text(name, "name")
    with Ledger(_ledger(ledger)) as book:
        held = [m.guarantee for m in book.measurements(dataset_key(dataset, book, name))]
    return tradeoff_of(held)


def release_plan(
    dataset: Any,
    plan: Plan | Measurement | Iterable[Measurement],
    *,
    out: str | os.PathLike[str],
    ledger: LedgerLike = None,
    name: str | None = None,
    ci_level: float = 0.95,
    codebook: Codebook | None = None,
) -> tuple[ReleaseResult, ...]:
    """Release `plan` on `dataset` exactly as `dpexplorer release` does (the same code): every
    measurement is validated and its exact release path built first (`PlanError`
    `plan entry N: ...`), the plan's total is checked against what is left of the budget
    (`BudgetExceededError`, `NoBudgetError`) and `out` is checked (`ExportError`); nothing is
    charged unless all of it passes. Then each measurement is charged to the ledger, its noise
    drawn by the exact samplers from the OS's randomness, and its files written to `out`
    (values as CSV and JSON, and a provenance sidecar; never a true answer).
    `ReleaseFailedError` if something fails after a charge (the ledger says what was spent).

    Returns one `ReleaseResult` per measurement: the released `values` with their `labels`,
    `confidence_intervals` at `ci_level`, the `guarantee` charged, and the `files` written.

    `codebook` (a `Codebook`, e.g. from `load_codebook`; None: the shipped one for the bundled
    Adult, else none) is the dataset's public description, as `--codebook`: a measurement that
    contradicts it, or a codebook that names another dataset, is refused (`PlanError`) before
    anything is charged, and each provenance lists every public fact with its origin."""
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.plan_run import prepare_plan, release_prepared

    _dataset(dataset)
    chosen = _as_plan(plan)
    if not chosen.measurements:
        raise PlanError("the plan must hold at least one measurement")
    out = _path(out, "out")
    _optional_text(name, "name")
    _level(ci_level)
    _codebook(codebook)
    with Ledger(_ledger(ledger)) as book:
        entries = [m.to_dict() for m in chosen.measurements]
        prepared = prepare_plan(
            dataset,
            entries,
            chosen.sampling_rate,
            book,
            ci_level=ci_level,
            dataset_name=name,
            codebook=codebook,
        )
        return tuple(result for _item, result in release_prepared(prepared, book, out))


def audit_plan(
    dataset: Any,
    plan: Plan | Measurement | Iterable[Measurement],
    *,
    codebook: Codebook | None = None,
    name: str | None = None,
    draws: int = 2_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PlanAudit:
    """Audit `plan` on `dataset` by replay, as `dpexplorer audit` does: the plan is released by
    the same code as `release_plan` on the data and on neighbouring datasets that stress each
    measurement (a row added or removed, a row at a clipping bound and beyond it, a new
    category, a tie at the median, a person with many rows under the privacy unit), with the
    same random bits, into a throwaway ledger and folder: nothing is charged to any ledger.

    Returns a `PlanAudit`: `passed`, and per measurement (`entries`) `replay` ("pass", or the
    path of the first published field that differs between the data and a neighbour, such as
    `provenance.discretisation.grid_spacing`, or `result.values` when the released values moved
    more than the declared sensitivity), `lower_bound` (a black-box lower confidence bound on
    epsilon at `confidence` from `draws` sampled outputs per side; 0 draws: none), the
    `claimed_epsilon` and `claimed_delta`, and the `neighbours` tried; `to_dict()` is the JSON of
    `dpexplorer audit --json`. `seed` fixes every random choice (the same seed, the same audit).
    `codebook` and `name` as for `release_plan`. The audit reads the true data: it is for the
    steward, like `explore`. `PlanError` when the plan is refused on the data themselves."""
    from dpexplorer.data.load import Dataset
    from dpexplorer.release.replay import MAX_DRAWS
    from dpexplorer.release.replay import audit_plan as replay_plan

    if not isinstance(_dataset(dataset), Dataset):
        raise InvalidParameterError(
            "the replay audit reads the data through the polars engine: open them without Spark"
        )
    chosen = _as_plan(plan)
    if not chosen.measurements:
        raise PlanError("the plan must hold at least one measurement")
    _codebook(codebook)
    _optional_text(name, "name")
    check_whole(draws, "draws", 0, MAX_DRAWS)
    if 0 < draws < 100:
        raise InvalidParameterError(f"draws must be 0 (no black box) or at least 100, not {draws}")
    check_whole(seed, "seed", 0, 2**63 - 1)
    level = check_real(confidence, "confidence")
    if not 0 < level < 1:
        raise InvalidParameterError(f"confidence must be in (0, 1), not {shown(confidence)}")
    entries = [m.to_dict() for m in chosen.measurements]
    return replay_plan(
        dataset,
        entries,
        chosen.sampling_rate,
        codebook=codebook,
        dataset_name=name,
        seed=int(seed),
        draws=int(draws),
        confidence=level,
    )
