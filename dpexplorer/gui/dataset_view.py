"""The Data tab: what file is open, a non-private summary of each column, and a preview."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.gui.table_model import FrameModel

if TYPE_CHECKING:
    from dpexplorer.data.engine.scan import Peek
    from dpexplorer.data.load import Dataset

PREVIEW_ROWS = 200


class DatasetView(QWidget):
    """Header line, schema table (type, missing, distinct) and the first rows of the data."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("No dataset loaded.")
        self.title.setWordWrap(True)
        self.schema = QTableWidget(0, 4)
        self.schema.setHorizontalHeaderLabels(["column", "type", "missing", "distinct"])
        self.schema.verticalHeader().setVisible(False)
        self.schema.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.schema.setToolTip(
            "A summary for your own eyes: these counts are computed without noise and are "
            "not differentially private. Do not publish them."
        )
        self.preview_model = FrameModel()
        self.preview = QTableView()
        self.preview.setModel(self.preview_model)
        self.preview.setAlternatingRowColors(True)
        split = QSplitter()
        split.addWidget(self.schema)
        split.addWidget(self.preview)
        split.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(split, 1)

    def show_peek(self, peek: Peek) -> None:
        """The schema and first rows of a file still being read: shown at once, with the
        counts that need the whole file marked as coming."""
        from dpexplorer.data.load import kind_of_dtype

        self.title.setText(
            f"<b>{peek.path.name}</b> — {_size(peek.size_bytes)}, {len(peek.schema)} columns; "
            f"reading it ({peek.engine}): the row count and column summaries follow. "
            f"Showing the first {peek.preview.height:,} rows."
        )
        self.schema.setRowCount(len(peek.schema))
        types = {}
        for row, (name, dtype) in enumerate(peek.schema.items()):
            types[name] = kind_of_dtype(dtype)
            for col, text in enumerate((name, types[name], "…", "…")):
                self.schema.setItem(row, col, QTableWidgetItem(text))
        self.preview_model.set_frame(peek.preview, types)
        self.preview.resizeColumnsToContents()

    def show_dataset(self, dataset: Dataset) -> None:
        warnings = "".join(f"<br><span style='color:#b35900'>⚠ {w}</span>" for w in dataset.warnings)
        self.title.setText(
            f"<b>{dataset.path.name}</b> — {dataset.n_rows:,} rows × {len(dataset.columns)} columns; "
            f"showing the first {min(PREVIEW_ROWS, dataset.n_rows):,} rows. "
            "Column summaries are <i>not private</i>: they are for you, not for release."
            + (" Read by streaming the file; distinct counts are estimates." if dataset.lazy else "")
            + warnings
        )
        self.schema.setRowCount(len(dataset.columns))
        for row, column in enumerate(dataset.columns):
            cells = (column.name, column.kind, f"{column.missing:,}", f"{column.distinct:,}")
            for col, text in enumerate(cells):
                self.schema.setItem(row, col, QTableWidgetItem(text))
        types = {c.name: c.kind for c in dataset.columns}
        self.preview_model.set_frame(dataset.preview(PREVIEW_ROWS), types)
        self.preview.resizeColumnsToContents()


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n:,.1f} TB"  # pragma: no cover
