"""The transcript view of private multiplicative weights (PMW) and sparse vector: one row per
query in the order asked.

PMW (Dwork & Roth 2014, section 4.2): each query's error against the true answer,
whether it was a lazy round (answered from the public distribution, free) or an update round
(a noisy answer that teaches the public distribution, spending budget), the update rounds used
of L, and "⊥" (no answer) once L are spent. Sparse vector (Dwork & Roth 2014, Algorithm 2):
each query's true answer against the threshold, whether it was reported above (⊤) or below (⊥),
and the ⊤ used of c. :func:`job` runs the mechanism once with the exploration RNG (never a
release); the view only draws."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from dpexplorer.core.mechanisms.base import Mechanism, QueryInput
from dpexplorer.core.mechanisms.pmw import LAZY, UPDATE, PMWTranscript
from dpexplorer.core.mechanisms.runs import NO_JOB, Job
from dpexplorer.core.mechanisms.sparse_vector import BOTTOM, HALTED, TOP, SparseVector, SVTTranscript
from dpexplorer.gui import palette
from dpexplorer.gui.views.base import (
    BLUE,
    GREY,
    ORANGE,
    RED,
    ResultView,
    dashed_line,
    keep_line_labels_inside,
)
from dpexplorer.gui.views.selection import (
    category_plot,
    hbars,
    label_rows,
)

MECHANISMS = ("pmw", "sparse_vector")
"""The mechanisms (registry names) this view serves."""
KIND_COLOURS = {LAZY: BLUE, UPDATE: ORANGE, TOP: ORANGE, HALTED: GREY}
"""Colours of the rounds; "⊥" is grey in PMW (no answer) and blue in sparse vector (below)."""


@dataclass(frozen=True, eq=False)
class TranscriptResult:
    """One run's transcript, as drawn. Per query: ``values`` (PMW: the error |answer − true
    answer|, NaN for "⊥"; sparse vector: the true answer), ``kinds`` and ``used`` (budget-spending
    rounds so far, including this query). ``transcript`` is the mechanism's own record."""

    mechanism: str
    name: str
    query_labels: tuple[str, ...]
    values: np.ndarray
    kinds: tuple[str, ...]
    used: np.ndarray
    limit: int
    threshold: float
    epsilon: float
    seed: int
    transcript: PMWTranscript | SVTTranscript

    @property
    def is_pmw(self) -> bool:
        return isinstance(self.transcript, PMWTranscript)

    def count(self, kind: str) -> int:
        return self.kinds.count(kind)


def job(
    mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int, job: Job = NO_JOB
) -> TranscriptResult:
    """One run of PMW or sparse vector on D with the exploration RNG seeded by ``seed``."""
    rng = np.random.default_rng(seed)
    epsilon, _ = mechanism.epsilon_delta(params, query)
    if isinstance(mechanism, SparseVector):
        svt = mechanism.run(params, query, rng)
        kinds = tuple(svt.responses)
        values, limit = np.asarray(svt.true_answers, dtype=float), int(params["c"])
        used = np.cumsum(np.array([k == TOP for k in kinds], dtype=np.int64))
        transcript: PMWTranscript | SVTTranscript = svt
        threshold = svt.threshold
    else:
        pmw = mechanism.run(params, query, rng, cancel=job.cancel, progress=job.progress)  # type: ignore[attr-defined]
        kinds, values, limit = tuple(pmw.kinds), np.asarray(pmw.errors, dtype=float), pmw.max_updates
        used, transcript, threshold = np.asarray(pmw.updates_used), pmw, pmw.threshold
    return TranscriptResult(
        mechanism=mechanism.label,
        name=mechanism.name,
        query_labels=tuple(transcript.query_labels),
        values=values,
        kinds=kinds,
        used=used,
        limit=limit,
        threshold=float(threshold),
        epsilon=epsilon,
        seed=seed,
        transcript=transcript,
    )


def _square(colour: tuple[int, int, int]) -> str:
    return f"<span style='color:{palette.css(colour)}'>■</span>"


