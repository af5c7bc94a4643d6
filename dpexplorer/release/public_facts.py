"""The public facts of a plan entry and where each comes from (issue 40; DESIGN.md, "Codebook").

A plan entry's public facts (a clipped statistic's bounds, categories, bin edges, the privacy
unit) come from the plan itself, which counts as declared by the steward (origin ``declared``,
citation "the plan"), or from the codebook, with the origin and citation it records
(``declared``, ``shipped``, or ``estimated`` with the ledger row that paid for it); keys a
release selects privately are estimated by that release. Nothing here reads the data: a plan
that contradicts the codebook, or uses a fact neither declares, is refused before anything is
computed or charged, and the refusal depends on the plan and the codebook only.

Each release's provenance records the list (``fact_origins``) and the codebook it was checked
against (``codebook``: its SHA-256, its ``dataset``, its file), and the report shows them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpexplorer.data.codebook import (
    Codebook,
    UsedFact,
    complete_query,
    facts_used,
    missing,
    shipped_codebook,
)
from dpexplorer.data.errors import DataError

PLAN = "the plan"
"""The citation of a fact the plan itself writes."""


def default_codebook(dataset: Any, codebook: Codebook | None) -> Codebook | None:
    """``codebook``, or when None the one shipped for the bundled dataset (found from the
    dataset's path alone: :func:`dpexplorer.data.codebook.shipped_codebook`), else None."""
    if codebook is not None:
        return codebook
    path = getattr(dataset, "path", None)
    return shipped_codebook(path) if path is not None else None


def record(used: UsedFact) -> dict[str, Any]:
    """One fact as the provenance lists it: column, fact, value, origin, source (the plan, the
    codebook or this release), citation, ledger_id."""
    from_codebook = used.origin is not None
    value = list(used.value) if isinstance(used.value, tuple) else used.value
    return {
        "column": used.column,
        "fact": used.field,
        "value": value,
        "origin": used.origin if from_codebook else "declared",
        "source": "the codebook" if from_codebook else PLAN,
        "citation": used.citation if from_codebook else PLAN,
        "ledger_id": used.ledger_id,
    }


def _private_keys(query: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The record of keys a statistic by group selects privately (charged with the release)."""
    private = query.get("private_keys") if query.get("type") == "group_by" else None
    if not isinstance(private, Mapping):
        return []
    columns = private.get("columns") or ()
    return [
        {
            "column": ", ".join(str(c) for c in columns),
            "fact": "keys",
            "value": None,
            "origin": "estimated",
            "source": "this release",
            "citation": "selected privately (noisy threshold) by this release and charged with it "
            "(its ledger row, ledger_row_id)",
            "ledger_id": None,
        }
    ]


def declare_entry(
    entry: Mapping[str, Any], codebook: Codebook | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the entry with its query completed from ``codebook``, the provenance's records of its
    public facts). DataError, one line, for a query that contradicts the codebook
    (:func:`~dpexplorer.data.codebook.complete_query`) or uses a fact neither the plan nor the
    codebook declares (naming each)."""
    from dpexplorer.data.codebook import EMPTY

    book = codebook if codebook is not None else EMPTY
    query = entry["query"]
    completed = complete_query(query, book)
    absent = missing(completed, book)
    if absent:
        where = "the codebook" if codebook is not None else "a codebook (--codebook FILE)"
        raise DataError(
            f"the release uses {_joined(absent)}, which neither the plan nor the codebook declares: "
            f"declare {'it' if len(absent) == 1 else 'them'} in the plan or in {where}"
        )
    records = [record(used) for used in facts_used(query, book)] + _private_keys(completed)
    return {**entry, "query": completed}, records


def _joined(phrases: list[str]) -> str:
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


BOUND_BY_CONTENT = "the data released (checked against their fingerprint, which is not published)"
"""What the provenance says of a codebook bound to its data by a hash of the rows."""


def codebook_record(codebook: Codebook | None) -> dict[str, Any] | None:
    """The provenance's ``codebook``: its SHA-256 (:meth:`Codebook.public_digest`), the
    ``dataset`` it names (a ledger name as written; a binding by a hash of the rows only as
    "checked", the hash itself never published), its file and citation; None when the release
    was checked against none."""
    if codebook is None:
        return None
    return {
        "sha256": codebook.public_digest(),
        "dataset": BOUND_BY_CONTENT if codebook.bound_by_content else codebook.dataset,
        "file": codebook.source,
        "citation": codebook.citation,
    }


def check_dataset(codebook: Codebook | None, dataset: Any, name: str | None) -> None:
    """DataError (one line) when ``codebook`` names a dataset (its ``dataset``) and the data
    opened is another: the codebook's ``dataset`` must be the data's content fingerprint (its
    ledger identity), its file's SHA-256, or the ledger name it is released under (``name``,
    with or without ``name:``). Nothing is charged or looked up in the ledger."""
    if codebook is None or not codebook.dataset:
        return
    wanted = codebook.dataset.strip()
    if name is not None and wanted in (name.strip(), f"name:{name.strip()}"):
        return
    from dpexplorer.release.release import _identity

    identity = _identity(dataset)
    if wanted == identity or wanted == str(getattr(dataset, "fingerprint", "")):
        return
    named = f" (released under the name {name!r})" if name is not None else ""
    raise DataError(
        f"the codebook describes dataset {wanted!r}, not this data (content fingerprint {identity}"
        f"{named}): use this dataset's codebook, or set its dataset field to this data's"
    )


def origins(records: list[dict[str, Any]], codebook: Codebook | None) -> dict[str, Any]:
    """What a release's provenance adds: ``fact_origins`` and ``codebook``."""
    return {"fact_origins": records, "codebook": codebook_record(codebook)}
