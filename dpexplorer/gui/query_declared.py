"""The query panel's public facts (issue 40): bounds, categories, bin edges and the privacy
unit come from the dataset's codebook, or are declared by typing them in the panel (written
into the codebook, origin "declared"). A fact the codebook lacks is never filled in from the
data: its control shows "not declared", and the query the views explore takes the data's own
value for it, recorded in :attr:`DeclaredFacts.observed` and shown as "observed: not public";
such a query's release is refused (:func:`dpexplorer.gui.query_facts.release_blockers`).

A mixin of :class:`dpexplorer.gui.query_panel.QueryPanel`, which owns the widgets, the dataset
and its summary (the observed values, for exploration only) and emits the query."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QLabel, QLineEdit, QSpinBox

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data.codebook import EMPTY, Codebook, Fact, Unit
from dpexplorer.gui.query_facts import bounds_of, categories_of, edges_of
from dpexplorer.gui.query_widgets import HeadFirstLineEdit

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

NOT_DECLARED_VALUE = -1e12
"""A bound box at this value (its minimum) shows "not declared"."""


def listed(text: str) -> tuple[str, ...]:
    """The values of a comma-separated line, stripped, empty ones left out."""
    return tuple(c.strip() for c in text.split(",") if c.strip())


def equal_edges(low: float, high: float, bins: int) -> tuple[float, ...]:
    """``bins`` equal bins from ``low`` to ``high`` (public when both bounds are)."""
    return tuple(low + (high - low) * i / bins for i in range(bins + 1))


class DeclaredFacts:
    """Where the panel's public facts come from (see the module's docstring)."""

    # the panel's
    kinds: dict[str, str]
    ranges: dict[str, tuple[float, float]]
    top_values: dict[str, list[str]]
    column: QComboBox
    lower_bound: QDoubleSpinBox
    upper_bound: QDoubleSpinBox
    categories: QLineEdit
    group_categories: HeadFirstLineEdit
    group1: QComboBox
    unit: QComboBox
    max_rows: QSpinBox
    max_groups: QSpinBox
    bins: QSpinBox
    error: QLabel
    codebook_changed: SignalInstance
    has_unit: Callable[[], bool]  # GroupControls'

    def emit_query(self) -> None:
        raise NotImplementedError  # the panel's

    def _update_visibility(self) -> None:
        raise NotImplementedError  # the panel's

    def _facts_init(self) -> None:
        self.codebook: Codebook = EMPTY
        self.observed: set[tuple[str, str]] = set()
        """(column, field) of each fact the last query built explores with the data's value."""
        for box in (self.lower_bound, self.upper_bound):
            box.setMinimum(NOT_DECLARED_VALUE)
            box.setSpecialValueText("not declared")
            box.setValue(NOT_DECLARED_VALUE)
        for line in (self.categories, self.group_categories):
            line.setPlaceholderText("not declared: type them, or use the codebook")

    # ------------------------------------------------------------------ the codebook
    def set_codebook(self, codebook: Codebook, *, emit: bool = True) -> None:
        """Show ``codebook``'s facts in the controls (the current column's bounds and
        categories, the first group's, the privacy unit), then build the query again."""
        self.codebook = codebook
        self.show_declared()
        if emit:
            self.emit_query()

    def _declare(self, column: str, field: str, fact: Fact | None) -> None:
        """Write ``fact`` into the codebook (a fact its column's kind cannot have: said)."""
        try:
            self.codebook = self.codebook.with_fact(column, field, fact)
        except DPExplorerError as exc:
            self.error.setText(f"Cannot declare it: {exc}")
            self.error.show()
            return
        self.codebook_changed.emit(self.codebook)

    def show_declared(self) -> None:
        """The codebook's facts in the controls, signals held back; "not declared" where it has
        none (never a value from the data)."""
        column = self.column.currentText()
        bounds = bounds_of(self.codebook, column)
        for box, value in zip((self.lower_bound, self.upper_bound), bounds or (None, None), strict=True):
            blocked = box.blockSignals(True)
            box.setValue(NOT_DECLARED_VALUE if value is None else value)
            box.blockSignals(blocked)
        for line, of in ((self.categories, column), (self.group_categories, self.group1.currentText())):
            blocked = line.blockSignals(True)
            line.setText(", ".join(categories_of(self.codebook, of) or ()))
            line.blockSignals(blocked)
        self._show_unit()

    def _show_unit(self) -> None:
        unit = self.codebook.unit
        if unit is None or self.unit.findText(unit.column) < 0:
            return
        widgets = (self.unit, self.max_rows, self.max_groups)
        blocked = [w.blockSignals(True) for w in widgets]
        self.unit.setCurrentText(unit.column)
        self.max_rows.setValue(unit.max_rows or 1)
        self.max_groups.setValue(unit.max_groups or 1)
        for w, b in zip(widgets, blocked, strict=True):
            w.blockSignals(b)

    # ------------------------------------------------------------------ declared in the panel
    def _bounds_edited(self) -> None:
        """Both bounds typed: declared (written into the codebook) unless they are the
        codebook's, as the boxes show them."""
        low, high = self.typed_bounds()
        column = self.column.currentText()
        typed = low is not None and high is not None and low < high
        if typed and self._shown_declared(column) is None:
            self._declare(column, "bounds", Fact((low, high), "declared"))
        self.emit_query()

    def _shown_declared(self, column: str) -> tuple[float, float] | None:
        """The codebook's bounds of ``column`` when the boxes show them (to their decimals:
        an estimated bound has more), else None."""
        declared = bounds_of(self.codebook, column)
        typed = self.typed_bounds()
        if declared is None or None in typed:
            return None
        decimals = self.lower_bound.decimals()
        shown = all(round(d, decimals) == t for d, t in zip(declared, typed, strict=True))
        return declared if shown else None

    def _categories_edited(self, line: QLineEdit, column: str) -> None:
        """Categories typed: declared (not claimed complete); a line left empty shows the
        codebook's again."""
        typed = listed(line.text())
        if typed and typed != categories_of(self.codebook, column):
            self._declare(column, "categories", Fact(typed, "declared", complete=False))
        elif not typed:
            blocked = line.blockSignals(True)
            line.setText(", ".join(categories_of(self.codebook, column) or ()))
            line.blockSignals(blocked)
        self._update_visibility()
        self.emit_query()

    def _unit_edited(self) -> None:
        """The privacy unit chosen in the panel is declared (each row a person: none)."""
        unit = (
            Unit(self.unit.currentText(), self.max_rows.value(), self.max_groups.value())
            if self.has_unit()
            else None
        )
        if unit != self.codebook.unit:
            self.codebook = dataclasses.replace(self.codebook, unit=unit)
            self.codebook_changed.emit(self.codebook)

    def typed_bounds(self) -> tuple[float | None, float | None]:
        """The bound boxes' values (None: "not declared")."""
        return tuple(  # type: ignore[return-value]
            None if box.value() <= NOT_DECLARED_VALUE else box.value()
            for box in (self.lower_bound, self.upper_bound)
        )

    # ------------------------------------------------------------------ what a query takes
    def bounds_for(self, column: str) -> tuple[float, float]:
        """``column``'s bounds: typed in the boxes (the current column), else the codebook's,
        else the observed range for exploration (recorded in :attr:`observed`)."""
        if column == self.column.currentText():
            low, high = self.typed_bounds()
            if low is not None and high is not None:
                return self._shown_declared(column) or (low, high)
        declared = bounds_of(self.codebook, column)
        if declared is not None:
            return declared
        if column in self.ranges:
            self.observed.add((column, "bounds"))
            low, high = self.ranges[column]
            return float(low), float(high)
        raise DPExplorerError(f"declare the bounds of {column!r}: the codebook has none")

    def categories_for(self, column: str, line: QLineEdit | None, explored: int) -> tuple[Any, ...]:
        """``column``'s categories: typed in ``line``, else the codebook's, else the ``explored``
        commonest values in the data for exploration (recorded in :attr:`observed`)."""
        typed = listed(line.text()) if line is not None else ()
        if typed:
            return typed
        declared = categories_of(self.codebook, column)
        if declared is not None:
            return declared
        values = self.top_values.get(column, [])[:explored]
        if values:
            self.observed.add((column, "categories"))
            return tuple(values)
        raise DPExplorerError(f"declare the categories of {column!r}: the codebook has none")

    def edges_for(self, column: str, *, bounds_first: bool) -> tuple[float, ...]:
        """``column``'s bin edges: ``bins`` equal bins over its bounds (``bounds_first``: where
        the panel shows the bound boxes, a histogram's), else the codebook's edges, else equal
        bins over its declared bounds, else over the observed range (recorded)."""
        declared = edges_of(self.codebook, column)
        typed = self.typed_bounds() if column == self.column.currentText() else (None, None)
        if declared is not None and not (bounds_first and None not in typed):
            return declared
        seen = (column, "bounds") in self.observed
        low, high = self.bounds_for(column)
        if not seen and (column, "bounds") in self.observed:  # the edges are what is published
            self.observed.discard((column, "bounds"))
            self.observed.add((column, "edges"))
        return equal_edges(low, high, self.bins.value())
