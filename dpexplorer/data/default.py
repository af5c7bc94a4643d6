"""The default dataset shipped inside the package (found through package resources, so a
non-editable install works too)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

ATTRIBUTION = (
    'Becker, B. & Kohavi, R. (1996). "Adult" [Dataset]. UCI Machine Learning Repository. '
    "https://doi.org/10.24432/C5XW20. Licensed under CC BY 4.0 "
    "(https://creativecommons.org/licenses/by/4.0/). Changes: training and test files "
    "concatenated, whitespace trimmed, '?' made missing, labels' trailing '.' removed, "
    "columns renamed to snake_case, stored as Parquet."
)


def default_dataset_path() -> Path:
    """Path of the shipped UCI Adult dataset (48,842 rows, 15 columns, Parquet)."""
    return Path(str(files("dpexplorer").joinpath("resources", "adult.parquet")))
