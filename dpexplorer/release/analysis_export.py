"""The window's analysis, exported so that it can be reviewed and run again (issue 31): a plan
file that ``dpexplorer release`` runs, a Python script and a Jupyter notebook that run the same
plan through the public API (``import dpexplorer as dpx``).

An :class:`Analysis` holds only what the steward declared: the data's location, each
statistic's query (with its declared bounds, categories, keys and privacy unit), mechanism and
parameters, the planning budget and any sampling claim. It never holds a true answer, an
explored output or anything else computed from the data, so nothing exported can reveal one.
The script and the notebook write each plan entry as the plan file's JSON, rebuilt by
``dpx.Plan.from_json``: all three release the same statistics with the same guarantees,
through the same checks, charged to the ledger they are given.

User text (the data's path, column names, category labels, statistic labels) reaches the
script and the notebook's code only as Python string literals (``repr``: the settings and
:func:`_literal`), never in a docstring or as code; in comments and markdown it is quoted
(:data:`COMMENT`, :data:`MARKDOWN`) so that it stays on its line and cannot end a comment, a
code span or a cell (issue 43)."""

from __future__ import annotations

import json
import os
import pprint
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dpexplorer
from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.figures import privacy_number

NOTEBOOK_MISSING = 'writing a notebook needs nbformat: pip install "dpexplorer[notebook]"'


class AnalysisExportError(DPExplorerError):
    """The analysis cannot be exported as asked (nothing to export, a statistic the plan format
    cannot express, a file that cannot be written)."""


@dataclass(frozen=True)
class Statistic:
    """One statistic of the analysis: a plan entry (``query`` as ``Query.to_dict()``,
    ``mechanism`` name, validated ``parameters``), the window's ``label`` for it and the
    neighbouring relation it was explored under (a plan releases under ``add_remove`` only);
    ``kind`` the plan entry's (``synthetic``: a synthetic table of MST or AIM, not its noisy
    marginals)."""

    query: Mapping[str, Any]
    mechanism: str
    parameters: Mapping[str, Any]
    label: str = ""
    relation: str = "add_remove"
    kind: str = "statistic"
    facts: Sequence[Mapping[str, Any]] = ()
    """Each public fact of the query with its origin as the codebook records it (``column``,
    ``field``, ``origin``, ``citation``, ``ledger_id``; the window's); none: the plan declares
    them."""

    def entry(self) -> dict[str, Any]:
        """The plan entry ``{"query", "mechanism", "parameters"}`` (and ``"kind"`` when it is not
        a statistic)."""
        entry = {"query": dict(self.query), "mechanism": self.mechanism, "parameters": dict(self.parameters)}
        return entry if self.kind == "statistic" else {**entry, "kind": self.kind}


@dataclass(frozen=True)
class Analysis:
    """What the window exports: the data (``data``: a file path or a Spark table; ``engine``),
    the statistics in order, the steward's Poisson ``sampling_rate`` claim (or None) and the
    planning ``budget`` (epsilon, delta, accountant) that a script or notebook sets only when
    the ledger holds no budget for the dataset yet (never replacing one)."""

    data: str
    statistics: Sequence[Statistic]
    engine: str = "polars"
    sampling_rate: float | None = None
    budget: tuple[float, float, str] | None = None
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def __post_init__(self) -> None:
        object.__setattr__(self, "statistics", tuple(self.statistics))

    def plan_json(self) -> Any:
        """The plan in the format of PLAN_FORMAT.md (AnalysisExportError if it cannot say it)."""
        if not self.statistics:
            raise AnalysisExportError("the analysis has no statistic: add one to the budget plan first")
        for number, stat in enumerate(self.statistics, start=1):
            if stat.relation != "add_remove":
                raise AnalysisExportError(
                    f"statistic {number} ({stat.label or stat.mechanism}) was explored with neighbours "
                    f"that {_relation_words(stat.relation)}; a plan releases under neighbours that add or "
                    "remove a row (or a person): choose that relation, then export"
                )
        entries = [stat.entry() for stat in self.statistics]
        if self.sampling_rate is None:
            return entries
        return {"sampling": {"rate": self.sampling_rate}, "measurements": entries}


def _relation_words(relation: str) -> str:
    return "replace one row" if relation == "replace" else relation


