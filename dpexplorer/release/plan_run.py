"""A release plan, read and run: the one path shared by ``dpexplorer release``, the public API
(``dpexplorer.release_plan``) and the window's plan import.

:func:`read_plan_file` reads a plan (format: ``dpexplorer/release/PLAN_FORMAT.md``);
:func:`prepare_plan` validates every entry on a dataset (nothing drawn, nothing charged);
:func:`release_prepared` checks the plan's total against the budget and the output directory,
then charges, draws and writes each entry in turn (:func:`dpexplorer.release.release.execute`).
Errors are :class:`PlanError` (``plan entry N: ...``) and the release layer's own
(BudgetExceededError, NoBudgetError, ExportError, ReleaseFailedError), with the same messages
whoever calls."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.stages import stage, within
from dpexplorer.data.json_files import read_json_file

if TYPE_CHECKING:
    from dpexplorer.release.samplers import BitSource

MAX_PLAN_BYTES = 64 << 20
"""A plan larger than this is refused before it is parsed."""
MAX_PLAN_ENTRIES = 10_000
"""A plan of more entries is refused before any is checked (nothing charged): each entry is a
query on the data, a ledger row and three fsync'ed files (5,000 entries took 10 minutes on a
loaded two-core machine); a larger release is several plans, each its own run."""
ENTRY_KINDS = ("statistic", "synthetic")
"""An entry's ``kind``: a statistic (default) or a synthetic table (MST/AIM on a ``marginals``
query: :mod:`dpexplorer.release.synthetic_tables`)."""


class PlanError(DPExplorerError):
    """The plan file is malformed, or one of its entries does not fit the dataset."""


def read_plan_file(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], float | None]:
    """(entries, declared Poisson sampling rate or None). A plan is a JSON list of entries, or an
    object ``{"sampling": {"rate": Q}, "measurements": [...]}`` whose ``sampling`` is the steward's
    claim that the data are a secret Poisson sample of rate Q of a population. Each entry comes
    back with ``query`` (dict), ``mechanism`` (str) and ``parameters`` (dict); PlanError says
    which entry is wrong and how."""
    _, plan = read_json_file(path, "plan", MAX_PLAN_BYTES, PlanError, ": save it as UTF-8")
    return plan_entries(plan)


ENTRY_KEYS = frozenset({"query", "mechanism", "parameters", "kind", "post_processing", "format"})
"""The keys a plan entry may hold (PLAN_FORMAT.md)."""


def plan_entries(plan: Any) -> tuple[list[dict[str, Any]], float | None]:
    """:func:`read_plan_file` for a plan already parsed from JSON (a list or a sampling object)."""
    plan, rate = _sampling(plan)
    if not isinstance(plan, list) or not plan:
        raise PlanError("the plan must be a non-empty JSON list of {query, mechanism, parameters}")
    if len(plan) > MAX_PLAN_ENTRIES:
        raise PlanError(
            f"the plan has {len(plan):,} entries; at most {MAX_PLAN_ENTRIES:,} are released in one run: "
            "split it into several plans (nothing was charged)"
        )
    entries = []
    for number, entry in enumerate(plan, start=1):
        if not isinstance(entry, dict) or set(entry) - ENTRY_KEYS:
            raise PlanError(f"plan entry {number} must be an object with keys query, mechanism, parameters")
        query, mechanism, params = entry.get("query"), entry.get("mechanism"), entry.get("parameters", {})
        if not isinstance(query, dict) or not isinstance(mechanism, str) or not isinstance(params, dict):
            raise PlanError(
                f"plan entry {number} needs a query object, a mechanism name and a parameters object"
            )
        kind = entry.get("kind", "statistic")
        if kind not in ENTRY_KINDS:
            raise PlanError(
                f"plan entry {number}: kind must be one of {', '.join(ENTRY_KINDS)}, not {kind!r}"
            )
        extra = {"kind": kind} if kind != "statistic" else {}
        if "format" in entry:  # a synthetic table's files: "csv", "parquet" or both
            if kind != "synthetic":
                raise PlanError(f"plan entry {number}: format is for a synthetic table (kind 'synthetic')")
            extra["format"] = entry["format"]
        if "post_processing" in entry:  # declared post-processing (dpexplorer/release/published.py)
            if not isinstance(entry["post_processing"], dict):
                raise PlanError(f"plan entry {number}: post_processing must be an object of true/false")
            if kind == "synthetic":  # it would do nothing: say so rather than ignore it
                raise PlanError(
                    f"plan entry {number}: post_processing is for released values; a synthetic table's "
                    "records are drawn from the fitted model (leave post_processing out)"
                )
            extra["post_processing"] = entry["post_processing"]
        entries.append({"query": query, "mechanism": mechanism, "parameters": params, **extra})
    return entries, rate


def _sampling(plan: Any) -> tuple[Any, float | None]:
    """The plan's measurements and its declared sampling rate (None for a plain list)."""
    if not isinstance(plan, dict):
        return plan, None
    sampling = plan.get("sampling")
    if (
        set(plan) - {"sampling", "measurements"}
        or not isinstance(sampling, dict)
        or set(sampling) != {"rate"}
    ):
        raise PlanError('a plan object must be {"sampling": {"rate": Q}, "measurements": [...]}')
    rate = sampling["rate"]
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 1:
        raise PlanError(f"the plan's sampling rate must satisfy 0 < rate <= 1, got {str(rate)[:40]}")
    return plan.get("measurements"), float(rate)


