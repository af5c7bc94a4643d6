"""The marginal-error view of MST and AIM: for every 2-way marginal of the chosen columns, the
total-variation distance between the true marginal and the synthetic table's, beside the
independent-columns baseline (the product of the true 1-way marginals).

EXPLORATION ONLY: the errors compare with the true data, and the run draws its noise from the
seeded exploration generator (never a release). :func:`job` runs the mechanism once (selection,
measurement, estimation, records; cancellable between steps and fits); the view only draws."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtWidgets import QWidget

from dpexplorer.core.cancel import CancelToken, ProgressFn
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.marginals import Clique, MarginalInput, record_marginal, tvd
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput
from dpexplorer.core.mechanisms.mst import MarginalMechanism
from dpexplorer.gui import palette
from dpexplorer.gui.views.base import GREY, PURPLE, View
from dpexplorer.gui.views.selection import (
    BAR,
    category_plot,
    clear_and_show_error,
    error_label,
    hbars,
    label_rows,
    rich_label,
)

MECHANISMS = ("mst", "aim")
"""The mechanisms (registry names) this view serves."""


@dataclass(frozen=True, eq=False)
class MarginalErrors:
    """One run: per 2-way marginal (``labels``), the synthetic table's TVD to the true marginal,
    the independent baseline's, and whether the run measured that marginal."""

    mechanism: str
    labels: tuple[str, ...]
    synthetic: np.ndarray
    independent: np.ndarray
    measured: tuple[bool, ...]
    rows: int
    epsilon: float
    rho: float
    seconds: float
    seed: int


def pair_errors(query: MarginalInput, records: np.ndarray) -> tuple[list[Clique], np.ndarray, np.ndarray]:
    """Every 2-way marginal of the columns with its synthetic and independent-baseline TVD
    (exploration: reads the true counts)."""
    pairs: list[Clique] = list(itertools.combinations(range(len(query.columns)), 2))
    n = max(query.n, 1)
    synthetic, independent = [], []
    for pair in pairs:
        true = query.counts(pair)
        synthetic.append(tvd(true, record_marginal(records, query.sizes, pair)))
        product = np.outer(query.counts((pair[0],)), query.counts((pair[1],))).ravel() / n
        independent.append(tvd(true, product))
    return pairs, np.array(synthetic), np.array(independent)


def job(
    mechanism: Mechanism,
    params: dict[str, Any],
    query: QueryInput,
    seed: int,
    *,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> MarginalErrors:
    """One exploration run of MST or AIM on D (seeded) and its 2-way marginal errors."""
    if not isinstance(query, MarginalInput) or not isinstance(mechanism, MarginalMechanism):
        raise NotApplicableError(
            f"{mechanism.label} needs a marginals query (columns on public categories or bins)"
        )
    result = mechanism.run(params, query, np.random.default_rng(seed), cancel=cancel, progress=progress)
    pairs, synthetic, independent = pair_errors(query, result.records)
    measured = {m.clique for m in result.transcript.measurements}
    epsilon, _ = mechanism.epsilon_delta(params, query)
    return MarginalErrors(
        mechanism=mechanism.label,
        labels=tuple(query.name(p) for p in pairs),
        synthetic=synthetic,
        independent=independent,
        measured=tuple(p in measured for p in pairs),
        rows=len(result.records),
        epsilon=epsilon,
        rho=mechanism.rho(params),
        seconds=result.seconds,
        seed=seed,
    )


def _square(colour: tuple[int, int, int]) -> str:
    return f"<span style='color:{palette.css(colour)}'>■</span>"


class MarginalErrorView(View):
    """One row per 2-way marginal: the synthetic table's TVD (purple; marked * when the run
    measured that marginal) above the independent baseline's (grey)."""

    mechanisms = MECHANISMS

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Synthetic data: error of every 2-way marginal", parent)
        self.error = error_label()
        self.summary = rich_label()
        self.plot = category_plot(
            "total-variation distance", "True against synthetic 2-way marginals", "marginal"
        )
        self.body.addWidget(self.error)
        self.body.addWidget(self.summary)
        self.body.addWidget(self.plot, 1)
        self.result: MarginalErrors | None = None

    def show_error(self, message: str) -> None:
        clear_and_show_error(self, message, self.plot)

    def show_result(self, result: MarginalErrors) -> None:
        self.result = result
        self.error.hide()
        self.plot.clear()
        rows = np.arange(len(result.labels), dtype=float)
        hbars(self.plot, rows - BAR / 2, result.synthetic, PURPLE)
        hbars(self.plot, rows + BAR / 2, result.independent, GREY)
        names = [
            f"{name} *" if seen else name for name, seen in zip(result.labels, result.measured, strict=True)
        ]
        label_rows(self.plot, names)
        top = max(
            float(np.max(result.synthetic, initial=0.0)), float(np.max(result.independent, initial=0.0))
        )
        self.plot.setXRange(0.0, top * 1.1 if top > 0 else 1.0, padding=0.0)
        mean_s, mean_i = float(np.mean(result.synthetic)), float(np.mean(result.independent))
        self.summary.setText(
            f"{_square(PURPLE)} synthetic table (mean {mean_s:.3f}) &nbsp; {_square(GREY)} independent "
            f"columns (mean {mean_i:.3f}) &nbsp; * measured by the run &nbsp;·&nbsp; {result.rows:,} "
            f"records, ε = {result.epsilon:.3g} (ρ = {result.rho:.3g}), {result.seconds:.1f} s, "
            f"seed {result.seed}"
        )
        self.explanation.setText(
            f"{result.mechanism}. Exploration only: the errors compare the synthetic table with the "
            "TRUE data, and the run's noise comes from the seeded generator, not a release. The "
            "total-variation distance is half the l1 distance between the two marginals as shares "
            "(0: the same; 1: disjoint). The grey bars assume the columns independent: a synthetic "
            "table worth releasing should beat them where the columns depend on each other."
        )
        self.columns = {
            "marginal": list(result.labels),
            "measured": [int(m) for m in result.measured],
            "synthetic_tvd": list(result.synthetic),
            "independent_tvd": list(result.independent),
        }
