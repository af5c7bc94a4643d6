"""A statistic by group (:class:`~dpexplorer.data.queries.GroupBy`): the one entry
:mod:`dpexplorer.data.answers` calls. Declared keys are answered by :mod:`dpexplorer.data.grouped`;
private keys (no declared key, :class:`~dpexplorer.data.queries.PrivateKeys`) by
:mod:`dpexplorer.data.private_groups`, which builds its candidates' inputs with grouped's
builders. The arrows point down only: answers -> group_by -> private_groups -> grouped ->
aggregates."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpexplorer.core.mechanisms.base import NumericInput, Relation
from dpexplorer.data.grouped import EXPLORATION_SEED, checked_seed, declared_answer, declared_input
from dpexplorer.data.private_groups import private_input
from dpexplorer.data.queries import GroupBy


def _private_keys(query: GroupBy) -> bool:
    return query.private is not None and not query.keys


def group_answer(dataset: Any, query: GroupBy, bounding_seed: int | None = None) -> np.ndarray:
    """f(D): the statistic in every group (exact, after the privacy unit's bounding); with
    private keys, in every candidate group (private, as every true answer is)."""
    if _private_keys(query):
        seed = EXPLORATION_SEED if bounding_seed is None else bounding_seed
        return np.array(private_input(dataset, query, "add_remove", seed).value_d)
    return declared_answer(dataset, query, bounding_seed)


def group_input(
    dataset: Any,
    query: GroupBy,
    relation: Relation,
    bounding_seed: int | None = None,
    exact_sums: bool = False,
) -> NumericInput:
    """The statistic per group on D and on D', the sensitivities and, for a mean, the per-group
    moments (:func:`dpexplorer.data.grouped.declared_input`; private keys:
    :func:`dpexplorer.data.private_groups.private_input`). With a privacy unit, D is the data
    after bounding; ``bounding_seed`` None draws one seed from the OS CSPRNG, used by every
    aggregate of this input (:func:`~dpexplorer.data.grouped.checked_seed`)."""
    seed = checked_seed(query, relation, bounding_seed)
    if _private_keys(query):
        return private_input(dataset, query, relation, seed, exact_sums)
    return declared_input(dataset, query, relation, seed, exact_sums)
