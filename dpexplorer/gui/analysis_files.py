"""File > Export Analysis As… and File > Open Plan as Budget Plan… (issue 31).

Export: the window's budget plan (or, when it is empty, the statistic on screen) becomes a plan
file for ``dpexplorer release``, a Python script or a Jupyter notebook using the public API
(:mod:`dpexplorer.release.analysis_export` writes them; only declared facts, never a true answer).
An analysis using a public fact the dataset's codebook does not declare is refused, naming it;
each fact's origin in the codebook is written with the statistic.
Import: a plan file becomes the window's budget plan, each entry explorable and priced as its
release would be charged (the plan is read and checked by :mod:`dpexplorer.release.plan_run`,
as ``dpexplorer release`` reads it)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMenu

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.gui.query_groups import EACH_ROW

if TYPE_CHECKING:
    from dpexplorer.release.analysis_export import Analysis

MainWindow = Any
"""The main window (``dpexplorer.gui.main_window.MainWindow``, which imports this module: not
imported here, not even for types, so that no import circle forms)."""

EXPORT_FILTERS = {
    "Plan for dpexplorer release (*.json)": "plan",
    "Python script using the dpexplorer API (*.py)": "script",
    "Jupyter notebook (*.ipynb)": "notebook",
}
PLAN_FILTER = "Plans (*.json);;All files (*)"


def add_analysis_actions(window: MainWindow, menu: QMenu) -> None:
    """The two File menu actions (kept on the window as ``export_analysis_action`` and
    ``import_plan_action``)."""
    export_action = QAction("&Export Analysis As…", window)
    export_action.setToolTip(
        "Save the budget plan as a plan file for 'dpexplorer release', a Python script or a Jupyter "
        "notebook that releases it (no true answer is written)"
    )
    export_action.triggered.connect(lambda: export_analysis_dialog(window))
    import_action = QAction("Open &Plan as Budget Plan…", window)
    import_action.setToolTip("Read a plan file (as 'dpexplorer release' runs it) into the Budget tab")
    import_action.triggered.connect(lambda: import_plan_dialog(window))
    menu.addAction(export_action)
    menu.addAction(import_action)
    window.export_analysis_action, window.import_plan_action = export_action, import_action
    # each planned statistic is explorable: double-click its name in the Budget tab (the tab is
    # built with the mechanisms, after the menus: this slot runs after the window's own)
    window.explorer.registry_ready.connect(lambda: _explorable_rows(window))


def _explorable_rows(window: MainWindow) -> None:
    view = window.workspace.budget_view if window.workspace is not None else None
    if view is None or getattr(view, "_dpx_explorable", False):
        return
    view._dpx_explorable = True
    view.table.setToolTip("Double-click a planned statistic's name to explore it")

    def activated(row: int, column: int) -> None:
        index = row - len(view._released)
        if column == 0 and 0 <= index < len(view.plan):
            explore_entry(window, index)

    view.table.cellDoubleClicked.connect(activated)


def _label(label: str) -> str:
    """A plan row's label without its '#N ' prefix (the export numbers statistics itself)."""
    head, _, rest = label.partition(" ")
    return rest if head.startswith("#") and rest else label


def entry_kind(query: Mapping[str, Any], mechanism: str) -> str:
    """The plan entry's kind of a statistic the window built: ``synthetic`` for MST or AIM on a
    marginals query (the synthetic-table form, whose release the window makes a table by
    default: :func:`~dpexplorer.gui.release_dialog.offers_table`), else ``statistic``."""
    from dpexplorer.gui.release_dialog import SYNTHETIC_MECHANISMS

    return (
        "synthetic" if query.get("type") == "marginals" and mechanism in SYNTHETIC_MECHANISMS else "statistic"
    )


