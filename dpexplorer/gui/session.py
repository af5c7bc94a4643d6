"""Sessions: the explorer's state saved as JSON and loaded back.

A session records everything the user set: the dataset (path and fingerprint), every query
control, the query itself (the data layer's ``to_dict``), the mechanism and its parameters, the
simulation seed, the plan, the planning budget, the tab shown and teaching mode. Loading checks
every field before anything is applied and names the field that is wrong; a session saved for
another dataset (another fingerprint) is refused, never applied to the file now at that path."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dpexplorer.core.errors import DPExplorerError

FORMAT = "dpexplorer-session"
VERSION = 1
MAX_SEED = 2**31 - 1
"""The seed control's range (a QSpinBox holds a signed 32-bit int)."""
RELATIONS = ("add_remove", "replace")
BUDGET_EPSILON_RANGE = (0.001, 100.0)
"""The budget control's range."""


@dataclass
class Session:
    dataset_path: str
    dataset_fingerprint: str
    query_controls: dict[str, Any]
    query: dict[str, Any]
    mechanism: str
    params: dict[str, Any]
    seed: int
    plan: list[dict[str, Any]] = field(default_factory=list)
    teaching: bool = False
    tab: str = ""
    """The title of the tab shown ("" for the first)."""
    budget: dict[str, Any] | None = None
    """The planning budget: {"epsilon", "delta", "share", "method"} (the ledger's, when it
    has one for the dataset, takes precedence)."""


def save_session(session: Session, path: str | os.PathLike[str]) -> Path:
    """Write atomically (temporary file, fsync, rename)."""
    target = Path(path)
    payload = {"format": FORMAT, "version": VERSION, **asdict(session)}
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, target)
    return target


