"""The query of synthetic data over marginals (MST, AIM): chosen columns on a public domain, a
workload of marginals, an optional privacy unit; and its input, counted through the engine.

Every column is an :class:`~dpexplorer.data.queries.Axis`: declared categories (plus "(any other)",
which holds missing values) or declared numeric bins (plus "missing"). The domain is then
public, like the categories of a histogram. The engine counts each marginal as a
:class:`~dpexplorer.data.engine.CellCounts` request (after the privacy unit's
:class:`~dpexplorer.data.engine.BoundContributions` step: at most r rows per person, chosen
uniformly at random, one seed for all marginals so they see the same rows); only those counts
leave the engine, so a file larger than memory and a Spark table work as for any histogram.
The largest cliques are counted by the engine and their subsets summed from them (exact)."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpexplorer.core.marginals import Clique, MarginalInput, candidate_cliques, marginalise
from dpexplorer.core.mechanisms.base import Relation
from dpexplorer.core.neighbours import check_relation
from dpexplorer.data.aggregates import aggregate
from dpexplorer.data.engine import BoundContributions, CellCounts, RowCount
from dpexplorer.data.errors import DataError
from dpexplorer.data.queries import Axis, Marginals

EXPLORATION_SEED = 20261126
"""The privacy unit's reproducible choice of rows in exploration (a release draws one)."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise DataError(message)


def adult_marginals(ways: int = 2) -> Marginals:
    """A useful default on the bundled UCI Adult: 8 columns (age and hours in public bins), all
    ``ways``-way marginals. Full domain 7·9·17·8·6·3·8·3 ≈ 3.7 M cells (Private-PGM's model)."""
    return Marginals(
        (
            Axis("age", edges=(17, 25, 35, 45, 55, 65, 91)),
            Axis(
                "workclass",
                categories=(
                    "Private",
                    "Self-emp-not-inc",
                    "Local-gov",
                    "State-gov",
                    "Self-emp-inc",
                    "Federal-gov",
                    "Without-pay",
                    "Never-worked",
                ),
            ),
            Axis(
                "education",
                categories=(
                    "HS-grad",
                    "Some-college",
                    "Bachelors",
                    "Masters",
                    "Assoc-voc",
                    "11th",
                    "Assoc-acdm",
                    "10th",
                    "7th-8th",
                    "Prof-school",
                    "9th",
                    "12th",
                    "Doctorate",
                    "5th-6th",
                    "1st-4th",
                    "Preschool",
                ),
            ),
            Axis(
                "marital_status",
                categories=(
                    "Married-civ-spouse",
                    "Never-married",
                    "Divorced",
                    "Separated",
                    "Widowed",
                    "Married-spouse-absent",
                    "Married-AF-spouse",
                ),
            ),
            Axis("race", categories=("White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other")),
            Axis("sex", categories=("Male", "Female")),
            Axis("hours_per_week", edges=(1, 20, 35, 40, 41, 50, 60, 100)),
            Axis("income", categories=("<=50K", ">50K")),
        ),
        ways=ways,
    )


def _maximal(cliques: Sequence[Clique]) -> list[Clique]:
    """The cliques not inside another one (the engine counts these; the rest are sums)."""
    sets = [set(c) for c in cliques]
    return [c for c, s in zip(cliques, sets, strict=True) if not any(s < t for t in sets)]


def marginal_input(
    dataset: Any, query: Marginals, relation: Relation = "add_remove", *, bounding_seed: int | None = None
) -> MarginalInput:
    """The counts of every marginal MST and AIM may measure, on D (after the privacy unit's
    bounding: ``bounding_seed`` None draws the seed from the OS CSPRNG, as a release must), with
    the sensitivities of one marginal's counts: add/remove one person of at most r rows, l1 = r
    and l2^2 = r^2 (r rows land in at most r cells, l2 <= l1); replace one row, 2 and 2."""

    check_relation(relation)
    query.check(dataset.schema)
    steps: tuple[Any, ...] = ()
    rows = 1
    if query.unit is not None:
        _require(
            relation == "add_remove",
            "with a privacy unit, neighbouring datasets differ by one whole person: choose add/remove",
        )
        seed = secrets.randbits(63) if bounding_seed is None else bounding_seed
        rows = query.unit.max_rows
        steps = (BoundContributions(query.unit.column, (), 1, rows, seed),)
    workload = query.cliques()
    wanted = candidate_cliques(len(query.axes), workload)
    sizes = query.sizes
    counted: dict[Clique, np.ndarray] = {}
    for top in _maximal(wanted):
        axes = tuple(query.axes[i] for i in top)
        counted[top] = np.rint(np.asarray(aggregate(dataset, CellCounts(axes), steps))).astype(np.int64)
    marginals: dict[Clique, np.ndarray] = {}
    for clique in wanted:
        source = next(top for top in counted if set(clique) <= set(top))
        marginals[clique] = marginalise(counted[source], sizes, source, clique)
        marginals[clique].flags.writeable = False
    return MarginalInput(
        columns=query.columns,
        labels=tuple(a.labels for a in query.axes),
        workload=workload,
        marginals_d=marginals,
        n=int(aggregate(dataset, RowCount(), steps)),
        bins=tuple(a.to_dict() for a in query.axes),
        **_neighbours(query, relation, rows),
    )


def _neighbours(query: Marginals, relation: Relation, rows: int) -> dict[str, Any]:
    """What the neighbouring relation makes of one marginal's counts (function docstring of
    :func:`marginal_input`): add/remove one person of at most ``rows`` rows changes at most
    ``rows`` cells by one each (l1 = rows, l2^2 = rows^2); replacing one row moves one count
    from a cell to another (l1 = l2^2 = 2). Public: declared facts only."""
    l1, l2sq = (rows, rows * rows) if relation == "add_remove" else (2, 2)
    who = f"one person ({query.unit.column}) with up to {rows} row(s)" if query.unit else "one row"
    return {
        "sensitivity_l1": l1,
        "sensitivity_l2_squared": l2sq,
        "relation": relation,
        "max_rows": rows,
        "differing_row": f"D' = D {'plus' if relation == 'add_remove' else 'with a change of'} {who}",
    }
