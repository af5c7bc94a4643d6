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
    without a window); release never reaches for it. Of QtWidgets it takes only QApplication,
    inside the function that makes one (so that a later window in the same process can open),
    never at module level."""
    path = PACKAGE / "report_pdf.py"
    names = _imports(path)
    assert not any(_forbidden(n, ("dpexplorer.gui",)) for n in names)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)}
    assert "PySide6.QtWidgets" not in top_level
    widgets = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "PySide6.QtWidgets"]
    assert all([a.name for a in n.names] == ["QApplication"] for n in widgets)
    for path in _modules("release"):
        assert "dpexplorer.report_pdf" not in _imports(path), path.name


# ---------------------------------------------------------------- circles and upward arrows
# The rooms in the order the arrows point (DESIGN.md, "The shape"): a module may import from its
# own room or from a room in a LOWER layer, never from a higher layer or from another room of its
# own layer. report_pdf (Qt, no window) sits above release and below gui and commands; api (the
# Python API, no Qt) above release; cli above all (it launches the window); __main__ runs cli.
LAYERS: dict[str, int] = {
    "core": 0,
    "data": 1,
    "release": 2,
    "report_pdf": 3,
    "api": 3,
    "gui": 4,
    "commands": 4,
    "cli": 5,
    "__main__": 6,
    "": 7,  # the package's root __init__: the facade, re-exporting the API (lazily)
}


def _module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (found under ``root``) by its dotted name; a package's
    ``__init__`` under the package's name."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> list[str]:
    """The modules of ``known`` that one import statement loads: ``from a.b import c`` is the
    module a.b.c when there is one, else a.b (a name defined in a.b); relative imports resolved."""
    if isinstance(node, ast.Import):
        bases = [alias.name for alias in node.names]
    else:
        if node.level:
            here = module.split(".") if is_package else module.split(".")[:-1]
            here = here[: len(here) - (node.level - 1)]
            base = ".".join([*here, node.module] if node.module else here)
        else:
            base = node.module or ""
        bases = [f"{base}.{alias.name}" for alias in node.names]
        bases = [b if b in known else base for b in bases]
    out = []
    for name in bases:
        while name and name not in known:  # a name inside a module: the module
            name = name.rpartition(".")[0]
        if name:
            out.append(name)
    return out


def _import_module_target(node: ast.AST) -> str | None:
    """The module an ``import_module("a.b")`` / ``importlib.import_module("a.b")`` call names by
    a constant string (a name built at run time, e.g. an f-string over a registry, is the
    registry's business and not read)."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    first = node.args[0]
    if called == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the modules of ``package`` it imports ANYWHERE in its text: at module level, in
    a function (a late import) or under ``if TYPE_CHECKING:``. All count: a late import hides a
    circle from the interpreter but not from the reader, and a type-only import still says the
    module knows the other; so does ``import_module("pkg.mod")`` with a constant name. Two
    exemptions, both for the package's root ``__init__`` (the public
    facade that re-exports the API lazily): an arrow INTO the root is dropped when it reads only
    ``__version__`` (checked by :func:`root_imports`), and so the root's own lazy imports close
    no circle."""
    modules = _module_names(root, package)
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                targets.update(_targets(node, name, path.name == "__init__.py", known))
            elif (dynamic := _import_module_target(node)) is not None:
                targets.update(_targets(ast.Import(names=[ast.alias(dynamic)]), name, False, known))
        graph[name] = targets - {name, package}
    return graph


def root_imports(root: Path, package: str) -> dict[str, set[str]]:
    """module -> the names it reads from the package's root other than ``__version__`` and
    submodules (``from pkg import x``, or ``pkg.x`` after ``import pkg``): must be empty."""
    modules = _module_names(root, package)
    submodules = {name.rpartition(".")[2] for name in modules if name.count(".") == 1}
    out: dict[str, set[str]] = {}
    for name, path in modules.items():
        if name == package:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        read: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == package:
                read |= {alias.name for alias in node.names}
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == package
            ):
                read.add(node.attr)
        read -= {"__version__", *submodules}
        if read:
            out[name] = read
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: each strongly connected set of two or more modules (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def wrong_arrows(graph: dict[str, set[str]], layers: dict[str, int] = LAYERS) -> list[tuple[str, str]]:
    """The arrows (importer, imported) that point up a layer or sideways to another room of the
    same layer (a room missing from ``layers`` is a failure too: place it)."""
    out = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            a, b = _room(source), _room(target)
            if a == b:
                continue
            if a not in layers or b not in layers or layers[b] >= layers[a]:
                out.append((source, target))
    return out


def test_no_import_circle() -> None:
    found = circles(import_graph(PACKAGE.parent, "dpexplorer"))
    assert not found, "import circles (break each by moving the shared piece down):\n" + "\n".join(
        " <-> ".join(c) for c in found
    )


def test_every_arrow_points_down() -> None:
    wrong = wrong_arrows(import_graph(PACKAGE.parent, "dpexplorer"))
    assert not wrong, "upward or sideways imports:\n" + "\n".join(f"{a} -> {b}" for a, b in wrong)


def test_the_package_root_is_read_only_for_its_version() -> None:
    assert not root_imports(PACKAGE.parent, "dpexplorer")


def _plant(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


CLEAN_PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/core/__init__.py": "",
    "pkg/core/maths.py": "import math\n",
    "pkg/data/__init__.py": "",
    "pkg/data/load.py": "from pkg.core import maths\n",
    "pkg/data/answers.py": "from pkg.data.load import thing\nfrom .load import other\n",
    "pkg/gui/__init__.py": "",
    "pkg/gui/window.py": "import pkg.data.answers\nfrom pkg import __version__\n",
}


def test_the_checks_pass_a_clean_package(tmp_path: Path) -> None:
    _plant(tmp_path, CLEAN_PACKAGE)
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.data.answers"] == {"pkg.data.load"}
    assert graph["pkg.gui.window"] == {"pkg.data.answers"}
    assert not circles(graph) and not root_imports(tmp_path, "pkg")
    assert not wrong_arrows(graph, {"core": 0, "data": 1, "gui": 2})


@pytest.mark.parametrize(
    "back",
    [
        "from pkg.data import answers\n",  # module level, a module imported from its package
        "from . import answers\n",  # relative
        "def f():\n    from pkg.data.answers import x\n",  # a late import, in a function
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.data.answers\n",
        "import importlib\ndef f():\n    return importlib.import_module('pkg.data.answers')\n",
        "from importlib import import_module\nKERNELS = import_module('pkg.data.answers')\n",
    ],
)
def test_the_check_catches_a_planted_circle(tmp_path: Path, back: str) -> None:
    _plant(tmp_path, {**CLEAN_PACKAGE, "pkg/data/load.py": back})
    assert circles(import_graph(tmp_path, "pkg")) == [["pkg.data.answers", "pkg.data.load"]]


def test_the_check_catches_a_longer_circle(tmp_path: Path) -> None:
    _plant(tmp_path, {**CLEAN_PACKAGE, "pkg/data/extra.py": "import pkg.data.answers\n"})
    _plant(tmp_path, {"pkg/data/load.py": "def f():\n    from pkg.data import extra\n"})
    assert circles(import_graph(tmp_path, "pkg")) == [["pkg.data.answers", "pkg.data.extra", "pkg.data.load"]]


@pytest.mark.parametrize(
    ("path", "text", "arrow"),
    [
        (
            "pkg/core/maths.py",
            "def f():\n    from pkg.data.load import x\n",
            ("pkg.core.maths", "pkg.data.load"),
        ),
        ("pkg/data/load.py", "from pkg.gui import window\n", ("pkg.data.load", "pkg.gui.window")),
        ("pkg/data/load.py", "from pkg.extra import x\n", ("pkg.data.load", "pkg.extra")),  # no layer
    ],
)
def test_the_check_catches_a_planted_upward_arrow(tmp_path: Path, path: str, text: str, arrow: tuple) -> None:
    _plant(tmp_path, {**CLEAN_PACKAGE, "pkg/extra.py": "", path: text})
    assert arrow in wrong_arrows(import_graph(tmp_path, "pkg"), {"core": 0, "data": 1, "gui": 2})


def test_the_check_catches_a_sideways_arrow(tmp_path: Path) -> None:
    _plant(
        tmp_path, {**CLEAN_PACKAGE, "pkg/cmd/__init__.py": "", "pkg/cmd/run.py": "import pkg.gui.window\n"}
    )
    wrong = wrong_arrows(import_graph(tmp_path, "pkg"), {"core": 0, "data": 1, "gui": 2, "cmd": 2})
    assert wrong == [("pkg.cmd.run", "pkg.gui.window")]


def test_the_check_catches_an_api_name_read_from_the_root(tmp_path: Path) -> None:
    _plant(
        tmp_path,
        {**CLEAN_PACKAGE, "pkg/data/load.py": "import pkg\nx = pkg.open_dataset\ny = pkg.__version__\n"},
    )
    assert root_imports(tmp_path, "pkg") == {"pkg.data.load": {"open_dataset"}}
