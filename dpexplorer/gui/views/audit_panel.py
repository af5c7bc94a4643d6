"""The audit button of the neighbouring-datasets view (issue 21, item 4): "is this really ε?".

It runs two black-box tests (threshold events, and the hockey-stick divergence test:
:func:`dpexplorer.core.hockey_stick.strongest_mechanism_audit`) on the mechanism, parameters and
neighbours on screen, on a worker through the compute service, with progress and cancel, and
shows (naming the test that gave it) the measured lower bound (a 95 % lower confidence bound
on ε from simulated outputs) beside the claimed ε and the event that gave it. A bound above the
claim is evidence of a bug in the mechanism's claim; a bound below it proves nothing (the
auditor only finds leaks)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from PySide6.QtWidgets import QHBoxLayout, QWidget

from dpexplorer.core.audit import AuditResult
from dpexplorer.core.cancel import CancelToken, ProgressFn
from dpexplorer.core.figures import privacy_number
from dpexplorer.core.hockey_stick import StrongestBound, strongest_mechanism_audit
from dpexplorer.core.mechanisms.base import Mechanism, NumericInput, QueryInput
from dpexplorer.gui import palette
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.views.run_controls import RunControls

JOB = "audit"
DEFAULT_DRAWS = 1_000_000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class AuditReport:
    """What the panel shows: the claim, the auditor's result, how long it took."""

    mechanism: str
    claimed_epsilon: float
    delta: float
    result: AuditResult
    confidence: float
    seconds: float
    gap: float | None = None
    """|f(D) − f(D')| on the audited neighbours (a numeric query), None otherwise."""
    sensitivity: float | None = None
    """The sensitivity the noise is calibrated for (the worst case over all neighbours)."""
    strongest: StrongestBound | None = None
    """Both tests' bounds and which one is larger (``result`` is the threshold test's)."""

    @property
    def epsilon_lb(self) -> float:
        """The lower confidence bound shown: the larger test's."""
        return self.strongest.epsilon_lb if self.strongest is not None else self.result.epsilon_lb

    @property
    def violation(self) -> bool:
        """True when the measured lower bound exceeds the claimed ε (evidence of a bug)."""
        return self.epsilon_lb > self.claimed_epsilon