def window_analysis(window: MainWindow) -> Analysis:
    """The window's analysis: the budget plan's statistics (or the statistic on screen when the
    plan is empty), each with its public facts' origins in the codebook, the data's location,
    the Data tab's sampling claim and the planning budget. DPExplorerError when there is nothing
    to export, or when a statistic uses a fact the codebook does not declare (naming it)."""
    from dpexplorer.release.analysis_export import Analysis, AnalysisExportError, Statistic

    dataset = window.dataset
    if dataset is None:
        raise AnalysisExportError("open a dataset first")
    statistics = []
    workspace = window.workspace
    imported = getattr(window, "plan_kinds", {})
    for item in workspace.budget_view.plan if workspace is not None else ():
        query, relation = window.plan_queries[item.label]
        known = imported.get(item.label)  # as an opened plan says, if this row is still that entry
        kind = known[2] if known is not None and known[:2] == (query, item.mechanism) else ""
        kind = kind or entry_kind(query, item.mechanism)
        statistics.append(
            Statistic(query, item.mechanism, dict(item.params), _label(item.label), relation, kind)
        )
    explorer = window.explorer
    if not statistics and explorer.query is not None and explorer.mechanism is not None:
        statistics.append(
            Statistic(
                explorer.query.to_dict(),
                explorer.mechanism.name,
                explorer.mechanism.validate(explorer.params),
                "",
                explorer.relation,
                entry_kind(explorer.query.to_dict(), explorer.mechanism.name),
            )
        )
    if mismatch := window.codebook_mismatch():
        raise AnalysisExportError(mismatch)
    statistics = [_with_facts(window, number, stat) for number, stat in enumerate(statistics, start=1)]
    spark = getattr(dataset, "format", "") == "spark"
    data = str(getattr(dataset, "source", "")) if spark else str(Path(dataset.path).resolve())
    return Analysis(
        data,
        statistics,
        engine="spark" if spark else "polars",
        sampling_rate=window.dataset_view.sampling_rate,
        budget=_budget(window),
    )


def _with_facts(window: MainWindow, number: int, stat: Any) -> Any:
    """``stat`` with its facts' origins in the window's codebook; AnalysisExportError naming
    each fact the codebook does not declare (an export never writes a fact read from the data)."""
    import dataclasses

    from dpexplorer.data.queries import query_from_dict
    from dpexplorer.gui.query_facts import fact_records
    from dpexplorer.release.analysis_export import AnalysisExportError

    blockers = window.blockers(query_from_dict(stat.query))
    if blockers:
        raise AnalysisExportError(
            f"statistic {number} ({stat.label or stat.mechanism}) uses {'; '.join(blockers)}, not declared "
            "in the codebook: declare each (Release > Codebook…) or estimate it privately, then export"
        )
    return dataclasses.replace(stat, facts=fact_records(stat.query, window.codebook))


def _budget(window: MainWindow) -> tuple[float, float, str] | None:
    """The planning budget (epsilon, delta, accountant) of the Budget tab: the ledger's, when
    it holds one for the dataset, else the one typed there under basic composition."""
    if window.workspace is None:
        return None
    view = window.workspace.budget_view
    delta = view._delta()
    method = getattr(view, "_ledger_method", None) or "basic"
    return (float(view.budget_epsilon.value()), float(delta or 0.0), str(method))


def export_analysis(window: MainWindow, path: str | Path, kind: str) -> Path:
    """Write the window's analysis to ``path`` as ``kind`` (``plan``, ``script``,
    ``notebook``); the script and notebook use the window's ledger unless it is the default
    one (then the default ledger of whoever runs them). DPExplorerError when it cannot."""
    from dpexplorer.release.analysis_export import export
    from dpexplorer.release.ledger import default_ledger_path

    ledger = window.ledger_path()
    shown = None if Path(ledger) == default_ledger_path() else str(ledger)
    return export(window_analysis(window), path, kind, ledger=shown)


def export_analysis_dialog(window: MainWindow) -> None:
    """Ask where and in which format, then export (errors in the window's error box)."""
    path, chosen = QFileDialog.getSaveFileName(
        window, "Export analysis as", "analysis.json", ";;".join(EXPORT_FILTERS)
    )
    if not path:
        return
    kind = EXPORT_FILTERS.get(chosen, "plan")
    suffix = {"plan": ".json", "script": ".py", "notebook": ".ipynb"}[kind]
    if Path(path).suffix.lower() != suffix:
        path = str(Path(path).with_suffix(suffix))
    try:
        written = export_analysis(window, path, kind)
    except DPExplorerError as exc:
        window.show_error(f"Could not export the analysis: {exc}")
        return
    window.statusBar().showMessage(f"Analysis exported to {written}", 8000)


