"""The release report (issue 21): what a run released, as a page a person reads.

:func:`build_report` gathers, from the released results and the ledger, only what was published:
the released (noisy) values, their intervals, the declared query and mechanism, the guarantees
charged, the budget before and after. It never sees a true answer: :class:`ReportItem` is built
from :class:`~dpexplorer.release.release.ReleaseResult` (released values) and the public parts of
:class:`~dpexplorer.release.release.PreparedRelease` (query, parameters, provenance; never
``exact.draw``). The number of rows is shown only where a count was released, since under
add/remove it is private.

:func:`render_html` writes a self-contained HTML page (plots inline as SVG). The PDF is drawn by
Qt (``dpexplorer/report_pdf.py``), because ``release`` must not import Qt; it renders the same
HTML with ``pdf=True``, where each plot is an ``<img>`` naming one of :meth:`Report.plots`."""

from __future__ import annotations

import contextlib
import html
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dpexplorer
from dpexplorer.core.accounting.guarantees import ZCDP, ApproxDP, Guarantee, LaplaceNoise, PureDP
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.release.export import atomic_write
from dpexplorer.release.ledger import METHODS, Budget, Ledger, guarantee_to_dict, total_epsilon
from dpexplorer.release.presentation import BOTTOM, EMPTY, Shown, level_text, privacy_number, show
from dpexplorer.release.published import HELPER_SUFFIX, integral_flags

STATISTICS_PER_PAGE = 3
"""At most this many statistics on one PDF page (each has two tables and a plot)."""
PAGE_HEIGHT = 940
"""Height of an A4 page within 15 mm margins in Qt rich-text pixels (267 mm at 96 per inch),
less what the layout adds around images."""

COUNT_STATISTICS = frozenset({"count"})
SUMMARY_VALUES = 6
"""At most this many values of a statistic in the summary's table (its section lists all)."""


@dataclass(frozen=True)
class MarginalRow:
    """One marginal a synthetic table's mechanism measured (MST, AIM): DP facts only."""

    marginal: tuple[str, ...]
    cells: int | None
    """Its number of cells (the product of its columns' public domain sizes)."""
    sigma: float
    """The Gaussian noise's standard deviation the run accounted for (a DP output for AIM)."""
    rho_measure: float
    """zCDP of the measurement: Delta_2^2 / (2 sigma^2)."""
    rho_select: float | None
    """zCDP of the exponential-mechanism round that chose it (epsilon^2 / 8), None if it was
    measured without a selection (the 1-way marginals)."""


@dataclass(frozen=True)
class ReportItem:
    """One released statistic, as published: nothing here is a true answer."""

    row_id: int
    description: str
    query: dict[str, Any]
    statistic: str
    mechanism: str
    parameters: dict[str, Any]
    labels: tuple[str, ...]
    values: tuple[float | str, ...]
    intervals: tuple[tuple[float, float] | None, ...] | None
    """(low, high) per value; None in place of a value without one (⊥), None for no intervals."""
    ci_level: float
    epsilon: float
    delta: float
    rho: float | None
    guarantee: Guarantee
    sampler: str
    grid: dict[str, Any]
    dp_outputs: dict[str, Any]
    public_facts: dict[str, Any]
    relation: str
    interval_kinds: tuple[str | None, ...] = ()
    """Per value, what its interval is: "noise", "exact" or "range" (dpexplorer/release/published.py)."""
    marginals: tuple[MarginalRow, ...] = ()
    """A synthetic table's measured marginals (its quality table); empty for a statistic."""

    @property
    def numeric(self) -> bool:
        """True when every released value is a number, or an empty group (not a category or ⊥)."""
        return any(isinstance(v, float | int) for v in self.values) and all(
            isinstance(v, float | int) or v == EMPTY for v in self.values
        )

    def integral(self, index: int) -> bool:
        """Whether value ``index`` is a count of rows (shown as a whole number)."""
        return integral_flags(self.statistic, self.labels)[index]

    def shown(self, index: int) -> Shown:
        """Value ``index`` as a person reads it (the one rounding rule)."""
        interval = self.intervals[index] if self.intervals else None
        return show(self.values[index], interval, self.ci_level, integral=self.integral(index))

    def main_indices(self) -> list[int]:
        """The statistic's own values: every value but the helpers ("count (noisy)", "centred sum
        (noisy)"), which the report lists in an appendix."""
        return [i for i, label in enumerate(self.labels) if not label.endswith(HELPER_SUFFIX)]

    @property
    def rank_within(self) -> int | None:
        """A DP quantile's rank interval in rows (None for other releases)."""
        value = self.grid.get("rank_within_rows")
        return None if value is None else int(value)


@dataclass(frozen=True)
class BudgetLine:
    """Epsilon spent before and after the run under one accountant (upper bounds), or the
    reason the accountant does not apply."""

    method: str
    before: float | None
    after: float | None
    note: str


@dataclass(frozen=True)
class Report:
    """Everything the report shows (all public: declared facts and DP outputs)."""

    dataset: str
    fingerprint: str
    items: tuple[ReportItem, ...]
    budget: Budget | None
    budget_lines: tuple[BudgetLine, ...]
    plan: list[dict[str, Any]]
    ledger_path: str
    software: str = field(default_factory=lambda: f"dpexplorer {dpexplorer.__version__}")
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def plots(self) -> dict[str, str]:
        """SVG text of each statistic's plot by name (``plot-<row id>.svg``)."""
        return {_plot_name(item): svg_plot(item) for item in self.items}


