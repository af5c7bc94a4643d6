"""The persistent privacy-budget ledger (DESIGN.md, Ledger): SQLite through the standard library,
WAL journal, ``synchronous=FULL``, one row per measurement, per dataset fingerprint.

Order of a release (see :mod:`dpexplorer.release.release`): :meth:`Ledger.charge` commits the
measurement's row BEFORE any noise is drawn, the noise is sampled, the files are written, and
:meth:`Ledger.mark_released` records where. Every row counts toward the spent budget whatever
its status, so a crash between any two steps can only over-count, never under-count.

Comparisons against the budget are exact where the composition is exact arithmetic: under
``basic`` composition of pure / approximate DP guarantees (and Laplace noise, epsilon = Delta/b),
epsilons and deltas are summed as :class:`fractions.Fraction` of the stored floats, so ten
charges of 0.1 against a budget of 1.0 are refused at the tenth (the floats 0.1 sum to
1.0000000000000000555 > 1). Numerical accountants (advanced, optimal, zCDP, RDP, PLD) return a
float upper bound; it is inflated by a relative margin of 1e-9 before the comparison, which
covers floating-point rounding in those computations.

A release that fails after its charge (the output cannot be written, Ctrl+C, a crash the
process survives) is marked ``failed`` with the reason (:meth:`Ledger.mark_failed`): its budget
stays spent. Every SQLite error after opening surfaces as :class:`LedgerError`.

Datasets are keyed by the fingerprint of their parsed content
(:attr:`dpexplorer.data.load.Dataset.content_fingerprint`), or by a name the steward gives
(``name:<NAME>``); :meth:`Ledger.identify` moves what older ledgers kept under the file's
SHA-256 or the content-v1 key (64 hex digits) to that key, once, and remembers the alias."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpexplorer.core.accounting import guarantees as g
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError, NotApplicableError
from dpexplorer.release.rational import float_down, float_up

METHODS = ("basic", "advanced", "optimal", "zcdp", "rdp", "pld")
"""The accountant methods a budget may name: ``dpexplorer.core.accounting.compose.METHODS``
(repeated here so that opening the ledger does not load the accountant; a test checks they agree)."""

FLOAT_MARGIN = Fraction(1, 10**9)
"""Relative safety margin applied to a numerical accountant's float total."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    fingerprint TEXT PRIMARY KEY,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    method TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    fingerprint TEXT NOT NULL,
    time TEXT NOT NULL,
    query TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    parameters TEXT NOT NULL,
    guarantee TEXT NOT NULL,
    export_path TEXT,
    status TEXT NOT NULL,
    note TEXT
);
CREATE INDEX IF NOT EXISTS measurements_fingerprint ON measurements (fingerprint);
CREATE TABLE IF NOT EXISTS aliases (
    fingerprint TEXT PRIMARY KEY,
    dataset TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS migrated (
    fingerprint TEXT PRIMARY KEY,
    time TEXT NOT NULL
);
"""
_SAME_PEOPLE_SCHEMA = """
CREATE TABLE IF NOT EXISTS dataset_columns (
    dataset TEXT NOT NULL,
    column_print TEXT NOT NULL,
    name TEXT NOT NULL,
    constant INTEGER NOT NULL,
    time TEXT NOT NULL,
    PRIMARY KEY (dataset, column_print, name)
);
CREATE INDEX IF NOT EXISTS dataset_columns_print ON dataset_columns (column_print);
CREATE TABLE IF NOT EXISTS distinct_data (
    fingerprint TEXT PRIMARY KEY,
    time TEXT NOT NULL
);
"""
"""Beside each dataset's key, the fingerprints of its columns' cells (renamed, projected or
padded copies of a table have the same ones: :mod:`dpexplorer.release.same_people`), and the
data the steward declared other people than the dataset their columns match."""
LEGACY_KEY_LENGTH = 64
"""Keys of older schemes are 64 hex digits (the file's SHA-256, content-v1); content-v2 keys
have 32 (:mod:`dpexplorer.data.identity`) and names start with :data:`NAME_PREFIX`."""
NAME_PREFIX = "name:"
"""Ledger key of a dataset the steward named: ``name:<NAME>``."""


class BudgetExceededError(DPExplorerError):
    """A measurement would take the dataset past its budget (nothing was charged or drawn)."""


class LedgerError(DPExplorerError):
    """The ledger file cannot be opened, read or written (not a ledger, read-only, disk full)."""


class NoBudgetError(DPExplorerError):
    """The dataset has no budget in the ledger yet."""


@dataclass(frozen=True)
class Budget:
    """The steward's total budget for one dataset: (epsilon, delta) under ``method``."""

    fingerprint: str
    epsilon: float
    delta: float
    method: str


@dataclass(frozen=True)
class Measurement:
    """One charged measurement. ``status`` is ``"charged"`` (budget taken; the release may not
    have finished, e.g. after a crash), ``"released"`` (files written at ``export_path``) or
    ``"failed"`` (budget taken, nothing released; ``note`` says why)."""

    id: int
    fingerprint: str
    time: str
    query: dict[str, Any]
    mechanism: str
    parameters: dict[str, Any]
    guarantee: g.Guarantee
    export_path: str | None
    status: str
    note: str | None = None


def default_ledger_path() -> Path:
    """$XDG_DATA_HOME/dpexplorer/ledger.sqlite, else ~/.local/share/dpexplorer/ledger.sqlite."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "dpexplorer" / "ledger.sqlite"


# ------------------------------------------------------------------ guarantees as JSON
_GUARANTEE_TYPES: dict[str, type] = {
    cls.__name__: cls for cls in (g.PureDP, g.ApproxDP, g.ZCDP, g.RDPCurve, g.LaplaceNoise, g.GaussianNoise)
}


def guarantee_to_dict(guarantee: g.Guarantee) -> dict[str, Any]:
    """``{"type": "PureDP", "epsilon": 0.5}`` etc.; floats survive a JSON round trip exactly.
    A subsampled guarantee nests its base: ``{"type": "Subsampled", "base": {...}, ...}``."""
    if isinstance(guarantee, g.Subsampled):
        base = guarantee_to_dict(guarantee.base)
        return {"type": "Subsampled", "base": base, "rate": guarantee.rate, "scheme": guarantee.scheme}
    return {"type": type(guarantee).__name__, **dataclasses.asdict(guarantee)}


def guarantee_from_dict(data: Mapping[str, Any]) -> g.Guarantee:
    """Inverse of :func:`guarantee_to_dict`."""
    fields = dict(data)
    if fields["type"] == "Subsampled":
        return g.Subsampled(guarantee_from_dict(fields["base"]), fields["rate"], fields["scheme"])  # type: ignore[arg-type]
    cls = _GUARANTEE_TYPES[fields.pop("type")]
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


# ------------------------------------------------------------------ totals
def _exact_basic(guarantees: Sequence[g.Guarantee]) -> tuple[Fraction, Fraction] | None:
    """Basic composition (Dwork & Roth 2014, Theorem 3.16) in exact rational arithmetic, when
    every guarantee is pure / approximate DP or Laplace noise; else None."""
    eps, delta = Fraction(0), Fraction(0)
    for item in guarantees:
        if isinstance(item, g.PureDP):
            eps += Fraction(item.epsilon)
        elif isinstance(item, g.ApproxDP):
            eps += Fraction(item.epsilon)
            delta += Fraction(item.delta)
        elif isinstance(item, g.LaplaceNoise):
            eps += Fraction(item.sensitivity) / Fraction(item.scale)
        else:
            return None
    return eps, delta


def total_epsilon(guarantees: Sequence[g.Guarantee], method: str, delta: float) -> Fraction:
    """Epsilon of the composition at ``delta`` under ``method``, as an UPPER bound in exact
    rationals: exact for basic composition of (epsilon, delta) guarantees, otherwise the
    accountant's float total times (1 + 1e-9). Raises NotApplicableError when the method cannot
    reach ``delta`` (e.g. the deltas of the parts already sum past it)."""
    if not guarantees:
        return Fraction(0)
    exact = _exact_basic(guarantees) if method == "basic" else None
    if exact is not None:
        eps, spent_delta = exact
        if spent_delta > Fraction(delta):
            raise NotApplicableError(
                f"the measurements' deltas sum to {float(spent_delta):.3g}, more than the budget's "
                f"delta {delta:.3g}"
            )
        return eps
    from dpexplorer.core.accounting.compose import epsilon_at  # numpy/scipy: load when needed

    value = epsilon_at(list(guarantees), method, delta)
    if not math.isfinite(value):
        raise NotApplicableError(f"{method} composition gives no finite epsilon at delta {delta:g}")
    return Fraction(value) * (1 + FLOAT_MARGIN)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _validate_budget(epsilon: float, delta: float, method: str) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise InvalidParameterError(f"budget epsilon must be a positive number; got {epsilon!r}")
    if not (math.isfinite(delta) and 0 <= delta < 1):
        raise InvalidParameterError(f"budget delta must be in [0, 1); got {delta!r}")
    if method not in METHODS:
        raise InvalidParameterError(f"unknown accountant {method!r}; choose one of {', '.join(METHODS)}")


def _measurement_columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute("PRAGMA table_info(measurements)")}


def _add_note_column(db: sqlite3.Connection) -> None:
    """Give a ledger written before failed releases were recorded its ``note`` column, once:
    checked again under the write lock, so that processes opening such a ledger at the same time
    do not both add it (the second failed with "duplicate column name: note")."""
    if "note" in _measurement_columns(db):
        return
    with _immediate(db):
        if "note" not in _measurement_columns(db):
            db.execute("ALTER TABLE measurements ADD COLUMN note TEXT")


@contextmanager
def _immediate(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction on ``db``, taking the database's write lock at once (so that a check
    and the write it decides are atomic across processes); rolled back on any error."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


# ------------------------------------------------------------------ the ledger
class Ledger:
    """The ledger file at ``path`` (default :func:`default_ledger_path`), created if absent.
    Safe to use from several processes: a charge is one IMMEDIATE transaction (check + insert)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_ledger_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # one connection, usable from any thread (the GUI's workers), one call at a time
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._db.executescript(_SAME_PEOPLE_SCHEMA)
            _add_note_column(self._db)
        except sqlite3.Error as exc:
            raise LedgerError(
                f"cannot open the budget ledger {self.path}: {exc}; give another --ledger path "
                "(never delete a ledger: it is the record of what was spent)"
            ) from None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction, taking the database's write lock at once (check-then-insert is
        atomic across processes)."""
        with self._lock, self._errors(), _immediate(self._db) as db:
            yield db

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite errors (a malformed page, a read-only file, a full disk) as LedgerError."""
        try:
            yield
        except sqlite3.Error as exc:
            raise LedgerError(
                f"the budget ledger {self.path} cannot be used: {exc}; check the file and the disk "
                "(never delete a ledger: it is the record of what was spent)"
            ) from None

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        with self._lock, self._errors():
            return self._db.execute(sql, args).fetchall()

    # ---- budget
    def set_budget(self, fingerprint: str, epsilon: float, delta: float, method: str = "basic") -> None:
        """Set (or replace) the dataset's total budget. Refused if what is already spent would
        not fit under the new budget."""
        epsilon, delta = float(epsilon), float(delta)
        _validate_budget(epsilon, delta, method)
        with self._transaction() as db:
            spent = self._guarantees(fingerprint)
            try:
                over = total_epsilon(spent, method, delta) > Fraction(epsilon)
            except NotApplicableError as exc:
                raise BudgetExceededError(f"cannot set this budget: {exc}") from None
            if over:
                raise BudgetExceededError(
                    f"cannot set the budget to epsilon={epsilon:g}: the ledger already holds "
                    f"{len(spent)} measurement(s) of this dataset spending more than that under {method}"
                )
            db.execute(
                "INSERT INTO budgets VALUES (?, ?, ?, ?, ?) ON CONFLICT(fingerprint) DO UPDATE SET "
                "epsilon=excluded.epsilon, delta=excluded.delta, method=excluded.method, "
                "time=excluded.time",
                (fingerprint, epsilon, delta, method, _now()),
            )

    def budget(self, fingerprint: str) -> Budget | None:
        """The dataset's budget, or None if none was set."""
        rows = self._read("SELECT epsilon, delta, method FROM budgets WHERE fingerprint = ?", (fingerprint,))
        return Budget(fingerprint, *rows[0]) if rows else None

    # ---- measurements
    def measurements(self, fingerprint: str) -> list[Measurement]:
        """Every charged measurement of the dataset, oldest first."""
        rows = self._read(
            "SELECT id, fingerprint, time, query, mechanism, parameters, guarantee, export_path, "
            "status, note FROM measurements WHERE fingerprint = ? ORDER BY id",
            (fingerprint,),
        )
        return [
            Measurement(
                id=r[0],
                fingerprint=r[1],
                time=r[2],
                query=json.loads(r[3]),
                mechanism=r[4],
                parameters=json.loads(r[5]),
                guarantee=guarantee_from_dict(json.loads(r[6])),
                export_path=r[7],
                status=r[8],
                note=r[9],
            )
            for r in rows
        ]

    def measurement(self, row_id: int) -> Measurement | None:
        """The measurement of ledger row ``row_id`` (any dataset), or None if there is none."""
        rows = self._read("SELECT fingerprint FROM measurements WHERE id = ?", (row_id,))
        if not rows:
            return None
        return next(m for m in self.measurements(rows[0][0]) if m.id == row_id)

    def _guarantees(self, fingerprint: str) -> list[g.Guarantee]:
        rows = self._read(
            "SELECT guarantee FROM measurements WHERE fingerprint = ? ORDER BY id", (fingerprint,)
        )
        return [guarantee_from_dict(json.loads(r[0])) for r in rows]

    def _require_budget(self, fingerprint: str) -> Budget:
        budget = self.budget(fingerprint)
        if budget is None:
            raise NoBudgetError(
                f"no privacy budget is set for dataset {fingerprint[:12]}; set one first "
                "(CLI: --budget-epsilon E --budget-delta D)"
            )
        return budget

    def spent(self, fingerprint: str) -> float:
        """Epsilon spent at the budget's delta under the budget's method (an upper bound,
        rounded up to a float). 0.0 if the dataset has no budget (it then has no measurements)."""
        budget = self.budget(fingerprint)
        if budget is None:
            return 0.0
        return float_up(total_epsilon(self._guarantees(fingerprint), budget.method, budget.delta))

    def remaining(self, fingerprint: str) -> float:
        """Budget epsilon minus :meth:`spent`, rounded down, never negative."""
        budget = self._require_budget(fingerprint)
        left = Fraction(budget.epsilon) - total_epsilon(
            self._guarantees(fingerprint), budget.method, budget.delta
        )
        return max(0.0, float_down(left))

    def check(self, fingerprint: str, guarantees: Sequence[g.Guarantee]) -> None:
        """Raise :class:`BudgetExceededError` (saying what is left) unless ``guarantees``, added
        to what is already spent, fit the budget. Charges nothing."""
        self._check(fingerprint, self._require_budget(fingerprint), list(guarantees))

    def _check(self, fingerprint: str, budget: Budget, new: list[g.Guarantee]) -> None:
        spent = self._guarantees(fingerprint)
        before = total_epsilon(spent, budget.method, budget.delta)
        left = max(0.0, float_down(Fraction(budget.epsilon) - before))
        where = (
            f"dataset {fingerprint[:12]} has epsilon {left:.6g} left of its budget "
            f"(epsilon={budget.epsilon:g}, delta={budget.delta:g}, {budget.method} composition)"
        )
        try:
            after = total_epsilon(spent + new, budget.method, budget.delta)
        except NotApplicableError as exc:
            raise BudgetExceededError(f"release refused: {exc}; {where}") from None
        if after > Fraction(budget.epsilon):
            cost = float_up(after - before)
            raise BudgetExceededError(
                f"release refused: it needs epsilon {cost:.6g} but {where}; nothing was charged"
            )

    def charge(
        self,
        fingerprint: str,
        *,
        query: Mapping[str, Any],
        mechanism: str,
        parameters: Mapping[str, Any],
        guarantee: g.Guarantee,
    ) -> int:
        """Record a measurement, or raise :class:`BudgetExceededError` (nothing recorded) if it
        would exceed the budget. Returns the row id. Call BEFORE drawing any noise."""
        with self._transaction() as db:
            self._check(fingerprint, self._require_budget(fingerprint), [guarantee])
            cursor = db.execute(
                "INSERT INTO measurements (fingerprint, time, query, mechanism, parameters, "
                "guarantee, export_path, status) VALUES (?, ?, ?, ?, ?, ?, NULL, 'charged')",
                (
                    fingerprint,
                    _now(),
                    json.dumps(dict(query), sort_keys=True),
                    mechanism,
                    json.dumps(dict(parameters), sort_keys=True),
                    json.dumps(guarantee_to_dict(guarantee)),
                ),
            )
            return int(cursor.lastrowid or 0)

    def mark_released(self, row_id: int, export_path: str | os.PathLike[str]) -> None:
        """Record that the measurement's files were written (the charge itself is unchanged)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE measurements SET status = 'released', export_path = ? WHERE id = ?",
                (str(export_path), row_id),
            )

    def mark_failed(self, row_id: int, reason: str) -> None:
        """Record that the measurement was charged but nothing was released, and why (its budget
        stays spent: the noise may have been drawn)."""
        with self._transaction() as db:
            db.execute(
                "UPDATE measurements SET status = 'failed', note = ? WHERE id = ? AND status = 'charged'",
                (reason, row_id),
            )

    # ---- dataset identity
    def legacy_pending(self, fingerprint: str) -> bool:
        """True when this ledger keeps budgets or measurements under keys of an older scheme
        (:data:`LEGACY_KEY_LENGTH` hex digits) and ``fingerprint`` has not yet been looked for
        among them (:meth:`identify` with ``checked``): only then need a caller compute the
        older keys of its dataset (slow for content-v1), once per dataset and ledger."""
        rows = self._read(
            "SELECT EXISTS (SELECT 1 FROM migrated WHERE fingerprint = ?), EXISTS (SELECT 1 FROM budgets "
            "WHERE length(fingerprint) = ? AND fingerprint NOT LIKE 'name:%' UNION ALL SELECT 1 FROM "
            "measurements WHERE length(fingerprint) = ? AND fingerprint NOT LIKE 'name:%')",
            (fingerprint, LEGACY_KEY_LENGTH, LEGACY_KEY_LENGTH),
        )
        return not rows[0][0] and bool(rows[0][1])

    def identify(
        self,
        fingerprint: str,
        *,
        legacy: Sequence[str] = (),
        name: str | None = None,
        checked: bool = False,
    ) -> str:
        """The key this dataset's budget and measurements are kept under: ``name:<name>`` if the
        steward names it, else the name its content was filed under before, else ``fingerprint``.
        Budgets and measurements kept under ``fingerprint`` or a ``legacy`` key (the file's
        SHA-256 of older ledgers) move to that key (where both had a budget, the smaller epsilon
        and delta are kept), and the aliases are remembered. Rows a key already known as an alias
        of this dataset holds again (an older dpexplorer, which knows no aliases, charging under
        the file's SHA-256 after the move) move too, at every lookup: the budget counts every
        charge made for this data under any of its keys. InvalidParameterError if the content
        is already filed under another name (one dataset, one budget). ``checked``: ``legacy``
        holds every older key of this dataset, so :meth:`legacy_pending` is False from now on."""
        if name is not None and not name.strip():
            raise InvalidParameterError("the dataset name must not be blank")
        with self._transaction() as db:
            filed = db.execute("SELECT dataset FROM aliases WHERE fingerprint = ?", (fingerprint,)).fetchone()
            key = NAME_PREFIX + name.strip() if name is not None else (filed[0] if filed else fingerprint)
            if filed and filed[0] != key:
                raise InvalidParameterError(
                    f"this data is already accounted under dataset {filed[0]!r}; use that name"
                )
            aliases = [r[0] for r in db.execute("SELECT fingerprint FROM aliases WHERE dataset = ?", (key,))]
            for other in dict.fromkeys([fingerprint, *legacy, *aliases]):
                if other != key:
                    self._move(db, other, key)
            if checked:
                db.execute("INSERT OR IGNORE INTO migrated VALUES (?, ?)", (fingerprint, _now()))
            return key

    def _move(self, db: sqlite3.Connection, old: str, key: str) -> None:
        """Move ``old``'s measurements and budget to ``key`` and remember the alias."""
        db.execute("UPDATE measurements SET fingerprint = ? WHERE fingerprint = ?", (key, old))
        moved = db.execute(
            "SELECT epsilon, delta, method FROM budgets WHERE fingerprint = ?", (old,)
        ).fetchone()
        if moved is not None:
            db.execute(
                "INSERT INTO budgets VALUES (?, ?, ?, ?, ?) ON CONFLICT(fingerprint) DO UPDATE SET "
                "epsilon=min(epsilon, excluded.epsilon), delta=min(delta, excluded.delta), "
                "time=excluded.time",
                (key, *moved, _now()),
            )
            db.execute("DELETE FROM budgets WHERE fingerprint = ?", (old,))
        db.execute(
            "INSERT INTO aliases VALUES (?, ?, ?) ON CONFLICT(fingerprint) "
            "DO UPDATE SET dataset=excluded.dataset",
            (old, key, _now()),
        )

    # ---- the same people under another table (dpexplorer/release/same_people.py)
    def known(self, key: str) -> bool:
        """Whether the dataset ``key`` has a budget or a charged measurement in this ledger."""
        rows = self._read(
            "SELECT EXISTS (SELECT 1 FROM budgets WHERE fingerprint = ?) OR "
            "EXISTS (SELECT 1 FROM measurements WHERE fingerprint = ?)",
            (key, key),
        )
        return bool(rows[0][0])

    def has_columns(self, key: str) -> bool:
        """Whether the column fingerprints of dataset ``key`` are kept (:meth:`file_columns`)."""
        return bool(
            self._read("SELECT EXISTS (SELECT 1 FROM dataset_columns WHERE dataset = ?)", (key,))[0][0]
        )

    def file_columns(self, key: str, columns: Mapping[str, tuple[str, bool]]) -> None:
        """Keep, beside dataset ``key``, each column's (name -> (fingerprint, constant))."""
        with self._transaction() as db:
            db.executemany(
                "INSERT OR IGNORE INTO dataset_columns VALUES (?, ?, ?, ?, ?)",
                [(key, fp, name, int(constant), _now()) for name, (fp, constant) in columns.items()],
            )

    def datasets_with_columns(self, prints: Sequence[str]) -> dict[str, list[tuple[str, str, bool]]]:
        """Every dataset holding a column of one of ``prints``, under the key it is kept under
        now (an alias followed), with all its columns as (fingerprint, name, constant)."""
        marks = ",".join("?" * len(prints))
        rows = self._read(
            "SELECT coalesce(a.dataset, c.dataset), c.column_print, c.name, c.constant "
            "FROM dataset_columns c LEFT JOIN aliases a ON a.fingerprint = c.dataset WHERE c.dataset IN "
            f"(SELECT dataset FROM dataset_columns WHERE column_print IN ({marks}))",
            tuple(prints),
        )
        found: dict[str, list[tuple[str, str, bool]]] = {}
        for key, fp, name, constant in rows:
            found.setdefault(key, []).append((fp, name, bool(constant)))
        return found

    def declare_distinct(self, fingerprint: str) -> None:
        """Remember that the data of content ``fingerprint`` are other people than any dataset
        their columns match (the steward's declaration)."""
        with self._transaction() as db:
            db.execute("INSERT OR IGNORE INTO distinct_data VALUES (?, ?)", (fingerprint, _now()))

    def declared_distinct(self, fingerprint: str) -> bool:
        return bool(
            self._read("SELECT EXISTS (SELECT 1 FROM distinct_data WHERE fingerprint = ?)", (fingerprint,))[
                0
            ][0]
        )

    def tie(self, fingerprint: str, key: str) -> None:
        """File the data of ``fingerprint`` (and what it holds) under dataset ``key`` from now on:
        the steward's declaration that they are the same people."""
        with self._transaction() as db:
            if fingerprint != key:
                self._move(db, fingerprint, key)
