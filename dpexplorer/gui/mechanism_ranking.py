"""Which mechanism for this query? Under the mechanism picker: every applicable mechanism's
expected 95 % error at the current ε on the current query (:mod:`dpexplorer.core.ranking`,
computed on a worker like the accuracy view), smallest first, the best marked, each name a link
that chooses it; when the chosen mechanism is not the best, a line says how many times more
accurate the best is."""

from __future__ import annotations

import html
import math
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from dpexplorer.core.mechanisms.base import Mechanism, QueryInput
from dpexplorer.core.ranking import Ranking, rank_mechanisms
from dpexplorer.gui.compute import ComputeService
from dpexplorer.release.presentation import level_text, plain, privacy_number

RANKING_JOB = "mechanism-ranking"
CI_LEVEL = 0.95
SHOWN_DIGITS = 3
"""Significant digits of an expected error (a guide for a choice, not a released value)."""


def _error_text(halfwidth: float) -> str:
    if math.isnan(halfwidth):
        return "—"
    if math.isinf(halfwidth):
        return "no finite interval"
    return f"±{plain(halfwidth, digits=SHOWN_DIGITS)}"


def times_text(times: float) -> str:
    """ "23,000×", "3.4×", "∞×"."""
    if math.isinf(times):
        return "∞×"
    if times >= 100:
        return f"{float(plain(times, digits=2)):,.0f}×"
    return f"{plain(times, digits=2)}×"


def ranking_html(ranking: Ranking, chosen: str) -> str:
    """The ranking as rich text: a table, best marked ★, the chosen mechanism marked, each name
    a link (``href`` = the mechanism's name)."""
    best = set(ranking.best)
    rows = []
    for entry in ranking.entries:
        mark = "★" if entry.name in best else ""
        name = f'<a href="{html.escape(entry.name)}">{html.escape(entry.label)}</a>'
        if entry.delta:
            name += f" (δ = {privacy_number(entry.delta)})"
        if entry.name == chosen:
            name = f"<b>{name}</b> ◀ chosen"
        error = _error_text(entry.halfwidth)
        times = ranking.times_best(entry.name)
        if entry.note:
            error = f"<span title='{html.escape(entry.note)}'>— (hover)</span>"
        elif not entry.comparable:
            error = f"<i>another error: {html.escape(entry.measure)}</i>"
        elif entry.name not in best and best and math.isfinite(times):
            error += f" ({times_text(times)})"
        rows.append(f"<tr><td>{mark}</td><td>{name}</td><td align='right'>{error}</td></tr>")
    head = (
        f"<b>Expected error at ε = {privacy_number(ranking.epsilon)}</b> ({level_text(ranking.ci_level)} "
        "interval of the noise, on this data):"
    )
    hint = ""
    times = ranking.times_best(chosen)
    if chosen not in best and best and not math.isnan(times):
        first = next(e for e in ranking.entries if e.name in best)
        better = (
            f"is {times_text(times)} more accurate"
            if math.isfinite(times)
            else f"has no error at all ({_error_text(first.halfwidth)})"
        )
        hint = f"<p><b>{html.escape(first.label)}</b> {better} on this query at the same ε.</p>"
    return f"{head}<table cellspacing='0' cellpadding='1'>{''.join(rows)}</table>{hint}"


class MechanismRanking(QLabel):
    """Placed in the mechanism panel under its picker; follows the explorer's inputs."""

    def __init__(
        self, compute: ComputeService, explorer: Any, panel: Any, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.compute, self.explorer, self.panel = compute, explorer, panel
        self.ranking: Ranking | None = None
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.RichText)
        # the panel's width is the query controls' business: the table wraps within what it gets
        # (a long mechanism name made the controls column wider than its scroll area)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setToolTip(
            "Each mechanism that applies to this query, at the ε (and δ) chosen above, by the "
            "half-width of the interval that holds its error with 95 % probability: the Accuracy "
            "tab's figure for each. Computed from the data (for you, not published). Click a name "
            "to choose it."
        )
        self.linkActivated.connect(self._choose)
        self.hide()
        layout = panel.layout()
        layout.insertWidget(layout.indexOf(panel.summary) + 1, self)
        explorer.inputs_changed.connect(self.set_inputs)
        compute.finished.connect(self._on_result)
        compute.failed.connect(self._on_failure)

    def set_inputs(self, mechanism: Mechanism, params: dict[str, Any], query: QueryInput, _seed: int) -> None:
        """Rank again for the inputs on screen (latest wins: a newer request cancels this one)."""
        mechanisms = self.explorer.mechanisms or ()
        applicable = [m for m in mechanisms if m.accepts(query) is None]
        if len(applicable) < 2:
            self.compute.cancel(RANKING_JOB)
            self.ranking = None
            self.hide()
            return
        epsilon = float(params["epsilon"])
        delta = params.get("delta")
        chosen = {**self.panel.chosen_values(), mechanism.name: dict(params)}
        self._chosen = mechanism.name
        self.compute.submit(
            RANKING_JOB,
            rank_mechanisms,
            tuple(applicable),
            query,
            epsilon,
            delta=None if delta is None else float(delta),
            params=chosen,
            ci_level=CI_LEVEL,
            reference=mechanism.name,
        )

    def _on_result(self, view: str, _generation: int, result: object) -> None:
        if view != RANKING_JOB:
            return
        self.ranking = result  # type: ignore[assignment]
        self.setText(ranking_html(self.ranking, self._chosen))  # type: ignore[arg-type]
        self.show()

    def _on_failure(self, view: str, _generation: int, message: str) -> None:
        if view == RANKING_JOB:
            self.ranking = None
            self.setText(f"No ranking of the mechanisms: {html.escape(message)}")
            self.show()

    def _choose(self, name: str) -> None:
        self.panel.select(name)