def run_audit(
    mechanism: Mechanism,
    params: dict[str, Any],
    query: QueryInput,
    n_draws: int = DEFAULT_DRAWS,
    confidence: float = CONFIDENCE,
    *,
    seed: int | None = None,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> AuditReport:
    """The audit job (runs on a worker). ``seed`` None (the button) draws fresh randomness, so
    repeated audits differ; tests pass one."""
    start = time.perf_counter()
    claimed, delta = mechanism.epsilon_delta(mechanism.validate(params), query)
    strongest = strongest_mechanism_audit(
        mechanism, params, query, rng=np.random.default_rng(seed), n_draws=n_draws, confidence=confidence,
        cancel=cancel, progress=progress,
    )  # fmt: skip
    result = strongest.threshold
    gap = sensitivity = None
    if isinstance(query, NumericInput):
        gap = float(np.max(np.abs(np.atleast_1d(query.value_d) - np.atleast_1d(query.value_d_prime))))
        sensitivity = float(query.sensitivity_l1)
    seconds = time.perf_counter() - start
    return AuditReport(
        mechanism.label, claimed, delta, result, confidence, seconds, gap, sensitivity, strongest
    )


FAR_BELOW = 0.1
"""A measured bound below this share of the claim is explained (why the audit found so little)."""


def _why_low(report: AuditReport) -> str:
    """Why a bound far below the claim is no surprise, when these neighbours barely differ."""
    if report.epsilon_lb >= FAR_BELOW * report.claimed_epsilon or not report.sensitivity:
        return ""
    if report.gap is None or report.gap >= FAR_BELOW * report.sensitivity:
        return ""
    return (
        f" <i>Why so low:</i> on these neighbours f(D) and f(D') differ by only {report.gap:.3g}, while "
        f"the noise is calibrated for a change of {report.sensitivity:.3g}, the most one person can "
        "move the answer over all datasets. Outputs on D and D' then have nearly the same "
        "distribution and no event tells them apart: the claimed ε is a worst case these "
        "neighbours do not reach (and an audit that finds no leak proves nothing)."
    )


def describe(report: AuditReport) -> str:
    """The result in words (rich text)."""
    r = report.result
    claim = f"claimed ε = {privacy_number(report.claimed_epsilon)}"
    if report.delta:
        claim += f" (δ = {privacy_number(report.delta)})"
    head = (
        f"<b>Measured ε ≥ {privacy_number(report.epsilon_lb)}</b> ({report.confidence:.0%} confidence, "
        f"{report.seconds:.1f} s) — {claim}. "
    )
    event, direction = _event(report)
    if event == "none":
        return head + "No event showed any privacy loss (this never proves privacy)." + _why_low(report)
    likelier = "under D" if direction == "D>D'" else "under D'"
    found = f"Bounded by the {_test(report)}: event {event}, likelier {likelier}"
    if report.strongest is None or report.strongest.divergence is None or r.epsilon_lb >= report.epsilon_lb:
        found += f" (P ≥ {r.p_lo:.4g} against ≤ {r.p_hi:.4g})"
    found += "."
    if report.violation:
        return (
            f'<span style="color:{palette.css(palette.ERROR_TEXT)}"><b>Violation:</b> the measured lower '
            "bound exceeds the "
            "claimed ε: this mechanism leaks more than it claims.</span> " + head + found
        )
    below = " Below the claim: consistent with it (an audit can only find leaks)."
    return head + found + below + _why_low(report)


def _test(report: AuditReport) -> str:
    """Which test gave the bound shown, in words."""
    if report.strongest is None:
        return f"threshold events on the output ({report.result.n_draws:,} draws per side)"
    return report.strongest.test


def _event(report: AuditReport) -> tuple[str, str]:
    """The event and direction of the bound shown (the larger test's)."""
    strongest = report.strongest
    chosen = strongest.divergence if strongest is not None else None
    if chosen is not None and chosen.epsilon_lb > report.result.epsilon_lb:
        return chosen.event, chosen.direction
    return report.result.event, report.result.direction


class AuditPanel(QWidget):
    """A row under the neighbours plot: Audit, Cancel, a progress bar, the result; its Run /
    Cancel / progress row is a :class:`~dpexplorer.gui.views.run_controls.RunControls` bound to
    the job (so Esc returns it to rest as it does every panel's)."""

    IDLE = "Audit: check the claimed ε empirically on these neighbours."

    def __init__(self, compute: ComputeService, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.compute = compute
        self.inputs: tuple[Mechanism, dict[str, Any], QueryInput] | None = None
        self.report: AuditReport | None = None
        self.n_draws = DEFAULT_DRAWS
        self.controls = RunControls(
            "Audit ε",
            "Simulate the mechanism a million times on D and on D' and compute a lower confidence "
            "bound on its real ε (Ding et al. 2018): above the claim means a bug.",
            "Stop the audit",
            "%p%",
            cancelled="Audit cancelled.",
            status_beside=True,
        )
        self.controls.cancel_button.setText("Cancel audit")
        self.controls.progress.setMaximumWidth(160)
        self.button, self.cancel_button = self.controls.run_button, self.controls.cancel_button
        self.bar, self.label = self.controls.progress, self.controls.status
        self.controls.bind(compute, JOB)
        self.controls.run_requested.connect(self._submit)
        self.controls.cancel_requested.connect(lambda: compute.cancel(JOB))
        self.controls.idle(self.IDLE)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.controls)
        compute.finished.connect(self._on_result)
        compute.failed.connect(self._on_failure)

    def set_inputs(self, mechanism: Mechanism, params: dict[str, Any], query: QueryInput, *_: object) -> None:
        """The mechanism on screen changed: a running audit is for the old one, so stop it."""
        self.inputs = (mechanism, dict(params), query)
        self.compute.cancel(JOB)
        self.report = None
        self.controls.set_ready(True)
        self.controls.idle(self.IDLE)

    def run(self) -> None:
        """Press Audit."""
        self.controls.press_run()

    def _submit(self) -> None:
        if self.inputs is None:
            self.controls.idle(self.IDLE)
            return
        self.report = None
        self.controls.busy = f"Auditing: simulating {self.n_draws:,} outputs on each side…"
        self.controls.started(self.controls.busy)
        self.compute.submit(JOB, run_audit, *self.inputs, self.n_draws)

    def cancel(self) -> None:
        """Stop the audit (the controls return to rest when the job is cancelled)."""
        self.compute.cancel(JOB)
        self.controls.idle(self.controls.cancelled)

    def _on_result(self, view: str, generation: int, result: object) -> None:
        if view == JOB and isinstance(result, AuditReport):
            self.report = result
            self.controls.idle(describe(result))

    def _on_failure(self, view: str, generation: int, message: str) -> None:
        if view == JOB:
            self.controls.idle(f"Audit failed: {message}")
