"""The run view's contract, written once for the mechanisms that have one (BLR, PMW, MWEM, MST,
AIM): ``run`` makes one run on D with the exploration RNG, cancellable between chunks, and
stamps on its result the seconds it took; ``simulate`` is, unless a mechanism knows its output
law exactly, that many independent runs' error statistic."""

from __future__ import annotations

import dataclasses
import time
from abc import abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, TypeVar

import numpy as np

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")
"""A run's result: a dataclass with a ``seconds`` field."""


class Job(NamedTuple):
    """What a long run polls between chunks (:func:`dpexplorer.core.cancel.checkpoint`)."""

    cancel: CancelToken | None = None
    progress: ProgressFn | None = None

    def checkpoint(self, fraction: float) -> None:
        """Raise CancelledError if cancelled, else report ``fraction`` done."""
        checkpoint(self.cancel, self.progress, fraction)


NO_JOB = Job()
"""Neither cancellable (beyond the thread's ambient token) nor reporting progress."""


class RunMechanism(Mechanism, Generic[R]):
    """A mechanism with a run view: :meth:`one_run` is its one run on D; :meth:`run` times
    it. ``simulate`` repeats independent runs through :meth:`run_error`, and ``delta_at`` refuses,
    naming the proven guarantee (:meth:`proven`): a mechanism with an exact output law overrides
    both instead."""

    def run(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        *,
        cancel: CancelToken | None = None,
        progress: ProgressFn | None = None,
    ) -> R:
        """One run on D with the exploration RNG ``rng`` (never a release to publish): the result
        of :meth:`one_run`, its ``seconds`` the wall time of the whole run (checks included)."""
        start = time.perf_counter()
        result = self.one_run(params, query, rng, Job(cancel, progress))
        return dataclasses.replace(result, seconds=time.perf_counter() - start)

    @abstractmethod
    def one_run(self, params: Mapping[str, Any], query: QueryInput, rng: np.random.Generator, job: Job) -> R:
        """One run's result (``seconds`` left at its default: :meth:`run` sets it); checks the
        input first (NotApplicableError or DPExplorerError, from public facts only)."""

    def run_error(
        self, params: Mapping[str, Any], query: QueryInput, on: Literal["D", "D'"]
    ) -> Callable[[np.random.Generator], float]:
        """The error statistic of one independent run on side ``on``, as a function of the RNG
        (what is shared by the runs, such as the true answers, is computed once, here)."""
        raise NotImplementedError(f"{self.label} draws its outputs from an exact law")

    def proven(self, params: Mapping[str, Any]) -> str:
        """The guarantee proven for ``params``, in words (for the refusal of :meth:`delta_at`)."""
        raise NotImplementedError

    def delta_at(self, params: Mapping[str, Any], query: QueryInput, epsilon: float) -> float:
        """Refused: the output law is not computed, so neither is its exact privacy profile."""
        raise NotApplicableError(
            f"{self.label}'s output has no exact privacy profile here; its guarantee is the proven "
            f"{self.proven(params)}"
        )

    def simulate(
        self,
        params: Mapping[str, Any],
        query: QueryInput,
        rng: np.random.Generator,
        size: int,
        on: Literal["D", "D'"] = "D",
    ) -> np.ndarray:
        """``size`` independent runs' error statistic (:meth:`run_error`), drawn in turn from
        ``rng``."""
        error = self.run_error(params, query, on)
        out = np.empty(size)
        for i in range(size):
            out[i] = error(rng)
        return out