def unknown_keys(given: Any, known: Any, where: str = "query") -> str | None:
    """The first key of ``given`` that the rebuilt query ``known`` does not have (recursively),
    as a dotted path; None if every key is used."""
    if isinstance(given, Mapping) and isinstance(known, Mapping):
        for key, value in given.items():
            if key not in known:
                return f"{where}.{key}"
            found = unknown_keys(value, known[key], f"{where}.{key}")
            if found:
                return found
    if isinstance(given, list) and isinstance(known, list | tuple) and len(given) == len(known):
        for i, (a, b) in enumerate(zip(given, known, strict=True)):
            found = unknown_keys(a, b, f"{where}[{i}]")
            if found:
                return found
    return None


def entry_parameters(entry: Mapping[str, Any], query_dict: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's parameters; a top-k query's ``k`` is the topk mechanism's ``k`` (given once,
    or twice with the same value)."""
    params = dict(entry["parameters"])
    if entry["mechanism"] == "topk" and "k" in query_dict:
        if "k" in params and params["k"] != query_dict["k"]:
            raise PlanError(
                f"the query's k ({query_dict['k']!r}) and the parameters' k ({params['k']!r}) "
                "differ: give k once"
            )
        params["k"] = query_dict["k"]
    return params


def entry_query(entry: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(query, parameters) of a plan entry: the query rebuilt (``query_from_dict``), refused when
    it holds a key the query does not use (a misspelt setting must not be silently dropped)."""
    from dpexplorer.data.queries import query_from_dict

    query = query_from_dict(entry["query"])
    unknown = unknown_keys(entry["query"], query.to_dict())
    if unknown:
        raise PlanError(f"unknown key {unknown}")
    return query, entry_parameters(entry, query.to_dict())