def _describe_query(query: Mapping[str, Any]) -> str:
    from dpexplorer.data.queries import query_from_dict

    try:
        return query_from_dict(dict(query)).describe()
    except (DPExplorerError, KeyError, TypeError, ValueError):
        return json.dumps(query, sort_keys=True)


def report_item(prepared: Any, result: Any) -> ReportItem:
    """The published parts of one release: ``prepared`` a PreparedRelease, ``result`` its
    ReleaseResult. Reads the released values, never ``prepared.exact.draw``."""
    exact = prepared.exact
    intervals = result.confidence_intervals
    if intervals is None and exact.dp_outputs.get("confidence_intervals"):
        # intervals computed after the charge from released values (e.g. a noisy mean)
        intervals = tuple(
            None if ci is None else (float(ci[0]), float(ci[1]))
            for ci in exact.dp_outputs["confidence_intervals"]
        )
    return ReportItem(
        row_id=result.row_id,
        description=_describe_query(prepared.query),
        query=dict(prepared.query),
        statistic=str(prepared.public_facts.get("statistic", prepared.query.get("type", ""))),
        mechanism=prepared.mechanism,
        parameters=dict(prepared.parameters),
        labels=tuple(result.labels),
        values=tuple(result.values),
        intervals=intervals,
        ci_level=float(exact.dp_outputs.get("confidence_level", result.ci_level)),
        epsilon=result.epsilon,
        delta=result.delta,
        rho=result.rho,
        guarantee=result.guarantee,
        sampler=str(getattr(result, "sampler", "") or getattr(exact, "sampler", "")),
        grid=dict(exact.provenance),
        dp_outputs=dict(exact.dp_outputs),
        public_facts=dict(prepared.public_facts),
        relation=prepared.relation,
        interval_kinds=tuple(getattr(result, "interval_kinds", ()) or ()),
        marginals=marginal_rows(exact.provenance, exact.dp_outputs)
        if str(prepared.public_facts.get("statistic", "")).startswith(SYNTHETIC)
        else (),
    )


SYNTHETIC = "synthetic table"
"""How a synthetic table's statistic starts (its public facts, its provenance)."""


def marginal_rows(grid: Mapping[str, Any], outputs: Mapping[str, Any]) -> tuple[MarginalRow, ...]:
    """The quality table of a synthetic table from its provenance's ``discretisation``
    (``grid``: the public domain, Delta_2^2) and ``dp_outputs`` (``measured``, ``rounds``):
    every measured marginal with its size, sigma and the zCDP its measurement and selection took.
    Each selection round is the one before the measurement of its marginal (MST, AIM), so the
    last rounds pair with the last measurements; a malformed entry is skipped, never raised."""
    given = grid.get("cells")
    cells: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    try:
        l2 = float(grid.get("marginal_sensitivity_l2_squared", 1))
    except (TypeError, ValueError):
        l2 = 1.0
    measured = [m for m in outputs.get("measured") or () if isinstance(m, Mapping)]
    rounds = [r for r in outputs.get("rounds") or () if isinstance(r, Mapping)]
    first_selected = len(measured) - len(rounds)
    rows = []
    for index, m in enumerate(measured):
        try:
            marginal = tuple(str(c) for c in m["marginal"])
            sigma = float(m["sigma"])
        except (KeyError, TypeError, ValueError):
            continue
        size: int | None = 1
        for column in marginal:
            labels = cells.get(column)
            size = size * len(labels) if size is not None and isinstance(labels, list) else None
        selected = None
        if 0 <= index - first_selected < len(rounds):
            chosen = rounds[index - first_selected]
            if [str(c) for c in chosen.get("marginal") or ()] == list(marginal):
                with contextlib.suppress(TypeError, ValueError):
                    selected = float(chosen["epsilon"]) ** 2 / 8
        rho = l2 / (2 * sigma * sigma) if sigma > 0 else math.inf
        rows.append(MarginalRow(marginal, size, sigma, rho, selected))
    return tuple(rows)


def budget_lines(
    budget: Budget | None, before: Sequence[Guarantee], after: Sequence[Guarantee]
) -> tuple[BudgetLine, ...]:
    """Epsilon spent before and after, at the budget's delta, under the ledger's accountant
    (first; its exact total, :func:`~dpexplorer.release.ledger.total_epsilon`) and under every
    other accountant (:func:`dpexplorer.core.accounting.compose.compose`). Every number is an
    upper bound on the true epsilon under its theorem."""
    if budget is None:
        return ()
    from dpexplorer.core.accounting.compose import compose

    delta = budget.delta
    reports = [compose(list(g), delta=delta) if g else None for g in (before, after)]
    lines = []
    for method in (budget.method, *[m for m in METHODS if m != budget.method]):
        values: list[float | None] = []
        note = ""
        for guarantees, report in zip((before, after), reports, strict=True):
            if report is None:
                values.append(0.0)
                continue
            if method == budget.method:
                try:
                    values.append(float(total_epsilon(list(guarantees), method, delta)))
                except DPExplorerError as exc:
                    values.append(None)
                    note = str(exc)
                continue
            result = report.get(method)
            values.append(result.epsilon)
            if result.epsilon is None:
                note = result.reason
        lines.append(BudgetLine(method, values[0], values[1], note))
    return tuple(lines)


