"""Estimate a column's categories privately (issue 40), from the query panel's "Estimate
privately…": a count by privately selected keys, released through the ordinary pipeline
(charged to the ledger first, files written: :mod:`dpexplorer.release.private_categories`), its
keys then declared in the codebook as the column's categories (origin "estimated")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QFormLayout, QLabel, QWidget

from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.private_estimate import PrivateEstimateDialog
from dpexplorer.gui.query_groups import KEY_DELTAS

JOB = "release-private-categories"
"""A release (it charges the ledger): the window's Esc never cancels it (MainWindow.cancel_jobs)."""


def release_private_categories(
    dataset: Any, column: str, epsilon: float, delta: float, ledger_path: str, out_dir: str
) -> Any:
    """The worker's job: prepare, check the budget, charge, draw, write."""
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.private_categories import prepare_categories, release_categories

    prepared = prepare_categories(dataset, column, epsilon=epsilon, delta=delta)
    with Ledger(ledger_path) as ledger:
        return release_categories(prepared, column, ledger=ledger, out_dir=out_dir)


class PrivateCategoriesDialog(PrivateEstimateDialog):
    """ε and δ; Release; then Use these categories."""

    categories_chosen = Signal(object, int, str)
    """(categories, the ledger row that paid for them, their citation)."""
    job = JOB

    def __init__(
        self,
        compute: ComputeService,
        *,
        dataset: Any,
        column: str,
        ledger_path: Path,
        out_dir: Path,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(
            compute, dataset=dataset, column=column, ledger_path=ledger_path, out_dir=out_dir, parent=parent
        )
        self.setWindowTitle(f"Estimate the categories of {column} privately")
        self.setMinimumWidth(520)
        intro = QLabel(
            f"Releases the values of <b>{column}</b> that many persons hold, with differential "
            "privacy: a value is released only if its noisy number of persons passes a threshold "
            "set from ε and δ, so a value held by one person is released with probability at most "
            "δ. Charged to this dataset's budget like any release; the values released become the "
            "column's categories in the codebook (estimated, not complete)."
        )
        self.epsilon = QDoubleSpinBox()
        self.epsilon.setRange(0.01, 10.0)
        self.epsilon.setDecimals(3)
        self.epsilon.setValue(0.5)
        self.delta = QComboBox()
        self.delta.addItems(KEY_DELTAS)
        self.delta.setCurrentText("1e-6")
        form = QFormLayout()
        form.addRow("ε (half selects, half counts)", self.epsilon)
        form.addRow("δ of the selection", self.delta)
        self._lay_out(intro, form, "categories")

    def release(self) -> None:
        self._submit(
            "Charging the ledger and selecting the values…",
            release_private_categories,
            self.dataset,
            self.column,
            self.epsilon.value(),
            float(self.delta.currentText()),
        )

    def _show_result(self, result: Any) -> None:
        found = result.categories
        shown = ", ".join(found[:8]) + (f" and {len(found) - 8:,} more" if len(found) > 8 else "")
        self.message.setText(
            f"Released {len(found):,} values: <b>{shown or 'none'}</b> (ledger row "
            f"{result.result.row_id}). They are DP outputs: using them costs nothing more."
        )
        self.use_button.setEnabled(bool(found))

    def _use(self) -> None:
        if self.result is not None and self.result.categories:
            self.categories_chosen.emit(
                self.result.categories, self.result.result.row_id, self.result.citation
            )
            self.accept()