def prepare_plan(
    dataset: Any,
    entries: Sequence[Mapping[str, Any]],
    rate: float | None,
    ledger: Any,
    *,
    ci_level: float = 0.95,
    dataset_name: str | None = None,
    on_prepared: Callable[[int, int], None] | None = None,
    codebook: Any = None,
    bounding_seed: int | None = None,
) -> list[Any]:
    """Every entry validated on ``dataset`` and its exact release path built
    (:func:`dpexplorer.release.release.prepare`), filed under the dataset's key in ``ledger``
    (its content fingerprint, or ``dataset_name``); nothing is drawn or charged. PlanError
    ``plan entry N: <reason>`` for the first entry that fails. ``on_prepared(number, total)``
    is called as each entry starts (progress from the first one).

    The entries' inputs are computed before the dataset's key, which is then set on each: the
    fingerprint may wait for compiled kernels still loading on another thread
    (:func:`dpexplorer.data.identity.preload`), and the queries' scans, outside the GIL, overlap
    that load. A plan with an entry that fails leaves the ledger untouched (no key looked up).

    ``codebook`` (:class:`dpexplorer.data.codebook.Codebook`; None: the one shipped for the
    bundled dataset, else none) supplies the public facts an entry leaves out and refuses an
    entry that contradicts it or uses a fact neither declares
    (:func:`dpexplorer.release.public_facts.declare_entry`), and one that names another dataset
    (:func:`~dpexplorer.release.public_facts.check_dataset`); each release's provenance lists
    its public facts with their origins.

    ``bounding_seed`` (None in every release: the OS CSPRNG's) fixes the privacy unit's random
    choice of rows: the replay audit (:mod:`dpexplorer.release.replay`) bounds D and D' alike."""
    import dataclasses

    from dpexplorer.release.public_facts import check_dataset, declare_entry, default_codebook, origins
    from dpexplorer.release.release import dataset_key, prepare, with_sampling_rate

    book = default_codebook(dataset, codebook)
    key = ""  # set below, once every entry is prepared
    prepared: list[Any] = []
    for number, entry in enumerate(entries, start=1):
        if on_prepared is not None:
            on_prepared(number, len(entries))
        try:
            entry, facts = declare_entry(entry, book)
            query, params = entry_query(entry)
            if entry.get("kind") == "synthetic":
                from dpexplorer.release.synthetic_tables import prepare_synthetic

                if rate is not None:
                    raise PlanError(
                        "a synthetic table claims no sampling amplification: leave out 'sampling'"
                    )
                table = prepare_synthetic(
                    dataset,
                    query,
                    entry["mechanism"],
                    params,
                    key=key,
                    formats=entry.get("format"),
                    bounding_seed=bounding_seed,
                )
                prepared.append(dataclasses.replace(table, origins=origins(facts, book)))
                continue
            item = prepare(
                dataset,
                query,
                entry["mechanism"],
                params,
                ci_level=ci_level,
                key=key,
                post_processing=entry.get("post_processing"),
                bounding_seed=bounding_seed,
            )
            item = dataclasses.replace(item, origins=origins(facts, book))
            prepared.append(item if rate is None else with_sampling_rate(item, rate))
        except (DPExplorerError, KeyError, TypeError, ValueError, ArithmeticError) as exc:
            raise PlanError(f"plan entry {number}: {exc}") from None
    try:
        check_dataset(book, dataset, dataset_name)
    except DPExplorerError as exc:
        raise PlanError(str(exc)) from None
    key = dataset_key(dataset, ledger, dataset_name)
    return [dataclasses.replace(item, fingerprint=key) for item in prepared]


def in_run(prepared: Sequence[Any], dataset_name: str, token: str | None = None) -> list[Any]:
    """The plan's releases marked as one run (their provenance's ``run``): one random token
    (``token``, or a new one), in every file name of the run (``release-<row>-<token>-...``, the
    ledger row keeping them apart) and in its report's, the entry's place, the dataset's name."""
    import dataclasses

    from dpexplorer.release.export import new_token

    token, total = token or new_token(), len(prepared)
    return [
        dataclasses.replace(
            item,
            token=token,
            run={"token": token, "entry": n, "entries": total, "dataset": dataset_name},
        )
        for n, item in enumerate(prepared, start=1)
    ]


