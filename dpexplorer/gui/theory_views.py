"""The views of the lecture notes' pictures: sensitivity side by side, composition as a random
walk, and BLR against PMW as the number of queries k grows. Built once the mechanisms are
imported (beside the workspace's views), they get the explorer's inputs and go through the
compute service like every other view: computed when shown and out of date, latest wins."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

from dpexplorer.core.mechanisms.base import Mechanism, QueryInput
from dpexplorer.gui.throttle import Throttle
from dpexplorer.gui.window_parts import WindowParts

if TYPE_CHECKING:
    from dpexplorer.gui.views.base import ResultView
    from dpexplorer.gui.views.error_against_k import ErrorAgainstKView
    from dpexplorer.gui.views.random_walk import RandomWalkView
    from dpexplorer.gui.views.sensitivity import SensitivityView

SENSITIVITY_JOB = "sensitivity"
RANDOM_WALK_JOB = "random walk"
ERROR_K_JOB = "error against k"
INPUT_JOBS = (SENSITIVITY_JOB, ERROR_K_JOB)
"""The jobs that follow the explorer's inputs (the random walk follows its own settings)."""


class TheoryViews(QObject):
    """Owns the sensitivity, random-walk and error-against-k views and their jobs."""

    def __init__(self, window: WindowParts) -> None:
        super().__init__(window)
        self.window = window
        self.sensitivity_view: SensitivityView | None = None
        self.random_walk_view: RandomWalkView | None = None
        self.error_k_view: ErrorAgainstKView | None = None
        self.current: tuple[Mechanism, dict[str, Any], QueryInput, int] | None = None
        self._stale = {RANDOM_WALK_JOB}
        self._pending_settings: dict[str, Any] = {}
        self._walk_throttle = Throttle(self._walk_settings_changed, 16, self)
        window.explorer.registry_ready.connect(self._build)

    def _build(self) -> None:
        """Insert the three tabs before the Data tab (after the window's own ``_build_workspace``)."""
        if self.sensitivity_view is not None:
            return
        from dpexplorer.gui.views.error_against_k import ErrorAgainstKView
        from dpexplorer.gui.views.random_walk import RandomWalkView
        from dpexplorer.gui.views.sensitivity import SensitivityView

        window = self.window
        self.sensitivity_view = SensitivityView()
        self.random_walk_view = RandomWalkView()
        self.error_k_view = ErrorAgainstKView()
        data_index = window.tabs.indexOf(window.dataset_view)
        window.tabs.insertTab(data_index, self.sensitivity_view, "Sensitivity")
        window.tabs.insertTab(data_index + 1, self.random_walk_view, "Random walk")
        window.tabs.insertTab(data_index + 2, self.error_k_view, "Error against k")
        if self._pending_settings:
            self.random_walk_view.set_settings(self._pending_settings)
        self.random_walk_view.settings_changed.connect(lambda _s: self._walk_throttle())
        window.explorer.inputs_changed.connect(self.update)
        window.tabs.currentChanged.connect(lambda _i: self.submit_visible())
        window.compute.finished.connect(self._on_result)
        window.compute.failed.connect(self._on_failure)
        self.submit_visible()

    def random_walk_settings(self, values: dict[str, Any]) -> None:
        """A lesson step's settings for the random-walk view."""
        if self.random_walk_view is None:
            self._pending_settings = dict(values)
        else:
            self.random_walk_view.set_settings(values)

    def update(self, mechanism: Mechanism, params: dict[str, Any], query: QueryInput, seed: int) -> None:
        self.current = (mechanism, params, query, seed)
        if self.error_k_view is not None:  # marked on its k axis
            workload = getattr(query, "workload", None)  # a matrix; a marginals query's are cliques
            shape = getattr(workload, "shape", None)
            self.error_k_view.current_k = int(shape[0]) if shape else None
        for name in INPUT_JOBS:
            self.window.compute.cancel(name)
            self._stale.add(name)
        self.submit_visible()

    def _walk_settings_changed(self) -> None:
        self.window.compute.cancel(RANDOM_WALK_JOB)
        self._stale.add(RANDOM_WALK_JOB)
        self.submit_visible()

    def submit_visible(self) -> None:
        from dpexplorer.gui.views import error_against_k, random_walk, sensitivity

        compute = self.window.compute
        view = self.sensitivity_view
        if SENSITIVITY_JOB in self._stale and self.current and view is not None and view.isVisible():
            self._stale.discard(SENSITIVITY_JOB)
            compute.submit(SENSITIVITY_JOB, sensitivity.job, *self.current)
        errors = self.error_k_view
        if ERROR_K_JOB in self._stale and self.current and errors is not None and errors.isVisible():
            self._stale.discard(ERROR_K_JOB)
            compute.submit(ERROR_K_JOB, error_against_k.job, *self.current)
        walk = self.random_walk_view
        if RANDOM_WALK_JOB in self._stale and walk is not None and walk.isVisible():
            self._stale.discard(RANDOM_WALK_JOB)
            seed = self.window.mechanism_panel.seed.value()
            compute.submit(RANDOM_WALK_JOB, random_walk.job, walk.settings(), seed)

    @property
    def pending(self) -> bool:
        return self._walk_throttle.pending

    def stop(self) -> None:
        self._walk_throttle.stop()

    def _view(self, job: str) -> ResultView | None:
        """The view a job's result or failure goes to (None before the views are built)."""
        views = {
            SENSITIVITY_JOB: self.sensitivity_view,
            RANDOM_WALK_JOB: self.random_walk_view,
            ERROR_K_JOB: self.error_k_view,
        }
        return views.get(job)

    def _on_result(self, view: str, generation: int, result: object) -> None:
        target = self._view(view)
        if target is not None:
            target.deliver(result)

    def _on_failure(self, view: str, generation: int, message: str) -> None:
        target = self._view(view)
        if target is not None:
            target.show_error(message)