def build_report(
    *,
    dataset: str,
    fingerprint: str,
    released: Sequence[tuple[Any, Any]],
    ledger: Ledger,
    before: Sequence[Guarantee],
    plan: list[dict[str, Any]] | None = None,
) -> Report:
    """The report of one run: ``released`` the (PreparedRelease, ReleaseResult) pairs in order,
    ``before`` the guarantees the ledger held for the dataset before the run."""
    budget = ledger.budget(fingerprint)
    after = [m.guarantee for m in ledger.measurements(fingerprint)]
    items = tuple(report_item(p, r) for p, r in released)
    if plan is None:
        plan = [{"query": i.query, "mechanism": i.mechanism, "parameters": i.parameters} for i in items]
    return Report(
        dataset=dataset,
        fingerprint=fingerprint,
        items=items,
        budget=budget,
        budget_lines=budget_lines(budget, before, after),
        plan=plan,
        ledger_path=str(ledger.path),
    )


# ------------------------------------------------------------------ words
def _num(value: float | None, digits: int = 3) -> str:
    """ε, δ, ρ and other declared figures: ``digits`` significant digits (the one rule for
    privacy figures, :func:`~dpexplorer.release.presentation.privacy_number`)."""
    return privacy_number(value, digits)


def value_text(value: float | str, interval: tuple[float, float] | None = None, level: float = 0.95) -> str:
    """A released value as the report prints it: rounded to the digits its interval supports
    (dpexplorer/release/presentation.py); without an interval, six significant digits."""
    return show(value, interval, level).value


def guarantee_words(item: ReportItem) -> str:
    """What the charged guarantee means for one person, in words (Dwork & Roth 2014, Def. 2.4;
    Bun & Steinke 2016, Def. 1.1 for zCDP)."""
    g = item.guarantee
    if isinstance(item.query.get("unit"), dict):
        unit = "adding or removing one person with all their rows"
    elif item.relation == "add_remove":
        unit = "adding or removing one person's row"
    else:
        unit = "changing one person's row"
    if isinstance(g, PureDP | LaplaceNoise):
        eps = g.epsilon if isinstance(g, PureDP) else g.sensitivity / g.scale
        return (
            f"ε = {_num(eps)}: {unit} changes the probability of any outcome of this release "
            f"by at most a factor e^ε = {_num(math.exp(eps), 4)}."
        )
    if isinstance(g, ApproxDP):
        return (
            f"(ε, δ) = ({_num(g.epsilon)}, {_num(g.delta, 3)}): {unit} changes the probability of "
            f"any outcome by at most a factor e^ε = {_num(math.exp(g.epsilon), 4)}, plus an "
            f"additive δ = {_num(g.delta, 3)} (the chance, roughly, that the bound fails)."
        )
    if isinstance(g, ZCDP):
        return (
            f"ρ = {_num(g.rho)} zero-concentrated DP: the privacy loss from {unit} is "
            f"sub-Gaussian; it implies (ε, δ) = ({_num(item.epsilon)}, {_num(item.delta, 3)})."
        )
    return f"(ε, δ) = ({_num(item.epsilon)}, {_num(item.delta, 3)})."


def _charged(g: Guarantee) -> str:
    fields = {k: v for k, v in guarantee_to_dict(g).items() if k != "type"}
    shown = ", ".join(f"{k} = {_num(v) if isinstance(v, float) else v}" for k, v in fields.items())
    return f"{type(g).__name__} ({shown})"


