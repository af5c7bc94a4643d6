"""The views beyond the two core ones: the mechanism-specific view of the current mechanism,
where to clip, the budget plan and the risk view, wired to the compute service. Imported on a
worker with the mechanisms and built once they are in, after the window's first paint (none of
these tabs is the one shown at start: the clipping view's slider alone, superqt, took 0.06 s
of the start-up to import).

Each view brings its own pure job function (module-level ``job`` / ``budget_job`` /
``risk_job``); this module only decides which view is shown and routes requests, results and
errors between the views and the compute service."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QTabWidget

from dpexplorer.core.mechanisms.base import Mechanism, QueryInput
from dpexplorer.core.planning import PlannedMeasurement
from dpexplorer.gui.compute import ComputeService
from dpexplorer.gui.views import blr, pmw, ptr, selection, synthetic
from dpexplorer.gui.views.base import RunnerView, View
from dpexplorer.gui.views.budget import BudgetView
from dpexplorer.gui.views.budget_jobs import budget_job
from dpexplorer.gui.views.clipping import ClippingView
from dpexplorer.gui.views.risk import RiskView, risk_job

SPECIFIC_JOB = "specific"
BLR_RUN_JOB = "blr_run"
SYNTHETIC_RUN_JOB = "synthetic_run"
RUN_JOBS = {BLR_RUN_JOB: "blr", SYNTHETIC_RUN_JOB: "mst"}
"""The long jobs a view runs on request (its module's ``run_job``, with progress and Cancel),
by a mechanism that view serves: a :class:`~dpexplorer.gui.views.base.RunnerView`."""
BUDGET_JOB = "budget"
RISK_JOB = "risk"

SPECIFIC_VIEWS: tuple[tuple[ModuleType, Callable[[], View], str], ...] = (
    (selection, selection.SelectionView, "Selection"),
    (ptr, ptr.PTRView, "Distance to instability"),
    (pmw, pmw.TranscriptView, "Transcript"),
    (blr, blr.BLRView, "Synthetic data (BLR)"),
    (synthetic, synthetic.MarginalErrorView, "Synthetic data (marginals)"),
)


class Workspace(QObject):
    """Owns the mechanism-specific views, the clipping view and the budget and risk views."""

    def __init__(self, compute: ComputeService, tabs: QTabWidget, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.compute = compute
        self.tabs = tabs
        self.specific: dict[str, tuple[ModuleType, View, str]] = {}
        for module, factory, title in SPECIFIC_VIEWS:
            view = factory()
            for name in module.MECHANISMS:
                self.specific[name] = (module, view, title)
        self.blr_view: blr.BLRView = self.specific["blr"][1]  # type: ignore[assignment]
        self.shown_specific: View | None = None
        self.clipping_view = ClippingView(compute)  # it submits its own job; the window gives its context
        self.budget_view = BudgetView()
        self.risk_view = RiskView()
        self.current: tuple[Mechanism, dict[str, Any], QueryInput, int] | None = None
        self._stale: set[str] = set()
        self._wire()

    def _wire(self) -> None:
        self.budget_view.job_requested.connect(lambda req: self.compute.submit(BUDGET_JOB, budget_job, req))
        self.budget_view.plan_total_changed.connect(self.risk_view.set_plan)
        self.budget_view.released_changed.connect(self.risk_view.set_released)
        self.risk_view.job_requested.connect(lambda req: self.compute.submit(RISK_JOB, risk_job, req))
        for job in RUN_JOBS:
            view = self._runner(job)
            view.controls.bind(self.compute, job)  # progress, and idle when anyone cancels it
            view.run_requested.connect(lambda job=job: self._run(job))
            view.cancel_requested.connect(lambda job=job: self.compute.cancel(job))
        self.compute.finished.connect(self._on_result)
        self.compute.failed.connect(self._on_failure)

    # ------------------------------------------------------------------ the current mechanism
    def update(self, mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int) -> None:
        """The explorer's mechanism, parameters or query changed: refresh what depends on it."""
        for job in RUN_JOBS:
            self.compute.cancel(job)  # its controls go to rest (bound in _wire)
        self.current = (mechanism, params, query, seed)
        self._show_specific(mechanism.name)
        self.compute.cancel(SPECIFIC_JOB)
        self._stale = {SPECIFIC_JOB, RISK_JOB}
        self.submit_visible()

    def submit_visible(self) -> None:
        """Compute the out-of-date views that are on screen (see Explorer.submit_visible)."""
        if self.current is None:
            return
        mechanism, params, query, seed = self.current
        entry = self.specific.get(mechanism.name)
        if SPECIFIC_JOB in self._stale and entry is not None and entry[1].isVisible():
            self._stale.discard(SPECIFIC_JOB)
            self.compute.submit(SPECIFIC_JOB, entry[0].job, mechanism, params, query, seed)
        if RISK_JOB in self._stale and self.risk_view.isVisible():
            self._stale.discard(RISK_JOB)
            self.risk_view.set_current(self.planned(mechanism, params, query, "current statistic"))

    @staticmethod
    def planned(
        mechanism: Mechanism, params: dict[str, Any], query: QueryInput, label: str
    ) -> PlannedMeasurement:
        return PlannedMeasurement(label, mechanism.name, params, query)

    def _show_specific(self, name: str) -> None:
        entry = self.specific.get(name)
        view = entry[1] if entry else None
        if view is self.shown_specific:
            return
        if self.shown_specific is not None:
            self.tabs.removeTab(self.tabs.indexOf(self.shown_specific))
        self.shown_specific = view
        if view is not None and entry is not None:
            self.tabs.insertTab(2, view, entry[2])

    def _runner(self, job: str) -> RunnerView:
        view = self.specific[RUN_JOBS[job]][1]
        assert isinstance(view, RunnerView)
        return view

    def _run(self, job: str) -> None:
        if self.current is None:
            return
        self._runner(job).run_started()
        self.compute.submit(job, self.specific[RUN_JOBS[job]][0].run_job, *self.current)

    def stop(self) -> None:
        for job in RUN_JOBS:
            self.compute.cancel(job)

    # ------------------------------------------------------------------ results
    def _delivered_to(self, view: str) -> View | None:
        """The view a job's result or failure goes to (a long run's view excepted: see
        :meth:`_runner`); None when no view takes it now."""
        views = {SPECIFIC_JOB: self.shown_specific, BUDGET_JOB: self.budget_view, RISK_JOB: self.risk_view}
        return views.get(view)

    def _on_result(self, view: str, generation: int, result: object) -> None:
        if view in RUN_JOBS:
            self._runner(view).show_result(result)  # type: ignore[attr-defined]
        elif (target := self._delivered_to(view)) is not None:
            target.deliver(result)

    def _on_failure(self, view: str, generation: int, message: str) -> None:
        if view in RUN_JOBS:
            self._runner(view).run_failed(message)
        elif (target := self._delivered_to(view)) is not None:
            target.show_error(message)  # type: ignore[attr-defined]
