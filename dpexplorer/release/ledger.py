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
SHA-256 or the content-v1 key (64 hex digits) to that key, once, and remembers the alias.

Tampering. A ledger that was edited by hand must never give a budget back. Each measurement row
carries a seal (:func:`seal`: SHA-256 over its id, dataset key, time, query, mechanism,
parameters and guarantee), the ``tallies`` table counts each dataset's sealed rows, and
``ledger_state`` their total and a digest of the aliases; every read of a dataset's rows checks
them, in one snapshot. A row whose cells were changed, a removed row (or all of a dataset's rows
with their tally), a dropped table or column, a budget or guarantee that is not one (an infinite
or negative epsilon, a guarantee cell that is not JSON) is a :class:`LedgerError` naming the
ledger and what is wrong, never a fresh budget. The seal is a checksum, not a signature: it
stops an edit by hand or by a tool that does not know it, not someone who recomputes it.
Ledgers of earlier versions (no seals; ``PRAGMA user_version`` 0) are sealed as they stand when
first opened (:func:`_upgrade`), in one transaction; rows an earlier dpexplorer adds later carry
no seal and still count, and are sealed at the dataset's next :meth:`Ledger.identify`."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

from dpexplorer.core.accounting import guarantees as g
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError, NotApplicableError
from dpexplorer.core.figures import privacy_number, privacy_up
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
LEDGER_VERSION = 2
"""``PRAGMA user_version`` of a sealed ledger (0: written before seals, :func:`_upgrade`)."""
_SCHEMA_SEALS = """
CREATE TABLE IF NOT EXISTS tallies (
    fingerprint TEXT PRIMARY KEY,
    sealed INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger_state (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""
_COLUMNS = {
    "budgets": ("fingerprint", "epsilon", "delta", "method", "time"),
    "measurements": (
        "id", "fingerprint", "time", "query", "mechanism", "parameters", "guarantee", "export_path",
        "status", "note", "seal",
    ),
    "aliases": ("fingerprint", "dataset", "time"),
    "migrated": ("fingerprint", "time"),
    "tallies": ("fingerprint", "sealed"),
    "ledger_state": ("key", "value"),
}  # fmt: skip
"""The tables of a sealed ledger and the columns each must have."""
_SEALED_ROW = "id, fingerprint, time, query, mechanism, parameters, guarantee"
"""The cells a row's seal covers (status, export path and note change after the charge)."""
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