# ------------------------------------------------------------------ plots (SVG)
WIDTH = 640
PDF_PLOT_WIDTH = 480
"""Width of a plot in the PDF, in Qt's rich-text pixels (the text column is about 680)."""
_INK, _ACCENT, _MUTED = "#222222", "#1f77b4", "#999999"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick positions covering [low, high] (1, 2, 5 times a power of ten)."""
    if not high > low:
        return [low]
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _span(item: ReportItem) -> tuple[float, float]:
    ends = [float(v) for v in item.values if isinstance(v, float | int)] or [0.0]
    if item.intervals:
        ends += [e for ci in item.intervals if ci is not None for e in ci]
    low, high = min(ends), max(ends)
    if item.statistic == "histogram" and item.query.get("type") != "group_by":  # bars start at zero
        low, high = min(low, 0.0), max(high, 0.0)
    pad = (high - low) * 0.08 or max(abs(high), 1.0) * 0.1
    return low - pad, high + pad


def _svg(height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">'
        f"<title>{html.escape(title)}</title>"
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>' + "".join(body) + "</svg>"
    )


def _dots(item: ReportItem) -> str:
    """One row per value: the released value as a dot and its interval as a bar."""
    return _rows(item, bars=False)


def _rows(item: ReportItem, *, bars: bool) -> str:
    left = min(320, max(90, 12 + 7 * max(len(label) for label in item.labels)))
    right, row = WIDTH - 20, 22
    height = 40 + row * len(item.labels) + 30
    low, high = _span(item)

    def x(v: float) -> float:
        return left + (v - low) / (high - low) * (right - left)

    body = []
    axis_y = 30 + row * len(item.labels)
    for tick in nice_ticks(low, high):
        body.append(f'<line x1="{x(tick):.1f}" y1="20" x2="{x(tick):.1f}" y2="{axis_y}" stroke="#eeeeee"/>')
        body.append(f'<text x="{x(tick):.1f}" y="{axis_y + 16}" text-anchor="middle">{_num(tick, 6)}</text>')
    body.append(f'<line x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}" stroke="{_INK}"/>')
    for i, (label, value) in enumerate(zip(item.labels, item.values, strict=True)):
        y = 36 + row * i
        body.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{html.escape(label)}</text>')
        if not isinstance(value, float | int):  # an empty group: said, not drawn
            body.append(f'<text x="{left + 8}" y="{y + 4}" fill="{_MUTED}">{html.escape(str(value))}</text>')
            continue
        if bars:
            ends = sorted((x(0.0), x(float(value))))
            body.append(
                f'<rect x="{ends[0]:.1f}" y="{y - 8}" width="{ends[1] - ends[0]:.1f}" height="16" '
                f'fill="{_ACCENT}" fill-opacity="0.5"/>'
            )
        if item.intervals and item.intervals[i] is not None:
            lo, hi = item.intervals[i]  # type: ignore[misc]
            colour, width = (_INK, 1.5) if bars else (_ACCENT, 3)
            body.append(
                f'<line x1="{x(lo):.1f}" y1="{y}" x2="{x(hi):.1f}" y2="{y}" stroke="{colour}" '
                f'stroke-width="{width}"/>'
            )
            if bars:
                body += [
                    f'<line x1="{x(e):.1f}" y1="{y - 5}" x2="{x(e):.1f}" y2="{y + 5}" stroke="{_INK}"/>'
                    for e in (lo, hi)
                ]
        if not bars:
            body.append(f'<circle cx="{x(float(value)):.1f}" cy="{y}" r="5" fill="{_INK}"/>')
    body.append(_legend(item, height - 6, bars=bars))
    return _svg(height, body, f"{item.description}: released values")


def _bars(item: ReportItem) -> str:
    """A histogram: one horizontal bar per category at its released count (labels stay legible
    however many there are), the interval as a whisker."""
    return _rows(item, bars=True)


def _choices(item: ReportItem) -> str:
    """A selection: the declared candidates, the released one(s) marked."""
    candidates = [str(c) for c in item.grid.get("candidates", item.query.get("categories", []))]
    chosen = {str(v) for v in item.values}
    candidates = candidates or sorted(chosen)
    row = 24
    height = 30 + row * len(candidates)
    body = [f'<text x="20" y="18" fill="{_MUTED}">candidates (declared); released:</text>']
    for i, name in enumerate(candidates):
        y = 38 + row * i
        picked = name in chosen
        body.append(
            f'<rect x="20" y="{y - 13}" width="16" height="16" fill="{_ACCENT if picked else "white"}" '
            f'stroke="{_INK}"/>'
        )
        weight = "bold" if picked else "normal"
        suffix = "  ← released" if picked else ""
        body.append(f'<text x="44" y="{y}" font-weight="{weight}">{html.escape(name + suffix)}</text>')
    return _svg(height, body, f"{item.description}: released selection")


def _legend(item: ReportItem, y: int, *, bars: bool = False) -> str:
    text = (
        f"{'bar' if bars else '●'}: released value;  {'whisker' if bars else 'line'}: "
        f"{level_text(item.ci_level)} interval ({_interval_words(item)})"
        if item.intervals
        else f"{'bar' if bars else '●'}: released value (no interval published)"
    )
    return f'<text x="20" y="{y}" fill="{_MUTED}">{html.escape(text)}</text>'


def _interval_words(item: ReportItem) -> str:
    kinds = set(item.interval_kinds) - {None}
    if kinds == {"range"}:
        return "the declared range: a narrower one would need the data"
    if kinds == {"exact"}:
        return "exact: the released value is the answer"
    return "noise only, clipping bias not included"


def _plotted(item: ReportItem) -> ReportItem:
    """For a release that carries helper parts ("count (noisy)", "centred sum (noisy)" beside
    "mean", per group for a group-by), the statistic's own values only: one scale per plot."""
    statistic = str(item.query.get("statistic", ""))
    suffix = f": {statistic}" if item.query.get("type") == "group_by" and statistic else ""
    if suffix:
        keep = [i for i, label in enumerate(item.labels) if label.endswith(suffix)]
    else:
        keep = [i for i, label in enumerate(item.labels) if not label.endswith("(noisy)")]
    if not keep or len(keep) == len(item.labels):
        return item
    pick = {
        "labels": tuple(item.labels[i].removesuffix(suffix) if suffix else item.labels[i] for i in keep),
        "values": tuple(item.values[i] for i in keep),
        "intervals": tuple(item.intervals[i] for i in keep) if item.intervals else None,
        "interval_kinds": tuple(item.interval_kinds[i] for i in keep) if item.interval_kinds else (),
    }
    return ReportItem(**{**item.__dict__, **pick})


def _nothing_kept(item: ReportItem) -> str:
    """A release that published no value (privately selected keys, none kept): a note."""
    body = [
        f'<text x="20" y="24" fill="{_MUTED}">no value released: the private selection of keys '
        "kept no group</text>"
    ]
    return _svg(40, body, f"{item.description}: no value released")


