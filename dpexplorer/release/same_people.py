"""The same people, one budget, under the common disguises (issue 40).

The ledger keys a dataset on its content (:mod:`dpexplorer.data.identity`), so a copy with a
column renamed, a projection keeping some of its columns (the columns a synthetic table needs)
or a constant column added is another key, and would get a fresh budget for the same people.
Beside each dataset's key the ledger therefore keeps the fingerprint of each column's cells
(the multiset, whatever the column is called and however the rows are ordered:
:class:`~dpexplorer.data.identity.ColumnPrint`). A dataset the ledger does not know yet
*matches* a known one (one with a budget or a charge) when every column of one of the two that
is not constant holds the same multiset of cells as a column of the other: a renamed copy, a
projection, a copy with a constant column added, and the full table after a projection of it.
Constant columns say nothing about the people and are left out of the comparison. A table
sharing no such column (other people), or whose rows differ (a row added changes every column),
does not match.

What to do with a match is the steward's choice, asked before any budget is set
(``dpexplorer release`` exits 2 saying which dataset it matches): ``--tie-to KEY`` files the
data under the known dataset (its budget charged, remembered as an alias of the ledger), or
``--distinct`` declares them other people (remembered). A match can be wrong only in one
direction that costs privacy: a copy that changes a cell of every column (a rescaled column,
rows added or removed) is not found; it is said in the user guide."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dpexplorer.core.errors import DPExplorerError, InvalidParameterError
from dpexplorer.release.ledger import NAME_PREFIX, Ledger

SHOWN_COLUMNS = 4
"""Columns a match's message names (then "and N more")."""


class SamePeopleError(DPExplorerError):
    """The data match a dataset the ledger knows, under another table: the steward chooses
    (tie them to it, or declare them distinct) before anything is charged."""


@dataclass(frozen=True)
class Match:
    """A known dataset (its ledger key) whose columns hold this data's: ``pairs`` (this data's
    column, the known dataset's column) for every column holding the same cells."""

    dataset: str
    pairs: tuple[tuple[str, str], ...]


def prints_of(dataset: Any) -> dict[str, tuple[str, bool]] | None:
    """The dataset's columns as name -> (fingerprint, constant), or None for a dataset without
    column fingerprints (a Spark table)."""
    prints = getattr(dataset, "column_prints", None)
    if prints is None:
        return None
    return {name: (p.fingerprint, p.constant) for name, p in prints.items()}


def record_columns(dataset: Any, ledger: Ledger, key: str) -> None:
    """Keep the dataset's column fingerprints beside ``key`` (once per key and ledger: computed
    only when the ledger holds none for it)."""
    if ledger.has_columns(key):
        return
    prints = prints_of(dataset)
    if prints:
        ledger.file_columns(key, prints)


def find_match(prints: Mapping[str, tuple[str, bool]], ledger: Ledger, key: str) -> Match | None:
    """The known dataset (other than ``key``, with a budget or a charge) whose columns match
    these (module docstring), the one sharing most columns; None if there is none."""
    varied = {name: fp for name, (fp, constant) in prints.items() if not constant}
    if not varied:
        return None
    best: Match | None = None
    for other, columns in ledger.datasets_with_columns(sorted(set(varied.values()))).items():
        if other == key or not ledger.known(other):
            continue
        theirs = {fp: name for fp, name, constant in columns if not constant}
        shared = set(varied.values()) & set(theirs)
        pairs = tuple((name, theirs[fp]) for name, fp in varied.items() if fp in theirs)
        covered = shared == set(varied.values()) or shared == set(theirs)  # one's columns within the other's
        if shared and covered and (best is None or len(pairs) > len(best.pairs)):
            best = Match(other, pairs)
    return best


def shown_key(key: str) -> str:
    """A ledger key as the steward types it back: a name without its prefix, else the key."""
    return key[len(NAME_PREFIX) :] if key.startswith(NAME_PREFIX) else key


def match_message(source: str, match: Match) -> str:
    """One line: which dataset the data match, by which columns, and how to choose."""
    renamed = sorted(match.pairs, key=lambda pair: pair[0] == pair[1])  # renamed columns first
    pairs = [a if a == b else f"{a} (its {b})" for a, b in renamed]
    more = len(pairs) - SHOWN_COLUMNS
    columns = ", ".join(pairs[:SHOWN_COLUMNS]) + (f" and {more} more" if more > 0 else "")
    return (
        f"{source} holds the same people as dataset {shown_key(match.dataset)} of the ledger (the same "
        f"cells in {len(pairs)} column(s): {columns}; renamed, projected or a constant column added): "
        f"to charge that dataset's budget, release with --tie-to {shown_key(match.dataset)}; if these "
        "are other people, with --distinct (either is remembered); nothing was charged"
    )


def resolve(ledger: Ledger, given: str) -> str:
    """The ledger key of a known dataset the steward named for ``--tie-to``: a key as printed
    (:func:`shown_key`), a name or ``name:NAME``; InvalidParameterError for none."""
    for candidate in (given, NAME_PREFIX + given):
        if ledger.known(candidate):
            return candidate
    raise InvalidParameterError(
        f"--tie-to {given}: the ledger has no dataset {given!r} with a budget or a release "
        "(give the key or name the match named)"
    )


def choose(
    dataset: Any,
    ledger: Ledger,
    key: str,
    *,
    source: str,
    tie_to: str | None = None,
    distinct: bool = False,
) -> str:
    """The key the data are released under, before any budget is set: ``key`` when the ledger
    knows it already, when the data were declared distinct (``distinct`` declares it now) or
    match no known dataset; the known dataset's (remembered as an alias) with ``tie_to``.
    SamePeopleError (:func:`match_message`) for a new dataset matching a known one with
    neither choice. The column fingerprints are kept beside the key chosen."""
    fingerprint = str(getattr(dataset, "content_fingerprint", None) or key)
    if tie_to is not None:
        target = resolve(ledger, tie_to)
        if target != key and ledger.known(key):
            raise InvalidParameterError(
                f"--tie-to: these data already have a budget or releases under {shown_key(key)}; "
                "--tie-to is for data the ledger does not know yet"
            )
        ledger.tie(fingerprint, target)
        record_columns(dataset, ledger, target)
        return target
    if distinct:
        ledger.declare_distinct(fingerprint)
    prints = prints_of(dataset)
    if prints and not ledger.known(key) and not ledger.declared_distinct(fingerprint):
        match = find_match(prints, ledger, key)
        if match is not None:
            raise SamePeopleError(match_message(source, match))
    record_columns(dataset, ledger, key)
    return key
