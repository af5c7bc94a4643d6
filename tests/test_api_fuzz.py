"""Hostile input at the API's boundary (issue 43): every public function and class of
``import dpexplorer as dpx`` is called with a hostile value in one parameter at a time (huge
and negative numbers, infinities, NaN, booleans, text, bytes, None, containers, deep nesting,
objects of no kind). Every call ends in a value or in one of the project's errors
(:class:`dpexplorer.DPExplorerError`, one line), never in an AttributeError, OverflowError,
RecursionError or another exception of the internals; and a value of the wrong kind for a
number, a whole number, a column name or a flag is refused, by a message naming the parameter,
never taken as a value. Every public name has a case (or is exempt in :data:`NOT_FUZZED`,
saying why), and every parameter of a public callable is fuzzed.

The values are a fixed list (:data:`HOSTILE`) and, per parameter, :data:`SEEDED` more drawn by
a seeded generator (:func:`drawn`): the same calls on every run, so a failure reproduces."""

from __future__ import annotations

import contextlib
import inspect
import math
import numbers
import random
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import dpexplorer as dpx


def _deep(levels: int) -> Any:
    """A condition nested ``levels`` deep ({"not": {"not": ...}}): deeper than recursion allows."""
    value: Any = {"compare": "==", "column": "sex", "value": "F"}
    for _ in range(levels):
        value = {"not": value}
    return value


def _nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


