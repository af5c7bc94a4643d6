"""The Data tab: what file is open, a non-private summary of each column, and a preview."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.gui import palette
from dpexplorer.gui.table_model import FrameModel

if TYPE_CHECKING:
    from dpexplorer.data.load import Dataset
    from dpexplorer.data.scan import Peek

PREVIEW_ROWS = 200
SIZED_ROWS = 40
"""Rows the preview's column widths are fitted to (besides the visible ones)."""

SAMPLE_TIP = (
    "Tick this only if it is true: the people in this file were drawn from a larger population, "
    "each person kept independently with probability q (Poisson sampling; for a sample of about "
    "n people out of N, q is n/N, fixed before drawing), and who was drawn is kept secret. Then "
    "an attacker does not know whether a given person is in the file at all, and every release "
    "costs less: Laplace and Gaussian noise and pure ε are charged their amplified guarantee "
    "(Zhu, Dong & Wang 2022; Balle, Barthe & Gaboardi 2018). It holds for neighbours that add or "
    "remove a person. The release records it in its provenance as your claim; if the file is "
    "not such a sample (a census, volunteers, everyone who used a service), the ε is wrong."
)


class DatasetView(QWidget):
    """Header line, schema table (type, missing, distinct) and the first rows of the data."""

    sampling_changed = Signal(object)
    """The steward's sampling claim changed: the rate q, or None for no claim."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("No dataset loaded.")
        self.title.setWordWrap(True)
        self.secret_sample = QCheckBox("This file is a secret random sample of a population:")
        self.secret_sample.setToolTip(SAMPLE_TIP)
        self.sample_rate = QDoubleSpinBox()
        self.sample_rate.setDecimals(4)
        self.sample_rate.setRange(0.0001, 1.0)
        self.sample_rate.setSingleStep(0.01)
        self.sample_rate.setValue(0.01)
        self.sample_rate.setPrefix("each person kept with probability q = ")
        self.sample_rate.setToolTip(SAMPLE_TIP)
        self.sample_rate.setEnabled(False)
        self.secret_sample.toggled.connect(self._sampling_toggled)
        self.sample_rate.valueChanged.connect(lambda _v: self._emit_sampling())
        self.sample_note = QLabel(
            "Releases from this file are charged their amplified ε (Budget tab and release dialog), "
            "and this claim is written into each release's provenance. Hover for what it assumes."
        )
        self.sample_note.setWordWrap(True)
        self.sample_note.setStyleSheet(f"color: {palette.css(palette.WARNING_TEXT)};")
        self.sample_note.setToolTip(SAMPLE_TIP)
        self.sample_note.hide()
        sample_row = QHBoxLayout()  # two lines: at teaching fonts one would widen the window
        sample_row.addWidget(self.secret_sample)
        sample_row.addStretch(1)
        rate_row = QHBoxLayout()
        rate_row.addSpacing(24)
        rate_row.addWidget(self.sample_rate)
        rate_row.addStretch(1)
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
        self.preview.setAccessibleName("First rows of the dataset")
        self.preview.setTabKeyNavigation(False)  # Tab leaves the table (arrows move in it)
        self.schema.setTabKeyNavigation(False)
        self.preview.setModel(self.preview_model)
        self.preview.setAlternatingRowColors(True)
        # columns sized from the first rows, not all 200 (on Adult both fits took 0.17 s of the start)
        self.preview.horizontalHeader().setResizeContentsPrecision(SIZED_ROWS)
        split = QSplitter()
        split.addWidget(self.schema)
        split.addWidget(self.preview)
        split.setStretchFactor(1, 3)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addLayout(sample_row)
        layout.addLayout(rate_row)
        layout.addWidget(self.sample_note)
        layout.addWidget(split, 1)

    @property
    def sampling_rate(self) -> float | None:
        """The declared Poisson rate q, or None when the file is not declared a secret sample."""
        return self.sample_rate.value() if self.secret_sample.isChecked() else None

    def set_sampling_rate(self, rate: float | None) -> None:
        """Show a claim (e.g. from a session) without asking for it twice."""
        self.secret_sample.setChecked(rate is not None)
        if rate is not None:
            self.sample_rate.setValue(rate)

    def _sampling_toggled(self, on: bool) -> None:
        self.sample_rate.setEnabled(on)
        self.sample_note.setVisible(on)
        self._emit_sampling()

    def _emit_sampling(self) -> None:
        self.sampling_changed.emit(self.sampling_rate)

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
        warnings = "".join(
            f"<br><span style='color:{palette.css(palette.WARNING_TEXT)}'>⚠ {w}</span>"
            for w in dataset.warnings
        )
        self.title.setText(
            f"<b>{dataset.path.name}</b> — {dataset.n_rows:,} rows × {len(dataset.columns)} columns; "
            f"showing the first {min(PREVIEW_ROWS, dataset.n_rows):,} rows. "
            "Column summaries are <i>not private</i>: they are for you, not for release."
            + _how_read(dataset)
            + warnings
        )
        self.schema.setRowCount(len(dataset.columns))
        for row, column in enumerate(dataset.columns):
            kind = f"{column.kind}, {column.span[0]} to {column.span[1]}" if column.span else column.kind
            cells = (column.name, kind, f"{column.missing:,}", f"{column.distinct:,}")
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


def _how_read(dataset: Dataset) -> str:
    """How the rows are read, when not simply from memory."""
    if getattr(dataset, "format", "") == "spark":
        return " Read and answered by Spark."
    return (
        " Read by streaming the file; distinct counts are estimates."
        if getattr(dataset, "lazy", False)
        else ""
    )
