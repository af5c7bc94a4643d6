"""The public facts a query uses, as the window shows them (issue 40): each bound, category list
and bin edge of the query with its origin in the dataset's codebook (declared by the steward,
shipped with the app, estimated privately) or "not declared". A fact the codebook lacks is
never filled from the data: the views may explore with the data's own value, marked
"observed: not public", and the release is refused, naming the fact, until it is declared or
estimated privately (:func:`release_blockers`).

The codebook itself lives in :mod:`dpexplorer.data.codebook`; here only what the window reads
from it and writes into it (a fact declared in the query panel: origin "declared")."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data.codebook import Codebook, Fact, Unit, UsedFact, facts_used, undeclared
from dpexplorer.gui import palette

NOT_DECLARED = "not declared"
OBSERVED = "observed: not public"
FIELD_WORDS = {"bounds": "bounds", "categories": "categories", "edges": "bin edges"}
"""The facts the query panel reads from the codebook, as a sentence names them."""
NO_PRIVATE_EDGES = (
    "Bin edges cannot be estimated privately yet: declare them, or declare the bounds (equal bins "
    "over the declared bounds) or estimate the bounds privately"
)


def bounds_of(codebook: Codebook, column: str) -> tuple[float, float] | None:
    fact = codebook.fact(column, "bounds")
    return None if fact is None else (float(fact.value[0]), float(fact.value[1]))


def categories_of(codebook: Codebook, column: str) -> tuple[str, ...] | None:
    fact = codebook.fact(column, "categories")
    return None if fact is None else tuple(str(c) for c in fact.value)


def complete_categories_of(codebook: Codebook, column: str) -> tuple[str, ...] | None:
    """The codebook's categories of ``column`` when it says they are every value it can take."""
    fact = codebook.fact(column, "categories")
    return None if fact is None or not fact.complete else tuple(str(c) for c in fact.value)


def edges_of(codebook: Codebook, column: str) -> tuple[float, ...] | None:
    fact = codebook.fact(column, "edges")
    return None if fact is None else tuple(float(e) for e in fact.value)


def origin_words(fact: Fact | UsedFact | None) -> str:
    """Where a fact comes from, in words (``not declared`` for none)."""
    if fact is None or fact.origin is None:
        return NOT_DECLARED
    cited = f" ({fact.citation})" if fact.citation else ""
    if fact.origin == "estimated":
        row = f", ledger row {fact.ledger_id}" if fact.ledger_id is not None else ""
        return f"estimated privately{row}{cited}"
    if fact.origin == "shipped":
        return f"shipped with dpexplorer{cited}"
    return f"declared by the steward{cited}"


def value_words(field: str, value: Any) -> str:
    """A fact's value, short: ``[17, 90]``, ``7 categories``, ``10 bins``."""
    if value is None:
        return ""
    if field == "bounds":
        low, high = value
        return f"[{low:g}, {high:g}]"
    if field == "categories":
        return f"{len(value):,} categories"
    if field == "edges":
        return f"{len(value) - 1} bins"
    if field == "unit":
        column, groups, rows = value if isinstance(value, tuple) else (value, 1, 1)
        return f"{column} ({rows} row(s) in each of {groups} group(s) per person)"
    return str(value)


def declare_used(codebook: Codebook, query: Mapping[str, Any], citation: str) -> Codebook:
    """``codebook`` with each public fact ``query`` holds that it does not declare, and of which
    it declares nothing else, declared as the query has it (origin "declared", ``citation``):
    a plan file's facts are the steward's declarations. A fact its column's kind cannot have
    is left out (the export then names it)."""
    for used in facts_used(query, codebook):
        if used.origin is not None or used.value is None:
            continue
        try:
            if used.field == "unit" and codebook.unit is None and isinstance(used.value, tuple):
                column, groups, rows = used.value
                codebook = dataclasses.replace(codebook, unit=Unit(column, rows, groups, citation=citation))
            elif used.column and used.field in FIELD_WORDS and codebook.fact(used.column, used.field) is None:
                fact = Fact(used.value, "declared", citation, complete=False)
                codebook = codebook.with_fact(used.column, used.field, fact)
        except DPExplorerError:
            continue
    return codebook


def _short(text: str, limit: int = 70) -> str:
    """``text`` cut to ``limit`` characters at a word (the panel's line; the tooltip has all)."""
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def release_blockers(query: Any, codebook: Codebook) -> list[str]:
    """What stops ``query``'s release under ``codebook``: one sentence per public fact it uses
    that the codebook does not declare (:func:`dpexplorer.data.codebook.undeclared`), or the
    contradiction between them; empty when the release may go ahead. Reads no data."""
    try:
        return list(undeclared(query.to_dict(), codebook))
    except DPExplorerError as exc:
        return [str(exc)]


