"""A saved query's lists (categories, bin edges, private key columns) must be lists: a string
in their place is refused, never split into its characters (``"White"`` is not the five
categories W, h, i, t, e)."""

from __future__ import annotations

import pytest

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.data.queries import query_from_dict

TEXT_FOR_A_LIST = [
    {"type": "argmax", "column": "race", "categories": "White"},
    {"type": "top_k", "column": "race", "categories": "White", "k": 1},
    {"type": "histogram", "axis": {"column": "race", "categories": "White"}},
    {"type": "histogram", "axis": {"column": "age", "edges": "17"}},
    {"type": "group_by", "keys": [{"column": "race", "categories": "White"}]},
    {"type": "group_by", "keys": [], "private_keys": {"columns": "race", "epsilon": 1, "delta": 1e-6}},
]


@pytest.mark.parametrize("saved", TEXT_FOR_A_LIST, ids=lambda d: d["type"])
def test_text_in_place_of_a_list_is_refused(saved: dict) -> None:
    with pytest.raises(DPExplorerError, match="list or tuple"):
        query_from_dict(saved)


def test_a_list_of_one_category_is_one_category() -> None:
    query = query_from_dict({"type": "argmax", "column": "race", "categories": ["White"]})
    assert query.categories == ("White",)
