"""Why DP: the differencing, reconstruction and membership attacks as three views (the pages of
the Attacks tab), each on exact answers first, then through a chosen mechanism at a chosen ε.

Each view's settings are declared once (``SETTINGS``) and drive its controls; a lesson step sets
them by name. The jobs (:func:`differencing_job`, :func:`reconstruction_job`,
:func:`membership_job`) run in the compute service's workers and only call the data layer and
the core (:mod:`dpexplorer.data.attack_rows`, :mod:`dpexplorer.core.attacks`). The views read
the true data, release nothing and charge nothing; in teaching mode what the truth decides (the
person's value, the share recovered, the true count) is hidden until Reveal is ticked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QWidget

from dpexplorer.core import attacks
from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.mechanisms.params import EPSILON, Param, choice, number, validate_params, whole_number
from dpexplorer.data.attack_rows import difference_person, first_value, membership_of, secret_bits
from dpexplorer.gui import palette
from dpexplorer.gui.param_controls import ParamPanel
from dpexplorer.gui.views.base import BLUE, GREY, ORANGE, RED, ResultView, new_plot
from dpexplorer.gui.views.run_controls import RunControls

HIDDEN = "hidden (tick Reveal)"
TRIALS = 4000
"""Repetitions of the differencing attack whose posteriors the histogram shows."""

_EPS = EPSILON.with_note("The total ε of the attacker's answers.")
_NOISE_HELP = "exact: the true answers; laplace / gaussian: the DP mechanism at the total ε."
_ANSWERS = ("exact", "laplace", "gaussian")
DIFFERENCING: tuple[Param, ...] = (
    whole_number("row", "person (row)", default=0, low=0, high=10_000_000, help="The row attacked."),
    choice("noise", "answers", default="exact", choices=_ANSWERS, help=_NOISE_HELP),
    _EPS,
    number("prior", "attacker's prior", default=0.5, low=0.01, high=0.99, help="Belief before the answers."),
)
RECONSTRUCTION: tuple[Param, ...] = (
    whole_number("rows", "secret rows n", default=120, low=10, high=2000, help="Rows of the secret column."),
    whole_number("queries", "queries Q", default=240, low=1, high=4000, help="Random subset counts asked."),
    choice(
        "noise",
        "answers",
        default="exact",
        choices=("exact", "bounded", "laplace"),
        help="exact; bounded: uniform noise in [−B, B]; laplace: total ε split over the Q answers.",
    ),
    number(
        "magnitude", "noise bound B", default=2.0, low=0.0, high=200.0, help="Each answer off by at most B."
    ),
    _EPS,
)
MEMBERSHIP: tuple[Param, ...] = (
    choice("noise", "releases", default="laplace", choices=_ANSWERS, help=_NOISE_HELP),
    _EPS,
    whole_number(
        "trials", "releases of each", default=20_000, low=100, high=1_000_000, help="From D and D′."
    ),
)
SETTINGS: dict[str, tuple[Param, ...]] = {
    "differencing": DIFFERENCING,
    "reconstruction": RECONSTRUCTION,
    "membership": MEMBERSHIP,
}


# ------------------------------------------------------------------ jobs (worker side)
@dataclass(frozen=True, eq=False)
class DifferencingShown:
    column: str
    value: Any
    result: attacks.DifferencingResult
    posteriors: np.ndarray


@dataclass(frozen=True, eq=False)
class ReconstructionShown:
    column: str
    value: Any
    run: attacks.ReconstructionResult
    vs_noise: attacks.ReconstructionCurve
    vs_queries: attacks.ReconstructionCurve


@dataclass(frozen=True, eq=False)
class MembershipShown:
    column: str
    value: Any
    count: int
    result: attacks.MembershipResult


def _value(dataset: Any, column: str, value: str) -> Any:
    return value if value else first_value(dataset, column)


def differencing_job(
    dataset: Any, column: str, value: str, settings: dict[str, Any], seed: int
) -> DifferencingShown:
    """One differencing attack on the chosen row and :data:`TRIALS` repetitions of it."""
    s = validate_params(DIFFERENCING, settings)
    chosen = _value(dataset, column, value)
    kw = {"noise": s["noise"], "epsilon": s["epsilon"]}
    result = difference_person(dataset, column, chosen, s["row"], seed=seed, **kw)
    bits = np.array([0, 1]) if result.truth else np.array([1, 0])  # only the person's bit matters
    posteriors = attacks.differencing_trials(
        bits, 1, TRIALS, np.random.default_rng(seed), prior=s["prior"], **kw
    )
    if s["prior"] != 0.5:  # the single run at the declared prior too
        result = attacks.differencing_attack(bits, 1, np.random.default_rng(seed), prior=s["prior"], **kw)
    return DifferencingShown(column, chosen, result, posteriors)


def noise_grid(rows: int) -> np.ndarray:
    """Bounded-noise magnitudes B for the first plot: 0 and up to 3 sqrt(n) (Dinur-Nissim's
    threshold is of order sqrt(n))."""
    return np.concatenate([[0.0], np.geomspace(0.25, 3 * np.sqrt(rows), 7)])


def query_grid(rows: int, queries: int) -> np.ndarray:
    """Numbers of queries Q for the second plot, from n/8 to the larger of 2n and the chosen Q."""
    top = max(2 * rows, queries)
    return np.unique(np.round(np.geomspace(max(rows / 8, 1), top, 6)).astype(int))


def reconstruction_job(
    dataset: Any,
    column: str,
    value: str,
    settings: dict[str, Any],
    seed: int,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> ReconstructionShown:
    """The attack at the chosen settings, the fraction recovered against the bounded noise's
    magnitude (Q fixed) and against Q (the chosen answers): 1 + 8 + up to 6 linear programs."""
    s = validate_params(RECONSTRUCTION, settings)
    chosen = _value(dataset, column, value)
    rng = np.random.default_rng(seed)
    bits = secret_bits(dataset, column, chosen, s["rows"], rng)
    kw = {"noise": s["noise"], "magnitude": s["magnitude"], "epsilon": s["epsilon"]}
    run = attacks.reconstruction_attack(bits, s["queries"], rng, cancel=cancel, **kw)
    checkpoint(cancel, progress, 0.1)

    def part(start: float) -> ProgressFn | None:
        return None if progress is None else (lambda f: progress(start + 0.45 * f))

    vs_noise = attacks.recovered_vs_noise(
        bits, s["queries"], noise_grid(s["rows"]), rng, cancel=cancel, progress=part(0.1)
    )
    queries = query_grid(s["rows"], s["queries"])
    vs_queries = attacks.recovered_vs_queries(bits, queries, rng, cancel=cancel, progress=part(0.55), **kw)
    return ReconstructionShown(column, chosen, run, vs_noise, vs_queries)


def membership_job(
    dataset: Any,
    column: str,
    value: str,
    settings: dict[str, Any],
    seed: int,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> MembershipShown:
    """The likelihood-ratio test on the count of ``column == value`` (D) and that count less one
    (D′), over the chosen number of releases of each."""
    s = validate_params(MEMBERSHIP, settings)
    chosen = _value(dataset, column, value)
    result = membership_of(
        dataset, column, chosen, s["trials"], noise=s["noise"], epsilon=s["epsilon"], seed=seed,
        cancel=cancel, progress=progress,
    )  # fmt: skip
    from dpexplorer.data.attack_rows import column_count

    return MembershipShown(column, chosen, column_count(dataset, column, chosen), result)


# ------------------------------------------------------------------ views (main thread)
class AttackView(ResultView):
    """Controls (the declared settings, the column and its value), a Reveal box shown in
    teaching mode, then a summary and the plots. ``settings_changed`` when a control moves."""

    settings_changed = Signal()
    kind: str = ""
    heading: str = ""
    about: str = ""
    axes: tuple[str, str] | None = None
    """The page's one plot's axis labels (None: the page places its own plots)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(self.heading, parent, explanation=self.about)
        self.controls = ParamPanel()
        self.controls.build(SETTINGS[self.kind])
        self.controls.changed.connect(lambda _v: self.settings_changed.emit())
        self.column = QLineEdit("sex")
        self.column.setToolTip("The sensitive column the attack targets")
        self.value = QLineEdit("Female")
        self.value.setToolTip("The value that makes a row's secret 1 (empty: the column's smallest)")
        for edit in (self.column, self.value):
            edit.editingFinished.connect(self.settings_changed.emit)
        self.reveal = QCheckBox("Reveal the truth")
        self.reveal.setToolTip("Teaching mode hides what only the true data know until this is ticked")
        self.reveal.toggled.connect(lambda _on: self._redraw())
        self.reveal.hide()
        self.teaching = False
        row = QHBoxLayout()  # under the sliders: beside them, "Female" was cut at 1280 x 720
        for text, edit in (("secret:", self.column), ("=", self.value)):
            edit.setMinimumWidth(edit.fontMetrics().horizontalAdvance("Female") + 16)
            row.addWidget(QLabel(text))
            row.addWidget(edit)
        row.addWidget(self.reveal)
        row.addStretch(1)
        self.target_row = row
        """The column, its value and Reveal: a page adds its own buttons here (one line less)."""
        self.body.addWidget(self.controls)
        self.body.addLayout(row)
        if self.axes is not None:
            self.plot = new_plot(*self.axes)
            self.place_plots((self.plot, 1))

    def settings(self) -> dict[str, Any]:
        return self.controls.values()

    def target(self) -> tuple[str, str]:
        return self.column.text().strip(), self.value.text().strip()

    def set_settings(self, values: dict[str, Any]) -> None:
        """Set some settings (a lesson step's: the declared ones, ``column`` and ``value``)."""
        values = dict(values)
        if "column" in values:
            self.column.setText(str(values.pop("column")))
        if "value" in values:
            self.value.setText(str(values.pop("value")))
        self.controls.blockSignals(True)
        self.controls.set_values({k: v for k, v in values.items() if k in self.controls.values()})
        self.controls.blockSignals(False)
        self.settings_changed.emit()

    def set_teaching(self, on: bool) -> None:
        self.teaching = on
        self.reveal.setVisible(on)
        self._redraw()

    @property
    def hide_truth(self) -> bool:
        return self.teaching and not self.reveal.isChecked()

    def _redraw(self) -> None:
        if self.result is not None:
            self.show_result(self.result)

    def show_result(self, result: Any) -> None:
        raise NotImplementedError