@contextmanager
def _snapshot(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Reads that see one state of the file (a read transaction), or the transaction already
    open: a row count and the tally it is checked against are read together, never with another
    process's charge between them."""
    if db.in_transaction:
        yield db
        return
    db.execute("BEGIN")
    try:
        yield db
    finally:
        if db.in_transaction:
            db.execute("COMMIT")


# ------------------------------------------------------------------ seals and tables
SEAL_SCHEME = "dpexplorer-ledger-row-v1"


def seal(*cells: object) -> str:
    """The seal of a measurement row: SHA-256 hex over :data:`SEAL_SCHEME` and the row's
    :data:`_SEALED_ROW` cells, each length-prefixed (so no two rows' cells run together alike).
    Also the SQL function ``dpx_seal`` of the ledger's connection."""
    texts = [str(c) for c in cells]
    framed = "".join([f"{len(t)}:{t};" for t in texts])
    return hashlib.sha256(f"{SEAL_SCHEME};{framed}".encode()).hexdigest()


def _statements(script: str) -> list[str]:
    return [part.strip() for part in script.split(";") if part.strip()]


def _version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def _tables(db: sqlite3.Connection) -> dict[str, set[str]]:
    """Each table of the file and its columns."""
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {n: {r[1] for r in db.execute(f'PRAGMA table_info("{n}")')} for n in names}


def _alias_digest(db: sqlite3.Connection) -> str:
    """SHA-256 hex of every (older key, dataset) alias, in order: kept in ``ledger_state``, so
    an alias removed or changed by hand (which would file the data under a fresh key) is seen."""
    digest = hashlib.sha256(b"aliases")
    for old, key in db.execute("SELECT fingerprint, dataset FROM aliases ORDER BY fingerprint"):
        digest.update(f"{len(str(old))}:{old};{len(str(key))}:{key};".encode())
    return digest.hexdigest()


def _seal_rows(db: sqlite3.Connection, where: str, args: tuple[Any, ...] = ()) -> None:
    """Seal the rows ``where`` selects (under their own key) and add them to their datasets'
    tallies and the ledger's total."""
    counts = db.execute(f"SELECT fingerprint, count(*) FROM measurements WHERE {where} GROUP BY 1", args)
    added = 0
    for key, n in counts.fetchall():
        db.execute(
            "INSERT INTO tallies VALUES (?, ?) ON CONFLICT(fingerprint) DO UPDATE SET sealed = sealed + ?",
            (key, n, n),
        )
        added += n
    db.execute(f"UPDATE measurements SET seal = dpx_seal({_SEALED_ROW}) WHERE {where}", args)
    db.execute("UPDATE ledger_state SET value = CAST(value AS INTEGER) + ? WHERE key = 'sealed'", (added,))


def _create(db: sqlite3.Connection) -> None:
    """A new ledger's tables, state and version (inside the caller's transaction)."""
    for statement in _statements(
        _SCHEMA.replace("note TEXT\n", "note TEXT,\n    seal TEXT\n") + _SCHEMA_SEALS
    ):
        db.execute(statement)
    _start_state(db)


def _start_state(db: sqlite3.Connection) -> None:
    db.execute("INSERT INTO ledger_state VALUES ('sealed', '0'), ('aliases', ?)", (_alias_digest(db),))
    db.execute(f"PRAGMA user_version = {LEDGER_VERSION}")


def _upgrade(db: sqlite3.Connection) -> None:
    """Seal a ledger of an earlier version as it stands (inside the caller's transaction): the
    ``seal`` column, the tallies and state, every row sealed, the version set."""
    for statement in _statements(_SCHEMA + _SCHEMA_SEALS):  # aliases, migrated: absent before
        db.execute(statement)
    db.execute("ALTER TABLE measurements ADD COLUMN seal TEXT")
    _start_state(db)
    _seal_rows(db, "seal IS NULL")


def _unusable(path: Path, what: str, remedy: str = "restore it from a backup") -> LedgerError:
    return LedgerError(
        f"the budget ledger {path} cannot be used: {what}; {remedy} "
        "(never delete a ledger: it is the record of what was spent)"
    )


def _check_tables(path: Path, tables: dict[str, set[str]]) -> None:
    """LedgerError unless a sealed ledger has all its tables and columns (one dropped by hand
    would otherwise be created again empty: a fresh budget)."""
    lost = [name for name in _COLUMNS if name not in tables]
    if lost:
        raise _unusable(path, f"its table(s) {', '.join(lost)} are missing (dropped by hand?)")
    for name, columns in _COLUMNS.items():
        gone = [c for c in columns if c not in tables[name]]
        if gone:
            raise _unusable(
                path, f"its table {name} lacks the column(s) {', '.join(gone)} (altered by hand?)"
            )


def _check_earlier(path: Path, tables: dict[str, set[str]]) -> None:
    """LedgerError unless an unsealed file is a ledger of an earlier version as it was written
    (both its first tables, nothing of a sealed ledger's: a sealed ledger whose version mark
    was reset is not taken for an old one and sealed again as it now stands)."""
    if "seal" in tables.get("measurements", ()) or {"tallies", "ledger_state"} & set(tables):
        raise _unusable(path, "it holds seals but no version mark (PRAGMA user_version changed by hand?)")
    lost = [name for name in ("budgets", "measurements") if name not in tables]
    if lost:
        raise _unusable(
            path, f"it is not a dpexplorer ledger, or its table(s) {', '.join(lost)} were dropped"
        )


def _prepare(db: sqlite3.Connection, path: Path) -> None:
    """Make the file at ``path`` a usable sealed ledger, or raise LedgerError: a new file gets
    every table at once (another process opening it sees all or none), a ledger of an earlier
    version is sealed once (under the write lock, checked again there), a sealed one is
    checked for its tables."""
    if _version(db) < LEDGER_VERSION:
        with _immediate(db):
            if _version(db) < LEDGER_VERSION and not _tables(db):
                _create(db)
    if _version(db) < LEDGER_VERSION:
        _check_earlier(path, _tables(db))
        _add_note_column(db)
        with _immediate(db):
            if _version(db) < LEDGER_VERSION:
                _check_earlier(path, _tables(db))
                _upgrade(db)
    _check_tables(path, _tables(db))


def _number(value: object) -> float | None:
    """``value`` as a float if it is a real number (not a bool, not text), else None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _budget_fault(epsilon: object, delta: object, method: object) -> str | None:
    """What is wrong with a stored budget, or None."""
    eps, dlt = _number(epsilon), _number(delta)
    if eps is None or not (math.isfinite(eps) and eps > 0):
        return f"epsilon {epsilon!r} is not a positive number"
    if dlt is None or not (math.isfinite(dlt) and 0 <= dlt < 1):
        return f"delta {delta!r} is not in [0, 1)"
    if method not in METHODS:
        return f"accountant {method!r} is not one of {', '.join(METHODS)}"
    return None


_POSITIVE = frozenset({"scale", "sigma", "rate"})
"""Guarantee fields that must be above 0 (the others must be at least 0)."""


def _guarantee_fault(guarantee: g.Guarantee) -> str | None:
    """What makes a decoded guarantee no guarantee (a number that is not finite, negative,
    or 0 where it divides; an RDP curve of unequal lengths; an unknown scheme), or None."""
    if isinstance(guarantee, g.Subsampled):
        if guarantee.scheme not in g.SCHEMES or not isinstance(guarantee.base, g.Amplifiable):
            return "a subsampled guarantee of an unknown scheme or base"
        return _guarantee_fault(guarantee.base) or _field_fault("rate", guarantee.rate, high=1.0)
    fields = vars(guarantee)  # its dataclass fields (asdict copies: 6 us a row of every read)
    if isinstance(guarantee, g.RDPCurve):
        orders, epsilons = fields["orders"], fields["epsilons"]
        if not orders or len(orders) != len(epsilons):
            return "an RDP curve with no orders or unequal lengths"
        return next(
            (f for f in (*(_field_fault("order", o, low=1.0) for o in orders),
                         *(_field_fault("epsilon", e) for e in epsilons)) if f),
            None,
        )  # fmt: skip
    return next((f for f in (_field_fault(k, v) for k, v in fields.items()) if f), None)


@lru_cache(maxsize=4096)
def decode_guarantee(text: object) -> g.Guarantee | str:
    """A ledger's guarantee cell decoded and checked (:func:`_guarantee_fault`), or what is wrong
    with it. Cached by the cell's text: a plan's rows repeat a few guarantees, and each charge
    reads every row of its dataset again."""
    if not isinstance(text, str):
        return "not JSON text"
    try:
        guarantee = guarantee_from_dict(json.loads(text))
        return _guarantee_fault(guarantee) or guarantee
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        return "not JSON of a known type and fields"


def _field_fault(name: str, value: object, low: float = 0.0, high: float = math.inf) -> str | None:
    number = _number(value)
    positive = name in _POSITIVE or low > 0
    if (
        number is None
        or not math.isfinite(number)
        or number < low
        or number > high
        or (positive and number == low)
    ):
        return f"{name} {value!r} is not a valid value"
    return None


# ------------------------------------------------------------------ the ledger
class Ledger:
    """The ledger file at ``path`` (default :func:`default_ledger_path`), created if absent.
    Safe to use from several processes: a charge is one IMMEDIATE transaction (check + insert)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_ledger_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # one connection, usable from any thread (the GUI's workers), one call at a time
        self._lock = threading.RLock()
        # rows whose seal this connection checked, by id, with their cells: each charge reads
        # every row of its dataset again, and comparing the text is cheaper than hashing it
        self._sealed: dict[int, tuple[Any, ...]] = {}
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0, check_same_thread=False)
            self._db.create_function("dpx_seal", 7, seal, deterministic=True)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            _prepare(self._db, self.path)
            # the same-people tables are an aid (a tie the steward is asked about), not the budget:
            # created where missing, outside the sealed tables
            self._db.executescript(_SAME_PEOPLE_SCHEMA)
        except LedgerError:
            self._db.close()
            raise
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
        """The dataset's budget, or None if none was set; LedgerError if the stored one is not a
        budget (an infinite, negative or non-numeric epsilon written by hand)."""
        rows = self._read("SELECT epsilon, delta, method FROM budgets WHERE fingerprint = ?", (fingerprint,))
        if not rows:
            return None
        fault = _budget_fault(*rows[0])
        if fault:
            raise _unusable(
                self.path,
                f"the budget of dataset {fingerprint[:12]} is not one: its {fault} (edited by hand?)",
                "set the budget again, or restore the ledger from a backup",
            )
        epsilon, delta, method = rows[0]
        return Budget(fingerprint, float(epsilon), float(delta), method)

    # ---- measurements
    def measurements(self, fingerprint: str) -> list[Measurement]:
        """Every charged measurement of the dataset, oldest first (checked: :meth:`_rows`)."""
        return [
            Measurement(
                id=r[0],
                fingerprint=r[1],
                time=r[2],
                query=self._cell(r[0], "query", r[3]),
                mechanism=r[4],
                parameters=self._cell(r[0], "parameters", r[5]),
                guarantee=self._guarantee(r[0], r[6]),
                export_path=r[7],
                status=r[8],
                note=r[9],
            )
            for r in self._rows(fingerprint)
        ]

    def _rows(self, fingerprint: str) -> list[tuple[Any, ...]]:
        """The dataset's measurement rows (:data:`_SEALED_ROW`, export path, status, note), in
        one snapshot with its tally and the ledger's total; LedgerError if a sealed row was
        changed, or rows are missing (fewer sealed rows than the tally, tallies summing to less
        than the total). Rows without a seal (added by an earlier dpexplorer) count as they are."""
        with self._lock, self._errors(), _snapshot(self._db) as db:
            rows = self._checked(db, fingerprint, [fingerprint])
        return [r[:10] for r in rows]

    def _checked(self, db: sqlite3.Connection, key: str, keys: list[str]) -> list[tuple[Any, ...]]:
        """The measurement rows kept under any of ``keys`` (one dataset's: ``key`` and its
        aliases), oldest first, with their seal last; LedgerError unless each sealed row's seal
        holds (under its own key or, for a row an earlier dpexplorer moved without resealing
        it, another of ``keys``), the sealed rows are as many as the keys' tallies say, and the
        tallies sum to the ledger's total."""
        marks = ", ".join("?" * len(keys))
        rows = db.execute(
            f"SELECT {_SEALED_ROW}, export_path, status, note, seal FROM measurements "
            f"WHERE fingerprint IN ({marks}) ORDER BY id",
            keys,
        ).fetchall()
        expected = db.execute(f"SELECT total(sealed) FROM tallies WHERE fingerprint IN ({marks})", keys)
        tallied = expected.fetchone()[0]
        self._check_total(db)
        sealed = [r for r in rows if r[10] is not None]
        for r in sealed:
            cells = (*r[:7], r[10])
            if self._sealed.get(r[0]) == cells:
                continue  # checked before, every cell the same (equal text: no hash to compute)
            if r[10] == seal(*r[:7]):
                self._sealed[r[0]] = cells
            elif not any(r[10] == seal(r[0], other, *r[2:7]) for other in keys):
                raise _unusable(
                    self.path,
                    f"measurement row {r[0]} of dataset {key[:12]} was changed after it was charged "
                    "(its seal does not match)",
                )
        if len(sealed) != tallied:
            raise _unusable(
                self.path,
                f"it holds {len(sealed)} sealed measurement row(s) of dataset {key[:12]} where it "
                f"recorded {tallied:.0f} (rows removed or moved by hand?)",
            )
        return rows

    def _check_total(self, db: sqlite3.Connection) -> None:
        """LedgerError unless the datasets' tallies sum to the ledger's recorded total (all of a
        dataset's rows removed with its tally would otherwise look like a dataset never seen)."""
        total = db.execute("SELECT total(sealed) FROM tallies").fetchone()[0]
        state = db.execute("SELECT value FROM ledger_state WHERE key = 'sealed'").fetchone()
        recorded = None if state is None else str(state[0])
        if recorded is None or not recorded.isdigit() or int(recorded) != total:
            raise _unusable(
                self.path,
                f"its datasets' tallies sum to {total:.0f} measurement(s) where it recorded "
                f"{recorded or 'none'} (rows removed by hand?)",
            )

    def _cell(self, row_id: int, name: str, text: Any) -> Any:
        """A JSON cell of row ``row_id``, decoded; LedgerError if it is not JSON."""
        try:
            return json.loads(text)
        except (TypeError, ValueError, RecursionError):
            raise _unusable(self.path, f"the {name} of measurement row {row_id} is not JSON") from None

    def _guarantee(self, row_id: int, text: Any) -> g.Guarantee:
        """The guarantee cell of row ``row_id``, decoded and checked; LedgerError if it is not
        one (not JSON, of an unknown type or fields, a negative or infinite epsilon)."""
        decoded = decode_guarantee(text)
        if isinstance(decoded, str):
            raise _unusable(self.path, f"the guarantee of measurement row {row_id} is not one: {decoded}")
        return decoded

    def measurement(self, row_id: int) -> Measurement | None:
        """The measurement of ledger row ``row_id`` (any dataset), or None if there is none."""
        rows = self._read("SELECT fingerprint FROM measurements WHERE id = ?", (row_id,))
        if not rows:
            return None
        return next(m for m in self.measurements(rows[0][0]) if m.id == row_id)

    def _guarantees(self, fingerprint: str) -> list[g.Guarantee]:
        return [self._guarantee(r[0], r[6]) for r in self._rows(fingerprint)]

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
            f"dataset {fingerprint[:12]} has epsilon {privacy_number(left)} left of its budget "
            f"(epsilon={privacy_number(budget.epsilon)}, delta={privacy_number(budget.delta)}, "
            f"{budget.method} composition)"
        )
        try:
            after = total_epsilon(spent + new, budget.method, budget.delta)
        except NotApplicableError as exc:
            raise BudgetExceededError(f"release refused: {exc}; {where}") from None
        if after > Fraction(budget.epsilon):
            cost = float_up(after - before)
            raise BudgetExceededError(
                f"release refused: it needs epsilon {privacy_up(cost)} but {where}; nothing was charged"
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
            row_id = int(cursor.lastrowid or 0)
            _seal_rows(db, "id = ?", (row_id,))  # in the charge's transaction: sealed and counted
            return row_id

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
    def legacy_pending(self, fingerprint: str, length: int = LEGACY_KEY_LENGTH) -> bool:
        """True when this ledger keeps budgets or measurements under keys of an older scheme
        (``length`` hex digits: :data:`LEGACY_KEY_LENGTH`, or the key's own length for a key the
        same data had under an earlier reading of its file) and ``fingerprint`` has not yet been
        looked for among them (:meth:`identify` with ``checked``): only then need a caller
        compute the older keys of its dataset (slow for content-v1), once per dataset and ledger."""
        rows = self._read(
            "SELECT EXISTS (SELECT 1 FROM migrated WHERE fingerprint = ?), EXISTS (SELECT 1 FROM budgets "
            "WHERE length(fingerprint) = ? AND fingerprint NOT LIKE 'name:%' UNION ALL SELECT 1 FROM "
            "measurements WHERE length(fingerprint) = ? AND fingerprint NOT LIKE 'name:%')",
            (fingerprint, length, length),
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
            self._check_aliases(db)
            filed = db.execute("SELECT dataset FROM aliases WHERE fingerprint = ?", (fingerprint,)).fetchone()
            key = NAME_PREFIX + name.strip() if name is not None else (filed[0] if filed else fingerprint)
            if filed and filed[0] != key:
                raise InvalidParameterError(
                    f"this data is already accounted under dataset {filed[0]!r}; use that name"
                )
            aliases = [r[0] for r in db.execute("SELECT fingerprint FROM aliases WHERE dataset = ?", (key,))]
            group = list(dict.fromkeys([key, fingerprint, *legacy, *aliases]))
            self._gather(db, key, group)
            for other in group[1:]:
                self._move(db, other, key)
            if checked:
                db.execute("INSERT OR IGNORE INTO migrated VALUES (?, ?)", (fingerprint, _now()))
            return key

    def _check_aliases(self, db: sqlite3.Connection) -> None:
        """LedgerError if an alias was removed or changed since this ledger wrote them (the data
        would be looked up under a key with no measurements: a fresh budget)."""
        state = db.execute("SELECT value FROM ledger_state WHERE key = 'aliases'").fetchone()
        if state is None or state[0] != _alias_digest(db):
            raise _unusable(
                self.path, "its aliases (older keys of each dataset) were removed or changed by hand"
            )

    def _gather(self, db: sqlite3.Connection, key: str, group: list[str]) -> None:
        """Check the measurement rows kept under any key of ``group`` (``key`` first: one
        dataset's keys) as :meth:`_rows` does, then file them all under ``key``, sealed: the
        tallies of the group become ``key``'s, and rows without a seal (an earlier dpexplorer's)
        are sealed and counted. A row sealed under another key of the group is one an earlier
        dpexplorer moved without resealing it: it is kept, resealed."""
        rows = self._checked(db, key, group)
        unsealed = sum(r[10] is None for r in rows)
        stale = [(key, r[0]) for r in rows if r[1] != key or r[10] != seal(r[0], key, *r[2:7])]
        db.executemany(
            "UPDATE measurements SET fingerprint = ?1, seal = dpx_seal(id, ?1, time, query, mechanism, "
            "parameters, guarantee) WHERE id = ?2",
            stale,
        )  # ?1, not the column: SET reads the row as it was
        db.execute(f"DELETE FROM tallies WHERE fingerprint IN ({', '.join('?' * len(group))})", group)
        if rows:
            db.execute("INSERT INTO tallies VALUES (?, ?)", (key, len(rows)))
        db.execute(
            "UPDATE ledger_state SET value = CAST(value AS INTEGER) + ? WHERE key = 'sealed'", (unsealed,)
        )

    def _move(self, db: sqlite3.Connection, old: str, key: str) -> None:
        """Move ``old``'s budget to ``key`` and remember the alias (its measurements were
        moved by :meth:`_gather`)."""
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
        # the digest follows every alias written (identify, tie), so a later read finds it whole
        db.execute("UPDATE ledger_state SET value = ? WHERE key = 'aliases'", (_alias_digest(db),))

    # ---- the same people under another table (dpexplorer/release/same_people.py)
    def public_id(self, key: str) -> str:
        """The name a published file gives dataset ``key``: the steward's own name for a named
        dataset (``name:<NAME>``, theirs to publish), else 16 random hex digits drawn from the OS
        CSPRNG the first time they are asked for and kept in ``ledger_state``. Never a function of
        the rows: the content fingerprint (a hash of every row) let whoever knows all rows but one
        test each guess of the last against a published provenance, which no epsilon bounds. The
        same key gives the same id in this ledger, so a steward can match files to ledger rows."""
        if key.startswith(NAME_PREFIX):
            return key
        slot = f"public_id:{key}"
        with self._transaction() as db:
            db.execute("INSERT OR IGNORE INTO ledger_state VALUES (?, ?)", (slot, secrets.token_hex(8)))
            (value,) = db.execute("SELECT value FROM ledger_state WHERE key = ?", (slot,)).fetchone()
        return str(value)

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
            self._check_aliases(db)  # never re-digest aliases edited by hand
            if fingerprint != key:
                self._move(db, fingerprint, key)
