"""What a person reads after a release: a result card per release (each value rounded to the
digits its interval supports, the interval, a sentence in plain words, the epsilon charged and
what is left, links to the files) and the Released tab that lists them for the session.

Every number a person reads is formatted by :mod:`dpexplorer.release.presentation` (one
rounding rule for the window, the CLI, the CSV and the report); this module only lays out."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QVBoxLayout, QWidget

from dpexplorer.gui import palette
from dpexplorer.gui.jobs import Released
from dpexplorer.release import presentation

HELPER_SUFFIX = "(noisy)"
"""How a release labels the parts a statistic is computed from ("count (noisy)" of a mean)."""
MAX_PARTS = 4
"""The most helper parts listed by value; beyond, the card says how many (the files hold them)."""
MAX_ROWS = 12
"""The most values a card lists (a group-by may release hundreds: the rest are in the CSV)."""
FILE_NAMES = {
    "csv": "values (CSV)",
    "json": "values (JSON, full precision)",
    "provenance": "provenance",
    "report": "report (HTML)",
    "report_pdf": "report (PDF)",
    "parquet": "records (Parquet)",
}
TABLE_FILE_NAMES = {"csv": "records (CSV)", "json": "measured marginals (JSON)"}
"""A synthetic table's files (release/synthetic_tables.py), where they differ from a statistic's."""


def _value_rows(released: Released) -> list[tuple[str, str, str, str, bool]]:
    """(label, value, interval, sentence, finding) per released value, as the presentation
    module writes them (a category, ⊥ or an empty group has no interval: its own words; an
    interval that is not the noise's, exact or the declared range, is named and said so; what is
    no estimate is no finding, not in bold); a whole number without an interval (a synthetic
    table's records) has its thousands separated."""
    result = released.result
    intervals = result.confidence_intervals or (None,) * len(result.values)
    kinds = tuple(getattr(result, "interval_kinds", ()) or ())
    flags = (
        released.integral if isinstance(released.integral, tuple) else (released.integral,) * len(intervals)
    )
    rows = []
    for i, (label, value, interval) in enumerate(zip(result.labels, result.values, intervals, strict=True)):
        whole = flags[i] if i < len(flags) else False
        kind = kinds[i] if i < len(kinds) else None
        shown = presentation.show(value, interval, result.ci_level, integral=whole, kind=kind)
        text, sentence = shown.interval, shown.sentence
        number = shown.value if not whole or shown.low is not None else _thousands(shown.value)
        if interval is not None and kind in presentation.KIND_WORDS:
            text += f" ({presentation.KIND_WORDS[kind]})"
        elif isinstance(value, str) and not sentence:
            sentence = (
                "chosen with noise among the declared candidates: a category has no interval (the "
                "Selection tab shows how likely each one was before the release)"
            )
        rows.append((label, number, text, sentence, shown.finding))
    return rows


def _value_cell(value: str, finding: bool) -> str:
    """A value in bold when it is a finding; what is no estimate (an empty group, ⊥, the declared
    range) in plain type."""
    text = html.escape(value)
    return (
        f"<b style='font-size: large'>{text}</b>"
        if finding
        else f"<span style='font-size: large'>{text}</span>"
    )


def _thousands(text: str) -> str:
    """A whole number's text with its thousands separated ("48830" -> "48,830"), as the window
    writes every count of rows; any other text unchanged. Only where no interval follows: in
    "[48,826, 48,834]" the separators would read as the interval's own commas."""
    return f"{int(text):,}" if text.removeprefix("-").isdigit() else text


def _rank_line(released: Released) -> str:
    """A DP quantile's rank interval, in words (published.py: Dwork & Roth 2014, Thm 3.11)."""
    rank = getattr(released.result, "rank_within", None)
    if rank is None:
        return ""
    level = presentation.level_text(released.result.ci_level)
    return (
        f"<p>In ranks: with {level} probability, the number of rows below the released value is within "
        f"{rank:,} rows of the quantile's own rank (plus the grid's spacing).</p>"
    )


def _budget_line(released: Released) -> str:
    result = released.result
    guarantee = presentation.privacy_text(result.epsilon, result.delta)
    if released.charged is None:
        return (
            f"This release is {guarantee}-DP. Under the ledger's {released.method or 'accountant'} "
            "composition the total has no finite ε at the budget's δ: see the Budget tab."
        )
    left = max(released.left or 0.0, 0.0)
    return (
        f"This release is {guarantee}-DP. Charged <b>ε = {presentation.privacy_number(released.charged)}</b> "
        f"under {released.method} composition; <b>ε = {presentation.privacy_number(left)}</b> is left "
        f"of this dataset's budget of ε = {presentation.privacy_number(released.budget_epsilon)}."
    )


def _is_table(result: Any) -> bool:
    from dpexplorer.release.synthetic_tables import TableResult  # only once a release is shown

    return isinstance(result, TableResult)


def _file_links(files: dict[str, Path], table: bool = False) -> str:
    names = {**FILE_NAMES, **(TABLE_FILE_NAMES if table else {})}
    links = []
    for key, path in files.items():
        url = QUrl.fromLocalFile(str(path)).toString()
        links.append(f'<a href="{html.escape(url)}">{html.escape(names.get(key, key))}</a>')
    folder = QUrl.fromLocalFile(str(Path(next(iter(files.values()))).parent)).toString() if files else ""
    where = f' · <a href="{html.escape(folder)}">open the folder</a>' if folder else ""
    return "Files: " + " · ".join(links) + where


def card_html(released: Released) -> str:
    """The card's text as rich text (what :class:`ResultCard` shows)."""
    result = released.result
    rows = every = _value_rows(released)
    helpers = [r for r in rows if r[0].endswith(HELPER_SUFFIX)]
    if len(helpers) < len(rows):  # a mean's noisy count and sum: its parts, not the statistic
        rows = [r for r in rows if not r[0].endswith(HELPER_SUFFIX)]
    else:
        helpers = []
    level = presentation.level_text(result.ci_level)
    title = (
        f"<b>Released #{result.row_id}</b>: {html.escape(released.query)} with "
        f"{html.escape(released.mechanism)}, from {html.escape(released.dataset)}"
    )
    has_interval = any(r[2] for r in rows)
    head = f"<tr><th align='left'>{'' if len(rows) == 1 else 'label'}</th><th align='right'>value</th>"
    head += f"<th align='left'>{level} interval</th></tr>" if has_interval else "</tr>"
    body = "".join(
        f"<tr><td>{html.escape(label)}</td><td align='right'>{_value_cell(value, finding)}</td>"
        f"<td>{html.escape(interval)}</td></tr>"
        for label, value, interval, _, finding in rows[:MAX_ROWS]
    )
    more = (
        f"<p>… and {len(rows) - MAX_ROWS} more values, each with its interval, in the CSV.</p>"
        if len(rows) > MAX_ROWS
        else ""
    )
    if helpers:
        parts = ", ".join(f"{html.escape(label)} {html.escape(value)}" for label, value, *_ in helpers)
        if len(helpers) > MAX_PARTS:  # per group: a list no one reads on a card
            kinds = sorted({label.rsplit(": ", 1)[-1] for label, *_ in helpers})
            parts = f"{len(helpers)} values ({', '.join(html.escape(k) for k in kinds)} of each group)"
        more += (
            f"<p style='color: {palette.css(palette.MUTED_TEXT)}'>Released with it as its parts "
            f"(in the files too): {parts}.</p>"
        )
    sentences = [r[3] for r in rows if r[2]]
    # one sentence for one value; for many, the widest interval's (the others are narrower)
    sentence = (
        sentences[0] if len(sentences) == 1 else _widest_sentence(result, every) if sentences else rows[0][3]
    )
    return (
        f"<p>{title}</p><table cellspacing='0' cellpadding='3'>{head}{body}</table>{more}"
        f"<p>{html.escape(_capital(sentence))}</p>{_rank_line(released)}<p>{_budget_line(released)}</p>"
        f"<p>{_file_links(result.files, table=_is_table(result))}</p>"
        + (f"<p><b>Note:</b> {html.escape(released.report_warning)}</p>" if released.report_warning else "")
    )


def _capital(sentence: str) -> str:
    """A sentence as one: a capital first letter and a full stop ("" stays "")."""
    if not sentence:
        return ""
    sentence = sentence[0].upper() + sentence[1:]
    return sentence if sentence.endswith(".") else sentence + "."


def _widest_sentence(result: Any, rows: list[tuple[str, str, str, str, bool]]) -> str:
    """The sentence of the widest noise interval among the statistic's values (``rows``: one
    per released value, helper parts included; those are skipped)."""
    kinds = tuple(getattr(result, "interval_kinds", ()) or ())
    widths = [
        (high - low, i)
        for i, interval in enumerate(result.confidence_intervals or ())
        if interval is not None
        and not isinstance(result.values[i], str)
        and not rows[i][0].endswith(HELPER_SUFFIX)
        and (i >= len(kinds) or kinds[i] in (None, "noise"))
        for low, high in [interval]
        if math.isfinite(high - low)
    ]
    if not widths:
        return rows[0][3]
    _, i = max(widths)
    return f"The widest interval ({rows[i][0]}): {rows[i][3]}"


class ResultCard(QFrame):
    """One release, as a person reads it. ``text()`` is the card's plain text (for tests)."""

    def __init__(self, released: Released, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.released = released
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName("resultCard")
        self.setStyleSheet(
            f"#resultCard {{ background: {palette.css(palette.CARD_BACKGROUND)}; "
            f"border: 1px solid {palette.css(palette.CARD_BORDER)}; border-radius: 4px; }}"
        )
        self.label = QLabel(card_html(released))
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setWordWrap(True)
        self.label.setOpenExternalLinks(True)
        self.label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)

    def text(self) -> str:
        """The card as plain text, as a reader sees it."""
        from PySide6.QtGui import QTextDocument

        document = QTextDocument()
        document.setHtml(self.label.text())
        return document.toPlainText()


class ReleasedView(QScrollArea):
    """The Released tab: this session's releases, newest first, one card each."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.cards: list[ResultCard] = []
        inner = QWidget()
        self._layout = QVBoxLayout(inner)
        self.empty = QLabel(
            "Nothing released in this session yet. Release a statistic (Release menu, Ctrl+R): its "
            "result card appears here, and stays for the session."
        )
        self.empty.setWordWrap(True)
        self._layout.addWidget(self.empty)
        self._layout.addStretch(1)
        self.setWidget(inner)

    def add(self, released: Released) -> ResultCard:
        """Put ``released``'s card at the top and return it."""
        card = ResultCard(released)
        self.empty.hide()
        self._layout.insertWidget(0, card)
        self.cards.insert(0, card)
        self.verticalScrollBar().setValue(0)
        return card
