"""Estimate a column's categories privately (issue 40), from the query panel's "Estimate
privately…": a count by privately selected keys, released through the ordinary pipeline
(charged to the ledger first, files written: :mod:`dpexplorer.release.private_categories`), its
keys then declared in the codebook as the column's categories (origin "estimated")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.gui import palette
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.query_groups import KEY_DELTAS

JOB = "private-categories"


def release_private_categories(
    dataset: Any, column: str, epsilon: float, delta: float, ledger_path: str, out_dir: str
) -> Any:
    """The worker's job: prepare, check the budget, charge, draw, write."""
    from dpexplorer.release.ledger import Ledger
    from dpexplorer.release.private_categories import prepare_categories, release_categories

    prepared = prepare_categories(dataset, column, epsilon=epsilon, delta=delta)
    with Ledger(ledger_path) as ledger:
        return release_categories(prepared, column, ledger=ledger, out_dir=out_dir)


class PrivateCategoriesDialog(QDialog):
    """ε and δ; Release; then Use these categories."""

    categories_chosen = Signal(object, int, str)
    """(categories, the ledger row that paid for them, their citation)."""

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
        super().__init__(parent)
        self.setWindowTitle(f"Estimate the categories of {column} privately")
        self.setMinimumWidth(520)
        self.compute, self.dataset, self.column = compute, dataset, column
        self.ledger_path, self.out_dir = ledger_path, out_dir
        self.result: Any = None
        intro = QLabel(
            f"Releases the values of <b>{column}</b> that many persons hold, with differential "
            "privacy: a value is released only if its noisy number of persons passes a threshold "
            "set from ε and δ, so a value held by one person is released with probability at most "
            "δ. Charged to this dataset's budget like any release; the values released become the "
            "column's categories in the codebook (estimated, not complete)."
        )
        intro.setWordWrap(True)
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
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.release_button = self.buttons.addButton(
            "Release categories", QDialogButtonBox.ButtonRole.ActionRole
        )
        self.use_button = self.buttons.addButton(
            "Use these categories", QDialogButtonBox.ButtonRole.AcceptRole
        )
        self.use_button.setEnabled(False)
        self.release_button.clicked.connect(self.release)
        self.use_button.clicked.connect(self._use)
        self.buttons.rejected.connect(self.reject)
        compute.finished.connect(self._on_result)
        compute.failed.connect(self._on_failure)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)

    def release(self) -> None:
        self.release_button.setEnabled(False)
        self.message.setStyleSheet("")
        self.message.setText("Charging the ledger and selecting the values…")
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.compute.submit(
            JOB,
            release_private_categories,
            self.dataset,
            self.column,
            self.epsilon.value(),
            float(self.delta.currentText()),
            str(self.ledger_path),
            str(self.out_dir),
        )

    def _on_result(self, view: str, generation: int, result: object) -> None:
        if view != JOB:
            return
        self.result = result
        found = result.categories  # type: ignore[attr-defined]
        shown = ", ".join(found[:8]) + (f" and {len(found) - 8:,} more" if len(found) > 8 else "")
        self.message.setText(
            f"Released {len(found):,} values: <b>{shown or 'none'}</b> (ledger row "
            f"{result.result.row_id}). They are DP outputs: using them costs nothing more."  # type: ignore[attr-defined]
        )
        self.use_button.setEnabled(bool(found))

    def _on_failure(self, view: str, generation: int, message: str) -> None:
        if view == JOB:
            self.message.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};")
            self.message.setText(message)
            self.release_button.setEnabled(True)

    def _use(self) -> None:
        if self.result is not None and self.result.categories:
            self.categories_chosen.emit(
                self.result.categories, self.result.result.row_id, self.result.citation
            )
            self.accept()

    def done(self, result: int) -> None:
        self.compute.finished.disconnect(self._on_result)
        self.compute.failed.disconnect(self._on_failure)
        super().done(result)
