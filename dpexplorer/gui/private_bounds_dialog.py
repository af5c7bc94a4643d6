"""Estimate clipping bounds privately (issue 21, item 3), from the clipping view's button: a low
and a high DP quantile of the column over a range the steward DECLARES (not read from the data),
released through the ordinary pipeline (charged to the ledger first, files written), then
offered as the query's bounds. The release runs on the compute service."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDoubleSpinBox, QFormLayout, QLabel, QSpinBox, QWidget

from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.private_estimate import PrivateEstimateDialog

JOB = "release-private-bounds"
"""A release (it charges the ledger): the window's Esc never cancels it (MainWindow.cancel_jobs)."""


def release_private_bounds(
    dataset: Any,
    column: str,
    declared: tuple[float, float],
    epsilon: float,
    bins: int,
    quantiles: tuple[float, float],
    ledger_path: str,
    out_dir: str,
) -> Any:
    """The worker's job: prepare both quantiles, check the budget, charge and draw each."""
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.private_bounds import prepare_bounds, release_bounds

    prepared = prepare_bounds(dataset, column, declared, epsilon=epsilon, bins=bins, quantiles=quantiles)
    with Ledger(ledger_path) as ledger:
        return release_bounds(prepared, ledger=ledger, out_dir=out_dir)


def _spin(low: float, high: float, value: float, decimals: int = 4) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setRange(low, high)
    box.setDecimals(decimals)
    box.setValue(value)
    return box


class PrivateBoundsDialog(PrivateEstimateDialog):
    """Declared range, ε, grid, quantiles; Release; then Use these bounds."""

    bounds_chosen = Signal(float, float)
    job = JOB

    def __init__(
        self,
        compute: ComputeService,
        *,
        dataset: Any,
        column: str,
        declared: tuple[float, float],
        ledger_path: Path,
        out_dir: Path,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(
            compute, dataset=dataset, column=column, ledger_path=ledger_path, out_dir=out_dir, parent=parent
        )
        self.setWindowTitle(f"Estimate the bounds of {column} privately")
        intro = QLabel(
            f"Releases the low and high quantiles of <b>{column}</b> with differential privacy "
            "(exponential mechanism over a grid of the range you declare; Smith 2011), charged to "
            "this dataset's budget like any release. Declare a generous range from what you know "
            "about the column, not from the data."
        )
        self.low = _spin(-1e12, 1e12, declared[0])
        self.high = _spin(-1e12, 1e12, declared[1])
        self.epsilon = _spin(0.001, 10.0, 0.1, 3)
        self.bins = QSpinBox()
        self.bins.setRange(1, 10_000)
        self.bins.setValue(100)
        self.q_low = _spin(0.0, 1.0, 0.05, 3)
        self.q_high = _spin(0.0, 1.0, 0.95, 3)
        form = QFormLayout()
        form.addRow("Declared range: from", self.low)
        form.addRow("to", self.high)
        form.addRow("ε for both quantiles", self.epsilon)
        form.addRow("Grid steps over the range", self.bins)
        form.addRow("Low quantile", self.q_low)
        form.addRow("High quantile", self.q_high)
        self._lay_out(intro, form, "bounds")

    def release(self) -> None:
        self._submit(
            "Charging the ledger and drawing the two quantiles…",
            release_private_bounds,
            self.dataset,
            self.column,
            (self.low.value(), self.high.value()),
            self.epsilon.value(),
            self.bins.value(),
            (self.q_low.value(), self.q_high.value()),
        )

    def _show_result(self, result: Any) -> None:
        rows = ", ".join(str(r.row_id) for _, r in result.releases)
        self.message.setText(
            f"Released: <b>[{result.lower:g}, {result.upper:g}]</b> (ledger rows {rows}, "
            f"ε = {result.epsilon:g} charged). These bounds are DP outputs: using them costs nothing more."
        )
        self.use_button.setEnabled(True)

    def _use(self) -> None:
        if self.result is not None:
            self.bounds_chosen.emit(float(self.result.lower), float(self.result.upper))
            self.accept()