# ------------------------------------------------------------------ quoting user text
def shown(text: str) -> str:
    """``text`` with the backslash and every character that is not printable (newlines,
    ``\\r``, U+2028/U+2029, U+0085, tabs, form feeds, NUL, bidirectional and other format
    characters, lone surrogates) written as its Python escape (``\\\\``, ``\\n``,
    ``\\u2028``): one line of printable characters, which no comment, markdown line or terminal
    takes for a line break, and from which the text can be read back unambiguously."""
    return "".join(c if c.isprintable() and c != "\\" else repr(c)[1:-1] for c in text)


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>&~$|#])")
"""Characters that can start inline markup (emphasis, code, links, HTML, entities, math) or
close a heading."""


def markdown_text(text: str) -> str:
    """``text`` (:func:`shown`) as markdown that renders as exactly that text: every character
    that could start inline markup (``*``, backtick, ``[``, ``<``, ``&``, ``$``, ...) is
    backslash-escaped, so no emphasis, link, HTML or math comes from it, and it holds no line
    break, so it can start no block (heading, code fence, list) either."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", shown(text))


def markdown_code(text: str) -> str:
    """``text`` (:func:`shown`) as a markdown code span that shows it verbatim: fenced by one more
    backtick than its longest run of backticks (so none of its own closes the span), padded
    with a space where CommonMark would otherwise take an edge backtick or space."""
    inner = shown(text)
    fence = "`" * (1 + max((len(run) for run in re.findall("`+", inner)), default=0))
    edge = inner[:1] + inner[-1:]
    pad = " " if "`" in edge or (edge == "  " and inner.strip()) else ""
    return f"{fence}{pad}{inner}{pad}{fence}"


def _comment_code(text: str) -> str:
    return f"`{shown(text)}`"


@dataclass(frozen=True)
class Quote:
    """How user text is written into words: ``text`` for running text, ``code`` for a name set
    apart (a column). Each returns a single line that cannot break out of where it stands."""

    text: Callable[[str], str]
    code: Callable[[str], str]


MARKDOWN = Quote(markdown_text, markdown_code)
"""For the notebook's markdown cells."""
COMMENT = Quote(shown, _comment_code)
"""For the script's comments: printable characters only, so no name can end its comment line."""


# ------------------------------------------------------------------ words per statistic
def statistic_markdown(number: int, stat: Statistic, quote: Quote = MARKDOWN) -> str:
    """A statistic in words, for the notebook's markdown cell and the script's comments: what it
    releases, under what privacy unit and bounds, with which mechanism, and why (the
    mechanism's own summary, as the window shows it). Only declared facts, never data. Every
    user string goes through ``quote``, so none adds a line or markup of its own."""
    from dpexplorer.data.queries import query_from_dict

    query = query_from_dict(stat.query)
    what = quote.text(query.describe())
    lines = [f"### {number}. {quote.text(stat.label) if stat.label else what[:1].upper() + what[1:]}", ""]
    table = "a synthetic table (records drawn from a model fitted to the noisy marginals) of "
    lines.append(f"**Releases** {table if stat.kind == 'synthetic' else ''}{what}.")
    lines.append("")
    lines.append(f"**Privacy unit.** {_unit_words(stat.query, quote)}")
    lines.append("")
    lines.append(f"**Bounds and keys.** {_bounds_words(stat.query, quote, stat.facts)}")
    lines.append("")
    mechanism, summary = _mechanism_words(stat.mechanism, quote)
    params = quote.text(", ".join(f"{k} = {_value(v)}" for k, v in stat.parameters.items()))
    lines.append(f"**Mechanism.** {mechanism} with {params or 'its default parameters'}.")
    lines.append("")
    lines.append(
        f"**Why.** {summary} Its noise is drawn by an exact sampler when released, and the "
        "ledger is charged its guarantee before any noise exists."
    )
    return "\n".join(lines)


