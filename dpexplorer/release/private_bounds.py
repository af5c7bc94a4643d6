"""Clipping bounds estimated with differential privacy (issue 21, item 3): declaring bounds by
looking at the data leaks it; instead, release a low and a high quantile of the column with the
DP quantile mechanism (:mod:`dpexplorer.core.mechanisms.dp_quantile`, exponential mechanism over
a declared coarse range) and use them as the bounds of the real query.

Both quantiles go through the ordinary release pipeline (:mod:`.release`): each is charged to the
ledger before it is drawn, written with its provenance, and the pair is checked against the
budget first, so nothing is charged unless both fit. The bounds returned are post-processing of
those two releases (reordered if the low one came out above the high one, one grid step apart
if both came out on the same point)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.release.charge import charged_guarantee, execute
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.release import PreparedRelease, ReleaseResult, prepare
from dpexplorer.release.samplers import BitSource

MECHANISM = "dp_quantile"


@dataclass(frozen=True)
class PrivateBounds:
    """Bounds from two DP quantile releases: ``lower`` <= ``upper`` (grid points of the declared
    range), and the two releases (ledger rows, files) they came from."""

    lower: float
    upper: float
    releases: tuple[tuple[PreparedRelease, ReleaseResult], ...]

    @property
    def epsilon(self) -> float:
        """The epsilon charged for the two releases (basic composition: they add)."""
        return sum(result.epsilon for _, result in self.releases)


def quantile_queries(
    column: str, declared: tuple[float, float], quantiles: tuple[float, float]
) -> list[dict[str, Any]]:
    """The two quantile queries (as plan dicts) over the DECLARED coarse range."""
    low, high = declared
    if not low < high:
        raise InvalidParameterError(f"the declared range must have low < high; got [{low}, {high}]")
    q_low, q_high = quantiles
    if not 0 <= q_low < q_high <= 1:
        raise InvalidParameterError(f"need 0 <= low quantile < high quantile <= 1; got {q_low}, {q_high}")
    return [
        {"type": "quantile", "column": column, "lower": low, "upper": high, "q": q} for q in (q_low, q_high)
    ]


def prepare_bounds(
    dataset: Any,
    column: str,
    declared: tuple[float, float],
    *,
    epsilon: float,
    bins: int = 100,
    quantiles: tuple[float, float] = (0.05, 0.95),
) -> list[PreparedRelease]:
    """The two releases, validated, nothing charged: each quantile gets ``epsilon / 2``."""
    from dpexplorer.data.queries import query_from_dict

    if not epsilon > 0:
        raise InvalidParameterError(f"ε must be positive; got {epsilon}")
    params = {"epsilon": epsilon / 2, "bins": bins}
    return [
        prepare(dataset, query_from_dict(query), MECHANISM, params)
        for query in quantile_queries(column, declared, quantiles)
    ]


def release_bounds(
    prepared: list[PreparedRelease],
    *,
    ledger: Ledger,
    out_dir: str | os.PathLike[str],
    bits: BitSource | None = None,
) -> PrivateBounds:
    """Check both against the budget, then charge and draw each (module docstring)."""
    ledger.check(prepared[0].fingerprint, [charged_guarantee(p, ledger) for p in prepared])
    done = tuple((p, execute(p, ledger=ledger, out_dir=out_dir, bits=bits)) for p in prepared)
    low, high = sorted(float(result.values[0]) for _, result in done)
    if low == high:  # one grid point for both: widen by one public grid step, within the range
        declared_low, declared_high = prepared[0].public_facts["bounds"]
        step = (declared_high - declared_low) / int(prepared[0].parameters["bins"])
        low, high = (low - step, low) if high + step > declared_high else (low, high + step)
    return PrivateBounds(low, high, done)
