"""Issue 32 in the window: a release's report is named with its files' token, rebuilt from the
ledger and the files (so ``dpexplorer report --row N`` writes the same page again), and a report
that fails after the charge is a note on the result card, never a failed release."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dpexplorer.cli import main
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.gui import jobs
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.release import prepare


@pytest.fixture
def setup(tmp_path: Path) -> dict:
    data = tmp_path / "d.csv"
    data.write_text("x\n" + "".join(f"{i % 10}\n" for i in range(100)))
    dataset = load_dataset(data)
    ledger_path = tmp_path / "l.sqlite"
    query = query_from_dict({"type": "mean", "column": "x", "lower": 0, "upper": 10})
    with Ledger(ledger_path) as ledger:
        prepared = prepare(dataset, query, "laplace", {"epsilon": 0.5}, ledger=ledger)
        ledger.set_budget(prepared.fingerprint, 5.0, 0.0)
    return {"prepared": prepared, "ledger": str(ledger_path), "out": tmp_path / "out", "dir": tmp_path}


def test_the_window_s_report_carries_the_token_and_is_reproducible(setup, qapp) -> None:
    released = jobs.release_and_account(
        setup["prepared"], setup["ledger"], str(setup["out"]), "d.csv", "mean"
    )
    files = released.result.files
    token = setup["prepared"].token
    assert files["report"].name == f"report-{token}.html" and files["report_pdf"].is_file()
    assert token in files["provenance"].name and released.report_warning == ""
    again = setup["dir"] / "again"
    assert (
        main(
            ["report", "--ledger", setup["ledger"], "--row", str(released.result.row_id), "--out", str(again)]
        )
        == 0
    )
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"
    first = re.sub(stamp, "T", files["report"].read_text(encoding="utf-8"))
    assert re.sub(stamp, "T", (again / files["report"].name).read_text(encoding="utf-8")) == first


def test_a_report_failing_after_the_charge_is_a_note(setup, qapp, monkeypatch) -> None:
    import dpexplorer.report_pdf as report_pdf

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_pdf, "write_pdf", broken)
    released = jobs.release_and_account(
        setup["prepared"], setup["ledger"], str(setup["out"]), "d.csv", "mean"
    )
    assert "No space left on device" in released.report_warning
    assert (
        f"dpexplorer report --ledger {setup['ledger']} --row {released.result.row_id}"
        in released.report_warning
    )
    assert {"csv", "json", "provenance", "report"} <= set(released.result.files)
    assert "report_pdf" not in released.result.files
    with Ledger(setup["ledger"]) as ledger:
        assert ledger.measurement(released.result.row_id).status == "released"  # type: ignore[union-attr]
    from dpexplorer.gui.result_card import card_html

    assert "No space left on device" in card_html(released)


def test_a_release_on_a_worker_thread_prints_no_qt_warning(setup, qapp) -> None:
    """Issue 41: each window release printed "QBasicTimer::start: current thread's event
    dispatcher has already been destroyed" three times: the report's PDF was laid out on the
    compute service's Python thread, which has no Qt event dispatcher for the layout's timers.
    Released here on such a thread (as the window does), with Qt's messages captured."""
    from concurrent.futures import ThreadPoolExecutor

    from PySide6.QtCore import qInstallMessageHandler

    messages: list[str] = []
    previous = qInstallMessageHandler(lambda _mode, _context, message: messages.append(message))
    try:
        with ThreadPoolExecutor(1) as pool:
            released = pool.submit(
                jobs.release_and_account,
                setup["prepared"],
                setup["ledger"],
                str(setup["out"]),
                "d.csv",
                "mean",
            ).result()
    finally:
        qInstallMessageHandler(previous)
    assert released.result.files["report_pdf"].stat().st_size > 0 and released.report_warning == ""
    assert messages == []
