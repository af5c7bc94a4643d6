"""Which mechanism for this query? Every applicable mechanism's expected error at the same ε,
side by side and sorted.

The figure compared is each mechanism's own accuracy report (:meth:`Mechanism.accuracy`) at
the given ε (and δ, for a mechanism that has one) on the query's input: the half-width of the
interval that holds the error with probability ``ci_level``, the same number the accuracy view
shows for the mechanism on screen. It is exact where the mechanism's report is exact (Laplace:
ln(1/β)·Δ/ε; Gaussian: the calibrated σ times the normal quantile) and whatever the report
says otherwise (a Monte Carlo estimate, or infinite where no finite interval holds, e.g. a
mechanism whose "no answer" is more likely than 1 − ``ci_level``).

NON-PRIVATE, like the accuracy view: the errors come from the exploration input (true answers,
n on D), for the steward's choice before a release; nothing here is published. Every
mechanism runs on the same input, so the comparison is fair on this dataset; another dataset
of the same public shape may rank differently (a data-dependent mechanism's error depends on
the data)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import CancelledError, DPExplorerError
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput

TIE = 1e-9
"""Relative difference below which two errors count as equal (both marked best)."""


@dataclass(frozen=True)
class MechanismError:
    """One mechanism's expected error on the query. ``halfwidth``: the interval half-width at
    ``ci_level`` (inf when no finite interval holds; NaN when ``note`` says why there is none);
    ``delta``: the δ the mechanism was evaluated at (0 for a pure ε-DP mechanism)."""

    name: str
    label: str
    halfwidth: float
    delta: float = 0.0
    note: str = ""
    measure: str = ""
    """What error the half-width measures (the report's α axis, e.g. "α (max error, share of
    rows)"): only errors of the same measure are compared."""
    comparable: bool = True
    """False when the measure differs from the reference mechanism's (ranked after, never best)."""


@dataclass(frozen=True)
class Ranking:
    """Mechanisms sorted by expected error, smallest first (those without a figure last)."""

    entries: tuple[MechanismError, ...]
    epsilon: float
    ci_level: float

    @property
    def best(self) -> tuple[str, ...]:
        """Names of the mechanisms with the smallest finite error (several on a tie)."""
        finite = [e for e in self.entries if math.isfinite(e.halfwidth) and e.comparable]
        if not finite:
            return ()
        low = finite[0].halfwidth
        return tuple(e.name for e in finite if e.halfwidth <= low + TIE * abs(low))

    def times_best(self, name: str) -> float:
        """How many times the best error ``name``'s error is (inf against an error of 0; NaN
        when either has no figure)."""
        best = self.best
        entry = next((e for e in self.entries if e.name == name), None)
        if not best or entry is None or not math.isfinite(entry.halfwidth):
            return math.inf if entry is not None and math.isinf(entry.halfwidth) else math.nan
        low = next(e for e in self.entries if e.name == best[0]).halfwidth
        if entry.halfwidth <= low + TIE * abs(low):
            return 1.0
        return math.inf if low == 0 else entry.halfwidth / low


def _parameters(
    mechanism: Mechanism, epsilon: float, delta: float | None, chosen: Mapping[str, Any]
) -> dict[str, Any]:
    names = {p.name for p in mechanism.params}
    values = {k: v for k, v in chosen.items() if k in names}
    values["epsilon"] = epsilon
    if delta is not None and "delta" in names:
        values["delta"] = delta
    return mechanism.validate(values)


def rank_mechanisms(
    mechanisms: Sequence[Mechanism],
    query: QueryInput,
    epsilon: float,
    *,
    delta: float | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    ci_level: float = 0.95,
    reference: str | None = None,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> Ranking:
    """Each of ``mechanisms`` that accepts ``query``, at ``epsilon`` (and ``delta`` for those
    declaring one; None keeps each mechanism's own or default δ), with its other parameters from
    ``params[name]`` (the steward's last choice) or its defaults, ranked by the half-width of
    its ``ci_level`` error interval (module docstring). A mechanism whose parameters or report
    fail is listed last with the reason in ``note``. With ``reference`` (a mechanism's name), a
    mechanism whose error measures something else (sparse vector's share of rows misclassified
    against BLR's largest answer error) is marked not comparable and ranked after the others.
    Cancellable between mechanisms."""
    chosen = params or {}
    applicable = [m for m in mechanisms if m.accepts(query) is None]
    entries: list[MechanismError] = []
    for i, mechanism in enumerate(applicable):
        checkpoint(cancel, progress, i / max(len(applicable), 1))
        try:
            values = _parameters(mechanism, epsilon, delta, chosen.get(mechanism.name, {}))
            report = mechanism.accuracy(values, query, ci_level=ci_level)
            _, claimed_delta = mechanism.epsilon_delta(values, query)
            halfwidth = float(report.ci_halfwidth)
            entries.append(
                MechanismError(
                    mechanism.name,
                    mechanism.label,
                    halfwidth,
                    float(claimed_delta),
                    measure=report.error_tail.x_label,
                )
            )
        except CancelledError:
            raise
        except (DPExplorerError, ValueError) as exc:
            entries.append(MechanismError(mechanism.name, mechanism.label, math.nan, note=str(exc)))
    checkpoint(cancel, progress, 1.0)

    measure = next((e.measure for e in entries if e.name == reference and not e.note), None)
    if measure is not None:
        entries = [dataclasses.replace(e, comparable=e.measure == measure) for e in entries]

    def key(e: MechanismError) -> tuple[int, int, float, str]:
        missing = math.isnan(e.halfwidth)
        return (0 if e.comparable else 1, 1 if missing else 0, 0.0 if missing else e.halfwidth, e.label)

    return Ranking(tuple(sorted(entries, key=key)), float(epsilon), float(ci_level))
