"""Results of pure functions of a query input, kept as long as the query input lives.

A query input (NumericInput, ...) is immutable and compared by identity, so a value computed
from it and some hashable parameters never goes stale; when the window builds a new query input
the old one and its entries are dropped with it. Dragging epsilon recomputes the views many
times on the same input: PTR's distance to high sensitivity depends only on the proposed bound,
and each view needs the smooth sensitivity of D and D' more than once."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")

MAX_ENTRIES = 256
"""Per query input; beyond it the oldest half is dropped (a slider sweep makes new keys)."""

_entries: weakref.WeakKeyDictionary[object, dict[Hashable, object]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()  # the views compute on two worker threads


def cached(query: object, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, or the value it returned before for the same ``query`` object and ``key``.
    ``compute`` must be a pure function of the query and the key."""
    with _lock:
        entries = _entries.setdefault(query, {})
        if key in entries:
            return entries[key]  # type: ignore[return-value]
    value = compute()  # outside the lock: two threads may compute the same value, both correct
    with _lock:
        if len(entries) >= MAX_ENTRIES:
            for old in list(entries)[: MAX_ENTRIES // 2]:
                del entries[old]
        entries[key] = value
    return value