def _value(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _unit_words(query: Mapping[str, Any], quote: Quote) -> str:
    unit = query.get("unit")
    if isinstance(unit, Mapping):
        return (
            f"One person, identified by the column {quote.code(unit['column'])}: neighbouring datasets add "
            f"or remove one person with all their rows, and each person is bounded to at most "
            f"{unit.get('max_rows', 1)} row(s) in each of at most {unit.get('max_groups', 1)} group(s) "
            "(rows beyond are left out, chosen at random) before the statistic is computed."
        )
    return "One row: neighbouring datasets differ by adding or removing one row."


def _origin_words(facts: Sequence[Mapping[str, Any]], column: str, field: str, quote: Quote) -> str:
    """Where the ``field`` fact of ``column`` comes from, as the codebook records it (none
    recorded: the plan declares it, which is the steward's declaration); the codebook's
    citation is user text, so it is quoted (:class:`Quote`)."""
    for fact in facts:
        if fact.get("column") == column and fact.get("field") == field:
            cited = f": {quote.text(str(fact['citation']))}" if fact.get("citation") else ""
            if fact.get("origin") == "shipped":
                return f"shipped with dpexplorer in the dataset's codebook (public documentation{cited})"
            if fact.get("origin") == "estimated":
                return (
                    f"estimated privately (charged to the ledger, row {_value(fact.get('ledger_id'))}), "
                    "recorded in the dataset's codebook"
                )
            return (
                f"declared by the steward in the dataset's codebook (public, not read from the data{cited})"
            )
    return "declared by the steward (public, not read from the data)"


def _bounds_words(query: Mapping[str, Any], quote: Quote, facts: Sequence[Mapping[str, Any]] = ()) -> str:
    parts = []
    if "lower" in query and query.get("lower") is not None:
        parts.append(
            f"values of {quote.code(query['column'])} are clipped to [{_value(query['lower'])}, "
            f"{_value(query['upper'])}], {_origin_words(facts, query['column'], 'bounds', quote)}"
        )
    axes = [query["axis"]] if isinstance(query.get("axis"), Mapping) else list(query.get("axes", []))
    axes += list(query.get("keys", []) or [])
    for axis in axes:
        if axis.get("edges") is not None:
            parts.append(
                f"{quote.code(axis['column'])} is cut into {len(axis['edges']) - 1} declared bins, "
                f"{_origin_words(facts, axis['column'], 'edges', quote)}"
            )
        elif axis.get("categories") is not None:
            parts.append(
                f"{quote.code(axis['column'])} has {len(axis['categories'])} declared categories "
                f"(every one released, with '(any other)' for the rest), "
                f"{_origin_words(facts, axis['column'], 'categories', quote)}"
            )
    private = query.get("private_keys")
    if isinstance(private, Mapping):
        parts.append(
            f"the groups of {', '.join(quote.code(c) for c in private['columns'])} are not declared: they "
            f"are selected privately by a noisy threshold (epsilon {_value(private['epsilon'])}, "
            f"delta {privacy_number(private['delta'])}, charged on top)"
        )
    if "categories" in query and query.get("type") in ("argmax", "top_k"):
        parts.append(
            f"{len(query['categories'])} declared candidates of {quote.code(query['column'])}, "
            f"{_origin_words(facts, query['column'], 'categories', quote)}"
        )
    if not parts:
        return "None needed: one row changes the answer by at most one."
    text = "; ".join(parts) + "."
    return text[:1].upper() + text[1:]


def _mechanism_words(name: str, quote: Quote) -> tuple[str, str]:
    from dpexplorer.core.mechanisms import registry

    try:
        mechanism = registry.get(name)
    except KeyError:
        return quote.text(name), ""
    return mechanism.label, mechanism.summary


# ------------------------------------------------------------------ the three files
def write_plan(analysis: Analysis, path: str | os.PathLike[str]) -> Path:
    """The plan file (PLAN_FORMAT.md) that ``dpexplorer release PLAN --data DATA`` runs."""
    text = json.dumps(analysis.plan_json(), indent=2, allow_nan=False) + "\n"
    return _write(path, text)


def _write(path: str | os.PathLike[str], text: str) -> Path:
    target = Path(path)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise AnalysisExportError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target


def _json(value: Any, what: str) -> Any:
    """``value`` rebuilt from its JSON: only dicts, lists, strings, finite numbers, booleans and
    None, whose ``repr`` is a Python literal (AnalysisExportError for anything else)."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise AnalysisExportError(f"{what} holds a value that is not plain JSON: {exc}") from None


def _literal(value: Any, indent: int) -> str:
    """``value`` (JSON values, :func:`_json`) as a Python literal, indented to sit after
    ``indent`` spaces. Every string in it is written by ``repr`` (pprint splits a long one into
    adjacent ``repr`` pieces): user text can reach the code only as a string constant."""
    text = pprint.pformat(_json(value, "the plan"), width=100 - indent, sort_dicts=False)
    return text.replace("\n", "\n" + " " * indent)


def _settings(analysis: Analysis, ledger: str | None, out: str) -> str:
    budget = "None"
    if analysis.budget is not None:
        epsilon, delta, accountant = _json(list(analysis.budget), "the planning budget")
        budget = repr((float(epsilon), float(delta), str(accountant)))
    return (
        f"DATA = {analysis.data!r}\n"
        f"ENGINE = {analysis.engine!r}\n"
        f"LEDGER = {ledger!r}  # None: the per-user ledger of `dpexplorer release`\n"
        f"OUT = {out!r}\n"
        f"BUDGET = {budget}  # (epsilon, delta, accountant): set only if the ledger has none for the data\n"
    )


def _plan_source(analysis: Analysis) -> str:
    return f"PLAN = dpx.Plan.from_json(\n    {_literal(analysis.plan_json(), 4)}\n)\n"


RUN_SOURCE = """\
from dpexplorer.core.figures import privacy_number  # ε to three digits, as the CLI prints it

data = dpx.open_dataset(DATA, engine=ENGINE)
if BUDGET is not None:
    try:
        dpx.remaining_budget(data, ledger=LEDGER)
    except dpx.NoBudgetError:
        dpx.set_budget(data, *BUDGET, ledger=LEDGER)
results = dpx.release_plan(data, PLAN, out=OUT, ledger=LEDGER)
for number, result in enumerate(results, start=1):
    print(f"[{number}/{len(results)}] {result.files['provenance'].name}: {result.text()}")
print(f"epsilon left for this dataset: {privacy_number(dpx.remaining_budget(data, ledger=LEDGER))}")
"""


def script_text(analysis: Analysis, *, ledger: str | None = None, out: str = "released") -> str:
    """A Python script that releases the analysis's plan through the public API: the same
    checks, charges and files as ``dpexplorer release`` with the same plan."""
    comments = []
    for number, stat in enumerate(analysis.statistics, start=1):
        words = statistic_markdown(number, stat, COMMENT)
        lines = [part for line in words.split("\n") for part in textwrap.wrap(_unmarked(line), 94) or [""]]
        comments.append("\n".join(f"# {shown(line)}".rstrip() for line in lines))
    statistics = "\n#\n".join(comments)
    about = textwrap.fill(  # no user text: the data's path is DATA's literal below
        f"Releases {len(analysis.statistics)} statistic(s) of the data at DATA through the budget "
        "ledger, as `dpexplorer release` would run the same plan: the whole plan is checked first, "
        "then each statistic is charged, drawn by an exact sampler and written to OUT. Running it "
        "spends privacy budget: review the plan below first.",
        96,
    )
    return (
        f'"""dpexplorer analysis, exported from the window.\n\n{about}\n"""\n\n'
        f"# Exported on {shown(analysis.created)} by dpexplorer {shown(dpexplorer.__version__)}.\n\n"
        "import dpexplorer as dpx\n\n"
        f"{_settings(analysis, ledger, out)}\n"
        f"{statistics}\n\n"
        f"{_plan_source(analysis)}\n\n"
        'if __name__ == "__main__":\n'
        + "".join(f"    {line}\n" if line else "\n" for line in RUN_SOURCE.splitlines())
    )


def _unmarked(line: str) -> str:
    """A line of :func:`statistic_markdown` without its markdown: the heading's ``### `` and the
    bold lead-in (``**Why.**``). Only at the line's start, where user text never stands."""
    return re.sub(r"^\*\*(.+?)\*\*", r"\1", line.removeprefix("### "))


def write_script(
    analysis: Analysis, path: str | os.PathLike[str], *, ledger: str | None = None, out: str = "released"
) -> Path:
    """:func:`script_text` written to ``path``."""
    return _write(path, script_text(analysis, ledger=ledger, out=out))


def notebook(analysis: Analysis, *, ledger: str | None = None, out: str = "released") -> Any:
    """The analysis as a Jupyter notebook (an ``nbformat`` v4 node): a markdown cell per
    statistic saying what it releases, under what privacy unit and bounds, and why, each
    followed by its plan entry; then the release through the public API. AnalysisExportError
    when nbformat is not installed."""
    try:
        import nbformat.v4 as nbf
    except ImportError:
        raise AnalysisExportError(NOTEBOOK_MISSING) from None
    plan = _json(analysis.plan_json(), "the plan")
    entries = plan["measurements"] if isinstance(plan, dict) else plan
    cells = [
        nbf.new_markdown_cell(
            f"# dpexplorer analysis of {markdown_code(Path(analysis.data).name)}\n\n"
            f"Exported from the window on {markdown_text(analysis.created)} "
            f"(dpexplorer {markdown_text(dpexplorer.__version__)}): "
            f"{len(entries)} statistic(s), released through the budget ledger exactly as "
            "`dpexplorer release` runs the same plan. The notebook holds no answer computed from the "
            "data: only what was declared. **Running the last cell spends privacy budget.**"
        ),
        nbf.new_code_cell(f"import dpexplorer as dpx\n\n{_settings(analysis, ledger, out)}"),
    ]
    for number, (stat, entry) in enumerate(zip(analysis.statistics, entries, strict=True), start=1):
        cells.append(nbf.new_markdown_cell(statistic_markdown(number, stat)))
        cells.append(nbf.new_code_cell(f"entry_{number} = {_literal(entry, len(f'entry_{number} = '))}"))
    names = ", ".join(f"entry_{n}" for n in range(1, len(entries) + 1))
    wrapped = f"[{names}]"
    if analysis.sampling_rate is not None:
        wrapped = (
            f'{{"sampling": {{"rate": {float(plan["sampling"]["rate"])!r}}}, "measurements": [{names}]}}'
        )
    cells.append(
        nbf.new_markdown_cell(
            "## The plan, checked and released\n\nThe whole plan is validated and its total checked "
            "against what is left of the budget before anything is charged; then each statistic is "
            "charged, its noise drawn by an exact sampler, and its values and provenance written to "
            "`OUT`."
        )
    )
    cells.append(nbf.new_code_cell(f"PLAN = dpx.Plan.from_json({wrapped})\n{RUN_SOURCE}"))
    book = nbf.new_notebook(cells=cells)
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    book.metadata["language_info"] = {"name": "python"}
    return book


def write_notebook(
    analysis: Analysis, path: str | os.PathLike[str], *, ledger: str | None = None, out: str = "released"
) -> Path:
    """:func:`notebook` written to ``path`` (.ipynb)."""
    import nbformat

    book = notebook(analysis, ledger=ledger, out=out)
    nbformat.validate(book)
    return _write(path, nbformat.writes(book))


FORMATS = {"plan": ".json", "script": ".py", "notebook": ".ipynb"}
"""Export formats and their file suffixes."""


def export(
    analysis: Analysis,
    path: str | os.PathLike[str],
    kind: str,
    *,
    ledger: str | None = None,
    out: str = "released",
) -> Path:
    """Write the analysis as ``kind`` (``plan``, ``script`` or ``notebook``) to ``path``."""
    if kind == "plan":
        return write_plan(analysis, path)
    if kind == "script":
        return write_script(analysis, path, ledger=ledger, out=out)
    if kind == "notebook":
        return write_notebook(analysis, path, ledger=ledger, out=out)
    raise AnalysisExportError(f"unknown export format {kind!r}: use {', '.join(FORMATS)}")


def analysis_from_plan(
    data: str, plan: Any, *, labels: Sequence[str] = (), budget: tuple[float, float, str] | None = None
) -> Analysis:
    """An :class:`Analysis` of a plan's JSON (as read from a plan file)."""
    from dpexplorer.release.plan_run import plan_entries

    entries, rate = plan_entries(plan)
    stats = [
        Statistic(
            e["query"],
            e["mechanism"],
            e["parameters"],
            labels[i] if i < len(labels) else "",
            kind=e.get("kind", "statistic"),
        )
        for i, e in enumerate(entries)
    ]
    return Analysis(data, stats, sampling_rate=rate, budget=budget)