def load_session(path: str | os.PathLike[str]) -> Session:
    """Read and check a session file; DPExplorerError naming the first field that is wrong."""
    source = Path(path)
    try:
        payload = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DPExplorerError(f"{source} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DPExplorerError(f"{source.name} is not a dpexplorer session: {exc}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise DPExplorerError(f"{source.name} is not a dpexplorer session file")
    if payload.get("version") != VERSION:
        raise DPExplorerError(
            f"{source.name} is a session of version {payload.get('version')}; this is {VERSION}"
        )
    try:
        return validate_session(payload)
    except SessionFieldError as exc:
        raise DPExplorerError(f"{source.name}: {exc}; the session was not opened") from None


class SessionFieldError(DPExplorerError):
    """A session field that is missing, of the wrong type or out of range (the message names it)."""


def _fail(name: str, problem: str) -> SessionFieldError:
    return SessionFieldError(f"field “{name}” {problem}")


def _need(
    payload: Mapping[str, Any], name: str, kind: type | tuple[type, ...], what: str, within: str = ""
) -> Any:
    """``payload[name]`` if it is of ``kind``; the error names ``within.name``."""
    where = f"{within}.{name}" if within else name
    if name not in payload:
        raise _fail(where, "is missing")
    value = payload[name]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise _fail(where, f"must be {what}, not true/false")
    if not isinstance(value, kind):
        raise _fail(where, f"must be {what}, not {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else type(value).__name__)


def _number(name: str, value: object, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(name, f"must be a finite number, not {_json_type(value)} {value!r}")
    if not low <= value <= high:
        raise _fail(name, f"is {value:g}, outside [{low:g}, {high:g}]")
    return float(value)


def _check_params(name: str, mechanism: str, params: object) -> dict[str, Any]:
    """The parameters checked against the mechanism's own declarations."""
    from dpexplorer.core.mechanisms.registry import get  # scipy: only when a session is opened

    try:
        declared = get(mechanism)
    except KeyError:
        where = name.replace("params", "mechanism")
        raise _fail(where, f"names no known mechanism ({mechanism!r})") from None
    if not isinstance(params, dict):
        raise _fail(name, f"must be an object of parameters, not {_json_type(params)}")
    try:
        return declared.validate(params)
    except (DPExplorerError, TypeError, ValueError) as exc:
        raise _fail(name, f"is not valid for {declared.label}: {exc}") from None


def _check_query(name: str, query: object) -> None:
    from dpexplorer.data.queries import query_from_dict

    if not isinstance(query, dict):
        raise _fail(name, f"must be an object, not {_json_type(query)}")
    try:
        query_from_dict(query)
    except DPExplorerError as exc:
        raise _fail(name, f"is not a query: {exc}") from None
    except (TypeError, ValueError, KeyError) as exc:
        raise _fail(name, f"is not a query: {type(exc).__name__}: {exc}") from None


CONTROL_TYPES: dict[str, tuple[type, ...]] = {
    "kind": (str,),
    "column": (str,),
    "column2": (str,),
    "lower": (int, float),
    "upper": (int, float),
    "q": (int, float),
    "trim_fraction": (int, float),
    "k": (int,),
    "bins": (int,),
    "categories": (str,),
    "joiner": (str,),
    "conditions": (list,),
    "relation": (str,),
}
"""The query panel's controls (``QueryPanel.state``) and their JSON types."""


def _check_controls(controls: object) -> None:
    name = "query_controls"
    if not isinstance(controls, dict):
        raise _fail(name, f"must be an object, not {_json_type(controls)}")
    for key, kinds in CONTROL_TYPES.items():
        value = _need(controls, key, kinds, "a " + " or ".join(k.__name__ for k in kinds), name)
        if isinstance(value, float) and not math.isfinite(value):
            raise _fail(f"{name}.{key}", "must be a finite number")
    if controls["relation"] not in RELATIONS:
        raise _fail(f"{name}.relation", f"must be one of {', '.join(RELATIONS)}")
    if "codebook" in controls:  # the dataset's codebook (sessions from before issue 40 have none)
        from dpexplorer.data.codebook import codebook_from_dict

        try:
            codebook_from_dict(controls["codebook"])
        except DPExplorerError as exc:
            raise _fail(f"{name}.codebook", str(exc)) from None
    for i, row in enumerate(controls["conditions"]):
        ok = isinstance(row, list) and len(row) == 4 and isinstance(row[0], bool)
        if not ok or not all(isinstance(v, str) for v in row[1:]):
            raise _fail(f"{name}.conditions[{i}]", "must be [not?, column, operator, value]")


def _check_plan(plan: object) -> list[dict[str, Any]]:
    if not isinstance(plan, list):
        raise _fail("plan", f"must be a list, not {_json_type(plan)}")
    for i, entry in enumerate(plan):
        where = f"plan[{i}]"
        if not isinstance(entry, dict):
            raise _fail(where, f"must be an object, not {_json_type(entry)}")
        _need(entry, "label", str, "a string", where)
        mechanism = _need(entry, "mechanism", str, "a string", where)
        entry["params"] = _check_params(f"{where}.params", mechanism, entry.get("params"))
        _check_query(f"{where}.query", entry.get("query"))
        if entry.get("relation") not in RELATIONS:
            raise _fail(f"{where}.relation", f"must be one of {', '.join(RELATIONS)}")
        _need(entry, "held", bool, "true or false", where)
        target = entry.get("target")
        if target is not None:
            if not (isinstance(target, list) and len(target) == 2):
                raise _fail(f"{where}.target", "must be null or [half-width, confidence level]")
            _number(f"{where}.target[0]", target[0], 0.0, math.inf)
            _number(f"{where}.target[1]", target[1], 0.0, 1.0)
    return plan


def _check_budget(budget: object) -> dict[str, Any] | None:
    if budget is None:
        return None
    if not isinstance(budget, dict):
        raise _fail("budget", f"must be an object or null, not {_json_type(budget)}")
    _number("budget.epsilon", budget.get("epsilon"), *BUDGET_EPSILON_RANGE)
    _number("budget.delta", budget.get("delta"), 0.0, 0.999999)
    _need(budget, "share", bool, "true or false", "budget")
    _need(budget, "method", str, "a string", "budget")
    return budget


def _checked(check: Callable[[Any], None], value: Any) -> Any:
    check(value)
    return value


def validate_session(payload: Mapping[str, Any]) -> Session:
    """A :class:`Session` from a parsed file, every field checked (SessionFieldError names the
    first wrong one). Fields added after the first sessions (tab, budget) may be absent."""
    optional = {"teaching": False, "tab": "", **payload}
    checks: dict[str, Callable[[], Any]] = {
        "dataset_path": lambda: _need(payload, "dataset_path", str, "a file path"),
        "dataset_fingerprint": lambda: _need(payload, "dataset_fingerprint", str, "a string"),
        "query_controls": lambda: _checked(_check_controls, payload.get("query_controls")),
        "query": lambda: _checked(lambda q: _check_query("query", q), payload.get("query")),
        "mechanism": lambda: _need(payload, "mechanism", str, "a mechanism's name"),
        "seed": lambda: int(_number("seed", payload.get("seed"), 0, MAX_SEED)),
        "plan": lambda: _check_plan(payload.get("plan", [])),
        "teaching": lambda: _need(optional, "teaching", bool, "true or false"),
        "tab": lambda: _need(optional, "tab", str, "a tab's title"),
        "budget": lambda: _check_budget(payload.get("budget")),
    }
    values = {name: check() for name, check in checks.items()}
    if not isinstance(payload.get("seed"), int):
        raise _fail("seed", "must be a whole number")
    values["params"] = _check_params("params", values["mechanism"], payload.get("params"))
    return Session(**values)
