"""The API's documentation cannot rot: the user guide's API examples (docs/guide/api.md) run as
doctests, and the API reference is built from the docstrings with pdoc (offline) on every run,
warnings failing it."""

from __future__ import annotations

import doctest
import re
import warnings
from pathlib import Path

import pytest

import dpexplorer.api as api

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "api.md"


def _api_examples() -> str:
    text = API_PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    return "\n".join(block for block in blocks if ">>>" in block)


def test_the_guide_s_api_examples_run() -> None:
    source = _api_examples()
    test = doctest.DocTestParser().get_doctest(source, {}, "docs/guide/api.md", str(API_PAGE), 0)
    assert len(test.examples) >= 8
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0 and runner.tries == len(test.examples)


def test_the_api_reference_builds_from_the_docstrings(tmp_path: Path) -> None:
    pdoc = pytest.importorskip("pdoc")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pdoc warns about what it cannot render or resolve
        pdoc.pdoc("dpexplorer.api", output_directory=tmp_path)
    page = (tmp_path / "dpexplorer" / "api.html").read_text(encoding="utf-8")
    for name in api.__all__:
        assert f'id="{name}"' in page, f"{name} is missing from the API reference"
