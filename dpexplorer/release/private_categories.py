"""A column's categories estimated with differential privacy (issue 40): a column's list of
values read from the data is not public (a value held by one person names them); instead,
release a count by privately selected keys (:class:`~dpexplorer.data.queries.PrivateKeys`: a
key is released only if its noisy number of persons passes a threshold set from the declared
epsilon and delta; Korolova et al. 2009, Gopi et al. 2020) through the ordinary pipeline, and
declare the keys it released as the column's categories (origin "estimated", the ledger row
that paid for them).

The release is charged to the ledger before anything is drawn and written with its provenance,
as any release; the categories are post-processing of it. Missing values are never a category
(they have a cell of their own on every axis)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.data.private_groups import MISSING_KEY
from dpexplorer.release.charge import charged_guarantee, execute
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.release import PreparedRelease, ReleaseResult, prepare
from dpexplorer.release.samplers import BitSource

MECHANISM = "laplace"
"""The counts of the selected keys (released with them, then not used)."""


@dataclass(frozen=True)
class PrivateCategories:
    """The keys one release selected privately, in the release's order, and that release."""

    categories: tuple[str, ...]
    prepared: PreparedRelease
    result: ReleaseResult

    @property
    def citation(self) -> str:
        """Where the categories come from, for the codebook."""
        return (
            f"selected privately: a count by privately selected keys (ledger row {self.result.row_id}, "
            f"ε = {self.result.epsilon:g}, δ = {self.result.delta:g}); a value held by few persons may be "
            "left out, so the list is not complete"
        )


def prepare_categories(dataset: Any, column: str, *, epsilon: float, delta: float) -> PreparedRelease:
    """The release, validated, nothing charged: half of ``epsilon`` selects the keys (with
    ``delta``), half counts them."""
    from dpexplorer.data.queries import GroupBy, PrivateKeys

    if not epsilon > 0:
        raise InvalidParameterError(f"ε must be positive; got {epsilon}")
    if not 0 < delta < 1:
        raise InvalidParameterError(f"δ must be between 0 and 1; got {delta}")
    query = GroupBy((), "count", private=PrivateKeys((column,), epsilon / 2, delta))
    return prepare(dataset, query, MECHANISM, {"epsilon": epsilon / 2})


def release_categories(
    prepared: PreparedRelease,
    column: str,
    *,
    ledger: Ledger,
    out_dir: str | os.PathLike[str],
    bits: BitSource | None = None,
) -> PrivateCategories:
    """Check the budget, charge, draw and write; the released keys (but the missing one)."""
    ledger.check(prepared.fingerprint, [charged_guarantee(prepared, ledger)])
    result = execute(prepared, ledger=ledger, out_dir=out_dir, bits=bits)
    prefix = f"{column} = "
    keys = tuple(
        label[len(prefix) :]
        for label in result.labels
        if label.startswith(prefix) and label[len(prefix) :] != MISSING_KEY
    )
    return PrivateCategories(keys, prepared, result)
