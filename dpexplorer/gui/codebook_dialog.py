"""Release > Codebook…: the dataset's public description (issue 40) as a table of its columns,
each fact with its origin (declared by the steward, shipped with dpexplorer, estimated privately
with its ledger row), editable below the table; open and save a codebook file. Nothing here
reads the data: the columns are the dataset's names and kinds, the facts are typed or read from
a codebook file (:mod:`dpexplorer.data.codebook`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data.codebook import KINDS, Codebook, ColumnFacts, Fact, Unit, load_codebook, save_codebook
from dpexplorer.gui import palette
from dpexplorer.gui.query_facts import NOT_DECLARED, origin_words, value_words

FILTER = "Codebooks (*.json);;All files (*)"
PRIMARY = {"bounds": "number", "edges": "number", "categories": "category"}
"""The kind of column each fact usually describes (the others: "—" while not declared)."""
FIELDS = ("bounds", "categories", "edges")
HEADERS = ("Column", "Kind", "Bounds", "Categories", "Bin edges")
NO_UNIT = "(each row is a person)"
DATA_KINDS = {"numeric": "number", "date": "day"}
"""A column's kind as the data layer reads it -> its default kind in a codebook."""


def parse_fact(field: str, text: str) -> Any:
    """A fact's value typed as text (comma-separated), or None for an empty field.
    DPExplorerError naming the field when it does not read."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        return None
    if field == "categories":
        return tuple(parts)
    try:
        numbers = tuple(float(p) for p in parts)
    except ValueError:
        raise DPExplorerError(f"the {field} must be numbers separated by commas; got {text!r}") from None
    if field == "bounds" and len(numbers) != 2:
        raise DPExplorerError(f"the bounds are two numbers, lower, upper; got {len(numbers)}")
    return numbers


def fact_text(field: str, fact: Fact | None) -> str:
    """A fact's value as the editor shows it."""
    if fact is None:
        return ""
    return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in fact.value)


def cell_text(field: str, fact: Fact | None, kind: str = "") -> str:
    """A table cell: the fact's value in short and its origin, "not declared", or "—" for a
    fact a column of its kind does not usually have (categories of a number column)."""
    if fact is None:
        return NOT_DECLARED if kind in ("", PRIMARY.get(field, "")) else "—"
    shown = value_words(field, fact.value)
    if field == "categories":
        head = ", ".join(fact.value[:3]) + (", …" if len(fact.value) > 3 else "")
        shown = f"{len(fact.value)}: {head}" + (" (complete)" if fact.complete else "")
    return f"{shown} · {fact.origin}"


def _fact(facts: ColumnFacts | None, field: str) -> Fact | None:
    fact = getattr(facts, field) if facts is not None else None
    return fact if isinstance(fact, Fact) else None


