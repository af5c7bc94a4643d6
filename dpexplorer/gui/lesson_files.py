"""Lessons as data: one TOML file per lesson under ``dpexplorer/resources/lessons/``, read and
checked here before the Lessons menu offers them (docs/guide/lessons.md says how to write one).

A lesson has a ``title``, a one-line ``summary``, a ``reference`` (the topic and where Dwork &
Roth 2014 treat it) and ``[[steps]]``. A step sets what the window shows: ``dataset``
("default" or a file beside the lessons), ``query`` (the query panel's controls), ``mechanism``
with ``params``, ``tab``, and optionally ``plan`` (the budget plan holds that many copies of the
statistic), ``random_walk`` (the random-walk view's settings) and ``compare`` (a mechanism
pinned for comparison, ``{ mechanism = "laplace", params = { epsilon = 1.0 } }``, drawn over the
step's own: only on the step that says it); it says ``text`` (two or three sentences) and what
to ``try``. Whatever else a step leaves out it keeps from the step before, so every step is a
complete state and Back shows exactly what was shown."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.mechanisms.base import Mechanism

LESSONS_DIR = Path(__file__).resolve().parent.parent / "resources" / "lessons"
DEFAULT_DATASET = "default"
TABS: dict[str, str] = {
    "neighbours": "the neighbouring-datasets view",
    "accuracy": "the accuracy view",
    "mechanism": "the current mechanism's own view (selection, distance to instability, ...)",
    "budget": "the budget plan",
    "risk": "the risk view",
    "data": "the data table",
    "sensitivity": "sensitivity side by side",
    "random_walk": "composition as a random walk",
    "error_vs_k": "BLR against PMW, error against the number of queries k",
    "synthetic_curve": "the synthetic-data view's page: the workload error against ε",
    "synthetic_rounds": "the synthetic-data view's page: the run's rounds",
    "synthetic_picker": "the synthetic-data view's page: a true against synthetic marginal",
    "attack_differencing": "the Attacks tab's page: the differencing attack",
    "attack_reconstruction": "the Attacks tab's page: the reconstruction attack",
    "attack_membership": "the Attacks tab's page: membership inference",
}
QUERY_KINDS = (
    "count", "predicate_count", "sum", "mean", "median", "quantile", "trimmed_mean", "variance",
    "std", "histogram", "argmax", "top_k", "workload", "group_count", "group_sum", "group_mean",
    "group_quantile", "group_histogram", "marginals",
)  # fmt: skip
"""The query panel's kinds (dpexplorer.gui.query_panel.QUERY_KINDS, not imported: no widgets
are needed to read a lesson)."""
QUERY_DEFAULTS: dict[str, Any] = {
    "kind": "count",
    "column": "",
    "column2": "(none)",
    "lower": 0.0,
    "upper": 1.0,
    "q": 0.5,
    "trim_fraction": 0.1,
    "k": 3,
    "bins": 8,
    "categories": "",
    "joiner": "and",
    "conditions": [[False, "", "==", ""], [False, "", "==", ""]],
    "relation": "add_remove",
    "group1": "",
    "group2": "(none)",
    "group_categories": "",
    "unit": "(each row is a person)",
    "max_groups": 1,
    "max_rows": 1,
    "key_origin": "declared",
    "key_epsilon": 0.5,
    "key_delta": "1e-6",
    "marginal_columns": "",
    "ways": 2,
}
"""A complete query-panel state (QueryPanel.state()); a lesson's query overrides some keys."""
NUMERIC_KINDS = {
    "sum", "mean", "median", "quantile", "trimmed_mean", "variance", "std", "group_sum", "group_mean",
    "group_quantile", "group_histogram",
}  # fmt: skip
GROUP_KINDS = {"group_count", "group_sum", "group_mean", "group_quantile", "group_histogram"}
RANDOM_WALK_KEYS = {"epsilon": float, "t": int, "delta_prime": float, "paths": int, "law": str}
STEP_KEYS = {
    "title", "text", "try", "tab", "dataset", "query", "mechanism", "params", "plan", "random_walk",
    "compare", "attack",
}  # fmt: skip
COMPARE_KEYS = {"mechanism", "params"}
ATTACK_PAGES = {"attack_differencing": "differencing", "attack_reconstruction": "reconstruction",
                "attack_membership": "membership"}  # fmt: skip
"""Tabs that are a page of the Attacks tab; a step's ``attack`` table sets that page's settings
(those of dpexplorer.gui.views.attacks.SETTINGS, and ``column`` and ``value``)."""
PAGES = {
    "synthetic_curve": "curve_page",
    "synthetic_rounds": "rounds_page",
    "synthetic_picker": "picker_page",
}
"""Tabs that are a page of the mechanism's own view (its attribute), shown on that view's tab."""
LESSON_KEYS = {"title", "summary", "reference", "steps"}


class LessonError(DPExplorerError):
    """A lesson file that cannot be used; the message names the file, the step and the fix."""


