"""The budget view's table of released and planned statistics: one row each, ε and δ as the
mechanism claims them, the ε its release is charged, and for a planned row its hold, target
error and level, edited in place. Released rows (from the ledger) are grey and read only."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from dpexplorer.core.figures import privacy_up
from dpexplorer.core.planning import ErrorTarget, PlannedMeasurement, ReleasedMeasurement
from dpexplorer.gui.views.base import GREY
from dpexplorer.gui.views.budget_jobs import Row

COLUMNS = (
    "Statistic",
    "Mechanism",
    "ε",
    "δ",
    "Release charges ε",
    "Hold ε",
    "Target error ±",
    "Level",
    "Note",
)
TABLE_HEIGHT = 120
"""The plan table's minimum height in pixels (half of it while two mechanisms are compared)."""
EPSILON_COLUMN, CHARGED_COLUMN, HOLD_COLUMN, TARGET_COLUMN, LEVEL_COLUMN = 2, 4, 5, 6, 7


def _number(value: float) -> str:
    """ε or δ as a person reads it (release/presentation.py: three significant digits, so an
    exact sampler's ε of 0.29990 for a claimed 0.3 shows 0.3; the ledger decides exactly)."""
    from dpexplorer.release.presentation import privacy_number

    return privacy_number(value)


def _item(text: str, editable: bool = False, tooltip: str = "") -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
    if editable:
        flags |= Qt.ItemFlag.ItemIsEditable
    item.setFlags(flags)
    if tooltip:
        item.setToolTip(tooltip)
    return item


def provisional_rows(
    released: Sequence[ReleasedMeasurement], plan: Sequence[PlannedMeasurement]
) -> list[Row]:
    """The rows shown at once when the plan changes (ε as typed), until the job's result comes."""
    rows = [Row(r.label, r.mechanism, math.nan, math.nan, True, True, note="released") for r in released]
    for item in plan:
        eps = item.params.get("epsilon", math.nan)
        rows.append(
            Row(item.label, item.mechanism, eps, math.nan, item.held, False, target=item.target, note="…")
        )
    return rows


class PlanTable(QTableWidget):
    """The rows of :class:`~dpexplorer.gui.views.budget_jobs.Row`; :attr:`edited` carries each
    cell the user edits (not the ones :meth:`fill` sets)."""

    edited = Signal(object)
    """A QTableWidgetItem the user changed: see :func:`edited_measurement`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.setAccessibleName("Released and planned statistics")
        self.setTabKeyNavigation(False)  # Tab leaves the table (arrows move in it)
        self.setHorizontalHeaderLabels(COLUMNS)
        self.verticalHeader().setVisible(False)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # the statistic and the note take what is left and wrap: a long description no longer
        # pushes the note out of sight
        for column in (0, len(COLUMNS) - 1):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Stretch)
        self.setWordWrap(True)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setMinimumHeight(TABLE_HEIGHT)
        self._filling = False
        self.itemChanged.connect(self._changed)

    def fill(self, rows: Sequence[Row]) -> None:
        """Show ``rows`` (emitting no :attr:`edited`)."""
        self._filling = True
        self.setRowCount(len(rows))
        for r, row in enumerate(rows):
            self._fill_row(r, row)
        self._filling = False

    def _fill_row(self, r: int, row: Row) -> None:
        planned = not row.released
        target = row.target
        cells = (
            _item(row.label, tooltip=row.label),
            _item(row.mechanism),
            _item(
                _number(row.epsilon), editable=planned and target is None, tooltip="Double-click to type ε"
            ),
            _item("" if math.isnan(row.delta) else _number(row.delta)),
            _item("" if math.isnan(row.charged) else privacy_up(row.charged), tooltip=CHARGED_TIP),
            _item("released" if row.released else ""),
            _item(f"{target.halfwidth:.4g}" if target else "", editable=planned, tooltip=TARGET_TIP),
            _item(f"{target.ci_level:.0%}" if target else "", editable=planned, tooltip=LEVEL_TIP),
            _item(row.note, tooltip=row.note),
        )
        for c, cell in enumerate(cells):
            if row.released:
                cell.setForeground(QBrush(QColor(*GREY)))
            self.setItem(r, c, cell)
        if planned:
            hold = self.item(r, HOLD_COLUMN)
            assert hold is not None  # set just above
            hold.setFlags(hold.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            hold.setCheckState(Qt.CheckState.Checked if row.held else Qt.CheckState.Unchecked)

    def selected_rows(self) -> list[int]:
        """The rows selected, top to bottom."""
        return sorted(index.row() for index in self.selectionModel().selectedRows())

    def _changed(self, cell: QTableWidgetItem) -> None:
        if not self._filling:
            self.edited.emit(cell)


def edited_measurement(item: PlannedMeasurement, cell: QTableWidgetItem) -> PlannedMeasurement:
    """``item`` as the cell the user edited says (ε, hold, target error or its level);
    ValueError when what was typed is not a valid value (:data:`EDIT_HINT` says what is)."""
    column, text = cell.column(), cell.text().strip().rstrip("%")
    if column == HOLD_COLUMN:
        return replace(item, held=cell.checkState() == Qt.CheckState.Checked)
    if column == EPSILON_COLUMN:
        value = float(text)
        if not value > 0:
            raise ValueError(text)
        return replace(item, params={**item.params, "epsilon": value})
    if column == TARGET_COLUMN:
        if not text:
            return replace(item, target=None)
        level = item.target.ci_level if item.target else 0.95
        return replace(item, target=ErrorTarget(_positive(text), level))
    if column == LEVEL_COLUMN:
        level = float(text) / 100 if float(text) > 1 else float(text)
        if not 0 < level < 1 or item.target is None:
            raise ValueError(text)
        return replace(item, target=ErrorTarget(item.target.halfwidth, level))
    return item


def _positive(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(text)
    return value


TARGET_TIP = (
    "Accuracy first: type the error you can accept (half-width of the confidence interval, in the "
    "statistic's units) and ε is solved for it. Clear the cell to set ε yourself."
)
LEVEL_TIP = "Confidence level of the target error (95% when left empty)."
CHARGED_TIP = (
    "The ε the ledger is charged when this statistic is released, at the budget's δ under the "
    "ledger's accountant: the exact release path's own guarantee (e.g. a discrete Gaussian's "
    "zCDP), which can differ a little from the mechanism's ε. The totals use it. Shown rounded up "
    "to three digits (an exact sampler's 0.2994 for a claimed 0.3 reads 0.3: never less than charged)."
)
EDIT_HINT = "Type a positive number (ε, target error) or a level between 0 and 100%."