def plan_rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A plan's entries as the budget plan's rows (a saved session's form, rebuilt on the data
    by ``jobs.rebuild_plan``): each query checked as ``dpexplorer release`` checks it and its
    parameters validated; PlanError ``plan entry N: ...`` for the first that fails."""
    from dpexplorer.core.mechanisms import registry
    from dpexplorer.release.plan_run import PlanError, entry_query

    rows = []
    for number, entry in enumerate(entries, start=1):
        try:
            query, params = entry_query(entry)
            mechanism = registry.get(entry["mechanism"])
            validated = mechanism.validate(params)
        except KeyError as exc:  # an unknown mechanism: the registry names the known ones
            raise PlanError(f"plan entry {number}: {exc.args[0]}") from None
        except DPExplorerError as exc:
            raise PlanError(f"plan entry {number}: {exc}") from None
        rows.append(
            {
                "label": f"#{number} {query.describe()}",
                "mechanism": mechanism.name,
                "params": validated,
                "query": query.to_dict(),
                "relation": "add_remove",
                "held": False,
                "target": None,
            }
        )
    return rows


def import_plan(window: MainWindow, path: str | Path) -> bool:
    """Make the plan file at ``path`` the window's budget plan (replacing the one shown), with
    its sampling claim on the Data tab; each entry is priced as its release would be charged.
    Errors (file, entry, data) in the window's error box; returns whether it was accepted."""
    from dpexplorer.gui import jobs
    from dpexplorer.release.plan_run import read_plan_file

    if window.dataset is None:
        window.show_error("Open the dataset the plan is for before opening the plan.")
        return False
    try:
        entries, rate = read_plan_file(path)
        rows = plan_rows(entries)
    except DPExplorerError as exc:
        window.show_error(f"Could not open the plan: {exc}")
        return False
    window.plan_queries = {row["label"]: (row["query"], row["relation"]) for row in rows}
    # each entry's kind as the plan says it (an MST entry without one releases noisy marginals)
    window.plan_kinds = {
        row["label"]: (row["query"], row["mechanism"], e.get("kind", "statistic"))
        for row, e in zip(rows, entries, strict=True)
    }
    _declare_plan_facts(window, rows, Path(path).name)
    if rate is not None:
        window.dataset_view.set_sampling_rate(rate)
    window.compute.submit("plan-rebuild", jobs.rebuild_plan, window.dataset, rows)
    if window.workspace is not None:  # the plan is shown where it is priced
        window.tabs.setCurrentWidget(window.workspace.budget_view)
    window.statusBar().showMessage(
        f"Plan {Path(path).name}: {len(rows)} statistic(s) in the Budget tab", 8000
    )
    return True


def _declare_plan_facts(window: MainWindow, rows: list[dict[str, Any]], name: str) -> None:
    """The plan's public facts into the dataset's codebook where it declares none (a plan is the
    steward's declaration; one that contradicts the codebook stays undeclared, and its release
    and export are refused, naming it)."""
    from dpexplorer.gui.query_facts import declare_used

    codebook = window.codebook
    for row in rows:
        codebook = declare_used(codebook, row["query"], f"the plan {name}")
    if codebook != window.codebook:
        window.set_codebook(codebook)


def import_plan_dialog(window: MainWindow) -> None:
    path, _ = QFileDialog.getOpenFileName(window, "Open a plan as the budget plan", "", PLAN_FILTER)
    if path:
        import_plan(window, path)


# ------------------------------------------------------------------ exploring a planned entry
def _delta_text(delta: float) -> str:
    """A delta as the query panel's list writes it (1e-06 -> '1e-6')."""
    mantissa, exponent = f"{delta:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}" if float(f"{delta:.0e}") == delta else f"{delta:g}"


def _conditions(predicate: Mapping[str, Any], rows: int) -> tuple[str, list[list[Any]]] | None:
    """(joiner, condition rows) for a predicate the panel can show, else None."""
    terms, joiner = [predicate], "and"
    for word in ("and", "or"):
        if word in predicate:
            terms, joiner = list(predicate[word]), word
    shown = []
    for term in terms:
        negate = "not" in term
        term = term["not"] if negate else term
        if "compare" not in term or term["compare"] == "in":
            return None
        value = term["value"]
        text = f"{value:g}" if isinstance(value, float) else str(value)
        shown.append([negate, term["column"], term["compare"], text])
    if len(shown) > rows:
        return None
    return joiner, shown + [[False, shown[0][1], "==", ""]] * (rows - len(shown))