def check_codebook(entries: Sequence[Mapping[str, Any]], codebook: Any) -> None:
    """PlanError ``plan entry N: ...`` for the first entry that contradicts ``codebook`` or uses
    a public fact neither it nor the plan declares; decided from the plan and the codebook
    alone, before the data are opened (:func:`prepare_plan` checks the same again)."""
    from dpexplorer.release.public_facts import declare_entry

    for number, entry in enumerate(entries, start=1):
        try:
            declare_entry(entry, codebook)
        except DPExplorerError as exc:
            raise PlanError(f"plan entry {number}: {exc}") from None


def check_totals(prepared: Sequence[Any]) -> None:
    """PlanError unless every ``total_from_entry`` (declared post-processing,
    dpexplorer/release/published.py) names an earlier entry that releases the count of all rows
    with a fixed-width noise interval (Laplace or Gaussian); checked before anything is charged."""
    from dpexplorer.release.release import PreparedRelease

    for number, item in enumerate(prepared, start=1):
        source = getattr(item, "post_processing", {}).get("total_from_entry")
        if source is None:
            continue
        if not 1 <= source < number:
            raise PlanError(f"plan entry {number}: total_from_entry must name an earlier entry, not {source}")
        total = prepared[source - 1]
        if (
            not isinstance(total, PreparedRelease)
            or total.query.get("type") != "count"
            or total.exact.ci_at is None
            or total.sampling_rate != item.sampling_rate
        ):
            raise PlanError(
                f"plan entry {number}: total_from_entry {source} must be a count of all rows released "
                "with laplace or gaussian"
            )


def with_released_total(item: Any, released: Sequence[tuple[Any, Any]]) -> Any:
    """``item`` with the total its ``total_from_entry`` names, once that entry is released: its
    released value and its half-width at any level (:func:`check_totals` checked the entry)."""
    import dataclasses

    source = item.post_processing.get("total_from_entry")
    if source is None:
        return item
    total_item, total_result = released[source - 1]
    return dataclasses.replace(item, total=(float(total_result.values[0]), total_item.exact.ci_at))


def release_prepared(
    prepared: Sequence[Any],
    ledger: Any,
    out_dir: str | os.PathLike[str],
    on_release: Callable[[int, Any, Any], None] | None = None,
    bits: Callable[[int], BitSource] | None = None,
) -> list[tuple[Any, Any]]:
    """Release a prepared plan, all or nothing up front: the plan's total is checked against
    what is left of the budget (BudgetExceededError / NoBudgetError) and the output directory
    (ExportError) before anything is charged; then each entry is charged, drawn and written
    (:func:`dpexplorer.release.release.execute`), ``on_release(number, prepared, result)``
    called after each. Returns (prepared, result) per entry.

    ``bits(number)``: entry ``number``'s bit source, for the replay audit only (a seeded one,
    the same on D and D', charged to a throwaway ledger); None, in every release, draws each
    entry's noise from the OS CSPRNG."""
    from dpexplorer.release.charge import charged_guarantee, execute
    from dpexplorer.release.export import check_output_dir, remove_partial_files
    from dpexplorer.release.release import PreparedRelease

    if not prepared:
        return []
    check_totals(prepared)
    key = prepared[0].fingerprint
    ledger.check(key, [charged_guarantee(item, ledger) for item in prepared])
    check_output_dir(out_dir, [item.token for item in prepared])
    remove_partial_files(out_dir)
    released: list[tuple[Any, Any]] = []
    for number, item in enumerate(prepared, start=1):
        if isinstance(item, PreparedRelease):  # not a synthetic table (entry kind "synthetic")
            item = with_released_total(item, released)
        drawing = stage(f"{item.mechanism} (charged): drawing and writing", measured=False)
        with within(f"entry {number} of {len(prepared)}"), drawing:
            source = bits(number) if bits is not None else None
            result = execute(item, ledger=ledger, out_dir=out_dir, bits=source, directory_checked=True)
        released.append((item, result))
        if on_release is not None:
            on_release(number, item, result)
    return released
