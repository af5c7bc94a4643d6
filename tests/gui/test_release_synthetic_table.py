"""The release dialog offers a synthetic table for MST or AIM on a marginals query (issue 30):
CSV and/or Parquet records, charged to the ledger first with the mechanism's zCDP, or only the
noisy marginals; other statistics are not offered one. Small data and the dense estimator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from dpexplorer.core.accounting.guarantees import ZCDP
from dpexplorer.core.mechanisms.registry import get
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import Axis, Count, Marginals
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.release_dialog import ReleaseDialog
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.release import dataset_key

AXES = (Axis("c", categories=("a", "b")), Axis("k", categories=("u", "v")))
PARAMS = {"epsilon": 2.0, "estimator": "dense", "iterations": 60}


@pytest.fixture
def setup(tmp_path: Path, qtbot) -> Any:
    rng = np.random.default_rng(0)
    n = 400
    c = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    k = np.where((c == "a") ^ (rng.random(n) < 0.2), "u", "v")
    path = tmp_path / "d.csv"
    pl.DataFrame({"c": c, "k": k}).write_csv(path)
    dataset = load_dataset(path)
    ledger_path = tmp_path / "ledger.sqlite"
    with Ledger(ledger_path) as ledger:
        ledger.set_budget(dataset_key(dataset, ledger), 5.0, 1e-6, "zcdp")
    compute = ComputeService()
    yield dataset, ledger_path, compute
    compute.shutdown()


def _dialog(qtbot, setup, query: Any, mechanism: str, params: dict[str, Any], out: Path) -> ReleaseDialog:
    dataset, ledger_path, compute = setup
    validated = get(mechanism).validate(params)
    dialog = ReleaseDialog(
        compute, dataset=dataset, query=query, mechanism=mechanism, params=validated,
        relation="add_remove", ledger_path=ledger_path, out_dir=out,
    )  # fmt: skip
    qtbot.addWidget(dialog)
    return dialog


def _priced(qtbot, dialog: ReleaseDialog) -> None:
    qtbot.waitUntil(lambda: dialog.preview is not None and dialog.release_button.isEnabled(), timeout=20_000)


def test_a_synthetic_table_is_charged_first_and_written_as_csv_and_parquet(qtbot, setup, tmp_path) -> None:
    dialog = _dialog(qtbot, setup, Marginals(AXES), "mst", PARAMS, tmp_path / "out")
    assert dialog.table_box.isVisibleTo(dialog) and dialog.table_chosen()
    assert dialog.windowTitle() == "Release a synthetic table"
    _priced(qtbot, dialog)
    assert dialog.preview.prepared.formats == ("csv",)
    dialog.format_boxes["parquet"].setChecked(True)  # priced again with both files
    _priced(qtbot, dialog)
    assert dialog.preview.prepared.formats == ("csv", "parquet")
    dialog.release_button.click()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=60_000)
    files = dialog.result.files
    records = pl.read_csv(files["csv"])
    assert records.columns == ["c", "k"] and len(records) == dialog.result.rows > 0
    assert set(records["c"]) <= {"a", "b", "(any other)"} and set(records["k"]) <= {"u", "v", "(any other)"}
    assert pl.read_parquet(files["parquet"]).equals(records)
    with Ledger(setup[1]) as ledger:
        (row,) = ledger.measurements(dialog.preview.prepared.fingerprint)
    mst = get("mst")
    assert isinstance(row.guarantee, ZCDP)
    assert row.guarantee.rho == pytest.approx(mst.rho(mst.validate(PARAMS)), rel=1e-12)
    assert row.status == "released" and "report" in files


def test_no_format_no_release_and_the_marginals_remain_a_choice(qtbot, setup, tmp_path) -> None:
    dialog = _dialog(qtbot, setup, Marginals(AXES), "aim", PARAMS, tmp_path / "out")
    _priced(qtbot, dialog)
    dialog.format_boxes["csv"].setChecked(False)
    assert not dialog.release_button.isEnabled() and "CSV, Parquet" in dialog.cost.text()
    dialog.marginals_choice.setChecked(True)  # the generic release of the noisy marginals
    _priced(qtbot, dialog)
    assert dialog.windowTitle() == "Release a statistic"
    assert not hasattr(dialog.preview.prepared, "formats")
    count = _dialog(qtbot, setup, Count(), "laplace", {"epsilon": 1.0}, tmp_path / "out")
    assert not count.table_box.isVisibleTo(count) and not count.table_chosen()
    for d in (dialog, count):
        d.done(0)


def test_the_dialog_says_the_epsilon_the_ledger_subtracts_beside_the_one_declared(
    qtbot, setup, tmp_path
) -> None:
    """MST declares epsilon 2 at delta 1e-9 but the ledger charges its zCDP rho, converted at the
    budget's delta (1e-6): the dialog names both numbers before the release, and the one it
    names as subtracted is what the ledger then spends."""
    from dpexplorer.release.presentation import privacy_number

    dialog = _dialog(qtbot, setup, Marginals(AXES), "mst", PARAMS, tmp_path / "out")
    _priced(qtbot, dialog)
    cost = dialog.preview.price.cost_epsilon
    assert privacy_number(cost) != "2"  # the case the words are for
    text = dialog.cost.text()
    assert f"Declared ε = 2; the ledger subtracts ε = {privacy_number(cost)}" in text
    assert "converted at the budget's δ = 1e-6 under zcdp composition" in text
    dialog.release_button.click()
    qtbot.waitUntil(lambda: dialog.result is not None, timeout=60_000)
    with Ledger(setup[1]) as ledger:
        spent = ledger.spent(dialog.preview.prepared.fingerprint)
    assert spent == pytest.approx(cost, rel=1e-9)
