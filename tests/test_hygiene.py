"""The tests themselves: none writes to a fixed path under /tmp, where two runs at once (the
pytest-xdist workers, or two checkouts on one machine) would overwrite each other's files; a
test takes pytest's ``tmp_path`` instead."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent


def fixed_temp_paths(source: str) -> list[str]:
    """String constants in ``source`` that name a fixed path under /tmp."""
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "/tmp" or node.value.startswith("/tmp/"))
    ]


def test_no_test_writes_to_a_fixed_path_under_tmp() -> None:
    found = {
        str(path.relative_to(TESTS)): names
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__)  # its own examples
        and (names := fixed_temp_paths(path.read_text(encoding="utf-8")))
    }
    assert not found, f"use tmp_path, not a fixed path under /tmp: {found}"


def test_the_check_sees_a_fixed_path() -> None:
    assert fixed_temp_paths('save("/tmp/view.png")\nPath("/tmp")') == ["/tmp/view.png", "/tmp"]
    assert fixed_temp_paths("save(str(tmp_path / 'view.png'))") == []