def _baseline(plot: pg.PlotWidget, value: float) -> None:
    dash = pg.QtCore.Qt.PenStyle.DashLine
    plot.addItem(pg.InfiniteLine(value, angle=0, pen=palette.pen(GREY, 2, style=dash)))


class DifferencingView(AttackView):
    kind = "differencing"
    heading = "Differencing: two counts that differ by one person"
    about = (
        "“How many have the value?” minus “how many have it, leaving out this row?” is the "
        "person's value. Under DP each count is noisy (ε/2 each): the attacker's belief stays "
        "below prior·e<sup>ε</sup>/(prior·e<sup>ε</sup> + 1 − prior) (Dwork &amp; Roth 2014, §1)."
    )
    axes = ("attacker's posterior that the person has the value", "share of attacks")

    def show_result(self, shown: DifferencingShown) -> None:
        self.start_result(shown)
        r = shown.result
        said = "has" if r.guess else "does not have"
        truth = HIDDEN if self.hide_truth else ("has it" if r.truth else "does not have it")
        how = "exact answers" if r.noise == "exact" else f"{r.noise} noise, total ε = {r.epsilon:g}"
        digits = ",.0f" if r.noise == "exact" else ",.2f"
        self.set_text(
            self.summary,
            f"Count with the value: <b>{r.count_all:{digits}}</b>; "
            f"without the person: <b>{r.count_others:{digits}}</b> "
            f"({how}). The attacker concludes the person {said} {shown.column} = {shown.value} "
            f"(belief <b>{r.posterior:.3f}</b>, "
            f"DP bound <b style='color:{palette.css(RED)}'>{r.bound:.3f}</b>). "
            f"Truth: the person {truth}.",
        )
        counts, edges = np.histogram(shown.posteriors, bins=40, range=(0.0, 1.0))
        self.plot.addItem(
            pg.BarGraphItem(
                x0=edges[:-1], x1=edges[1:], height=counts / counts.sum(), brush=palette.brush(BLUE, 160)
            )
        )
        dash = pg.QtCore.Qt.PenStyle.DashLine
        self.plot.addItem(pg.InfiniteLine(r.bound, angle=90, pen=palette.pen(RED, 3, style=dash)))
        self.plot.addItem(pg.InfiniteLine(r.posterior, angle=90, pen=palette.pen(ORANGE, 3)))
        self.plot.setRange(xRange=(0, 1), yRange=(0, 1.05 * max(counts.max() / counts.sum(), 0.05)))
        self.columns = {"bin low": list(edges[:-1]), "share": list(counts / counts.sum())}