class TranscriptView(ResultView):
    """Left: each query's error (PMW) or true answer (sparse vector), coloured by its round,
    with the threshold. Right: the budget-spending rounds used so far, with their limit."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Transcript: every query in the order asked", parent)
        self.values = category_plot("error", "Error of each answer", "query (in the order asked)")
        self.rounds = category_plot("rounds used", "Rounds spent", "")
        self.rounds.setYLink(self.values)
        self.rounds.getAxis("left").setStyle(showValues=False)
        self.place_plots((self.values, 3), (self.rounds, 1))
        self.result: TranscriptResult | None = None

    def show_result(self, result: TranscriptResult) -> None:
        self.start_result(result)
        rows = np.arange(len(result.kinds), dtype=float)
        kinds = np.array(result.kinds, dtype=object)
        colours = self._colours(result)
        for kind, colour in colours.items():
            chosen = kinds == kind
            values = np.nan_to_num(result.values[chosen], nan=0.0)
            hbars(self.values, rows[chosen], values, colour, height=0.7)
        top = max(float(np.nanmax(result.values, initial=0.0)), result.threshold) * 1.15
        if result.is_pmw:  # no answer: a pale band across the row
            unanswered = rows[kinds == BOTTOM]
            hbars(self.values, unanswered, np.full(unanswered.size, top), GREY, height=0.7, alpha=45)
        self._vertical(self.values, result.threshold, f"threshold T = {result.threshold:.3g}")
        label_rows(self.values, result.query_labels)
        self.values.setXRange(0.0, top, padding=0.0)
        keep_line_labels_inside(self.values)
        self.values.setLabel(
            "bottom",
            "error |answer − true answer| (share of rows)"
            if result.is_pmw
            else "true answer (share of rows)",
        )
        self.values.setTitle("Error of each answer" if result.is_pmw else "True answer of each query")
        self._draw_rounds(result, rows)
        self.summary.setText(self._summary(result, colours))
        self.explanation.setText(self._explain(result))
        self.columns = {
            "query": list(result.query_labels),
            "kind": list(result.kinds),
            ("error" if result.is_pmw else "true_answer"): list(result.values),
            "rounds_used": list(result.used),
        }
        if result.is_pmw:
            transcript = result.transcript
            assert isinstance(transcript, PMWTranscript)
            self.columns["answer"] = list(transcript.answers)
            self.columns["true_answer"] = list(transcript.true_answers)

    @staticmethod
    def _colours(result: TranscriptResult) -> dict[str, tuple[int, int, int]]:
        if result.is_pmw:
            return {LAZY: BLUE, UPDATE: ORANGE}
        return {BOTTOM: BLUE, TOP: ORANGE, HALTED: GREY}

    def _draw_rounds(self, result: TranscriptResult, rows: np.ndarray) -> None:
        """The rounds used as a staircase down the queries, and the limit."""
        x = np.repeat(result.used.astype(float), 2)
        y = np.column_stack([rows - 0.5, rows + 0.5]).ravel()
        self.rounds.plot(x, y, pen=palette.pen(ORANGE, width=2))
        name = "L" if result.is_pmw else "c"
        self._vertical(self.rounds, float(result.limit), f"limit {name} = {result.limit}")
        # from -0.3: a "0" tick at the axis's very end was dropped, leaving c = 1's axis one label
        self.rounds.setXRange(-0.3, result.limit * 1.1 + 0.5, padding=0.0)
        keep_line_labels_inside(self.rounds)
        axis = self.rounds.getAxis("bottom")
        axis.setTicks(None if result.limit > 12 else [[(float(i), str(i)) for i in range(result.limit + 1)]])
        self.rounds.setLabel("bottom", "update rounds used" if result.is_pmw else "⊤ answers used")

    @staticmethod
    def _vertical(plot: pg.PlotWidget, x: float, label: str) -> None:
        # the label left of the line: a line at the axis's end would clip a label on its right
        plot.addItem(
            dashed_line(
                RED, label, 0.985, pos=x, width=2, fill=palette.colour(palette.PLOT_BACKGROUND, 230), side=1
            )
        )

    @staticmethod
    def _summary(result: TranscriptResult, colours: dict[str, tuple[int, int, int]]) -> str:
        n = len(result.kinds)
        if result.is_pmw:
            transcript = result.transcript
            assert isinstance(transcript, PMWTranscript)
            return (
                f"{_square(BLUE)} lazy: {result.count(LAZY):,} &nbsp; {_square(ORANGE)} update: "
                f"{result.count(UPDATE):,} (of at most L = {result.limit}) &nbsp; "
                f"<span style='color:{palette.css(GREY)}'>■</span> ⊥ (no answer, L spent): "
                f"{result.count(BOTTOM):,} &nbsp; — {n:,} queries. Largest error of an answered "
                f"query: <b>{transcript.max_error:.4g}</b> (share of rows). Seed {result.seed}; "
                f"run took {transcript.seconds:.3g} s."
            )
        del colours
        return (
            f"{_square(BLUE)} ⊥ below the threshold: {result.count(BOTTOM):,} &nbsp; "
            f"{_square(ORANGE)} ⊤ above: {result.count(TOP):,} (of at most c = {result.limit}) "
            f"&nbsp; {_square(GREY)} — not answered (halted): {result.count(HALTED):,} &nbsp; — "
            f"{n:,} queries. Seed {result.seed}."
        )

    @staticmethod
    def _explain(result: TranscriptResult) -> str:
        if result.is_pmw:
            return (
                f"<b>{result.mechanism}</b> keeps a public guess of the data (it starts uniform) "
                "and answers each counting query from it when a noisy test says the guess is "
                f"close enough (error below about T = {result.threshold:.3g}): a <b>lazy</b> round, "
                "free. Otherwise it answers with noise and corrects the guess: an <b>update</b> "
                f"round, which spends budget. After L = {result.limit} updates every further query "
                f"gets ⊥. ε = {result.epsilon:.4g} covers the whole stream. One simulated run "
                "(exploration only, never a release); change the seed for another."
            )
        return (
            f"<b>{result.mechanism}</b> says, for each query in turn, whether its answer is above "
            f"the threshold T = {result.threshold:.3g} (⊤) or below (⊥), comparing noisy answers "
            "with a noisy threshold. Only the ⊤ answers spend budget: after c = "
            f"{result.limit} of them it stops. ε = {result.epsilon:.4g} covers the whole stream. "
            "The bars are the true answers, for your eyes only: the mechanism releases only ⊤/⊥. "
            "One simulated run (exploration only); change the seed for another."
        )
