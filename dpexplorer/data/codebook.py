"""The codebook: a dataset's public description (DESIGN.md, "Codebook"; issue 40).

Per column: its kind, declared bounds, categories (and whether the list is complete), bin edges,
a date format; the privacy unit and its contribution bounds; a declared public row count. Every
fact carries its origin: ``declared`` by the steward (typed, or imported with a citation),
``estimated`` privately (charged: the ledger row that paid for it), or ``shipped`` with the app.
Nothing here reads a dataset: a codebook is public, and every release path takes the public facts
it needs from the query or from here (:func:`complete_query`), never from the data.

The file format (JSON, ``dpexplorer/resources/codebook.schema.json``, docs/guide/codebook.md) is
checked by hand below: every refusal is one :class:`DataError` line naming the field at fault."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast, get_args

from dpexplorer.core.checks import (
    check_choice,
    check_flag,
    check_mapping,
    check_path,
    check_text,
    described,
    is_real,
    shown,
)
from dpexplorer.data.conditions import MAX_DEPTH
from dpexplorer.data.days import DECLARED_DAY, check_format
from dpexplorer.data.errors import DataError, DataTypeError
from dpexplorer.data.json_files import read_json_file
from dpexplorer.data.validation import QUERY, column_name, fmt, require

if TYPE_CHECKING:
    from dpexplorer.data.load import Declared

Origin: TypeAlias = Literal["declared", "estimated", "shipped"]
ORIGINS: tuple[str, ...] = get_args(Origin)
KINDS = ("number", "category", "day", "text", "identifier")
TEXT_KINDS = ("category", "text", "identifier")
"""The kinds of column that hold text whatever their cells spell: a text file's column of one
of them is read as written (leading zeros and all), never as numbers or days."""
FORMAT_VERSION = 1
"""The ``codebook`` field of a file this version writes and reads."""

COLUMN_FIELDS = ("bounds", "categories", "edges", "date_format")
FIELD_KINDS: dict[str, tuple[str, ...]] = {
    "bounds": ("number",),
    "edges": ("number",),
    "categories": ("category", "number"),
    "date_format": ("day",),
}
"""The kinds of column each fact may describe (categories of a number column: coded values)."""

MAX_CODEBOOK_BYTES = 16 << 20
"""A codebook file larger than this is refused before it is parsed."""


# ---------------------------------------------------------------- values
@dataclass(frozen=True)
class Fact:
    """One public fact and where it comes from. ``value``: bounds (lo, hi) floats; categories
    tuple[str, ...]; edges tuple[float, ...]; date_format str; rows int. ``citation``: where a
    declared or shipped fact comes from (free text); ``ledger_id``: the ledger row that paid for
    an estimated one; ``complete`` (categories only): the list is every value the column takes
    (missing values aside)."""

    value: Any
    origin: Origin
    citation: str = ""
    ledger_id: int | None = None
    complete: bool = True

    def __post_init__(self) -> None:
        check_choice(self.origin, "origin", ORIGINS, QUERY)
        check_text(self.citation, "citation", QUERY)
        if self.origin == "estimated":
            needs = "an estimated fact needs the ledger_id of the row that paid for it (a ledger row id >= 1)"
            if not _whole(self.ledger_id):
                raise DataTypeError(f"{needs}, not {described(self.ledger_id)}")
            # a row id of SQLite's, a 64-bit integer
            require(1 <= cast(int, self.ledger_id) < 2**63, f"{needs}, not {shown(self.ledger_id)}")
        else:
            require(self.ledger_id is None, f"a {self.origin} fact has no ledger_id (only an estimated one)")
        check_flag(self.complete, "complete", QUERY)

    def to_dict(self, field_name: str) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        out: dict[str, Any] = {"value": value, "origin": self.origin}
        if self.citation:
            out["citation"] = self.citation
        if self.ledger_id is not None:
            out["ledger_id"] = self.ledger_id
        if field_name == "categories":
            out["complete"] = self.complete
        return out


def _optional(value: Any, kind: type, what: str) -> Any:
    """``value`` if it is None or a ``kind``; DataTypeError naming ``what`` otherwise."""
    if value is not None and not isinstance(value, kind):
        raise DataTypeError(f"{what} must be a {kind.__name__} or None, not {described(value)}")
    return value


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any) -> bool:
    """A finite number (not a boolean), also as a float (an int of 400 digits is not)."""
    if not is_real(v):
        return False
    try:
        return math.isfinite(float(v))
    except (OverflowError, ValueError):
        return False


def _bounds_value(value: Any) -> tuple[float, float]:
    require(
        isinstance(value, list | tuple) and len(value) == 2 and all(_number(v) for v in value),
        f"bounds must be two finite numbers [lower, upper], got {_short(value)}",
    )
    lo, hi = float(value[0]), float(value[1])
    require(lo < hi, f"bounds are inverted or empty: lower {fmt(lo)} >= upper {fmt(hi)}")
    return lo, hi


def _edges_value(value: Any) -> tuple[float, ...]:
    require(
        isinstance(value, list | tuple) and len(value) >= 2 and all(_number(v) for v in value),
        f"edges must be at least two finite numbers, got {_short(value)}",
    )
    edges = tuple(float(v) for v in value)
    require(all(a < b for a, b in itertools.pairwise(edges)), "edges must increase")
    return edges


def _categories_value(value: Any) -> tuple[str, ...]:
    require(
        isinstance(value, list | tuple) and len(value) >= 1 and all(isinstance(v, str) for v in value),
        f"categories must be a non-empty list of text values, got {_short(value)}",
    )
    seen: set[str] = set()
    for v in value:
        require(v not in seen, f"categories repeat {v!r}")
        seen.add(v)
    return tuple(value)


def _date_format_value(value: Any) -> str:
    require(isinstance(value, str) and value.strip() != "", "date_format must be non-empty text")
    return check_format(value, "date_format")


def _rows_value(value: Any) -> int:
    require(_whole(value) and value >= 0, f"rows must be a whole number >= 0, got {_short(value)}")
    return int(value)


_VALUE_CHECKS = {
    "bounds": _bounds_value,
    "edges": _edges_value,
    "categories": _categories_value,
    "date_format": _date_format_value,
    "rows": _rows_value,
}


def _short(value: Any) -> str:
    return shown(value)  # safe on any value: a list nested ten thousand deep, a failing repr


@dataclass(frozen=True)
class ColumnFacts:
    """What the codebook declares about one column: its kind (one of :data:`KINDS`) and each
    fact (None: not declared). Values are checked and normalised here (DataError, one line)."""

    name: str
    kind: str
    bounds: Fact | None = None
    categories: Fact | None = None
    edges: Fact | None = None
    date_format: Fact | None = None
    note: str = ""
    """Free text: what the documentation says where it declares no fact (e.g. why no bound)."""

    def __post_init__(self) -> None:
        require(column_name(self.name, "a column's name") != "", "a column needs a name")
        check_choice(self.kind, "kind", KINDS, QUERY)
        check_text(self.note, "note", QUERY)
        for name in COLUMN_FIELDS:
            fact = _optional(getattr(self, name), Fact, name)
            if fact is None:
                continue
            require(
                self.kind in FIELD_KINDS[name],
                f"a {self.kind} column has no {name} (only a {' or '.join(FIELD_KINDS[name])} column)",
            )
            object.__setattr__(self, name, dataclasses.replace(fact, value=_VALUE_CHECKS[name](fact.value)))

    def facts(self) -> Iterator[tuple[str, Fact]]:
        """(field, fact) of each declared fact, in :data:`COLUMN_FIELDS` order."""
        for name in COLUMN_FIELDS:
            fact = getattr(self, name)
            if fact is not None:
                yield name, fact

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        out.update({name: fact.to_dict(name) for name, fact in self.facts()})
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Unit:
    """The privacy unit: rows sharing a value of ``column`` belong to one person; a person
    contributes at most ``max_rows`` rows to each of at most ``max_groups`` groups (None: not
    declared). With ``max_rows == 1`` every row is a different person."""

    column: str
    max_rows: int | None
    max_groups: int | None
    origin: Origin = "declared"
    citation: str = ""

    def __post_init__(self) -> None:
        require(column_name(self.column, "the unit's column") != "", "the unit needs a column")
        for name in ("max_rows", "max_groups"):
            v = getattr(self, name)
            what = f"the unit's {name} must be a whole number from 1 to 10,000 or null"
            if v is not None and not _whole(v):
                raise DataTypeError(f"{what}, not {described(v)}")
            require(v is None or 1 <= v <= 10_000, f"{what}, got {_short(v)}")
        check_choice(self.origin, "origin", ORIGINS, QUERY)
        check_text(self.citation, "citation", QUERY)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "column": self.column,
            "max_rows": self.max_rows,
            "max_groups": self.max_groups,
            "origin": self.origin,
        }
        if self.citation:
            out["citation"] = self.citation
        return out


@dataclass(frozen=True)
class Codebook:
    """A dataset's public description. ``columns`` is insertion-ordered; ``dataset`` is the
    ledger identity (content fingerprint) or ledger name of the dataset it describes ("" = any);
    ``rows`` a declared public row count. Immutable: :meth:`with_fact` and :meth:`with_column`
    return new codebooks."""

    columns: Mapping[str, ColumnFacts] = field(default_factory=dict)
    unit: Unit | None = None
    rows: Fact | None = None
    dataset: str = ""
    citation: str = ""
    source: str = field(default="", compare=False)
    """The file it was read from ("" for one built in memory or changed since)."""
    sha256: str = field(default="", compare=False)
    """The SHA-256 of that file's bytes ("" for one built in memory or changed since)."""

    def __post_init__(self) -> None:
        columns = dict(check_mapping(self.columns, "columns", QUERY))
        for name, facts in columns.items():
            if not isinstance(facts, ColumnFacts):
                raise DataTypeError(f"column {shown(name)} must be ColumnFacts, not {described(facts)}")
            require(facts.name == name, f"column {shown(name)} holds the facts of {shown(facts.name)}")
        object.__setattr__(self, "columns", columns)
        _optional(self.unit, Unit, "unit")
        rows = _optional(self.rows, Fact, "rows")
        if rows is not None:
            object.__setattr__(self, "rows", dataclasses.replace(rows, value=_rows_value(rows.value)))
        for name in ("dataset", "citation", "source", "sha256"):
            check_text(getattr(self, name), name, QUERY)

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_dict(), sort_keys=True))

    def digest(self) -> str:
        """The SHA-256 that identifies this codebook: of its file's bytes when it was read from
        one (``sha256sum FILE`` gives the same), else of its canonical JSON (:meth:`to_dict`,
        keys sorted, no spaces)."""
        if self.sha256:
            return self.sha256
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @property
    def bound_by_content(self) -> bool:
        """Whether ``dataset`` names the data by a hash of them (a content fingerprint, 32 hex
        digits, or a file's SHA-256, 64), not by a ledger name."""
        return re.fullmatch(r"[0-9a-f]{32}|[0-9a-f]{64}", self.dataset.strip()) is not None

    def public_digest(self) -> str:
        """The SHA-256 a published file gives for this codebook: :meth:`digest`, except for a
        codebook bound to its data by a hash of them (:attr:`bound_by_content`), whose bytes hold
        that hash: then the SHA-256 of its canonical JSON without the binding, so nothing
        published is a function of the rows."""
        if not self.bound_by_content:
            return self.digest()
        unbound = {k: v for k, v in self.to_dict().items() if k != "dataset"}
        canonical = json.dumps(unbound, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def column(self, name: str) -> ColumnFacts | None:
        """The facts of column ``name`` (None: the codebook does not describe it)."""
        return self.columns.get(column_name(name, "name"))

    def fact(self, column: str, field_name: str) -> Fact | None:
        """One declared fact of ``column`` (None: not declared); ``field_name`` one of
        :data:`COLUMN_FIELDS` (DataError otherwise)."""
        facts = self.columns.get(column_name(column, "column"))
        check_choice(field_name, "field_name", COLUMN_FIELDS, QUERY)
        return None if facts is None else cast(Fact | None, getattr(facts, field_name))

    def with_fact(self, column: str, field: str, fact: Fact | None) -> Codebook:
        """A new codebook with ``column``'s ``field`` set to ``fact`` (None: removed). A column
        the codebook does not describe yet is added, of the kind the field implies (bounds and
        edges: number; categories: category; date_format: day). ``field == "rows"`` sets the
        public row count (``column`` ignored). DataError for an unknown field or a fact that
        does not fit the column's kind."""
        check_text(field, "field", QUERY)
        _optional(fact, Fact, "fact")
        if field == "rows":
            return dataclasses.replace(self, rows=fact, source="", sha256="")
        require(field in COLUMN_FIELDS, f"unknown fact {field!r}: use {', '.join(COLUMN_FIELDS)} or rows")
        facts = self.columns.get(column_name(column, "column")) or ColumnFacts(column, FIELD_KINDS[field][0])
        changes: dict[str, Any] = {field: fact}
        return self.with_column(dataclasses.replace(facts, **changes))

    def with_column(self, facts: ColumnFacts) -> Codebook:
        """A new codebook with ``facts`` replacing (in place) or appended to the columns."""
        if not isinstance(facts, ColumnFacts):
            raise DataTypeError(f"facts must be ColumnFacts, not {described(facts)}")
        return dataclasses.replace(self, columns={**self.columns, facts.name: facts}, source="", sha256="")

    def to_dict(self) -> dict[str, Any]:
        """The JSON file's content (:func:`codebook_from_dict` reads it back)."""
        return {
            "codebook": FORMAT_VERSION,
            "dataset": self.dataset,
            "citation": self.citation,
            "rows": None if self.rows is None else self.rows.to_dict("rows"),
            "unit": None if self.unit is None else self.unit.to_dict(),
            "columns": {name: facts.to_dict() for name, facts in self.columns.items()},
        }


EMPTY = Codebook()
"""The codebook that declares nothing."""


# ---------------------------------------------------------------- the file
TOP_KEYS = frozenset({"$schema", "codebook", "dataset", "citation", "rows", "unit", "columns"})
COLUMN_KEYS = frozenset({"kind", *COLUMN_FIELDS, "note"})
FACT_KEYS = frozenset({"value", "origin", "citation", "ledger_id"})
UNIT_KEYS = frozenset({"column", "max_rows", "max_groups", "origin", "citation"})


def _unknown(d: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    extra = sorted(set(d) - allowed)
    if extra:
        raise DataError(f"{where}: unknown field {extra[0]!r} (allowed: {', '.join(sorted(allowed))})")


def _object(d: Any, where: str) -> Mapping[str, Any]:
    require(isinstance(d, Mapping), f"{where} must be an object, got {_json_type(d)}")
    return cast(Mapping[str, Any], d)


def _json_type(v: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}
    return names.get(type(v), "a number" if isinstance(v, int | float) else type(v).__name__)


def _fact_from_dict(d: Any, field_name: str, where: str) -> Fact:
    d = _object(d, where)
    allowed = FACT_KEYS | {"complete"} if field_name == "categories" else FACT_KEYS
    _unknown(d, allowed, where)
    require("value" in d, f"{where}: no value")
    origin = d.get("origin", "declared")
    return Fact(
        _VALUE_CHECKS[field_name](d["value"]),
        origin,
        d.get("citation", ""),
        d.get("ledger_id"),
        d.get("complete", True),
    )


def _column_from_dict(name: str, d: Any) -> ColumnFacts:
    where = f"column {name!r}"
    d = _object(d, where)
    _unknown(d, COLUMN_KEYS, where)
    require("kind" in d, f"{where}: no kind (one of {', '.join(KINDS)})")
    facts: dict[str, Fact] = {}
    for field_name in COLUMN_FIELDS:
        if d.get(field_name) is not None:
            at = f"{where}: {field_name}"
            facts[field_name] = _in(at, _fact_from_dict, d[field_name], field_name, at)
    return _in(where, ColumnFacts, name, d["kind"], **facts, note=d.get("note", ""))


def _unit_from_dict(d: Any) -> Unit:
    d = _object(d, "unit")
    _unknown(d, UNIT_KEYS, "unit")
    require("column" in d, "unit: no column")
    return _in(
        "unit",
        Unit,
        d["column"],
        d.get("max_rows"),
        d.get("max_groups"),
        d.get("origin", "declared"),
        d.get("citation", ""),
    )


def _in(where: str, build: Any, *args: Any, **kwargs: Any) -> Any:
    """``build(*args, **kwargs)``, a DataError prefixed by ``where`` (one line)."""
    try:
        return build(*args, **kwargs)
    except DataError as exc:
        text = str(exc)
        raise DataError(text if text.startswith(f"{where}:") or not where else f"{where}: {text}") from None
    except TypeError as exc:
        raise DataError(f"{where}: {exc}") from None


def codebook_from_dict(d: Mapping[str, Any]) -> Codebook:
    """The codebook a parsed JSON file describes (format: module docstring and
    ``codebook.schema.json``). DataError, one line naming the field, for anything else: an
    unknown field, a wrong kind, inverted bounds, repeated categories, a fact its column's kind
    cannot have, a missing version."""
    d = _object(d, "a codebook")
    _unknown(d, TOP_KEYS, "codebook")
    version = d.get("codebook")
    require(
        version == FORMAT_VERSION and _whole(version),
        f'not a codebook of this version: "codebook" must be {FORMAT_VERSION}, got {_short(version)}',
    )
    columns = _object(d.get("columns", {}), "columns")
    unit = None if d.get("unit") is None else _unit_from_dict(d["unit"])
    rows = None if d.get("rows") is None else _in("rows", _fact_from_dict, d["rows"], "rows", "rows")
    parsed = {str(name): _column_from_dict(str(name), facts) for name, facts in columns.items()}
    for key in ("dataset", "citation"):
        require(isinstance(d.get(key, ""), str), f"{key} must be text")
    return Codebook(parsed, unit, rows, d.get("dataset", ""), d.get("citation", ""))


def load_codebook(path: str | os.PathLike[str]) -> Codebook:
    """The codebook in the JSON file ``path``; DataError naming the file and what is wrong."""
    path = check_path(path, "path", QUERY)
    where = f"the codebook {path}"
    data, parsed = read_json_file(path, "codebook", MAX_CODEBOOK_BYTES, DataError)
    try:
        book = codebook_from_dict(parsed)
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from None
    return dataclasses.replace(book, source=path, sha256=hashlib.sha256(data).hexdigest())


def save_codebook(codebook: Codebook, path: str | os.PathLike[str]) -> None:
    """Write ``codebook`` to ``path`` as JSON, atomically (a temporary file in the same folder,
    flushed to disk, then renamed over ``path``): a reader sees the old file or the new one.
    DataError (one line) when it cannot be written."""
    if not isinstance(codebook, Codebook):
        raise DataTypeError(f"codebook must be a Codebook, not {described(codebook)}")
    target = Path(check_path(path, "path", QUERY))
    text = json.dumps(codebook.to_dict(), indent=2, ensure_ascii=False) + "\n"
    try:
        _write_atomically(target, text)
    except OSError as exc:
        raise DataError(f"cannot write the codebook {target}: {exc.strerror or exc}") from None


def _write_atomically(target: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def schema_path() -> Path:
    """The JSON Schema of the file format (``dpexplorer/resources/codebook.schema.json``)."""
    return Path(str(files("dpexplorer").joinpath("resources", "codebook.schema.json")))


def shipped_codebook_path() -> Path:
    """Adult's shipped codebook (``dpexplorer/resources/adult.codebook.json``)."""
    return Path(str(files("dpexplorer").joinpath("resources", "adult.codebook.json")))


def shipped_codebook(name_or_path: str | os.PathLike[str]) -> Codebook | None:
    """The codebook shipped for the bundled dataset when ``name_or_path`` is it (the bundled
    Adult's path, or the name ``adult``); None for any other file. Decided from the path alone,
    never from a file's contents; the codebook's ``dataset`` (Adult's content fingerprint) then
    ties it to Adult's ledger identity, so a release on other data is refused."""
    from dpexplorer.data.default import default_dataset_path

    try:
        text = check_path(name_or_path, "name_or_path (a dataset's name or path)", QUERY)
    except DataTypeError:
        raise
    except DataError:
        return None  # empty, or holding a NUL: no file, so not the bundled one
    if text != "adult":
        try:
            if Path(text).resolve() != default_dataset_path().resolve():
                return None
        except (OSError, ValueError):
            return None
    return load_codebook(shipped_codebook_path())


# ---------------------------------------------------------------- what a query uses
@dataclass(frozen=True)
class UsedFact:
    """A public fact a release uses: its value and its origin in the codebook (None: the
    codebook does not declare this value, whether the query holds it or nobody does; ``value``
    is then the query's, or None)."""

    column: str | None
    field: str
    value: Any
    origin: Origin | None
    citation: str = ""
    ledger_id: int | None = None

    @property
    def held(self) -> bool:
        """True when the query or the codebook holds the value (the release can be built)."""
        return self.value is not None

    def describe(self) -> str:
        """The fact in a plain phrase ("the bounds of age", "the privacy unit")."""
        return _PHRASES[self.field].format(column=self.column)


_PHRASES = {
    "bounds": "the bounds of {column}",
    "categories": "the categories of {column}",
    "edges": "the bin edges of {column}",
    "axis": "the categories or bin edges of {column}",
    "date_format": "the date format of {column}",
    "unit": "the privacy unit",
    "rows": "the number of rows",
}

CLIPPED = ("sum", "mean", "variance", "quantile", "trimmed_mean")
"""Query types measuring one column clipped to declared bounds."""
CATEGORICAL = ("argmax", "top_k")
"""Query types choosing among one column's declared categories."""


def _axes(query: Mapping[str, Any]) -> list[Any]:
    """The query's axes (dicts with a ``column``), in order."""
    kind = query.get("type")
    if kind == "histogram":
        return [query.get("axis")]
    axes = query.get("axes") if kind in ("workload", "marginals") else None
    if kind == "group_by" and query.get("private_keys") is None:
        axes = query.get("keys")
    return list(axes) if isinstance(axes, list | tuple) else []  # anything else: query_from_dict refuses it


def _measured(query: Mapping[str, Any]) -> str | None:
    """The column the query clips to bounds, if any."""
    kind = query.get("type")
    if kind in CLIPPED or (kind == "group_by" and query.get("statistic", "count") != "count"):
        column = query.get("column")
        return column if isinstance(column, str) else None
    return None


def _same(a: Any, b: Any) -> bool:
    """Equal as public values (numbers compared as floats)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if _number(a) and _number(b):
        return float(a) == float(b)
    return bool(a == b)


def _used(column: str | None, field_name: str, value: Any, fact: Fact | None) -> UsedFact:
    """The fact ``field_name`` of ``column``: the query's ``value`` (None: not in the query),
    its origin the codebook's when the codebook declares that same value."""
    if fact is None or (value is not None and not _same(value, fact.value)):
        return UsedFact(column, field_name, value, None)
    return UsedFact(
        column, field_name, fact.value if value is None else value, fact.origin, fact.citation, fact.ledger_id
    )


def _evenly_spaced(edges: Sequence[float], bounds: tuple[float, float]) -> bool:
    """True when ``edges`` are equal bins from the declared lower to the declared upper bound."""
    lo, hi = bounds
    k = len(edges) - 1
    width = (hi - lo) / k
    tol = 1e-9 * max(1.0, abs(lo), abs(hi))
    return all(abs(float(e) - (lo + i * width)) <= tol for i, e in enumerate(edges))


def _listed_value(value: Any) -> Any:
    """A list as a tuple (a public value), and text as query_from_dict reads it (a tuple of its
    characters); anything else as is, for query_from_dict to refuse."""
    return tuple(value) if isinstance(value, list | tuple | str) else value


def _axis_used(axis: Mapping[str, Any], codebook: Codebook) -> UsedFact:
    column = str(axis.get("column"))
    cats, edges = _listed_value(axis.get("categories")), _listed_value(axis.get("edges"))
    if cats is not None:
        return _used(column, "categories", cats, codebook.fact(column, "categories"))
    declared_edges, bounds = codebook.fact(column, "edges"), codebook.fact(column, "bounds")
    if edges is None:  # {"column": name}: what complete_query fills in
        if declared_edges is not None:
            return _used(column, "edges", None, declared_edges)
        declared_cats = codebook.fact(column, "categories")
        if declared_cats is not None:
            return _used(column, "categories", None, declared_cats)
        return UsedFact(column, "axis", None, None)
    used = _used(column, "edges", edges, declared_edges)
    numbers = isinstance(edges, tuple) and len(edges) >= 2 and all(_number(e) for e in edges)
    if used.origin is None and bounds is not None and numbers and _evenly_spaced(edges, bounds.value):
        # k equal bins between declared bounds: public, from the bounds (origin and citation theirs)
        return UsedFact(
            column,
            "edges",
            tuple(edges),
            bounds.origin,
            bounds.citation or "equal bins between the declared bounds",
            bounds.ledger_id,
        )
    return used


def _unit_used(query: Mapping[str, Any], codebook: Codebook) -> UsedFact | None:
    unit = query.get("unit")
    declared = codebook.unit
    if unit is None:
        return None
    value = (
        (unit.get("column"), unit.get("max_groups", 1), unit.get("max_rows", 1))
        if isinstance(unit, Mapping)
        else unit
    )
    if declared is None or not isinstance(unit, Mapping) or unit.get("column") != declared.column:
        return UsedFact(None, "unit", value, None)
    return UsedFact(None, "unit", value, declared.origin, declared.citation)


def facts_used(query: Mapping[str, Any], codebook: Codebook) -> list[UsedFact]:
    """Every public fact the query's release uses, in the query's order, each with its value
    (the query's, else the codebook's; None where neither holds it) and its origin in the
    codebook (None where the codebook does not declare that value). The query is a dict as
    :func:`dpexplorer.data.queries.query_from_dict` reads, complete or not."""
    used: list[UsedFact] = []
    measured = _measured(query)
    if measured is not None:
        lower, upper = query.get("lower"), query.get("upper")
        declared = codebook.fact(measured, "bounds")
        value = None if lower is None or upper is None else (lower, upper)
        if value is None and declared is not None and (lower is not None or upper is not None):
            # half given: the other half comes from the codebook, the pair is the query's
            lo, hi = declared.value
            value = (lo if lower is None else lower, hi if upper is None else upper)
        used.append(_used(measured, "bounds", value, declared))
    if query.get("type") in CATEGORICAL:
        column = str(query.get("column"))
        cats = _listed_value(query.get("categories"))
        used.append(
            _used(
                column,
                "categories",
                cats,
                codebook.fact(column, "categories"),
            )
        )
    for axis in _axes(query):
        if isinstance(axis, Mapping):
            used.append(_axis_used(axis, codebook))
    unit = _unit_used(query, codebook)
    if unit is not None:
        used.append(unit)
    return used


def undeclared(query: Mapping[str, Any], codebook: Codebook) -> list[str]:
    """One plain phrase per fact the release uses that the codebook does not declare ("the
    bounds of age", "the categories of race"), whether or not the query holds a value for it;
    empty when the release may go ahead on the codebook alone (the window's rule: it never
    fills a fact from the data)."""
    return [fact.describe() for fact in facts_used(query, codebook) if fact.origin is None]


def missing(query: Mapping[str, Any], codebook: Codebook) -> list[str]:
    """One plain phrase per fact the release uses that neither the query nor the codebook holds
    (a plan's rule: a fact the plan itself writes counts as declared by the steward)."""
    return [fact.describe() for fact in facts_used(query, codebook) if not fact.held]


# ---------------------------------------------------------------- reading a file
def declared_types(codebook: Codebook | None, formats: Mapping[str, str] | None = None) -> Declared:
    """What a file is read with (:class:`dpexplorer.data.load.Declared`): the columns the
    codebook calls a category, text or an identifier, as text; each day column's declared
    ``date_format`` (a day column without one: :data:`~dpexplorer.data.days.DECLARED_DAY`, read as
    days whatever one row spells), and each of ``formats`` (column -> format: a command line's,
    which wins)."""
    from dpexplorer.data.load import Declared

    columns = codebook.columns if codebook is not None else {}
    text = frozenset(name for name, facts in columns.items() if facts.kind in TEXT_KINDS)
    days = {
        name: f.date_format.value if f.date_format is not None else DECLARED_DAY
        for name, f in columns.items()
        if f.kind == "day" or f.date_format is not None
    }
    return Declared(text, tuple({**days, **(formats or {})}.items()))


# ---------------------------------------------------------------- filling a query in
def complete_query(query: Mapping[str, Any], codebook: Codebook) -> dict[str, Any]:
    """A copy of ``query`` (a dict as :func:`dpexplorer.data.queries.query_from_dict` reads)
    with every public fact it lacks taken from the codebook: a clipped statistic's ``lower`` /
    ``upper``, a top-k's or argmax's ``categories``, an axis's categories or edges (given as
    ``{"column": name}``: the declared edges, else the declared categories), a statistic by
    group's or synthetic table's privacy ``unit``. A fact neither holds stays missing
    (:func:`missing` names it). DataError (one line naming the column and both values) where
    the query contradicts the codebook:

    * bounds reaching outside the declared bounds (clipping within them is the query's choice);
    * a category not in the codebook's complete list of categories, or a condition's value
      compared with such a column (``==``, ``!=``, ``in``) that is not in it;
    * a privacy unit on another column than the declared one, or a query that cannot bound a
      person's rows when the codebook's unit lets a person hold several."""
    out = _copied(query)
    measured = _measured(out)
    if measured is not None:
        _fill_bounds(out, measured, codebook.fact(measured, "bounds"))
    if out.get("type") in CATEGORICAL:
        _fill_categories(out, str(out.get("column")), codebook.fact(str(out.get("column")), "categories"))
    if out.get("type") == "predicate_count":
        _check_conditions(out.get("predicate"), codebook)
    for axis in _axes(out):
        if isinstance(axis, dict):
            _fill_axis(axis, codebook)
    _fill_unit(out, codebook.unit)
    return out


_MAX_QUERY_DEPTH = 2 * MAX_DEPTH + 16
"""How deep a query's mappings and lists may nest (its conditions' :data:`MAX_DEPTH` levels,
each a mapping around a list or a mapping, and the query's own few levels around them)."""


def _copied(query: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``query``'s mappings and lists (the other values shared: they are immutable
    JSON values), made without recursion; DataError for a query nested deeper than
    :data:`_MAX_QUERY_DEPTH`, which no query reader accepts (a hostile plan must end in one line,
    not a RecursionError)."""
    out: dict[str, Any] = {}
    stack: list[tuple[Any, Any, int]] = [(query, out, 1)]
    while stack:
        source, target, depth = stack.pop()
        if depth > _MAX_QUERY_DEPTH:
            raise DataError(
                f"the query is nested more than {_MAX_QUERY_DEPTH} levels deep (its conditions at "
                f"most {MAX_DEPTH} levels): write it flatter"
            )
        pairs = source.items() if isinstance(source, Mapping) else enumerate(source)
        for key, value in pairs:
            if isinstance(value, Mapping | list | tuple):  # a tuple is copied as a JSON list
                inner: Any = {} if isinstance(value, Mapping) else [None] * len(value)
                stack.append((value, inner, depth + 1))
                value = inner
            target[key] = value
    return out


def _fill_bounds(query: dict[str, Any], column: str, declared: Fact | None) -> None:
    if declared is None:
        return
    lo, hi = declared.value
    for key, value in (("lower", lo), ("upper", hi)):
        if query.get(key) is None:
            query[key] = value
    lower, upper = query["lower"], query["upper"]
    if _number(lower) and _number(upper) and not lo <= lower < upper <= hi:
        raise DataError(
            f"the bounds of {column!r} [{fmt(lower)}, {fmt(upper)}] contradict the codebook's "
            f"[{fmt(lo)}, {fmt(hi)}] ({declared.origin}): clip within them, or leave the bounds out"
        )


def _fill_categories(where: dict[str, Any], column: str, declared: Fact | None) -> None:
    if declared is None:
        return
    if where.get("categories") is None:
        where["categories"] = list(declared.value)
        return
    given = _listed_value(where["categories"])
    if isinstance(given, tuple):  # a malformed one is query_from_dict's to refuse
        _in_domain(given, declared, lambda v: f"the category {v!r} of {column!r} contradicts the codebook")


def _in_domain(given: Sequence[Any], declared: Fact, what: Callable[[Any], str]) -> None:
    """DataError naming the first of ``given`` no cell can hold under a column's complete list
    of categories (``declared``; an incomplete list allows any): ``what`` of the value, then
    the list."""
    if not declared.complete:
        return
    from dpexplorer.data.conditions import reading

    known = {reading(c) for c in declared.value}
    for category in given:
        if isinstance(category, str | int | float) and reading(category) not in known:
            raise DataError(f"{what(category)}, whose complete list is {_listed(declared.value)}")


def _compared_with(column: str) -> Callable[[Any], str]:
    """The start of a refusal of a value compared with ``column`` (:func:`_in_domain`)."""
    return lambda value: f"the value {value!r} compared with {column!r} cannot occur under the codebook"


def _check_conditions(predicate: Any, codebook: Codebook) -> None:
    """DataError where a comparison (``==``, ``!=``, ``in``) of a predicate count's condition
    compares a column with a value that cannot occur under the codebook's complete list of its
    categories (:func:`_in_domain`): its count would be a silent empty set. Walked without
    recursion (a condition nests up to MAX_DEPTH levels)."""
    stack = [predicate]
    while stack:
        term = stack.pop()
        if not isinstance(term, Mapping):
            continue  # a malformed condition is predicate_from_dict's to refuse
        if "compare" in term:
            column, values = term.get("column"), term.get("value")
            declared = codebook.fact(column, "categories") if isinstance(column, str) else None
            if declared is not None and term["compare"] in ("==", "!=", "in"):
                values = values if isinstance(values, list | tuple) else [values]
                _in_domain(values, declared, _compared_with(str(column)))
            continue
        for key in ("and", "or"):
            if isinstance(term.get(key), list):
                stack.extend(term[key])
        if "not" in term:
            stack.append(term["not"])


def _listed(values: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(repr(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def _fill_axis(axis: dict[str, Any], codebook: Codebook) -> None:
    column = str(axis.get("column"))
    if axis.get("categories") is not None:
        _fill_categories(axis, column, codebook.fact(column, "categories"))
        return
    if axis.get("edges") is not None:
        return  # a binning is the query's choice
    edges, cats = codebook.fact(column, "edges"), codebook.fact(column, "categories")
    if edges is not None:
        axis["edges"] = list(edges.value)
    elif cats is not None:
        axis["categories"] = list(cats.value)


UNIT_KINDS = ("group_by", "marginals")
"""Query types that bound each person's rows (a privacy unit)."""


def _fill_unit(query: dict[str, Any], unit: Unit | None) -> None:
    if unit is None or (unit.max_rows == 1 and query.get("unit") is None):
        return  # no unit, or every row a different person: rows are persons
    kind = query.get("type")
    if kind not in UNIT_KINDS:
        raise DataError(
            f"the codebook's privacy unit is {unit.column!r} (a person may hold several rows), and a "
            f"{kind} cannot bound each person's rows: release it as a statistic by group (group_by)"
        )
    given = query.get("unit")
    if given is None:
        query["unit"] = {
            "column": unit.column,
            "max_groups": unit.max_groups or 1,
            "max_rows": unit.max_rows or 1,
        }
    elif not isinstance(given, Mapping) or given.get("column") != unit.column:
        column = given.get("column") if isinstance(given, Mapping) else given
        raise DataError(f"the privacy unit {column!r} contradicts the codebook's {unit.column!r}")


__all__ = [
    "CLIPPED",
    "COLUMN_FIELDS",
    "EMPTY",
    "KINDS",
    "ORIGINS",
    "TEXT_KINDS",
    "Codebook",
    "ColumnFacts",
    "Fact",
    "Origin",
    "Unit",
    "UsedFact",
    "codebook_from_dict",
    "complete_query",
    "declared_types",
    "facts_used",
    "load_codebook",
    "missing",
    "save_codebook",
    "schema_path",
    "shipped_codebook",
    "shipped_codebook_path",
    "undeclared",
]
