"""Epsilon in context: published deployments of differential privacy with the epsilon, privacy
unit and source their publishers state (``dpexplorer/resources/deployments.json``), and a
steward's own total drawn among them (the Risk tab, the report's budget page).

The figures are quoted, not computed: each row names the document that states it. They are not
comparable one to one: the privacy units differ (a person for all time, a user-day, a device's
pageviews in a day), and a local-DP epsilon bounds what each user's own report reveals to the
collector, where a central epsilon bounds a release computed from everyone's data."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

MODELS = ("central", "local")


class DeploymentsFileError(ValueError):
    """The shipped deployments file is malformed (a packaging bug: a test reads it)."""


@dataclass(frozen=True)
class Deployment:
    """One published deployment: ``epsilon`` (and ``delta``, ``rho`` where stated) for ``unit``,
    under the ``model`` (central or local DP), as stated in ``source`` at ``url``."""

    name: str
    organisation: str
    model: str
    epsilon: float
    delta: float
    rho: float | None
    unit: str
    stated: str
    source: str
    url: str


@dataclass(frozen=True)
class ContextRow:
    """A line of the comparison: a deployment, or the steward's own total (``own``)."""

    label: str
    epsilon: float
    delta: float
    model: str
    unit: str
    source: str
    url: str
    own: bool = False
    rho: float | None = None
    """The zCDP rho where that is what was published (``epsilon`` is then the publisher's own
    approximate conversion)."""


def _deployment(row: dict[str, Any]) -> Deployment:
    try:
        found = Deployment(**row)
    except TypeError as exc:
        raise DeploymentsFileError(f"deployments.json: a row has other fields ({exc})") from None
    if found.model not in MODELS:
        raise DeploymentsFileError(f"deployments.json: {found.name}: model must be one of {MODELS}")
    if not (isinstance(found.epsilon, int | float) and math.isfinite(found.epsilon) and found.epsilon > 0):
        raise DeploymentsFileError(f"deployments.json: {found.name}: epsilon must be a positive number")
    if not (isinstance(found.delta, int | float) and 0 <= found.delta < 1):
        raise DeploymentsFileError(f"deployments.json: {found.name}: delta must lie in [0, 1)")
    if not (found.url.startswith("https://") and found.source):
        raise DeploymentsFileError(f"deployments.json: {found.name}: a source and an https URL are required")
    return found


@functools.lru_cache(maxsize=1)
def _file() -> dict[str, Any]:
    return json.loads(
        files("dpexplorer").joinpath("resources", "deployments.json").read_text(encoding="utf-8")
    )


def deployments() -> tuple[Deployment, ...]:
    """Every deployment of the shipped file, as stated there (checked: DeploymentsFileError)."""
    return tuple(_deployment(row) for row in _file()["deployments"])


def epsilon_text(row: ContextRow, number: Callable[[float], str]) -> str:
    """A row's privacy parameters as published, each figure written by ``number``: "1.68",
    "2.19, δ = 1e-05", or for a zCDP release "ρ = 0.015 (≈ ε 1, δ = 1e-07)"."""
    pair = number(row.epsilon) + (f", δ = {number(row.delta)}" if row.delta else "")
    return pair if row.rho is None else f"ρ = {number(row.rho)} (≈ ε {pair})"


def caveat() -> str:
    """What the comparison does not say (the file's ``about``)."""
    return str(_file()["about"])


def in_context(own: Sequence[tuple[str, float, float]], unit: str) -> tuple[ContextRow, ...]:
    """The deployments and the steward's own totals ``own`` ((label, epsilon, delta), e.g. what
    was released from this dataset at the budget's delta) for privacy ``unit``, sorted by epsilon
    (the steward's rows marked ``own``)."""
    rows = [
        ContextRow(d.name, float(d.epsilon), float(d.delta), d.model, d.unit, d.source, d.url, rho=d.rho)
        for d in deployments()
    ]
    rows += [
        ContextRow(label, float(eps), float(dlt), "central", unit, "this ledger", "", own=True)
        for label, eps, dlt in own
        if math.isfinite(eps)
    ]
    return tuple(sorted(rows, key=lambda r: (r.epsilon, not r.own)))
