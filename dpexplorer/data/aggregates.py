"""The aggregates a query's answers are built from, evaluated by the dataset's engine
(:mod:`dpexplorer.data.engine`) and cached per dataset: every module of ``data`` that needs a
column's sorted values, a group's moments or a cell's count asks :func:`aggregate`, so one
request is computed once however many queries share it.

The cache holds exact, PRIVATE aggregates (as :mod:`dpexplorer.data.answers` says of its
answers): arrays come back read-only, and nothing here leaves ``data`` but through the
mechanisms' inputs."""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from dpexplorer.data.engine import MeanParts, Request, RowStep, engine_of

CACHE_ENTRIES = 32
CACHE_BYTES = 1 << 30
"""Aggregates kept per dataset: at most this many, and arrays of at most this many bytes in all
(oldest dropped first; a sorted column of 100M rows is 800 MB). Re-asking a query never rescans."""

_cache: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()  # the window's two workers may ask about one dataset at once


def aggregate(dataset: Any, request: Request, steps: tuple[RowStep, ...] = ()) -> Any:
    """``request`` evaluated by the dataset's engine (dpexplorer.data.engine) after the row
    ``steps``, cached per dataset, request and steps; arrays come back read-only, so a cached
    answer cannot be altered."""
    key = (request, steps) if steps else request
    with _cache_lock:
        answers = _cache.setdefault(dataset, {})
        if key in answers:
            return answers[key]
    value = engine_of(dataset).aggregate(dataset, request, steps)  # outside the lock: may take long
    _store(dataset, key, value)
    return value


def aggregate_parts(dataset: Any, request: MeanParts) -> None:
    """Every part of ``request`` (for a mean: ClippedMoments and CentredSums) in one pass of the
    engine, each then cached under its own request (so :func:`aggregate` finds it), unless all
    are cached already."""
    with _cache_lock:
        known = _cache.get(dataset, {})
        if all(part in known for part in request.parts):
            return
    for part, value in zip(request.parts, engine_of(dataset).aggregate(dataset, request), strict=True):
        _store(dataset, part, value)


def _store(dataset: Any, key: Any, value: Any) -> None:
    """Cache ``value`` under ``key`` (arrays made read-only; oldest entries dropped past the
    budget)."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    with _cache_lock:
        answers = _cache.setdefault(dataset, {})
        answers[key] = value
        while len(answers) > CACHE_ENTRIES or (len(answers) > 1 and _nbytes(answers) > CACHE_BYTES):
            answers.pop(next(iter(answers)))


def _nbytes(answers: dict[Any, Any]) -> int:
    return sum(v.nbytes for v in answers.values() if isinstance(v, np.ndarray))
