"""Issue 43: a row's cell on an axis is found by an expression whose size does not grow with the
number of declared categories or bins, and is the cell the per-cell rule gives (a category
matches as ``column == category``: dpexplorer/data/conditions.py). Before, categories that spell
numbers (and bins) were a chain of one when/then per category: 1,000 took 35 s and 4.6 GB to
plan, 3,000 over 200 s and 11 GB, while text categories were one Enum cast."""

from __future__ import annotations

import datetime

import polars as pl
import pytest

from dpexplorer.data.axes import Axis
from dpexplorer.data.conditions import Compare


def nodes(expr: pl.Expr, cap: int = 100_000) -> int:
    """The nodes of ``expr``'s tree (a shared subtree counted each time it is used), up to
    ``cap`` (counted without recursion: a chain of when/then is as deep as it is long)."""
    count, stack = 0, [expr]
    while stack and count < cap:
        count += 1
        stack.extend(stack.pop().meta.pop())
    return count


def per_cell_rule(axis: Axis, dtype: pl.DataType | None) -> pl.Expr:
    """The reference: the first category the cell equals as ``column == category``, else
    "other" (one test per category, as the axis was read before)."""
    schema = {axis.column: dtype} if dtype is not None else ()
    out = pl.lit(len(axis.categories or ()))
    for i, category in reversed(list(enumerate(axis.categories or ()))):
        out = pl.when(Compare(axis.column, "==", category).expr(schema)).then(pl.lit(i)).otherwise(out)
    return out.cast(pl.Int64)


def reference_cells(data: pl.DataFrame, axis: Axis, part: int = 20) -> list[int]:
    """:func:`per_cell_rule` for many categories, ``part`` at a time (one chain of them all
    would take minutes to plan): each row's first category in the first part it matches."""
    cats = axis.categories or ()
    found = pl.Series([len(cats)] * data.height, dtype=pl.Int64)
    for start in reversed(range(0, len(cats), part)):
        chunk = Axis(axis.column, categories=cats[start : start + part])
        index = data.select(per_cell_rule(chunk, data.schema[axis.column]).alias("i"))["i"]
        found = pl.select(
            pl.when(index < len(chunk.categories)).then(index + start).otherwise(found)
        ).to_series()
    return found.to_list()


TEXT_CELLS = [
    *("3", " 3 ", "3.0", "03", "+3", "-0", "0", "0.1", "0.10", "1e20", "1e+20", "100000000000000000000"),
    *("9007199254740993", "abc", "ABC", "x", "true", "TRUE", "false", "inf", "", None),
    *("2021-03-01", "2021-3-1", "2021-02-30", "0000-01-01", "2020-01-05"),
]
FRAMES = {
    "text": pl.DataFrame({"x": TEXT_CELLS}),
    "dictionary": pl.DataFrame({"x": pl.Series(TEXT_CELLS).cast(pl.Categorical)}),
    "integers": pl.DataFrame({"x": [3, 0, -1, None, 7, 10**17, 2**53 + 1]}),
    "floats": pl.DataFrame({"x": [3.0, -0.0, 0.1, float("nan"), float("inf"), None, 1e20, 2.0**53]}),
    "booleans": pl.DataFrame({"x": [True, False, None]}),
    "days": pl.DataFrame({"x": [datetime.date(2021, 3, 1), datetime.date(2020, 1, 5), None]}),
}
AXES = [
    ("abc", "3", "other text"),
    (3, 7.0, True),
    ("2021-03-01", 0, "x"),
    ("0", "1e20", "0.1", "abc", "2021-02-30", "0000-01-01"),
    (0, 1, 2, 3, 1e20, 2**53, "4503599627370496.5"),
    ("-0", "true", "x", "ABC", ""),
    ("2020-01-05", "2021-03-01"),
]


@pytest.mark.parametrize("frame", FRAMES, ids=list(FRAMES))
def test_every_category_gets_the_cells_of_the_per_cell_rule(frame) -> None:
    """Numbers, days and text, on every column type, typed or read through the text, eager and
    streaming: the cell of each row is the reference's."""
    data = FRAMES[frame]
    for categories in AXES:
        axis = Axis("x", categories=categories)
        for dtype in (None, data.schema["x"]):
            expected = data.select(per_cell_rule(axis, dtype).alias("i"))["i"].to_list()
            assert data.select(axis.index_expr(dtype).alias("i"))["i"].to_list() == expected, categories
            lazy = data.lazy().select(axis.index_expr(dtype).alias("i")).collect(engine="streaming")
            assert lazy["i"].to_list() == expected, categories


@pytest.mark.parametrize(
    "spell",
    [str, lambda i: i, lambda i: f"{i / 4}", lambda i: f"w{i}", lambda i: f"w{i}" if i % 2 else str(i)],
    ids=["number text", "numbers", "decimals", "words", "mixed"],
)
def test_the_expression_does_not_grow_with_the_categories(spell) -> None:
    """20 and 2,000 categories make expressions of the same size, which give every cell of
    the column the reference's index (2,000 categories of the 2,500 values that occur)."""
    small, large = (Axis("x", categories=tuple(spell(i) for i in range(n))) for n in (20, 2_000))
    assert nodes(small.index_expr()) == nodes(large.index_expr())
    data = pl.DataFrame({"x": [str(spell(i)) for i in range(2_500)] + [None, "1.0", "05", "w7"]})
    assert data.select(large.index_expr().alias("i"))["i"].to_list() == reference_cells(data, large)


def test_bins_do_not_grow_with_their_edges() -> None:
    """Bins [e0, e1), ..., [e_{k-1}, e_k] (outside values in the end bins, missing its own cell):
    the same cells as one test per edge, from an expression of a size independent of k."""
    data = pl.DataFrame({"x": [-5.0, 0.0, 0.25, 0.5, 99.75, 100.0, 250.0, None, -0.0, 3.0]})
    axes = [Axis("x", edges=tuple(i * 100 / k for i in range(k + 1))) for k in (1, 2, 20, 2_000)]
    assert len({nodes(axis.index_expr()) for axis in axes[1:]}) == 1
    for axis in axes:
        k = len(axis.edges or ()) - 1
        expected = [k if v is None else sum(v >= e for e in axis.edges[1:-1]) for v in data["x"]]
        assert data.select(axis.index_expr().alias("i"))["i"].to_list() == expected, k