class CodebookDialog(QDialog):
    """The codebook of the dataset shown, editable; ``codebook_changed`` with each new one."""

    codebook_changed = Signal(object)

    def __init__(
        self,
        codebook: Codebook,
        columns: dict[str, str],
        *,
        dataset_name: str = "",
        identity: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        """``columns``: the dataset's column names and kinds (as the data layer reads them);
        ``identity``: its ledger identity when known (a codebook file for another is refused)."""
        super().__init__(parent)
        self.setWindowTitle(f"Codebook — {dataset_name}" if dataset_name else "Codebook")
        self.setMinimumWidth(760)
        self.codebook = codebook
        self.data_kinds = dict(columns)
        self.identity = identity
        intro = QLabel(
            "The public description of this dataset: every release reads its bounds, categories "
            "and bin edges from here, never from the data. Each fact shows its origin: "
            "<b>declared</b> by you (typed, or imported with a citation), <b>shipped</b> with "
            "dpexplorer, or <b>estimated</b> privately (charged; its ledger row)."
        )
        intro.setWordWrap(True)
        self.source = QLabel()
        self.source.setWordWrap(True)
        self.table = QTableWidget(0, len(HEADERS))
        self.table.setHorizontalHeaderLabels(list(HEADERS))
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        self.table.setAccessibleName("The codebook's columns and facts")
        self.table.itemSelectionChanged.connect(self._show_selected)
        self.editor = self._editor()
        self.unit_box = self._unit_box()
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.open_button = self.buttons.addButton("Open…", QDialogButtonBox.ButtonRole.ActionRole)
        self.save_button = self.buttons.addButton("Save As…", QDialogButtonBox.ButtonRole.ActionRole)
        self.open_button.clicked.connect(self._open_dialog)
        self.save_button.clicked.connect(self._save_dialog)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(self.source)
        self.table.setMinimumHeight(240)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.editor)
        layout.addWidget(self.unit_box)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)
        self._fill()
        if self.table.rowCount():
            self.table.selectRow(0)
        self.resize(900, 720)

    # ------------------------------------------------------------------ widgets
    def _editor(self) -> QGroupBox:
        box = QGroupBox("Declare the facts of the column")
        self.kind = QComboBox()
        self.kind.addItems(list(KINDS))
        self.fields: dict[str, QLineEdit] = {}
        self.origins: dict[str, QLabel] = {}
        hints = {
            "bounds": "lower, upper (e.g. 0, 120)",
            "categories": "every value, separated by commas",
            "edges": "increasing numbers (e.g. 0, 18, 65, 120)",
        }
        form = QFormLayout(box)
        form.addRow("Kind", self.kind)
        for field, title in zip(FIELDS, ("Bounds", "Categories", "Bin edges"), strict=True):
            line = QLineEdit()
            line.setPlaceholderText(f"{NOT_DECLARED}: {hints[field]}")
            line.setMaxLength(2**24)
            line.setAccessibleName(f"Declared {title.lower()}")
            origin = QLabel()
            origin.setMinimumWidth(220)
            origin.setWordWrap(True)
            self.fields[field], self.origins[field] = line, origin
            row = QHBoxLayout()
            row.addWidget(line, 3)
            row.addWidget(origin, 2)
            form.addRow(title, row)
            if field == "categories":
                self.complete = QCheckBox("complete: the list is every value the column can take")
                form.addRow("", self.complete)
        self.note = QLabel()
        self.note.setWordWrap(True)
        form.addRow("", self.note)
        self.citation = QLineEdit()
        self.citation.setPlaceholderText("where these facts come from (a code list, documentation…)")
        self.declare_button = QPushButton("Declare")
        self.declare_button.setToolTip("Write the facts typed above into the codebook, origin 'declared'")
        self.declare_button.clicked.connect(self.declare)
        cite = QHBoxLayout()
        cite.addWidget(self.citation, 1)
        cite.addWidget(self.declare_button)
        form.addRow("Citation", cite)
        return box

    def _unit_box(self) -> QGroupBox:
        box = QGroupBox("Privacy unit")
        self.unit_column = QComboBox()
        self.unit_column.addItems([NO_UNIT, *self.data_kinds])
        self.unit_rows = QSpinBox()
        self.unit_rows.setRange(1, 10_000)
        self.unit_groups = QSpinBox()
        self.unit_groups.setRange(1, 10_000)
        self.unit_origin = QLabel()
        declare = QPushButton("Declare unit")
        declare.clicked.connect(self.declare_unit)
        row = QHBoxLayout(box)
        for label, widget in (("Column", self.unit_column), ("rows per group", self.unit_rows)):
            row.addWidget(QLabel(label))
            row.addWidget(widget)
        row.addWidget(QLabel("groups per person"))
        row.addWidget(self.unit_groups)
        row.addWidget(declare)
        row.addWidget(self.unit_origin, 1)
        return box

    # ------------------------------------------------------------------ showing
    def columns(self) -> list[str]:
        """The dataset's columns, then any the codebook describes beyond them."""
        return [*self.data_kinds, *(c for c in self.codebook.columns if c not in self.data_kinds)]

    def _fill(self) -> None:
        cited = self.codebook.citation
        self.source.setText(f"<i>Source:</i> {cited}" if cited else "")
        self.source.setVisible(bool(cited))
        selected = self.selected_column()
        self.table.setRowCount(0)
        for name in self.columns():
            row = self.table.rowCount()
            self.table.insertRow(row)
            facts = self.codebook.column(name)
            kind = facts.kind if facts is not None else self._default_kind(name)
            shown = kind if facts is not None else f"{kind} (not described)"
            cells = [name, shown, *(cell_text(f, _fact(facts, f), kind) for f in FIELDS)]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col >= 2:
                    fact = _fact(facts, FIELDS[col - 2])
                    item.setToolTip(origin_words(fact) + (f"\n{facts.note}" if facts and facts.note else ""))
                    if text == NOT_DECLARED:
                        item.setForeground(palette.qcolor(palette.WARNING_TEXT))
                self.table.setItem(row, col, item)
        if selected in self.columns():
            self.select(selected)
        self._show_unit()

    def _default_kind(self, column: str) -> str:
        return DATA_KINDS.get(self.data_kinds.get(column, ""), "category")

    def selected_column(self) -> str:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows:
            return ""
        item = self.table.item(rows[0].row(), 0)
        return item.text() if item is not None else ""

    def select(self, column: str, field: str = "") -> None:
        """Show ``column``'s facts in the editor (``field``'s line focused)."""
        names = self.columns()
        if column in names:
            self.table.selectRow(names.index(column))
        if field in self.fields:
            self.fields[field].setFocus()

    def _show_selected(self) -> None:
        column = self.selected_column()
        facts = self.codebook.column(column)
        self.editor.setTitle(
            f"Declare the facts of {column}" if column else "Declare the facts of the column"
        )
        self.kind.setCurrentText(facts.kind if facts is not None else self._default_kind(column))
        for field in FIELDS:
            fact = getattr(facts, field) if facts is not None else None
            self.fields[field].setText(fact_text(field, fact))
            self.fields[field].setCursorPosition(0)
            self.origins[field].setText(f"<i>{origin_words(fact)}</i>")
            self.origins[field].setToolTip(origin_words(fact))
        note = facts.note if facts is not None else ""
        self.note.setText(f"<i>Note:</i> {note}" if note else "")
        self.note.setVisible(bool(note))
        categories = facts.categories if facts is not None else None
        self.complete.setChecked(bool(categories and categories.complete))
        self.citation.setText("")

    def _show_unit(self) -> None:
        unit = self.codebook.unit
        self.unit_column.setCurrentText(unit.column if unit is not None else NO_UNIT)
        self.unit_rows.setValue((unit.max_rows or 1) if unit is not None else 1)
        self.unit_groups.setValue((unit.max_groups or 1) if unit is not None else 1)
        self.unit_origin.setText(
            f"<i>{unit.origin}</i>" if unit is not None else "<i>each row is a different person</i>"
        )

    def set_codebook(self, codebook: Codebook) -> None:
        """Show ``codebook`` (the query panel declared a fact: the table follows)."""
        self.codebook = codebook
        self._fill()
        self._show_selected()

    # ------------------------------------------------------------------ declaring
    def declare(self) -> None:
        """The editor's facts into the codebook: a changed or new one declared (with the
        citation typed), an unchanged one kept with its origin, an emptied one removed."""
        column = self.selected_column()
        if not column:
            return
        try:
            self._changed(self._declared_column(column))
        except DPExplorerError as exc:
            self._say(f"Not declared: {exc}", error=True)

    def _declared_column(self, column: str) -> ColumnFacts:
        old = self.codebook.column(column) or ColumnFacts(column, self.kind.currentText())
        citation = self.citation.text().strip()
        facts: dict[str, Fact | None] = {}
        for field in FIELDS:
            value = parse_fact(field, self.fields[field].text())
            before = getattr(old, field)
            complete = self.complete.isChecked() if field == "categories" else True
            if value is None:
                facts[field] = None
            elif before is not None and tuple(before.value) == value and before.complete == complete:
                facts[field] = before
            else:
                facts[field] = Fact(value, "declared", citation, complete=complete)
        return ColumnFacts(
            column,
            self.kind.currentText(),
            bounds=facts["bounds"],
            categories=facts["categories"],
            edges=facts["edges"],
            date_format=old.date_format,
            note=old.note,
        )

    def declare_unit(self) -> None:
        column = self.unit_column.currentText()
        unit = None if column == NO_UNIT else Unit(column, self.unit_rows.value(), self.unit_groups.value())
        self.codebook = dataclasses.replace(self.codebook, unit=unit)
        self._show_unit()
        self._say("Privacy unit declared.")
        self.codebook_changed.emit(self.codebook)

    def _changed(self, facts: ColumnFacts) -> None:
        self.codebook = self.codebook.with_column(facts)
        self._fill()
        self._say(f"Declared the facts of {facts.name}.")
        self.codebook_changed.emit(self.codebook)

    def _say(self, text: str, *, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {palette.css(palette.ERROR_TEXT)};" if error else "")

    # ------------------------------------------------------------------ files
    def open_file(self, path: str | Path) -> bool:
        """Read the codebook at ``path`` into the dialog (a file describing another dataset is
        refused); returns whether it was taken."""
        try:
            codebook = load_codebook(path)
        except DPExplorerError as exc:
            self._say(str(exc), error=True)
            return False
        if codebook.dataset and self.identity is not None and codebook.dataset != self.identity:
            self._say(
                f"{Path(path).name} describes another dataset (identity {codebook.dataset[:12]}…, this "
                f"one's is {self.identity[:12]}…): not opened",
                error=True,
            )
            return False
        self.codebook = codebook
        self._fill()
        self._show_selected()
        self._say(f"Opened {Path(path).name}.")
        self.codebook_changed.emit(codebook)
        return True

    def save_file(self, path: str | Path) -> bool:
        """Write the codebook to ``path`` (tied to this dataset's identity when known)."""
        codebook = self.codebook
        if not codebook.dataset and self.identity is not None:
            codebook = dataclasses.replace(codebook, dataset=self.identity)
        try:
            save_codebook(codebook, path)
        except OSError as exc:
            self._say(f"Could not save {path}: {exc.strerror or exc}", error=True)
            return False
        self._say(f"Saved {Path(path).name}.")
        return True

    def _open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a codebook", "", FILTER)
        if path:
            self.open_file(path)

    def _save_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save the codebook as", "codebook.json", FILTER)
        if path:
            self.save_file(path)