def _answers(r: attacks.ReconstructionResult) -> str:
    """How the attacker's answers were made, in words."""
    if r.noise == "bounded":
        return f"answers off by up to B = {r.scale:g}"
    if r.noise == "laplace":
        return f"Laplace answers, total ε = {r.epsilon:g} (ε/Q each: noise scale {r.scale:,.4g})"
    return "exact answers"


class ReconstructionView(AttackView):
    kind = "reconstruction"
    run_requested = Signal()
    cancel_requested = Signal()

    heading = "Reconstruction (Dinur & Nissim 2003): a secret column from random subset counts"
    about = (
        "Q random subsets of n secret rows are counted; the attacker solves a linear program "
        "(scipy's HiGHS) and rounds. Noise well below √n per answer still gives the column "
        "away; the Laplace mechanism with the total ε split over the Q answers does not."
    )

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.run = RunControls(
            "Run attack",
            "Draw the secret sample and the queries, and solve the attacker's linear programs",
            "Stop the attack",
            "solving… %p%",
            busy="Solving the attacker's linear programs…",
            cancelled="Cancelled: nothing was drawn.",
        )
        self.run.set_ready(True)
        self.run.run_requested.connect(self.run_requested)
        self.run.cancel_requested.connect(self.cancel_requested)
        self.run.status.hide()  # the summary says what was run; the plots keep the line
        self.run.info.hide()
        self.run.progress.setMaximumWidth(self.run.fontMetrics().horizontalAdvance("solving… 100%") + 24)
        self.target_row.addWidget(self.run)
        self.noise_plot = new_plot("bounded noise per answer B", "share recovered")
        self.queries_plot = new_plot("queries Q", "share recovered")
        self.place_plots((self.noise_plot, 1), (self.queries_plot, 1))

    def show_result(self, shown: ReconstructionShown) -> None:
        self.start_result(shown)
        self.run.idle("")
        r = shown.run
        how = _answers(r)
        if self.hide_truth:
            score = f"recovered: {HIDDEN}"
        else:
            score = (
                f"recovered <b>{r.recovered:.1%}</b> of the secret; guessing the majority value for "
                f"everyone gets <b style='color:{palette.css(GREY)}'>{r.baseline:.1%}</b>"
            )
        self.set_text(
            self.summary,
            f"{r.rows} secret rows ({shown.column} = {shown.value}), {r.queries} random subset counts, "
            f"{how}: the attacker {score}.",
        )
        if self.hide_truth:
            return
        for plot, curve in ((self.noise_plot, shown.vs_noise), (self.queries_plot, shown.vs_queries)):
            plot.plot(
                curve.xs,
                curve.recovered,
                pen=palette.pen(BLUE, 3),
                symbol="o",
                symbolBrush=palette.brush(BLUE),
            )
            _baseline(plot, curve.baseline)
            xs = np.append(
                curve.xs, r.scale if plot is self.noise_plot and r.noise == "bounded" else r.queries
            )
            plot.setRange(xRange=(0.0, float(xs.max())), yRange=(0.4, 1.02), padding=0.04)
        if r.noise == "bounded":
            self.noise_plot.plot([r.scale], [r.recovered], pen=None, symbol="star", symbolSize=16,
                                 symbolBrush=palette.brush(ORANGE))  # fmt: skip
        self.queries_plot.plot([r.queries], [r.recovered], pen=None, symbol="star", symbolSize=16,
                               symbolBrush=palette.brush(ORANGE))  # fmt: skip
        self.columns = {
            "B": list(shown.vs_noise.xs),
            "recovered vs B": list(shown.vs_noise.recovered),
            "Q": list(shown.vs_queries.xs),
            "recovered vs Q": list(shown.vs_queries.recovered),
        }

    def run_started(self) -> None:
        self.run.started(self.run.busy)

    def set_progress(self, fraction: float) -> None:
        self.run.set_progress(fraction)

    def show_error(self, message: str) -> None:
        self.run.idle("")
        super().show_error(message)