def svg_plot(item: ReportItem) -> str:
    """The statistic's plot: bars with intervals for a histogram, a dot plot with intervals for
    other numbers (a group-by's values by group), the candidates with the released one marked
    for a selection or ⊥, a note for a release of no value (no private key kept)."""
    if not item.values:
        return _nothing_kept(item)
    if item.statistic.startswith(SYNTHETIC):
        return _budget_bars(item)
    if not item.numeric:
        return _choices(item)
    item = _plotted(item)
    if item.statistic == "histogram" and item.query.get("type") != "group_by" and len(item.labels) > 1:
        return _bars(item)
    return _dots(item)  # a group-by's values: a dot plot with intervals


PLOTTED_MARGINALS = 30
"""At most this many marginals in a synthetic table's budget plot (its table lists all)."""


def _budget_bars(item: ReportItem) -> str:
    """A synthetic table: the zCDP each measured marginal took (measurement, and the selection
    that chose it), one bar per marginal, in the order measured."""
    rows = item.marginals[:PLOTTED_MARGINALS]
    if not rows:
        body = [f'<text x="20" y="24" fill="{_MUTED}">no measured marginal is recorded</text>']
        return _svg(40, body, f"{item.description}: budget by marginal")
    names = [" × ".join(r.marginal) for r in rows]
    left = min(300, max(90, 12 + 7 * max(len(n) for n in names)))
    right, step = WIDTH - 20, 20
    top = max(r.rho_measure + (r.rho_select or 0.0) for r in rows) or 1.0
    axis_y = 30 + step * len(rows)
    height = axis_y + 46 + (16 if len(item.marginals) > len(rows) else 0)

    def x(v: float) -> float:
        return left + v / (top * 1.05) * (right - left)

    body = []
    for tick in nice_ticks(0.0, top * 1.05):
        body.append(f'<line x1="{x(tick):.1f}" y1="20" x2="{x(tick):.1f}" y2="{axis_y}" stroke="#eeeeee"/>')
        body.append(f'<text x="{x(tick):.1f}" y="{axis_y + 16}" text-anchor="middle">{_num(tick, 3)}</text>')
    body.append(f'<line x1="{left}" y1="{axis_y}" x2="{right}" y2="{axis_y}" stroke="{_INK}"/>')
    for i, (name, r) in enumerate(zip(names, rows, strict=True)):
        y = 36 + step * i
        body.append(f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{html.escape(name)}</text>')
        measure_end = x(r.rho_measure)
        body.append(
            f'<rect x="{left}" y="{y - 7}" width="{measure_end - left:.1f}" height="14" '
            f'fill="{_ACCENT}" fill-opacity="0.6"/>'
        )
        if r.rho_select:
            body.append(
                f'<rect x="{measure_end:.1f}" y="{y - 7}" width="{x(r.rho_select) - left:.1f}" '
                f'height="14" fill="{_MUTED}" fill-opacity="0.6"/>'
            )
    legend = "ρ (zCDP) taken by each measured marginal: blue measurement, grey the selection that chose it"
    body.append(f'<text x="20" y="{axis_y + 36}" fill="{_MUTED}">{html.escape(legend)}</text>')
    if len(item.marginals) > len(rows):
        more = f"… {len(item.marginals) - len(rows)} more marginals in the table"
        body.append(f'<text x="20" y="{axis_y + 52}" fill="{_MUTED}">{html.escape(more)}</text>')
    return _svg(height, body, f"{item.description}: budget by marginal")


def _plot_name(item: ReportItem) -> str:
    return f"plot-{item.row_id:06d}.svg"


# ------------------------------------------------------------------ HTML
_STYLE = """
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; color: #222; line-height: 1.4; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { color: #555; font-size: 90%; }
pre { background: #f6f6f6; padding: 0.6em; font-size: 85%; white-space: pre-wrap; }
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    head = f"<tr>{head}</tr>" if any(headers) else ""
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num" align="right">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f'<table border="1" cellspacing="0" cellpadding="4">{head}{body}</table>'


def _released_rows(report: Report) -> str:
    counts = [i for i in report.items if i.statistic in COUNT_STATISTICS and i.numeric and i.values]
    if counts:
        shown = ", ".join(f"{i.shown(0)} (ledger row {i.row_id}, ε = {_num(i.epsilon)})" for i in counts)
        return f"{shown}: released with noise in this report"
    return (
        "not published: under add/remove the number of rows is itself private, and this "
        "report releases no count of rows"
    )


def unit_of(item: ReportItem) -> tuple[str, str]:
    """(privacy unit, contribution bound) of one statistic, in words: the declared privacy unit
    of a steward statistic (query ``unit``), else one row per person."""
    unit = item.query.get("unit")
    if isinstance(unit, dict) and unit.get("column"):
        return (
            f"rows sharing a value of {unit['column']} are one person; neighbouring datasets add or "
            "remove one person with all their rows",
            f"at most {unit.get('max_rows', 1)} row(s) in each of at most {unit.get('max_groups', 1)} "
            "group(s) per person, chosen at random",
        )
    if item.relation == "add_remove":
        return "one row is one person; neighbouring datasets add or remove one row", "one row per person"
    return "one row is one person; neighbouring datasets differ in one row", "one row per person"


def _dataset_section(report: Report) -> str:
    units: dict[tuple[str, str], list[int]] = {}
    for number, item in enumerate(report.items, start=1):
        units.setdefault(unit_of(item), []).append(number)
    rows = [
        ["Dataset", html.escape(report.dataset)],
        ["Fingerprint (SHA-256)", f"<code>{html.escape(report.fingerprint)}</code>"],
        ["Rows", html.escape(_released_rows(report))],
    ]
    for (unit, bound), numbers in units.items():
        plural = "s" if len(numbers) > 1 else ""
        which = "" if len(units) == 1 else f" (statistic{plural} {', '.join(map(str, numbers))})"
        rows.append([f"Privacy unit{which}", html.escape(unit)])
        rows.append([f"Contribution bound{which}", html.escape(bound)])
    return "<h2>Dataset</h2>" + _table(["", ""], rows)


def _ledger_line(report: Report) -> BudgetLine | None:
    budget = report.budget
    if budget is None:
        return None
    return next((line for line in report.budget_lines if line.method == budget.method), None)


def _spent_words(report: Report) -> str:
    """ε and δ spent under the ledger's accountant, in one sentence."""
    budget, line = report.budget, _ledger_line(report)
    if budget is None or line is None:
        return "No budget is set for this dataset in the ledger."
    if line.after is None:
        return f"Under the ledger's {budget.method} composition the total has no finite ε: {line.note}"
    run = line.after - (line.before or 0.0)
    left = max(budget.epsilon - line.after, 0.0)
    return (
        f"This report's releases cost ε = {_num(run)} at δ = {_num(budget.delta)} under the ledger's "
        f"accountant ({budget.method}), which decides: ε {_num(line.before)} was spent before, "
        f"{_num(line.after)} after, of a budget of ε = {_num(budget.epsilon)}; ε = {_num(left)} is left."
    )


def _budget_section(report: Report) -> str:
    budget = report.budget
    if budget is None:
        return "<h2>Budget</h2><p>No budget is set for this dataset in the ledger.</p>"
    line = _ledger_line(report)
    rows = []
    if line is not None:
        left = "—" if line.after is None else _num(max(budget.epsilon - line.after, 0.0))
        rows.append(
            [f"<b>{line.method}</b>", _num(line.before), _num(line.after), left, html.escape(line.note)]
        )
    return (
        "<h2>Budget</h2>"
        f"<p>Total budget for this dataset: ε = {_num(budget.epsilon)}, δ = {_num(budget.delta)}, "
        f"composed under <b>{budget.method}</b>, the ledger's accountant, which decides refusals. "
        f"This report's ledger rows: {', '.join(str(i.row_id) for i in report.items)} (each "
        "statistic below shows its charge). Other accountants' totals, for comparison only, are in "
        "the appendix.</p>"
        + _table(["accountant", "ε before", "ε after", "ε left", "note"], rows, numeric=(1, 2, 3))
    )


def _accountants_appendix(report: Report) -> str:
    """Every other accountant's total, for comparison: an upper bound under its own theorem;
    it decides nothing, so it is never compared with the budget."""
    budget = report.budget
    if budget is None:
        return ""
    rows = [
        [line.method, _num(line.before), _num(line.after), html.escape(line.note)]
        for line in report.budget_lines
        if line.method != budget.method
    ]
    if not rows:
        return ""
    return (
        '<h2 style="page-break-before: always">Appendix A: other accountants</h2>'
        f"<p>The same releases composed under the other accountants, at δ = {_num(budget.delta)}: "
        "each number is an upper bound on ε under its own theorem. They are shown for comparison "
        f"only: the budget is composed under {budget.method}, and only that total is charged.</p>"
        + _table(["accountant", "ε before", "ε after", "note"], rows, numeric=(1, 2))
    )


def _helpers_appendix(report: Report) -> str:
    """The helper values some mechanisms publish beside their statistic (a noisy mean's noisy
    count and centred sum): released, so listed, but apart from the statistics."""
    rows = []
    for number, item in enumerate(report.items, start=1):
        for i, label in enumerate(item.labels):
            if label.endswith(HELPER_SUFFIX):
                shown = item.shown(i)
                rows.append(
                    [str(number), html.escape(label), html.escape(shown.value), html.escape(shown.interval)]
                )
    if not rows:
        return ""
    return (
        "<h2>Appendix B: helper values</h2>"
        "<p>Some mechanisms release noisy parts from which the statistic is computed (a noisy "
        "mean's noisy count and noisy centred sum, the values minus the middle of the declared "
        "range). They are DP outputs like the statistics, listed here for completeness.</p>"
        + _table(["statistic", "part", "released value", "interval"], rows, numeric=(2,))
    )


def _summary_section(report: Report) -> str:
    """Page one: what was released (each statistic's values, rounded, with intervals), ε and δ
    spent under the ledger's accountant, the widest interval."""
    rows = []
    widest: tuple[float, str] | None = None
    for number, item in enumerate(report.items, start=1):
        main = item.main_indices()
        parts = []
        for i in main[:SUMMARY_VALUES]:
            shown = item.shown(i)
            label = "" if len(main) == 1 else f"{item.labels[i]}: "
            parts.append(f"{label}{shown}")
            pair = item.intervals[i] if item.intervals else None
            kind = item.interval_kinds[i] if i < len(item.interval_kinds) else "noise"
            if pair is not None and kind == "noise":
                half = (pair[1] - pair[0]) / 2
                if widest is None or half > widest[0]:
                    widest = (
                        half,
                        f"statistic {number} ({item.labels[i]}): {shown}, ±{shown.sentence.rsplit('±')[-1]}",
                    )
        if len(main) > SUMMARY_VALUES:
            parts.append(f"… {len(main) - SUMMARY_VALUES} more (section {number})")
        if not main:
            parts.append("no value (no key kept)")
        rows.append(
            [
                str(number),
                html.escape(item.description[:1].upper() + item.description[1:]),
                html.escape(item.mechanism),
                "<br/>".join(html.escape(p) for p in parts),
                html.escape(_num(item.epsilon)),
            ]
        )
    level = report.items[0].ci_level if report.items else 0.95
    widest_words = (
        f"The widest interval from noise: {html.escape(widest[1])}."
        if widest is not None
        else "No interval from noise was published."
    )
    return (
        "<h2>Summary</h2>"
        f"<p>{html.escape(_spent_words(report))}</p>"
        + _table(["#", "statistic", "mechanism", f"released value [{level_text(level)} interval]", "ε"], rows)
        + f"<p>{widest_words} Values are rounded to the digits their interval supports (the second "
        "significant digit of its half-width); each interval is rounded outward. The JSON files "
        "keep full precision.</p>"
    )


def _values_table(item: ReportItem) -> str:
    """The statistic's own values (helpers are in an appendix), rounded by the one rule, each
    with its interval and the plain sentence."""
    has_ci = item.intervals is not None or BOTTOM in item.values  # ⊥: said to have none
    headers = ["label", "released value"] + (
        [f"{level_text(item.ci_level)} interval", "in words"] if has_ci else []
    )
    rows = []
    for i in item.main_indices():
        shown = item.shown(i)
        row = [html.escape(item.labels[i]), html.escape(shown.value)]
        if has_ci:
            kind = item.interval_kinds[i] if i < len(item.interval_kinds) else "noise"
            words = (
                shown.sentence
                if kind == "noise"
                else {
                    "range": "the declared range (a narrower interval would need the data)",
                    "exact": "the exact answer (the mechanism's test passed)",
                }.get(kind or "", shown.sentence)
            )
            if item.values[i] == BOTTOM:
                row += ["none (no number released)", html.escape(shown.sentence)]
            else:
                row += [html.escape(shown.interval or "none"), html.escape(words)]
        rows.append(row)
    if not rows:  # private keys, none kept: a DP output like any other
        rows.append(
            ["(no group)", "no key was kept by the private selection"] + (["—", ""] if has_ci else [])
        )
    return _table(headers, rows, numeric=(1,))


def _interval_fact(item: ReportItem) -> str:
    if item.statistic.startswith(SYNTHETIC):
        return "none: the records are drawn from a model fitted to the noisy marginals (post-processing)"
    if item.intervals is None:
        return "none published for this release (a selection)"
    kinds = set(item.interval_kinds) - {None}
    words = []
    if "noise" in kinds or not kinds:
        words.append(
            f"covers the true answer with probability {level_text(item.ci_level)} over the noise alone "
            "(clipping bias not included), after the declared post-processing"
        )
    if "range" in kinds:
        words.append("the declared range where a value interval would need the data (covers always)")
    if "exact" in kinds:
        words.append("a point where the mechanism released the exact answer")
    if item.rank_within is not None:
        words.append(
            f"in ranks: with probability {level_text(item.ci_level)}, the rows below the released value "
            f"differ from q·n by at most {item.rank_within} more than at the best point of the grid"
        )
    return "; ".join(words)


def _item_section(number: int, item: ReportItem, plot: str, page_break: bool) -> str:
    params = ", ".join(f"{k} = {v}" for k, v in item.parameters.items())
    rho = "" if item.rho is None else f", ρ = {_num(item.rho)}"
    charged = f"ε = {_num(item.epsilon)}, δ = {_num(item.delta)}{rho}; ledger: {_charged(item.guarantee)}"
    facts = [
        ["Mechanism", f"{html.escape(item.mechanism)} ({html.escape(params)})"],
        ["Privacy charged", html.escape(charged)],
        ["What it means", html.escape(guarantee_words(item))],
        ["Interval", html.escape(_interval_fact(item))],
    ]
    if item.public_facts.get("bounds"):
        low, high = item.public_facts["bounds"]
        facts.append(["Declared bounds", html.escape(f"[{_num(low, 6)}, {_num(high, 6)}]")])
    helpers = len(item.labels) - len(item.main_indices())
    if helpers:
        facts.append(["Helper values", f"{helpers} noisy part(s) released with it: Appendix B"])
    style = ' style="page-break-before: always"' if page_break else ""
    return (
        f"<h3{style}>{number}. {html.escape(item.description[:1].upper() + item.description[1:])}</h3>"
        + _values_table(item)
        + (
            _table(["", ""], facts) + _quality_table(item) + f"<div>{plot}</div>"  # the table first
            if item.statistic.startswith(SYNTHETIC)
            else f"<div>{plot}</div>" + _table(["", ""], facts)
        )
    )


def _quality_table(item: ReportItem) -> str:
    """A synthetic table's quality table: DP facts only (module docstring of
    :mod:`dpexplorer.release.synthetic_tables`); its error against the data is not published."""
    rows = [
        [
            html.escape(" × ".join(r.marginal)),
            "—" if r.cells is None else f"{r.cells:,}",
            _num(r.sigma, 4),
            _num(r.rho_measure),
            "—" if r.rho_select is None else _num(r.rho_select),
        ]
        for r in item.marginals
    ]
    total = sum(r.rho_measure + (r.rho_select or 0.0) for r in item.marginals)
    grid = item.grid
    workload = grid.get("workload") or []
    estimator = grid.get("estimator_resolved") or grid.get("estimator") or "?"
    spent = item.dp_outputs.get("rho_spent")
    spent_words = f"ρ spent by the run: {_num(float(spent))}; " if isinstance(spent, int | float) else ""
    words = (
        f"{len(item.marginals)} marginal(s) measured with Gaussian noise; {len(workload)} in the "
        f"declared workload. Their ρ adds up to {_num(total)} ({spent_words}charged: "
        f"{_num(item.rho)}). The records were drawn from a model fitted to these noisy "
        f"marginals ({html.escape(str(estimator))} estimator): post-processing, no further privacy "
        "cost. This table states DP facts only: how far the synthetic table's marginals are from "
        "the data's (the workload's error) is not published, since computing it needs the true data."
    )
    return (
        "<h4>Quality: the measured marginals</h4>"
        + _table(["marginal", "cells", "noise σ", "ρ measurement", "ρ selection"], rows, numeric=(1, 2, 3, 4))
        + f'<p class="note">{words}</p>'
    )


def _reproducibility(report: Report) -> str:
    plan = "[\n" + ",\n".join(f"  {json.dumps(entry)}" for entry in report.plan) + "\n]"
    grids = [
        [
            str(i.row_id),
            html.escape(i.mechanism),
            html.escape(i.sampler),
            html.escape("; ".join(f"{k} = {v}" for k, v in sorted(i.grid.items()))),
        ]
        for i in report.items
    ]
    return (
        '<h2 style="page-break-before: always">Reproducibility</h2>'
        + _table(
            ["", ""],
            [
                ["Software", html.escape(report.software)],
                ["Report written", html.escape(report.time)],
                ["Ledger", html.escape(report.ledger_path)],
                ["Randomness", "the operating system's CSPRNG through exact discrete samplers"],
            ],
        )
        + "<p>Sampler, grid and discretisation of each release (fixed before the charge, from "
        "declared facts only):</p>"
        + _table(["ledger row", "mechanism", "sampler", "grid"], grids)
        + "<p>The plan, one statistic a line:</p>"
        + f"<pre>{html.escape(plan)}</pre>"
    )


def _plot_height(item: ReportItem) -> int:
    """Height of the item's SVG plot, in SVG units."""
    return int(re.search(r'height="(\d+)"', svg_plot(item)).group(1))  # type: ignore[union-attr]


def _estimated_height(item: ReportItem) -> float:
    """Rough height of one statistic in the PDF, in Qt rich-text pixels at 8 pt (heading, values
    table, plot, facts table): used only to decide where pages break."""
    per_row = 40 if item.intervals is not None else 28  # the sentence wraps onto a second line
    rows = per_row * (len(item.main_indices()) + 1)
    plot = _plot_height(item) * PDF_PLOT_WIDTH / WIDTH + 40
    facts = (
        200
        + (28 * len(item.marginals) + 180 if item.marginals else 0)
        + (30 if item.public_facts.get("bounds") else 0)
        + (30 if len(item.main_indices()) < len(item.labels) else 0)
    )
    return 50 + rows + plot + facts


def page_starts(items: Sequence[ReportItem], per_page: int = STATISTICS_PER_PAGE) -> set[int]:
    """Indices of the statistics that start a PDF page: at most ``per_page`` a page, fewer when
    their estimated height would overflow one (so a plot and its tables stay together)."""
    starts, used, on_page = set(), 0.0, 0
    for index, item in enumerate(items):
        height = _estimated_height(item)
        if index and (on_page == per_page or used + height > PAGE_HEIGHT):
            starts.add(index)
            used, on_page = 0.0, 0
        used += height
        on_page += 1
    return starts


def render_html(report: Report, *, pdf: bool = False, per_page: int = STATISTICS_PER_PAGE) -> str:
    """The report as one HTML document. With ``pdf`` the plots are ``<img>`` tags naming
    :meth:`Report.plots` (for Qt's rich text, which draws no inline SVG) and pages break before
    the statistics :func:`page_starts` picks; otherwise the SVG is inline (self-contained page)."""
    plots = report.plots()
    starts = page_starts(report.items, per_page)
    sections = []
    for number, item in enumerate(report.items, start=1):
        name = _plot_name(item)
        plot = f'<img src="{name}" width="{PDF_PLOT_WIDTH}"/>' if pdf else plots[name]
        sections.append(_item_section(number, item, plot, page_break=number - 1 in starts))
    title = f"Release report: {report.dataset}"
    count = len(report.items)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p>{count} statistic{'s' if count != 1 else ''} released with differential privacy on "
        f"{html.escape(report.time)} by {html.escape(report.software)}. Every number in this report "
        "is a released (noisy) value or a declared fact; no value computed on the data without "
        "noise appears.</p>"
        + _summary_section(report)
        + '<h2 style="page-break-before: always">Dataset</h2>'
        + _dataset_section(report).removeprefix("<h2>Dataset</h2>")
        + _budget_section(report)
        + '<h2 style="page-break-before: always">Statistics</h2>'
        + "".join(sections)
        + _accountants_appendix(report)
        + _helpers_appendix(report)
        + _reproducibility(report)
        + "</body></html>\n"
    )


def write_html(report: Report, out_dir: str | os.PathLike[str], name: str = "report.html") -> Path:
    """Write :func:`render_html` to ``out_dir/name`` atomically; returns the path."""
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, render_html(report))
    return path