class _Opaque:
    """An object of no kind the API knows, whose every attribute read fails."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"_Opaque.{name} was read")


HOSTILE: tuple[Any, ...] = (
    10**400,
    -(10**400),
    2**63,
    math.inf,
    -math.inf,
    math.nan,
    True,
    False,
    -1,
    0,
    1.5,
    1j,
    "",
    "1",
    "nan",
    "age",
    "age\x00",
    "x" * 10_000,
    b"age",
    None,
    (),
    [],
    {},
    ("age", 5),
    [math.nan],
    {"type": "count"},
    _nested(5_000),
    _deep(5_000),
    _Opaque(),
    object,
)
"""Values every parameter is given, one parameter at a time."""

SEEDED = 12
"""Values per parameter drawn by :func:`drawn` on top of :data:`HOSTILE`."""


def drawn(rng: random.Random, depth: int = 0) -> Any:
    """One random value: a number of any size or kind, text, bytes, or a container of such."""
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return rng.choice((1, -1)) * 10 ** rng.randrange(0, 700)
    if kind == 1:
        return rng.choice((math.inf, -math.inf, math.nan, 1e308, -1e-308, 5e-324, 0.0, -0.0))
    if kind == 2:
        return rng.uniform(-1e6, 1e6)
    if kind == 3:
        return "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(0, 12)))
    if kind == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 6)))
    if kind == 5:
        return rng.choice((None, True, False, object(), 1j, Ellipsis))
    if kind == 6:
        return [drawn(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if kind == 7:
        return tuple(drawn(rng, depth + 1) for _ in range(rng.randrange(0, 4)))
    return {str(drawn(rng, depth + 1)): drawn(rng, depth + 1) for _ in range(rng.randrange(0, 3))}


# What a parameter accepts, and the hostile values that are certainly not one of it (each must
# be refused with a message naming the parameter).
NOT_A_NUMBER: tuple[Any, ...] = (10**400, math.inf, -math.inf, math.nan, True, "1", b"1", 1j, [], object)
NOT_WHOLE: tuple[Any, ...] = (*NOT_A_NUMBER, 1.5)
NOT_TEXT: tuple[Any, ...] = (5, 1.5, True, b"age", ["age"], object)
NOT_A_FLAG: tuple[Any, ...] = (1, 0, "yes", "", math.nan, object)
WRONG: dict[str, tuple[Any, ...]] = {
    "number": (*NOT_A_NUMBER, None),
    "number?": NOT_A_NUMBER,
    "whole": (*NOT_WHOLE, None),
    "whole?": NOT_WHOLE,
    "text": (*NOT_TEXT, None),
    "text?": NOT_TEXT,
    "flag": (*NOT_A_FLAG, None),
    "any": (),
}


@dataclass(frozen=True)
class Case:
    """A public callable, the arguments of a valid call, and what each parameter accepts
    (:data:`WRONG`'s keys; the parameters fuzzed)."""

    name: str
    call: Callable[..., Any]
    valid: Callable[[Any], dict[str, Any]]
    accepts: Mapping[str, str]


@dataclass
class World:
    """What the calls need: an opened dataset with a budget, a valid plan, its file, paths."""

    frame: pl.DataFrame
    dataset: Any
    tmp: Path
    ledger: Path
    plan: Any
    plan_file: Path
    exploration: Any
    codebook_file: Path


SEX = dpx.Axis("sex", ("F", "M"))
AGE_BINS = dpx.Axis("age", edges=(0, 40, 100))
COUNT_MEASUREMENT = dpx.Measurement(dpx.Count(), "laplace", {"epsilon": 0.1})
AGE_BOUNDS = dpx.Fact((0, 100), "declared", "the survey's form")
AGE_BOOK = dpx.Codebook({"age": dpx.ColumnFacts("age", "number", bounds=AGE_BOUNDS)})


def _method(attribute: str) -> Callable[..., Any]:
    """Call ``attribute`` of the ``self`` argument (a method through :class:`Case`)."""

    def call(self: Any, **kwargs: Any) -> Any:
        return getattr(self, attribute)(**kwargs)

    return call


def _each_operator(column: Any, value: Any, values: Any) -> None:
    """Every comparison of ``where(column)``: each must end in a value or a project error."""
    ref = dpx.where(column)
    for build in (
        lambda r: r == value,
        lambda r: r != value,
        lambda r: r < value,
        lambda r: r <= value,
        lambda r: r > value,
        lambda r: r >= value,
        lambda r: r.isin(values),
    ):
        with contextlib.suppress(dpx.DPExplorerError):
            build(ref)


def _cases() -> list[Case]:
    def clipped(cls: Any) -> Case:
        setting = {k: kind for k, (_, kind) in CLIPPED_SETTINGS.get(cls.__name__, {}).items()}
        return Case(
            cls.__name__,
            cls,
            lambda w: {"column": "age", "lower": 0, "upper": 100},
            {**CLIPPED_KINDS, **setting},
        )

    return [
        Case("Count", dpx.Count, lambda w: {}, {}),
        clipped(dpx.Sum),
        clipped(dpx.Mean),
        clipped(dpx.Variance),
        clipped(dpx.Quantile),
        clipped(dpx.TrimmedMean),
        Case("Median", dpx.Median, lambda w: {"column": "age", "lower": 0, "upper": 100}, CLIPPED_KINDS),
        Case(
            "Axis(categories)",
            dpx.Axis,
            lambda w: {"column": "sex", "categories": ("F", "M")},
            {"column": "text", "categories": "any", "exact_text": "flag"},
        ),
        Case("Axis(edges)", dpx.Axis, lambda w: {"column": "age", "edges": (0, 50, 100)}, {"edges": "any"}),
        Case("Histogram", dpx.Histogram, lambda w: {"axis": SEX}, {"axis": "any"}),
        Case(
            "ArgMax",
            dpx.ArgMax,
            lambda w: {"column": "sex", "categories": ("F", "M")},
            {"column": "text", "categories": "any"},
        ),
        Case(
            "TopK",
            dpx.TopK,
            lambda w: {"column": "sex", "categories": ("F", "M"), "k": 1},
            {"column": "text", "categories": "any", "k": "whole"},
        ),
        Case(
            "marginal_workload",
            dpx.marginal_workload,
            lambda w: {"axes": (SEX, AGE_BINS), "ways": (1, 2)},
            {"axes": "any", "ways": "any"},
        ),
        Case(
            "Workload",
            dpx.Workload,
            lambda w: {"axes": (SEX,), "queries": dpx.marginal_workload((SEX,), (1,)).queries},
            {"axes": "any", "queries": "any"},
        ),
        Case(
            "Compare",
            dpx.Compare,
            lambda w: {"column": "age", "op": ">", "value": 40},
            {"column": "text", "op": "any", "value": "any"},
        ),
        Case(
            "where",
            _each_operator,
            lambda w: {"column": "age", "value": 40, "values": (30, 40)},
            {"column": "text", "value": "any", "values": "any"},
        ),
        Case("And", dpx.And, lambda w: {"terms": (dpx.where("age") > 40,)}, {"terms": "any"}),
        Case("Or", dpx.Or, lambda w: {"terms": (dpx.where("age") > 40,)}, {"terms": "any"}),
        Case("Not", dpx.Not, lambda w: {"term": dpx.where("age") > 40}, {"term": "any"}),
        Case(
            "PredicateCount",
            dpx.PredicateCount,
            lambda w: {"predicate": dpx.where("age") > 40},
            {"predicate": "any"},
        ),
        Case(
            "PrivacyUnit",
            dpx.PrivacyUnit,
            lambda w: {"column": "id", "max_groups": 1, "max_rows": 2},
            {"column": "text", "max_groups": "whole", "max_rows": "whole"},
        ),
        Case(
            "PrivateKeys",
            dpx.PrivateKeys,
            lambda w: {"columns": ("sex",), "epsilon": 1.0, "delta": 1e-6},
            {"columns": "any", "epsilon": "number", "delta": "number"},
        ),
        Case(
            "GroupBy",
            dpx.GroupBy,
            lambda w: {"keys": (SEX,), "statistic": "quantile", "column": "age", "lower": 0, "upper": 100},
            {
                "keys": "any",
                "statistic": "text",
                "column": "text?",
                "lower": "number?",
                "upper": "number?",
                "unit": "any",
                "private": "any",
                "q": "number",
            },
        ),
        Case("query_from_dict", dpx.query_from_dict, lambda w: {"d": {"type": "count"}}, {"d": "any"}),
        Case(
            "query_from_dict(predicate_count)",
            lambda predicate: dpx.query_from_dict({"type": "predicate_count", "predicate": predicate}),
            lambda w: {"predicate": {"compare": ">", "column": "age", "value": 40}},
            {"predicate": "any"},
        ),
        Case(
            "Measurement",
            dpx.Measurement,
            lambda w: {"query": dpx.Count(), "mechanism": "laplace", "parameters": {"epsilon": 0.1}},
            {
                "query": "any",
                "mechanism": "text",
                "parameters": "any",
                "kind": "text",
                "post_processing": "any",
            },
        ),
        Case(
            "Measurement.from_dict",
            dpx.Measurement.from_dict,
            lambda w: {"entry": COUNT_MEASUREMENT.to_dict()},
            {"entry": "any"},
        ),
        Case(
            "Plan",
            dpx.Plan,
            lambda w: {"measurements": [COUNT_MEASUREMENT], "sampling_rate": 0.5},
            {"measurements": "any", "sampling_rate": "number?"},
        ),
        Case(
            "Plan.from_json",
            dpx.Plan.from_json,
            lambda w: {"value": [COUNT_MEASUREMENT.to_dict()], "codebook": AGE_BOOK},
            {"value": "any", "codebook": "any"},
        ),
        Case(
            "Plan.read",
            dpx.Plan.read,
            lambda w: {"path": w.plan_file, "codebook": AGE_BOOK},
            {"path": "any", "codebook": "any"},
        ),
        Case(
            "Plan.write",
            _method("write"),
            lambda w: {"self": w.plan, "path": w.tmp / "written.json"},
            {"path": "any"},
        ),
        Case(
            "open_dataset",
            dpx.open_dataset,
            lambda w: {"source": w.frame, "engine": "polars", "name": "people"},
            {"source": "any", "engine": "text", "spark_master": "text?", "name": "text"},
        ),
        Case(
            "explore",
            dpx.explore,
            lambda w: {
                "dataset": w.dataset,
                "query": dpx.Count(),
                "mechanism": "laplace",
                "parameters": {"epsilon": 1.0},
                "relation": "add_remove",
                "ci_level": 0.9,
            },
            {
                "dataset": "any",
                "query": "any",
                "mechanism": "text",
                "parameters": "any",
                "relation": "text",
                "ci_level": "number",
            },
        ),
        Case(
            "Exploration.delta_at",
            _method("delta_at"),
            lambda w: {"self": w.exploration, "epsilon": 0.5},
            {"epsilon": "number"},
        ),
        Case(
            "plan_budget",
            dpx.plan_budget,
            lambda w: {
                "dataset": w.dataset,
                "plan": w.plan,
                "epsilon": 1.0,
                "delta": 0.0,
                "ledger": w.ledger,
                "relation": "add_remove",
            },
            {
                "dataset": "any",
                "plan": "any",
                "epsilon": "number",
                "delta": "number",
                "ledger": "any",
                "relation": "text",
            },
        ),
        Case(
            "set_budget",
            dpx.set_budget,
            lambda w: {
                "dataset": w.dataset,
                "epsilon": 1e6,
                "delta": 0.0,
                "accountant": "basic",
                "ledger": w.ledger,
                "name": "people",
            },
            {
                "dataset": "any",
                "epsilon": "number",
                "delta": "number",
                "accountant": "text",
                "ledger": "any",
                "name": "text?",
            },
        ),
        Case(
            "remaining_budget",
            dpx.remaining_budget,
            lambda w: {"dataset": w.dataset, "ledger": w.ledger, "name": "people"},
            {"dataset": "any", "ledger": "any", "name": "text?"},
        ),
        Case(
            "released_risk",
            dpx.released_risk,
            lambda w: {"dataset": w.dataset, "ledger": w.ledger, "name": "people"},
            {"dataset": "any", "ledger": "any", "name": "text?"},
        ),
        Case(
            "release_plan",
            dpx.release_plan,
            lambda w: {
                "dataset": w.dataset,
                "plan": w.plan,
                "out": w.tmp / "out",
                "ledger": w.ledger,
                "name": "people",
                "ci_level": 0.9,
                "codebook": AGE_BOOK,
            },
            {
                "dataset": "any",
                "plan": "any",
                "out": "any",
                "ledger": "any",
                "name": "text?",
                "ci_level": "number",
                "codebook": "any",
            },
        ),
        Case(
            "audit_plan",
            dpx.audit_plan,
            lambda w: {
                "dataset": w.dataset,
                "plan": w.plan,
                "codebook": AGE_BOOK,
                "draws": 0,
                "seed": 1,
                "confidence": 0.9,
            },
            {
                "dataset": "any",
                "plan": "any",
                "codebook": "any",
                "draws": "whole",
                "seed": "whole",
                "confidence": "number",
            },
        ),
        Case("example_path", dpx.example_path, lambda w: {}, {}),
        Case("mechanism_names", dpx.mechanism_names, lambda w: {}, {}),
        *_codebook_cases(),
        *_attack_cases(),
    ]


def _column_fact(field: str, kind: str, valid: Any) -> Case:
    """A fact's value as ``ColumnFacts`` checks it (a ``Fact`` holds any value until then)."""
    return Case(
        f"ColumnFacts({field})",
        lambda value: dpx.ColumnFacts("c", kind, **{field: dpx.Fact(value, "declared")}),
        lambda w: {"value": valid},
        {"value": "any"},
    )


def _codebook_cases() -> list[Case]:
    """The codebook's names (dpexplorer/data/codebook.py): its values, their file, its methods."""
    return [
        Case(
            "Fact",
            dpx.Fact,
            lambda w: {
                "value": (0, 100),
                "origin": "estimated",
                "citation": "",
                "ledger_id": 1,
                "complete": True,
            },
            {"value": "any", "origin": "text", "citation": "text", "ledger_id": "whole?", "complete": "flag"},
        ),
        Case(
            "ColumnFacts",
            dpx.ColumnFacts,
            lambda w: {"name": "age", "kind": "number", "bounds": AGE_BOUNDS, "note": ""},
            {
                "name": "text",
                "kind": "text",
                "bounds": "any",
                "categories": "any",
                "edges": "any",
                "date_format": "any",
                "note": "text",
            },
        ),
        _column_fact("bounds", "number", (0, 100)),
        _column_fact("edges", "number", (0, 40, 100)),
        _column_fact("categories", "category", ("F", "M")),
        _column_fact("date_format", "day", "%Y-%m-%d"),
        Case(
            "Unit",
            dpx.Unit,
            lambda w: {"column": "id", "max_rows": 2, "max_groups": 1, "origin": "declared", "citation": ""},
            {
                "column": "text",
                "max_rows": "whole?",
                "max_groups": "whole?",
                "origin": "text",
                "citation": "text",
            },
        ),
        Case(
            "Codebook",
            dpx.Codebook,
            lambda w: {
                "columns": dict(AGE_BOOK.columns),
                "unit": dpx.Unit("id", 1, 1),
                "rows": dpx.Fact(200, "declared"),
                "dataset": "",
                "citation": "",
                "source": "",
                "sha256": "",
            },
            {
                "columns": "any",
                "unit": "any",
                "rows": "any",
                "dataset": "text",
                "citation": "text",
                "source": "text",
                "sha256": "text",
            },
        ),
        Case(
            "Codebook(rows)",
            lambda value: dpx.Codebook(rows=dpx.Fact(value, "declared")),
            lambda w: {"value": 200},
            {"value": "any"},
        ),
        Case(
            "Codebook.with_fact",
            _method("with_fact"),
            lambda w: {"self": AGE_BOOK, "column": "age", "field": "bounds", "fact": AGE_BOUNDS},
            {"column": "text", "field": "text", "fact": "any"},
        ),
        Case(
            "Codebook.with_fact(rows)",
            _method("with_fact"),
            lambda w: {"self": AGE_BOOK, "column": "", "field": "rows", "fact": dpx.Fact(200, "declared")},
            {"fact": "any"},
        ),
        Case(
            "Codebook.with_column",
            _method("with_column"),
            lambda w: {"self": AGE_BOOK, "facts": AGE_BOOK.columns["age"]},
            {"facts": "any"},
        ),
        Case(
            "Codebook.column",
            _method("column"),
            lambda w: {"self": AGE_BOOK, "name": "age"},
            {"name": "text"},
        ),
        Case(
            "Codebook.fact",
            _method("fact"),
            lambda w: {"self": AGE_BOOK, "column": "age", "field_name": "bounds"},
            {"column": "text", "field_name": "text"},
        ),
        Case("load_codebook", dpx.load_codebook, lambda w: {"path": w.codebook_file}, {"path": "any"}),
        Case(
            "save_codebook",
            dpx.save_codebook,
            lambda w: {"codebook": AGE_BOOK, "path": w.tmp / "saved.codebook.json"},
            {"codebook": "any", "path": "any"},
        ),
        Case(
            "shipped_codebook",
            dpx.shipped_codebook,
            lambda w: {"name_or_path": "adult"},
            {"name_or_path": "any"},
        ),
    ]


def _attack_cases() -> list[Case]:
    """The attacks (dpexplorer/data/attack_rows.py): a few rows and queries, so each call is quick."""
    attacked = {"dataset": "any", "column": "text", "value": "any", "seed": "whole?"}
    return [
        Case(
            "attack_reconstruct",
            dpx.attack_reconstruct,
            lambda w: {
                "dataset": w.dataset,
                "column": "sex",
                "value": "F",
                "rows": 8,
                "queries": 16,
                "seed": 1,
            },
            {**attacked, "rows": "whole", "queries": "whole", "epsilon": "number?", "noise": "number?"},
        ),
        Case(
            "attack_differencing",
            dpx.attack_differencing,
            lambda w: {
                "dataset": w.dataset,
                "column": "sex",
                "value": "F",
                "row": 3,
                "epsilon": 1.0,
                "seed": 1,
            },
            {**attacked, "row": "whole", "epsilon": "number?"},
        ),
        Case(
            "attack_membership",
            dpx.attack_membership,
            lambda w: {
                "dataset": w.dataset,
                "column": "sex",
                "value": "F",
                "epsilon": 1.0,
                "trials": 100,
                "seed": 1,
            },
            {**attacked, "epsilon": "number", "trials": "whole"},
        ),
    ]


CLIPPED_KINDS = {"column": "text", "lower": "number", "upper": "number"}
CLIPPED_SETTINGS: dict[str, dict[str, tuple[Any, str]]] = {
    "Variance": {"std": (False, "flag")},
    "Quantile": {"q": (0.5, "number")},
    "TrimmedMean": {"trim_fraction": (0.1, "number")},
}
NAMED = {
    "lower": "lower bound",
    "upper": "upper bound",
    "q": "quantile",
    "trim_fraction": "trimmed fraction",
    "max_groups": "max groups",
    "max_rows": "max rows",
    "std": "std",
}
"""The words a refusal uses for a parameter, where they are not its name."""
AXES_PENDING: set[str] = set()
"""Defined in dpexplorer/data/axes.py, whose fields are not checked yet (that module is being
changed by another branch): its constructors still call tuple() and float() on what they are
given. The checks they need exist (dpexplorer.data.validation.column_name, declared_categories,
declared_edges; dpexplorer.core.checks.check_flag, check_whole, instances, items); strict, so
this list must shrink when they are called there."""
CASES = _cases()


def _params(cases: list[Case]) -> list[Any]:
    pending = pytest.mark.xfail(strict=True, reason="dpexplorer/data/axes.py does not check its fields yet")
    return [pytest.param(c, id=c.name, marks=[pending] if c.name in AXES_PENDING else []) for c in cases]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    tmp = tmp_path_factory.mktemp("api-fuzz")
    n = 200
    frame = pl.DataFrame(
        {"age": [18 + i % 60 for i in range(n)], "sex": ["FM"[i % 2] for i in range(n)], "id": list(range(n))}
    )
    dataset = dpx.open_dataset(frame, name="people")
    ledger = tmp / "ledger.sqlite"
    dpx.set_budget(dataset, 1e6, ledger=ledger, name="people")
    plan = dpx.Plan([COUNT_MEASUREMENT])
    seen = dpx.explore(dataset, dpx.Count(), "laplace", {"epsilon": 1.0})
    dpx.save_codebook(AGE_BOOK, tmp / "age.codebook.json")
    plan_file = plan.write(tmp / "plan.json")
    return World(frame, dataset, tmp, ledger, plan, plan_file, seen, tmp / "age.codebook.json")


def _a_number(value: Any) -> bool:
    """A number (not a boolean): of a number's type, so its refusal may be a ValueError."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _values(case: Case, parameter: str) -> list[Any]:
    rng = random.Random(f"{case.name}.{parameter}")
    return [*HOSTILE, *(drawn(rng) for _ in range(SEEDED))]


def _outcome(case: Case, kwargs: dict[str, Any]) -> BaseException | None:
    try:
        case.call(**kwargs)
    except BaseException as exc:  # what the test is looking for
        return exc
    return None


@pytest.fixture
def in_tmp(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative paths among the values (``"age"``, ``"1"``) land in the world's folder."""
    monkeypatch.chdir(world.tmp)


@pytest.mark.parametrize("case", _params(CASES))
def test_hostile_values_end_in_a_value_or_the_projects_error(case: Case, world: World, in_tmp: None) -> None:
    valid = case.valid(world)
    assert _outcome(case, valid) is None, "the valid call must pass"
    foreign: list[str] = []
    for parameter in case.accepts:
        for value in _values(case, parameter):
            outcome = _outcome(case, {**valid, parameter: value})
            if outcome is None:
                continue
            text = str(outcome).strip()
            if not isinstance(outcome, dpx.DPExplorerError):
                foreign.append(f"{parameter}={reprlib.repr(value)}: {type(outcome).__name__}: {text[:120]}")
            elif "\n" in text or not text:
                foreign.append(f"{parameter}={reprlib.repr(value)}: not one line: {text[:120]!r}")
    assert not foreign, f"{len(foreign)} calls failed:\n" + "\n".join(foreign)


@pytest.mark.parametrize("case", _params([c for c in CASES if any(WRONG[k] for k in c.accepts.values())]))
def test_a_value_of_the_wrong_kind_is_refused_naming_the_parameter(
    case: Case, world: World, in_tmp: None
) -> None:
    valid = case.valid(world)
    wrong: list[str] = []
    for parameter, kind in case.accepts.items():
        name = NAMED.get(parameter, parameter)
        for value in WRONG[kind]:
            outcome = _outcome(case, {**valid, parameter: value})
            shown = f"{parameter}={reprlib.repr(value)}"
            if not isinstance(outcome, dpx.DPExplorerError):
                wrong.append(f"{shown}: {'accepted' if outcome is None else type(outcome).__name__}")
            elif not any(said in str(outcome) for said in {name, name.replace("_", " "), parameter}):
                wrong.append(f"{shown}: the message does not name {name!r}: {outcome}")
            elif not isinstance(outcome, TypeError) and not _a_number(value):
                wrong.append(f"{shown}: a wrong type, refused by {type(outcome).__name__}, not a TypeError")
    assert not wrong, f"{len(wrong)} wrong values not refused as they should be:\n" + "\n".join(wrong)


NOT_FUZZED = {
    # the errors: raised by the API, not called with a caller's values
    "BudgetExceededError",
    "DPExplorerError",
    "DataError",
    "ExportError",
    "InvalidParameterError",
    "NoBudgetError",
    "NotApplicableError",
    "PlanError",
    "ReleaseFailedError",
    # what the API returns, for isinstance and reading, never built by a caller (Exploration's
    # method delta_at has a case of its own; the attacks' results are only returned by attack_*)
    "AccuracyReport",
    "BudgetReport",
    "CategoricalOutput",
    "Exploration",
    "NumericOutput",
    "ReleaseResult",
    "PlanAudit",
    "DifferencingResult",
    "MembershipResult",
    "ReconstructionResult",
    "TradeOff",
    # the abstract base of the queries (each query has its case)
    "Query",
}
"""The public names no case calls, and why."""
PARAMETERS_NOT_FUZZED: dict[tuple[str, str], str] = {
    ("audit_plan", "name"): "checked by release_plan's own check (fuzzed there); every text is a valid "
    "name, and each accepted value runs a whole audit (a release on the data and each neighbour)",
    ("Axis", "as_written"): "set by the engine for a column of declared text, never by a query "
    "(the query readers do not accept it); a flag, not a value read from input",
    ("Compare", "as_written"): "set by the engine for a column of declared text, never by a query "
    "(the query readers do not accept it); a flag, not a value read from input",
}
"""(public name, parameter) no case fuzzes, and why."""


def _target(case: Case) -> Any:
    """The public callable a case calls: its name up to ``(``, read from ``dpx`` (``Plan.read``)."""
    target: Any = dpx
    for part in case.name.partition("(")[0].split("."):
        target = getattr(target, part)
    return target


def test_every_public_name_has_a_fuzz_case() -> None:
    """A public name added to ``dpexplorer.api.__all__`` fails here until a case calls it (or
    :data:`NOT_FUZZED` says why none does); and every parameter of a public callable's signature
    is fuzzed by one of its cases, so a new parameter (``codebook=``) cannot escape either."""
    from dpexplorer import api

    covered = {case.name.partition("(")[0] for case in CASES}  # "Plan.read" does not cover Plan
    public = set(api.__all__)
    assert not NOT_FUZZED - public, f"exempt but not public: {sorted(NOT_FUZZED - public)}"
    assert not NOT_FUZZED & covered, f"exempt but fuzzed: {sorted(NOT_FUZZED & covered)}"
    unfuzzed = sorted(n for n in public - covered - NOT_FUZZED if callable(getattr(api, n)))
    assert not unfuzzed, f"public names no case fuzzes: {unfuzzed}"
    fuzzed: dict[str, set[str]] = {}
    for case in CASES:
        fuzzed.setdefault(case.name.partition("(")[0], set()).update(case.accepts)
    silent = []
    for name, parameters in fuzzed.items():
        target = _target(next(c for c in CASES if c.name.partition("(")[0] == name))
        for parameter in inspect.signature(target).parameters:
            if parameter not in {"self", *parameters} and (name, parameter) not in PARAMETERS_NOT_FUZZED:
                silent.append(f"{name}({parameter}=)")
    assert not silent, f"parameters no case fuzzes: {silent}"


def test_the_issue_s_examples() -> None:
    """The calls of issue 43 that raised AttributeError and OverflowError."""
    adult = dpx.open_dataset(pl.DataFrame({"age": [30, 40], "sex": ["F", "M"]}))
    with pytest.raises(dpx.InvalidParameterError, match="query must be a query such as") as refused:
        dpx.explore(adult, "age", "laplace", {"epsilon": 1.0})
    assert isinstance(refused.value, TypeError)
    with pytest.raises(dpx.DataError, match="lower bound of 'age' must be a finite number"):
        dpx.Mean("age", 10**400, 90)
    with pytest.raises(dpx.DataError, match="upper bound of 'age' must be a finite number, not str"):
        dpx.Mean("age", 17, "90")


def test_the_attacks_refuse_what_they_took_for_another_value(world: World) -> None:
    """What the attacks once ran on silently: epsilon=0 taken for "no epsilon" (Laplace at 1),
    noise="1" read as the number 1, an epsilon whose noise leaves double precision (membership
    rates all 0 at 1e308)."""
    people = {"dataset": world.dataset, "column": "sex", "value": "F", "seed": 1}
    with pytest.raises(dpx.InvalidParameterError, match="epsilon"):
        dpx.attack_differencing(**people, row=0, epsilon=0)
    with pytest.raises(dpx.InvalidParameterError, match="noise must be a finite number, not str") as text:
        dpx.attack_reconstruct(**people, rows=8, queries=16, noise="1")
    assert isinstance(text.value, TypeError)
    for epsilon in (1e308, 5e-324):
        with pytest.raises(dpx.InvalidParameterError, match="epsilon"):
            dpx.attack_membership(**people, epsilon=epsilon, trials=100)


def test_conditions_nest_at_most_the_limit() -> None:
    """A condition nested deeper than recursion allows is refused when built or read, with a
    DataError, never a RecursionError while it is described or evaluated."""
    from dpexplorer.data.conditions import MAX_DEPTH

    term: Any = dpx.where("age") > 40
    for _ in range(MAX_DEPTH - 1):
        term = dpx.Not(term)
    deepest = dpx.PredicateCount(term)
    assert deepest.describe().startswith("the number of rows where not")
    adult = dpx.open_dataset(pl.DataFrame({"age": [30, 50, 60], "sex": ["F", "M", "F"]}))
    assert dpx.explore(adult, deepest, "laplace", {"epsilon": 1.0}).epsilon == 1.0
    with pytest.raises(dpx.DataError, match=f"nested more than {MAX_DEPTH} levels"):
        dpx.Not(term)
    with pytest.raises(dpx.DataError, match="nested more than"):
        dpx.query_from_dict({"type": "predicate_count", "predicate": _deep(MAX_DEPTH)})
    with pytest.raises(dpx.PlanError, match="plan entry 1: the condition is nested more than"):
        dpx.Plan.from_json(
            [{"query": {"type": "predicate_count", "predicate": _deep(900)}, "mechanism": "laplace"}]
        )