class MembershipView(AttackView):
    kind = "membership"
    heading = "Membership inference: is this person in the data?"
    about = (
        "The likelihood-ratio test between M(D) and M(D′) (D less one person) on repeated "
        "releases of the count. Under ε-DP its rates stay in the region TPR ≤ e<sup>ε</sup>·FPR + δ "
        "and 1 − FPR ≤ e<sup>ε</sup>(1 − TPR) + δ (Kairouz, Oh &amp; Viswanath 2015)."
    )
    axes = ("false-positive rate (flags “in” when out)", "true-positive rate")

    def show_result(self, shown: MembershipShown) -> None:
        self.start_result(shown)
        r = shown.result
        count = HIDDEN if self.hide_truth else f"{shown.count:,}"
        best = int(np.argmax(r.tpr - r.fpr))
        if r.epsilon is None:
            verdict = "exact counts: the test is never wrong (TPR 1 at FPR 0), no ε bounds it."
        else:
            excess = float(attacks.dp_region_excess(r.tpr, r.fpr, r.epsilon, r.delta).max())
            sigma = np.sqrt((1 + np.exp(2 * r.epsilon)) / (4 * r.trials))
            verdict = (
                f"{r.noise}, ε = {r.epsilon:g}: best TPR {r.tpr[best]:.3f} at FPR {r.fpr[best]:.3f}; "
                f"above the red limit by at most {max(excess, 0.0):.3f} (sampling error {sigma:.3f})."
            )
        self.set_text(
            self.summary,
            f"True count of {shown.column} = {shown.value}: {count}. "
            f"{r.trials:,} releases of each: {verdict}",
        )
        alphas = np.linspace(0, 1, 201)
        if r.epsilon is not None:
            grow = np.exp(r.epsilon)
            top = np.minimum(1.0, np.minimum(grow * alphas + r.delta, 1 - (1 - alphas - r.delta) / grow))
            self.plot.plot(alphas, top, pen=palette.pen(RED, 3), name=f"ε-DP limit (ε = {r.epsilon:g})")
        self.plot.plot(alphas, alphas, pen=palette.pen(GREY, 1))
        self.plot.plot(r.fpr, r.tpr, pen=None, symbol="o", symbolBrush=palette.brush(BLUE), name="LR test")
        self.plot.setRange(xRange=(0, 1), yRange=(0, 1))
        self.columns = {"fpr": list(r.fpr), "tpr": list(r.tpr)}


VIEWS: dict[str, Callable[[], AttackView]] = {
    "differencing": DifferencingView,
    "reconstruction": ReconstructionView,
    "membership": MembershipView,
}
JOBS: dict[str, Callable[..., Any]] = {
    "differencing": differencing_job,
    "reconstruction": reconstruction_job,
    "membership": membership_job,
}