def panel_state(query: Mapping[str, Any], base: Mapping[str, Any]) -> dict[str, Any] | None:
    """The query panel's controls (``QueryPanel.state`` form, from ``base``) that build
    ``query`` (a ``to_dict``), or None for a query the panel cannot state (a workload, a
    histogram by group). The caller checks the panel then builds the same query."""
    state = dict(base)
    kind = query.get("type")
    state.update({k: query[k] for k in ("column", "lower", "upper") if query.get(k) is not None})
    if kind in ("count", "sum", "mean"):
        state["kind"] = kind
    elif kind == "predicate_count":
        shown = _conditions(query["predicate"], len(base["conditions"]))
        if shown is None:
            return None
        state["kind"], (state["joiner"], state["conditions"]) = kind, shown
    elif kind == "quantile":
        state["kind"], state["q"] = (
            ("median" if query.get("q", 0.5) == 0.5 else "quantile"),
            query.get("q", 0.5),
        )
    elif kind == "trimmed_mean":
        state["kind"], state["trim_fraction"] = kind, query["trim_fraction"]
    elif kind == "variance":
        state["kind"] = "std" if query.get("std") else "variance"
    elif kind == "histogram":
        axis = query["axis"]
        state["kind"], state["column"] = kind, axis["column"]
        if axis.get("edges") is not None:
            edges = axis["edges"]
            state.update(lower=edges[0], upper=edges[-1], bins=len(edges) - 1)
        else:
            state["categories"] = ", ".join(map(str, axis["categories"]))
    elif kind in ("argmax", "top_k"):
        state["kind"], state["categories"] = kind, ", ".join(map(str, query["categories"]))
        state["k"] = query.get("k", state["k"])
    elif kind == "group_by":
        if not _group_state(query, state):
            return None
    else:
        return None
    return state


def _group_state(query: Mapping[str, Any], state: dict[str, Any]) -> bool:
    keys = list(query.get("keys") or [])
    if any(axis.get("edges") is not None for axis in keys):
        return False  # a histogram by group: its bins come from the panel's bounds
    statistic = query.get("statistic", "count")
    state["kind"] = f"group_{statistic}"
    if statistic == "quantile":
        state["q"] = query.get("q", 0.5)
    private = query.get("private_keys")
    if private is not None:
        columns = list(private["columns"])
        state.update(
            key_origin="private", key_epsilon=private["epsilon"], key_delta=_delta_text(private["delta"])
        )
    else:
        columns = [axis["column"] for axis in keys]
        state["key_origin"] = "declared"
        state["group_categories"] = ", ".join(map(str, keys[0]["categories"]))
    state["group1"] = columns[0]
    state["group2"] = columns[1] if len(columns) > 1 else "(none)"
    unit = query.get("unit")
    state["unit"] = unit["column"] if unit else EACH_ROW
    if unit:
        state.update(max_groups=unit.get("max_groups", 1), max_rows=unit.get("max_rows", 1))
    return True


def explore_entry(window: MainWindow, index: int) -> bool:
    """Show the budget plan's ``index``-th statistic in the query and mechanism panels, so that
    every view explores it. The panel is set to controls that build the same query; where it
    cannot state the query (a workload, a histogram by group, a condition it has no row for),
    the views explore the planned query as it is and the status bar says the panel does not
    show it. Returns whether the panel shows it."""
    from dpexplorer.data.queries import query_from_dict

    item = window.workspace.budget_view.plan[index]
    query_dict, relation = window.plan_queries[item.label]
    query = query_from_dict(query_dict)
    panel = window.query_panel
    state = panel_state(query.to_dict(), {**panel.state(), "relation": relation})
    shown = False
    if state is not None:
        before = panel.state()
        panel.set_state(state)
        try:
            shown = panel.build().to_dict() == query.to_dict()
        except DPExplorerError:
            shown = False
        if not shown:
            panel.set_state(before)
    choose = _mechanism_chooser(window, item.mechanism, dict(item.params))
    window.explorer.query_ready.connect(choose)
    if not shown:  # the views explore the plan's own query; the panel keeps its controls
        window.explorer.set_query(query, relation)
    label = item.label
    note = (
        ""
        if shown
        else " (the query panel cannot show this query's settings: the views explore it as planned)"
    )
    window.statusBar().showMessage(f"Exploring {label}{note}", 8000)
    return shown


def _mechanism_chooser(window: MainWindow, name: str, params: dict[str, Any]) -> Any:
    """A one-shot slot for the explorer's next query: pick ``name`` and set ``params``."""

    def choose(_query: object) -> None:
        window.explorer.query_ready.disconnect(choose)
        panel = window.mechanism_panel
        try:
            panel.select(name)
        except KeyError as exc:
            window.show_error(str(exc.args[0]))
            return
        panel.set_values(params)

    return choose
