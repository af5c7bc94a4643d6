"""The secret an attack demonstration attacks: a sample of rows of one column, made 0/1 by a
declared value (e.g. ``sex == "Female"``).

PRIVATE and exploration only (DESIGN.md, "Attacks"): the bits are the truth the attack is scored
against; they never reach an export, a ledger or a release."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpexplorer.core import attacks
from dpexplorer.core.cancel import CancelToken, ProgressFn
from dpexplorer.core.checks import check_whole, shown
from dpexplorer.data.conditions import equal_to, reading
from dpexplorer.data.errors import DataError
from dpexplorer.data.validation import QUERY, Scalar, column_name

MAX_SEED = 2**63 - 1
"""Largest seed of an attack's Generator (any whole number >= 0 seeds numpy; this keeps it one
the ledger's and the session's integers can hold)."""


def _rng(seed: Any) -> np.random.Generator:
    """The attack's Generator, seeded by ``seed`` (None: fresh entropy): a whole number from 0
    to :data:`MAX_SEED` (a TypeError flavour of InvalidParameterError for 1.5, "1", True)."""
    return np.random.default_rng(None if seed is None else check_whole(seed, "seed", 0, MAX_SEED))


def _flags(dataset: Any, column: str, value: Scalar) -> np.ndarray:
    """1 where the cell of ``column`` equals ``value``, 0 elsewhere, for every row (DataError
    naming the columns when there is no such column; DataTypeError for a column that is not
    text, a value that is not text, a number or true/false)."""
    dataset.kind_of(column_name(column, "column"))
    expr = equal_to(column, dataset.schema.get(column), [reading(value, "value")]).alias("bit")
    return np.asarray(dataset.select(expr).to_series().cast(int).to_numpy(), dtype=np.int64)


def secret_bits(dataset: Any, column: str, value: Scalar, rows: int, rng: np.random.Generator) -> np.ndarray:
    """``rows`` rows of ``dataset`` drawn uniformly without replacement by ``rng``, each 1 where
    its ``column`` cell equals ``value`` (the per-cell rule of :mod:`dpexplorer.data.conditions`:
    a missing cell is 0), as an int64 array. DataError for a column that does not exist, a row
    count outside 1..n, or a value no cell of the column holds (almost surely a typo: the attack
    would have nothing to find)."""
    bits = _flags(dataset, column, value)
    rows = check_whole(rows, "rows", 1, int(dataset.n_rows), QUERY)
    if not bits.any():
        raise DataError(
            f"no row has {column} == {shown(value)}: check the value's spelling (values are case-sensitive)"
        )
    picked = np.sort(rng.choice(bits.size, size=rows, replace=False))
    return bits[picked]


def column_count(dataset: Any, column: str, value: Scalar) -> int:
    """The exact number of rows whose ``column`` equals ``value`` (PRIVATE: the count an attack's
    M(D) is centred on)."""
    return int(_flags(dataset, column, value).sum())


def first_value(dataset: Any, column: str) -> Scalar:
    """The column's smallest value (sorted as the column's type sorts): the attacked value when
    none is declared (which value is "1" does not change what an attack recovers)."""
    dataset.kind_of(column)
    import polars as pl

    values = dataset.select(pl.col(column).drop_nulls().min().alias("v")).to_series()
    if values.is_empty() or values[0] is None:
        raise DataError(f"column {column!r} has no values to attack")
    value = values[0]
    return value if isinstance(value, str | int | float | bool) else str(value)


def reconstruct_column(
    dataset: Any,
    column: str,
    value: Scalar,
    rows: int,
    queries: int,
    *,
    noise: attacks.Noise = "exact",
    magnitude: float = 0.0,
    epsilon: float = 1.0,
    seed: int | None = None,
    cancel: CancelToken | None = None,
) -> attacks.ReconstructionResult:
    """The Dinur-Nissim attack (:func:`dpexplorer.core.attacks.reconstruction_attack`) on
    ``rows`` sampled rows of ``column == value``, the sample and the queries drawn from one
    seeded Generator."""
    rng = _rng(seed)
    bits = secret_bits(dataset, column, value, rows, rng)
    return attacks.reconstruction_attack(
        bits, queries, rng, noise=noise, magnitude=magnitude, epsilon=epsilon, cancel=cancel
    )


def difference_person(
    dataset: Any,
    column: str,
    value: Scalar,
    row: int,
    *,
    noise: attacks.Noise = "exact",
    epsilon: float = 1.0,
    delta: float = 1e-6,
    seed: int | None = None,
) -> attacks.DifferencingResult:
    """The differencing attack (:func:`dpexplorer.core.attacks.differencing_attack`) on row
    ``row`` (0-based) of the whole dataset, its secret ``column == value``."""
    rng = _rng(seed)
    bits = _flags(dataset, column, value)
    row = check_whole(row, "row", 0, bits.size - 1, QUERY)
    return attacks.differencing_attack(bits, row, rng, noise=noise, epsilon=epsilon, delta=delta)


def membership_of(
    dataset: Any,
    column: str,
    value: Scalar,
    trials: int,
    *,
    noise: attacks.Noise = "laplace",
    epsilon: float = 1.0,
    delta: float = 1e-6,
    seed: int | None = None,
    cancel: CancelToken | None = None,
    progress: ProgressFn | None = None,
) -> attacks.MembershipResult:
    """Membership inference (:func:`dpexplorer.core.attacks.membership_attack`) on the count of
    ``column == value``: D is the dataset (one person with the value in), D' the dataset less
    that person."""
    rng = _rng(seed)
    count = column_count(dataset, column, value)
    if count < 1:
        raise DataError(f"no row has {column} == {shown(value)}: there is no one to test for")
    return attacks.membership_attack(
        count,
        trials,
        rng,
        noise=noise,
        epsilon=epsilon,
        delta=delta,
        cancel=cancel,
        progress=progress,
    )


__all__ = [
    "column_count",
    "difference_person",
    "first_value",
    "membership_of",
    "reconstruct_column",
    "secret_bits",
]