def release_refusal(blockers: Sequence[str]) -> str:
    """The window's refusal of a release whose facts are not all declared (nothing charged)."""
    listed = "; ".join(blockers)
    return (
        f"Release refused: not declared: {listed}. Each public fact a release uses must be "
        "declared (type it in the query panel, or Release > Codebook…) or estimated privately; "
        "a value read from the data would publish it. Nothing was charged."
    )


def facts_of(query: Any, codebook: Codebook) -> list[UsedFact]:
    """:func:`facts_used` of a built query (empty when the codebook cannot read it)."""
    try:
        return list(facts_used(query.to_dict(), codebook))
    except DPExplorerError:
        return []


def fact_records(query: Mapping[str, Any], codebook: Codebook) -> tuple[dict[str, Any], ...]:
    """Each public fact ``query`` uses with its origin as the codebook records it (``origin``
    None where it does not declare it), JSON-safe: what an exported analysis states."""
    return tuple(
        {
            "column": used.column,
            "field": used.field,
            "origin": used.origin,
            "citation": used.citation,
            "ledger_id": used.ledger_id,
        }
        for used in facts_used(query, codebook)
    )


class FactsBox(QWidget):
    """The query's public facts, one line each with its origin; a fact not declared shows
    "not declared" with two actions: declare it (the codebook dialog, at that column) and
    estimate it privately (bounds: the DP bounds helper; categories: private key selection;
    bin edges: not available, said in the disabled button's tooltip)."""

    declare_requested = Signal(str, str)
    """(column, field): open the codebook at this fact."""
    estimate_requested = Signal(str, str)
    """(column, field): estimate this fact privately (charged, recorded)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grid = QVBoxLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.lines: list[QLabel] = []
        self.buttons: dict[tuple[str, str], tuple[QPushButton, QPushButton]] = {}

    def show_facts(self, facts: Sequence[UsedFact], observed: set[tuple[str, str]]) -> None:
        """Lay out one line per fact (``observed``: the (column, field) pairs the query explores
        with the data's own value)."""
        while self.grid.count():
            item = self.grid.takeAt(0)
            if item is not None and (widget := item.widget()) is not None:
                widget.hide()  # now: deleted at the next event loop turn, it would still be drawn
                widget.deleteLater()
        self.lines, self.buttons = [], {}
        for used in facts:
            column = used.column or ""
            name = used.describe()
            if used.origin is None:
                seen = (column, used.field) in observed
                text = f"<b>{name}</b>: {NOT_DECLARED}" + (
                    f" — exploring with the data's own {FIELD_WORDS.get(used.field, used.field)} "
                    f"(<b>{OBSERVED}</b>); Release is refused until it is declared"
                    if seen
                    else " (Release is refused until it is declared)"
                )
            else:
                text = f"<b>{name}</b>: {value_words(used.field, used.value)} · {_short(origin_words(used))}"
            line = QLabel(text)
            line.setWordWrap(True)
            line.setToolTip(origin_words(used))  # the whole citation
            if used.origin is None:
                line.setStyleSheet(f"color: {palette.css(palette.WARNING_TEXT)};")
            self.grid.addWidget(line)
            self.lines.append(line)
            if used.origin is None and column and used.field in FIELD_WORDS:
                self._actions(column, used.field)
        self.setVisible(bool(facts))

    def _actions(self, column: str, field: str) -> None:
        declare = QPushButton("Declare…")
        declare.setToolTip(f"Type the {FIELD_WORDS[field]} of {column} in the codebook (public knowledge)")
        declare.clicked.connect(lambda: self.declare_requested.emit(column, field))
        estimate = QPushButton("Estimate privately…")
        if field == "edges":
            estimate.setEnabled(False)
            estimate.setToolTip(NO_PRIVATE_EDGES)
        else:
            how = "two DP quantiles" if field == "bounds" else "private key selection (a noisy threshold)"
            estimate.setToolTip(
                f"Estimate the {FIELD_WORDS[field]} of {column} with {how}: charged, recorded"
            )
        estimate.clicked.connect(lambda: self.estimate_requested.emit(column, field))
        row = QWidget()
        buttons = QHBoxLayout(row)
        buttons.setContentsMargins(12, 0, 0, 0)
        buttons.addWidget(declare)
        buttons.addWidget(estimate)
        buttons.addStretch(1)
        self.grid.addWidget(row)
        self.buttons[(column, field)] = (declare, estimate)

    def text(self) -> str:
        """Every line's text (for tests and the accessibility audit)."""
        return "\n".join(line.text() for line in self.lines)
