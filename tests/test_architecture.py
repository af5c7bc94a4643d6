"""The arrows of DESIGN.md point one way; this test reads every module's imports (AST) to
prove it: core imports nothing of the project outside core and no Qt; data and release never
import gui or Qt."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpexplorer"
QT_LIKE = ("PySide6", "PyQt5", "PyQt6", "shiboken6", "pyqtgraph", "superqt", "qtpy")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names.append("." * node.level + (node.module or ""))
    return names


def _modules(sub: str) -> list[Path]:
    return sorted((PACKAGE / sub).rglob("*.py"))


def _forbidden(name: str, banned: tuple[str, ...]) -> bool:
    return any(name == b or name.startswith(b + ".") for b in banned)


@pytest.mark.parametrize("path", _modules("core"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_is_pure(path: Path) -> None:
    for name in _imports(path):
        assert not name.startswith("."), f"{path.name}: use absolute imports ({name})"
        assert not _forbidden(name, QT_LIKE), f"{path.name} imports {name}"
        if name.startswith("dpexplorer"):
            assert name.startswith("dpexplorer.core"), f"{path.name} imports {name} outside core"
        assert not _forbidden(name, ("polars",)), f"{path.name}: core does not read data ({name})"


@pytest.mark.parametrize(
    "path", _modules("data") + _modules("release"), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_data_and_release_never_import_gui(path: Path) -> None:
    for name in _imports(path):
        assert not _forbidden(name, ("dpexplorer.gui", *QT_LIKE)), f"{path.name} imports {name}"


def test_the_check_itself_catches_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from PySide6.QtCore import QObject\nimport dpexplorer.data.load\n")
    names = _imports(bad)
    assert _forbidden(names[0], QT_LIKE)
    assert not names[1].startswith("dpexplorer.core")


def test_cli_does_not_import_qt_at_module_level() -> None:
    tree = ast.parse((PACKAGE / "cli.py").read_text(encoding="utf-8"))
    top_level = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    for node in top_level:
        module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
        assert not _forbidden(module or "", ("dpexplorer.gui", *QT_LIKE))


def test_report_pdf_is_qt_outside_gui_and_release_does_not_import_it() -> None:
    """The PDF writer (Qt) sits outside release (no Qt there) and outside gui (the CLI uses it
    without a window); release never reaches for it."""
    names = _imports(PACKAGE / "report_pdf.py")
    assert not any(_forbidden(n, ("dpexplorer.gui", "PySide6.QtWidgets")) for n in names)
    for path in _modules("release"):
        assert "dpexplorer.report_pdf" not in _imports(path), path.name
