"""A read-only Qt table model over a small polars DataFrame (the dataset preview)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

_Index = QModelIndex | QPersistentModelIndex


class FrameModel(QAbstractTableModel):
    """Shows a DataFrame; header tooltips give each column's type. Missing values show as "—"."""

    def __init__(self, frame: pl.DataFrame | None = None, column_types: dict[str, str] | None = None) -> None:
        super().__init__()
        self._rows: list[tuple[Any, ...]] = []
        self._columns: list[str] = []
        self._types: dict[str, str] = {}
        if frame is not None:
            self.set_frame(frame, column_types or {})

    def set_frame(self, frame: pl.DataFrame, column_types: Mapping[str, str]) -> None:
        self.beginResetModel()
        self._columns = list(frame.columns)
        self._rows = frame.rows()
        self._types = dict(column_types)
        self.endResetModel()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._columns)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or role != Qt.ItemDataRole.DisplayRole:
            return None
        value = self._rows[index.row()][index.column()]
        return "—" if value is None else str(value)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Vertical:
            return str(section + 1) if role == Qt.ItemDataRole.DisplayRole else None
        name = self._columns[section]
        kind = self._types.get(name, "")
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{name}\n({kind})" if kind else name
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{name}: {kind}" if kind else name
        return None
