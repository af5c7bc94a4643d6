"""The SQLite budget ledger: persistence, exact refusal (the 0.00000000000000006 case), the
accountant's methods, the default location and concurrent charges."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from fractions import Fraction
from pathlib import Path

import pytest

from dpexplorer.core.accounting.guarantees import ZCDP, ApproxDP, LaplaceNoise, PureDP
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError
from dpexplorer.release import ledger as ledger_module
from dpexplorer.release.ledger import (
    BudgetExceededError,
    Ledger,
    LedgerError,
    NoBudgetError,
    default_ledger_path,
    guarantee_from_dict,
    guarantee_to_dict,
    total_epsilon,
)

FP = "ab" * 32


def _charge(ledger: Ledger, guarantee, fp: str = FP) -> int:
    return ledger.charge(
        fp, query={"kind": "count"}, mechanism="laplace", parameters={"epsilon": 0.1}, guarantee=guarantee
    )


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    with Ledger(tmp_path / "ledger.sqlite") as book:
        yield book


def test_sqlite_settings(ledger: Ledger) -> None:
    db = sqlite3.connect(ledger.path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ledger._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    db.close()


def test_default_path_follows_xdg(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_ledger_path() == tmp_path / "dpexplorer" / "ledger.sqlite"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_ledger_path() == tmp_path / ".local" / "share" / "dpexplorer" / "ledger.sqlite"


def test_the_0_00000000000000006_case(ledger: Ledger) -> None:
    """Ten charges of 0.1 against 1.0: the floats 0.1 sum to 1.0000000000000000555 exactly, and
    a float running total (0.9999999999999999 after ten additions) would let it through."""
    running = 0.0
    for _ in range(10):
        running += 0.1
    assert running <= 1.0 and 10 * Fraction(0.1) > 1  # the known bug's premise
    ledger.set_budget(FP, 1.0, 0.0, "basic")
    for _ in range(9):
        _charge(ledger, PureDP(0.1))
    with pytest.raises(BudgetExceededError, match="left"):
        _charge(ledger, PureDP(0.1))
    assert len(ledger.measurements(FP)) == 9
    assert Fraction(ledger.spent(FP)) >= 9 * Fraction(0.1)
    assert ledger.spent(FP) <= 1.0 and ledger.remaining(FP) < 0.1


def test_exact_fill_is_accepted(ledger: Ledger) -> None:
    ledger.set_budget(FP, 1.0, 1e-6, "basic")
    _charge(ledger, PureDP(0.5))
    _charge(ledger, ApproxDP(0.25, 1e-6))
    _charge(ledger, LaplaceNoise(scale=4.0, sensitivity=1.0))
    assert ledger.spent(FP) == 1.0 and ledger.remaining(FP) == 0.0
    with pytest.raises(BudgetExceededError):
        _charge(ledger, PureDP(2.0**-60))


def test_delta_overrun_is_refused(ledger: Ledger) -> None:
    ledger.set_budget(FP, 10.0, 1e-6, "basic")
    _charge(ledger, ApproxDP(0.1, 1e-6))
    with pytest.raises(BudgetExceededError, match="delta"):
        _charge(ledger, ApproxDP(0.1, 1e-9))


def test_refusal_message_says_what_is_left(ledger: Ledger) -> None:
    ledger.set_budget(FP, 1.0, 0.0, "basic")
    _charge(ledger, PureDP(0.75))
    with pytest.raises(BudgetExceededError) as info:
        _charge(ledger, PureDP(0.5))
    assert "0.25 left" in str(info.value) and "nothing was charged" in str(info.value)
    assert isinstance(info.value, DPExplorerError)


@pytest.mark.parametrize("method", ["zcdp", "rdp", "advanced"])
def test_numerical_accountants_are_used_with_a_margin(ledger: Ledger, method: str) -> None:
    from dpexplorer.core.accounting.compose import epsilon_at

    ledger.set_budget(FP, 5.0, 1e-5, method)
    charges = [ZCDP(0.01)] * 5
    for item in charges:
        _charge(ledger, item)
    assert ledger.spent(FP) >= epsilon_at(charges, method, 1e-5)
    assert ledger.spent(FP) <= epsilon_at(charges, method, 1e-5) * (1 + 2e-9)


def test_no_budget_means_no_charge(ledger: Ledger) -> None:
    with pytest.raises(NoBudgetError, match="budget"):
        _charge(ledger, PureDP(0.1))
    assert ledger.spent(FP) == 0.0 and ledger.budget(FP) is None


def test_budget_validation_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Ledger(path) as book:
        for bad in [(0.0, 0.0, "basic"), (1.0, 1.0, "basic"), (1.0, 0.0, "magic"), (float("nan"), 0, "pld")]:
            with pytest.raises(InvalidParameterError):
                book.set_budget(FP, *bad)
        book.set_budget(FP, 1.0, 1e-6, "pld")
        row = _charge(book, PureDP(0.5))
        book.mark_released(row, tmp_path / "x.json")
        with pytest.raises(BudgetExceededError):
            book.set_budget(FP, 0.25, 1e-6, "pld")  # below what is spent
    with Ledger(path) as again:
        assert again.budget(FP).method == "pld"
        (m,) = again.measurements(FP)
        assert m.status == "released" and m.export_path.endswith("x.json")
        assert m.guarantee == PureDP(0.5) and m.parameters == {"epsilon": 0.1}


def test_guarantee_json_round_trip() -> None:
    from dpexplorer.core.accounting.guarantees import GaussianNoise, RDPCurve

    for item in [
        PureDP(0.1),
        ApproxDP(0.3, 1e-7),
        ZCDP(0.01),
        LaplaceNoise(2.0, 1.0),
        GaussianNoise(3.0, 1.0),
        RDPCurve((2.0, 4.0), (0.1, 0.3)),
    ]:
        assert guarantee_from_dict(guarantee_to_dict(item)) == item


def test_total_epsilon_is_exact_for_basic() -> None:
    assert total_epsilon([PureDP(0.1)] * 3, "basic", 0.0) == 3 * Fraction(0.1)


def test_concurrent_charges_never_overrun(tmp_path: Path) -> None:
    path = tmp_path / "l.sqlite"
    with Ledger(path) as book:
        book.set_budget(FP, 1.0, 0.0, "basic")
    accepted = []

    def worker() -> None:
        with Ledger(path) as mine:
            for _ in range(5):
                with contextlib.suppress(BudgetExceededError):
                    accepted.append(_charge(mine, PureDP(0.125)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(accepted) == 8
    with Ledger(path) as book:
        assert book.spent(FP) == 1.0


def test_methods_agree_with_the_accountant() -> None:
    from dpexplorer.core.accounting.compose import METHODS as ACCOUNTANT_METHODS
    from dpexplorer.release.ledger import METHODS

    assert tuple(METHODS) == tuple(ACCOUNTANT_METHODS)


def test_a_file_that_is_not_a_ledger_is_reported(tmp_path: Path) -> None:
    from dpexplorer.release.ledger import LedgerError

    bogus = tmp_path / "notes.txt"
    bogus.write_text("this is not a database, " * 100)
    with pytest.raises(LedgerError, match="cannot open the budget ledger"):
        Ledger(bogus)


def test_one_ledger_shared_by_threads(ledger: Ledger) -> None:
    ledger.set_budget(FP, 1.0, 0.0, "basic")
    accepted = []

    def worker() -> None:
        for _ in range(5):
            with contextlib.suppress(BudgetExceededError):
                accepted.append(_charge(ledger, PureDP(0.125)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(accepted) == 8 and ledger.spent(FP) == 1.0


def test_rows_charged_under_an_older_key_after_the_move_are_counted(ledger: Ledger) -> None:
    """An older dpexplorer (before aliases: it keys a dataset by its file's SHA-256) may charge
    under that key again after this ledger moved it to the content key: the next lookup of the
    dataset moves those rows too, though no older key is looked for any more, so the budget
    counts them (it never looks fresh for the same data)."""
    old, key = FP, "cd" * 16
    ledger.set_budget(old, 2.0, 1e-6, "basic")
    _charge(ledger, PureDP(0.5), old)
    assert ledger.identify(key, legacy=[old], checked=True) == key
    assert ledger.spent(key) == 0.5 and not ledger.legacy_pending(key)
    ledger.set_budget(old, 3.0, 1e-6, "basic")  # the older tool finds no budget, sets one again
    _charge(ledger, PureDP(0.7), old)
    assert ledger.identify(key) == key  # as dataset_key calls it once the move is done
    assert ledger.spent(key) == pytest.approx(1.2) and ledger.measurements(old) == []
    assert ledger.budget(key).epsilon == 2.0 and ledger.budget(old) is None  # the smaller budget


def _old_ledger(path: Path) -> None:
    """A ledger as written before failed releases were recorded: no ``note`` column."""
    db = sqlite3.connect(path)
    db.executescript(ledger_module._SCHEMA.replace(",\n    note TEXT\n", "\n"))
    db.close()


def _note_columns(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return sum(row[1] == "note" for row in db.execute("PRAGMA table_info(measurements)"))


def test_an_old_ledger_gets_its_note_column_once(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _old_ledger(path)
    assert _note_columns(path) == 0
    with Ledger(path), Ledger(path):
        pass
    assert _note_columns(path) == 1


def test_two_processes_migrating_an_old_ledger_at_once_both_open_it(tmp_path: Path, monkeypatch) -> None:
    """The opener that read the columns before another added ``note`` (what two report runs
    starting together did) checks again under the write lock instead of adding it twice."""
    path = tmp_path / "old.sqlite"
    _old_ledger(path)
    stale = ledger_module._measurement_columns
    calls = []

    def columns_then_another_process_migrates(db: sqlite3.Connection) -> set[str]:
        seen = stale(db)
        if not calls:
            with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
                other.execute("ALTER TABLE measurements ADD COLUMN note TEXT")
        calls.append(seen)
        return seen

    monkeypatch.setattr(ledger_module, "_measurement_columns", columns_then_another_process_migrates)
    with Ledger(path):
        pass
    assert "note" not in calls[0] and "note" in calls[1]
    assert _note_columns(path) == 1


# ---------------------------------------------------------------- edited by hand (issue 43)
OLD_INSERT = (
    "INSERT INTO measurements (fingerprint, time, query, mechanism, parameters, guarantee, "
    "export_path, status) VALUES (?, '2026-01-01T00:00:00+00:00', '{}', 'laplace', '{}', ?, NULL, 'charged')"
)
"""A charge as dpexplorer wrote it before seals (the column list it names)."""


def _earlier_ledger(path: Path, guarantees: list[str], fp: str = FP) -> None:
    """A ledger as dpexplorer wrote it before seals: a budget of 1 and one row per guarantee."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.executescript(ledger_module._SCHEMA)
        db.execute("INSERT INTO budgets VALUES (?, 1.0, 0.0, 'basic', '2026-01-01')", (fp,))
        db.executemany(OLD_INSERT, [(fp, text) for text in guarantees])
        db.commit()


def _edit(path: Path, sql: str, *args: object) -> None:
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute(sql, args)
        db.commit()


def test_a_ledger_of_the_earlier_version_is_sealed_as_it_stands(tmp_path: Path) -> None:
    """Its rows keep counting, and a row removed after it was opened once is seen (before: the
    budget grew back by that row's epsilon)."""
    path = tmp_path / "old.sqlite"
    _earlier_ledger(path, ['{"type": "PureDP", "epsilon": 0.25}', '{"type": "PureDP", "epsilon": 0.5}'])
    with Ledger(path) as book:
        assert book.spent(FP) == 0.75 and len(book.measurements(FP)) == 2
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == ledger_module.LEDGER_VERSION
    _edit(path, "DELETE FROM measurements WHERE id = 2")
    with Ledger(path) as book, pytest.raises(LedgerError, match=r"1 sealed measurement row.*recorded 2"):
        book.remaining(FP)


def test_rows_an_earlier_dpexplorer_adds_count_and_are_sealed_at_the_next_lookup(ledger: Ledger) -> None:
    """An earlier dpexplorer charging a sealed ledger writes no seal: its row counts at once,
    is sealed when the dataset is next looked up, and is then kept like any other."""
    ledger.set_budget(FP, 1.0, 0.0, "basic")
    _charge(ledger, PureDP(0.25))
    _edit(ledger.path, OLD_INSERT, FP, '{"type": "PureDP", "epsilon": 0.5}')
    assert ledger.spent(FP) == 0.75
    assert ledger.identify(FP) == FP
    _edit(ledger.path, "DELETE FROM measurements WHERE id = 2")
    with pytest.raises(LedgerError, match="recorded 2"):
        ledger.spent(FP)


def test_a_sealed_row_unsealed_and_edited_is_refused(ledger: Ledger) -> None:
    ledger.set_budget(FP, 1.0, 0.0, "basic")
    _charge(ledger, PureDP(0.75))
    _edit(
        ledger.path,
        """UPDATE measurements SET seal = NULL, guarantee = '{"type": "PureDP", "epsilon": 0.0}'""",
    )
    with pytest.raises(LedgerError, match=r"0 sealed measurement row.*recorded 1"):
        ledger.check(FP, [PureDP(0.5)])
    with pytest.raises(LedgerError, match="recorded 1"):
        ledger.identify(FP)  # not sealed again as it now stands


def test_rows_an_earlier_dpexplorer_moved_to_the_content_key_are_kept(ledger: Ledger) -> None:
    """An earlier dpexplorer moves an alias's rows to the dataset's key without resealing them:
    the next lookup reseals them (their seal holds under the alias), and a row removed after
    that is seen."""
    old, key = FP, "cd" * 16
    ledger.set_budget(old, 2.0, 1e-6, "basic")
    _charge(ledger, PureDP(0.5), old)
    assert ledger.identify(key, legacy=[old]) == key
    ledger.set_budget(old, 3.0, 1e-6, "basic")  # an older tool, by the file's SHA-256 again
    _charge(ledger, PureDP(0.25), old)
    _edit(ledger.path, "UPDATE measurements SET fingerprint = ? WHERE fingerprint = ?", key, old)
    assert ledger.identify(key) == key and ledger.spent(key) == 0.75
    _edit(ledger.path, "DELETE FROM measurements WHERE id = 1")
    with pytest.raises(LedgerError, match="recorded 2"):
        ledger.spent(key)


def test_an_alias_removed_by_hand_is_refused(ledger: Ledger) -> None:
    """Data filed under a name: without its alias it would be looked up under its content key,
    which holds nothing (a fresh budget)."""
    content = "ef" * 16
    key = ledger.identify(content, name="survey")
    ledger.set_budget(key, 1.0, 0.0, "basic")
    _charge(ledger, PureDP(1.0), key)
    _edit(ledger.path, "DELETE FROM aliases")
    with pytest.raises(LedgerError, match="aliases"):
        ledger.identify(content)


@pytest.mark.parametrize(
    ("cell", "fault"),
    [
        ("nope", "not JSON"),
        ("[1]", "not JSON of a known type"),
        ('{"type": "PureDP"}', "not JSON of a known type"),
        ('{"type": "Magic", "epsilon": 0.1}', "not JSON of a known type"),
        ('{"type": "PureDP", "epsilon": -1}', "epsilon -1"),
        ('{"type": "PureDP", "epsilon": "0.5"}', "epsilon '0.5'"),
        ('{"type": "PureDP", "epsilon": Infinity}', "epsilon inf"),
        ('{"type": "LaplaceNoise", "scale": 0.0, "sensitivity": 1.0}', "scale 0.0"),
        ('{"type": "RDPCurve", "orders": [2.0], "epsilons": []}', "unequal lengths"),
        (
            '{"type": "Subsampled", "base": {"type": "PureDP", "epsilon": 1}, "rate": 2, '
            '"scheme": "poisson"}',
            "rate 2",
        ),
    ],
)
def test_a_guarantee_cell_that_is_no_guarantee_is_refused(tmp_path: Path, cell: str, fault: str) -> None:
    """In a ledger written before seals (sealed as it stands), a guarantee cell edited by hand:
    one LedgerError naming the ledger and the row, never a traceback nor a smaller spend."""
    path = tmp_path / "old.sqlite"
    _earlier_ledger(path, ['{"type": "PureDP", "epsilon": 0.25}', cell])
    with Ledger(path) as book:
        with pytest.raises(LedgerError, match=f"{path}.*row 2 is not one: .*{fault}"):
            book.spent(FP)
        with pytest.raises(LedgerError, match="row 2"):
            book.measurements(FP)


def test_a_database_of_another_application_is_not_made_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    _edit(path, "CREATE TABLE notes (text TEXT)")
    with pytest.raises(LedgerError, match="not a dpexplorer ledger"):
        Ledger(path)
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["notes"]