@dataclass(frozen=True)
class Step:
    """One resolved step: everything the window needs, inherited values filled in."""

    title: str
    text: str
    try_this: str
    tab: str
    dataset: str
    query: dict[str, Any]
    mechanism: str
    params: dict[str, Any]
    plan: int = 0
    random_walk: dict[str, Any] = field(default_factory=dict)
    compare: tuple[str, dict[str, Any]] | None = None
    """A mechanism and its parameters pinned for comparison on this step (not carried over)."""
    attack: dict[str, Any] = field(default_factory=dict)
    """Settings of the step's Attacks page (its tab must be one of :data:`ATTACK_PAGES`)."""

    def dataset_path(self, lessons_dir: Path) -> Path | None:
        """The file to open, or None for the default dataset."""
        return None if self.dataset == DEFAULT_DATASET else lessons_dir / self.dataset


@dataclass(frozen=True)
class Lesson:
    path: Path
    title: str
    summary: str
    reference: str
    steps: tuple[Step, ...]


def _require(table: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in table:
        raise LessonError(f"{where}: '{key}' is missing")
    return _typed(table[key], kind, f"{where}, '{key}'")


def _typed(value: Any, kind: type, where: str) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise LessonError(f"{where} must be a {kind.__name__}, not {value!r}")
    if isinstance(value, str) and not value.strip():
        raise LessonError(f"{where} is empty")
    return value


def _unknown(table: Mapping[str, Any], known: Iterable[str], where: str) -> None:
    extra = sorted(set(table) - set(known))
    if extra:
        raise LessonError(f"{where}: unknown key(s) {', '.join(extra)}; known: {', '.join(sorted(known))}")


def _conditions(raw: Any, where: str) -> list[list[Any]]:
    """[[column, op, value], ["not", column, op, value]] -> the panel's two condition rows."""
    if not isinstance(raw, list) or len(raw) > 2:
        raise LessonError(f"{where}: 'conditions' must be a list of at most two [column, op, value]")
    rows: list[list[Any]] = []
    for item in raw:
        negate = isinstance(item, list) and len(item) == 4 and item[0] == "not"
        parts = item[1:] if negate else item
        if (
            not isinstance(parts, list)
            or len(parts) != 3
            or not all(isinstance(p, str | int | float) for p in parts)
        ):
            raise LessonError(f"{where}: each condition is [column, op, value] or ['not', column, op, value]")
        column, op, value = parts
        if op not in ("==", "!=", "<", "<=", ">", ">="):
            raise LessonError(f"{where}: unknown comparison {op!r} (use ==, !=, <, <=, >, >=)")
        rows.append([negate, str(column), op, str(value)])
    return rows + [[False, "", "==", ""]] * (2 - len(rows))


def _query(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise LessonError(f"{where}: 'query' must be a table")
    where = f"{where}, query"
    _unknown(raw, QUERY_DEFAULTS, where)
    kind = _require(raw, "kind", str, where)
    if kind not in QUERY_KINDS:
        raise LessonError(f"{where}: unknown kind {kind!r}; use one of {', '.join(QUERY_KINDS)}")
    state = {**QUERY_DEFAULTS, **raw}
    if kind in NUMERIC_KINDS and not {"column", "lower", "upper"} <= set(raw):
        raise LessonError(f"{where}: a {kind} needs 'column', 'lower' and 'upper' (declared bounds)")
    if kind in ("argmax", "top_k") and not {"column", "categories"} <= set(raw):
        raise LessonError(f"{where}: a {kind} needs 'column' and 'categories' (declared categories)")
    if state["key_origin"] not in ("declared", "schema", "private"):
        raise LessonError(
            f"{where}: 'key_origin' is declared, schema or private, not {state['key_origin']!r}"
        )
    for key in ("lower", "upper", "q", "trim_fraction", "key_epsilon"):
        state[key] = _typed(state[key], float, f"{where}, '{key}'")
    if kind in GROUP_KINDS and "group1" not in raw:
        raise LessonError(f"{where}: a {kind} needs 'group1' (the column that defines the groups)")
    for key in ("k", "bins", "max_groups", "max_rows", "ways"):
        state[key] = _typed(state[key], int, f"{where}, '{key}'")
    for key in ("categories", "group_categories"):
        if isinstance(state[key], list):
            state[key] = ", ".join(str(c) for c in state[key])
    if state["relation"] not in ("add_remove", "replace"):
        raise LessonError(f"{where}: 'relation' is add_remove or replace, not {state['relation']!r}")
    if state["lower"] > state["upper"]:
        raise LessonError(f"{where}: lower {state['lower']} is above upper {state['upper']}")
    if "conditions" in raw:
        state["conditions"] = _conditions(raw["conditions"], where)
    return state


def _random_walk(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise LessonError(f"{where}: 'random_walk' must be a table")
    _unknown(raw, RANDOM_WALK_KEYS, f"{where}, random_walk")
    return {k: _typed(v, RANDOM_WALK_KEYS[k], f"{where}, random_walk '{k}'") for k, v in raw.items()}


def _compare(raw: Any, where: str) -> tuple[str, dict[str, Any]] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise LessonError(f"{where}: 'compare' must be a table {{ mechanism = ..., params = {{...}} }}")
    _unknown(raw, COMPARE_KEYS, f"{where}, compare")
    params = raw.get("params", {})
    if not isinstance(params, dict):
        raise LessonError(f"{where}, compare: 'params' must be a table")
    return _require(raw, "mechanism", str, f"{where}, compare"), dict(params)


def _attack(raw: Any, tab: str, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or not all(isinstance(v, str | int | float) for v in raw.values()):
        raise LessonError(f"{where}: 'attack' must be a table of settings (numbers or text)")
    if raw and tab not in ATTACK_PAGES:
        raise LessonError(f"{where}: 'attack' needs an attack tab ({', '.join(ATTACK_PAGES)}), not {tab!r}")
    return dict(raw)


def _step(raw: Any, previous: Step | None, where: str, lessons_dir: Path) -> Step:
    if not isinstance(raw, dict):
        raise LessonError(f"{where} must be a table ([[steps]])")
    _unknown(raw, STEP_KEYS, where)
    tab = _require(raw, "tab", str, where)
    if tab not in TABS:
        raise LessonError(f"{where}: unknown tab {tab!r}; use one of {', '.join(TABS)}")
    first = previous is None
    for key in ("query", "mechanism") if first else ():
        if key not in raw:
            raise LessonError(f"{where}: the first step must set '{key}'")
    dataset = _typed(raw.get("dataset", previous.dataset if previous else DEFAULT_DATASET), str, where)
    if dataset != DEFAULT_DATASET and not (lessons_dir / dataset).is_file():
        raise LessonError(f"{where}: dataset {dataset!r} is not a file beside the lessons ({lessons_dir})")
    mechanism = _typed(raw["mechanism"], str, f"{where}, 'mechanism'") if "mechanism" in raw else None
    params = raw.get("params", {})
    if not isinstance(params, dict):
        raise LessonError(f"{where}: 'params' must be a table")
    if mechanism is None:  # the same mechanism: its parameters carry over, the step's override them
        params = {**previous.params, **params}  # type: ignore[union-attr]
    plan = _typed(raw.get("plan", 0), int, f"{where}, 'plan'")
    if not 0 <= plan <= 200:
        raise LessonError(f"{where}: 'plan' is a number of copies from 0 to 200, not {plan}")
    return Step(
        title=_require(raw, "title", str, where),
        text=" ".join(_require(raw, "text", str, where).split()),
        try_this=" ".join(_require(raw, "try", str, where).split()),
        tab=tab,
        dataset=dataset,
        query=_query(raw["query"], where) if "query" in raw else dict(previous.query),  # type: ignore[union-attr]
        mechanism=mechanism or previous.mechanism,  # type: ignore[union-attr]
        params=dict(params),
        plan=plan,
        random_walk={
            **(previous.random_walk if previous else {}),
            **_random_walk(raw.get("random_walk", {}), where),
        },
        compare=_compare(raw.get("compare"), where),
        attack=_attack(raw.get("attack", {}), tab, where),
    )


def load_lesson(path: Path) -> Lesson:
    """Read and check one lesson file; LessonError saying what to fix if it is not right."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LessonError(f"{path.name} is not a readable TOML file: {exc}") from None
    _unknown(raw, LESSON_KEYS, path.name)
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise LessonError(f"{path.name}: a lesson needs at least one [[steps]] table")
    steps: list[Step] = []
    for i, item in enumerate(steps_raw):
        steps.append(_step(item, steps[-1] if steps else None, f"{path.name}, step {i + 1}", path.parent))
    return Lesson(
        path=path,
        title=_require(raw, "title", str, path.name),
        summary=" ".join(_require(raw, "summary", str, path.name).split()),
        reference=_require(raw, "reference", str, path.name),
        steps=tuple(steps),
    )


def load_lessons(directory: Path = LESSONS_DIR) -> tuple[list[Lesson], list[str]]:
    """Every ``*.toml`` in ``directory`` in file-name order: the lessons that load, and one
    message per file that does not (shown in the menu, never raised)."""
    lessons, problems = [], []
    for path in sorted(directory.glob("*.toml")):
        try:
            lessons.append(load_lesson(path))
        except LessonError as exc:
            problems.append(str(exc))
    return lessons, problems


def check_mechanisms(lesson: Lesson, mechanisms: Iterable[Mechanism]) -> str | None:
    """None if every step names a registered mechanism with valid parameters, else the problem
    (needs the registry, which the window imports on a worker after start-up)."""
    by_name = {m.name: m for m in mechanisms}
    for i, step in enumerate(lesson.steps):
        where = f"{lesson.path.name}, step {i + 1}"
        mechanism = by_name.get(step.mechanism)
        if mechanism is None:
            return f"{where}: unknown mechanism {step.mechanism!r}; known: {', '.join(sorted(by_name))}"
        try:
            mechanism.validate(step.params)
        except DPExplorerError as exc:
            return f"{where}: {exc}"
        if step.compare is not None:
            pinned = by_name.get(step.compare[0])
            if pinned is None:
                return f"{where}, compare: unknown mechanism {step.compare[0]!r}"
            try:
                pinned.validate(step.compare[1])
            except DPExplorerError as exc:
                return f"{where}, compare: {exc}"
    return None
