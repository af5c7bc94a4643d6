"""A cheaper answer to the question PySide6 asks of every module imported after it.

PySide6 (6.4 and later, PYSIDE-2029) hooks the import statement: for each module imported once
PySide6 is in, its ``__feature__`` machinery records whether the module's source contains the
text "PySide6" (``shibokensupport.feature._mod_uses_pyside``), reading the source through
``inspect.getsource``: the file decoded, split into lines and kept in ``linecache`` for the
rest of the run. The window's start imports about 700 modules after PySide6 (numpy, polars,
pyqtgraph, the package), and this check took 0.1 s of it on an idle machine (cProfile of the
start; 0.3 s under load).

:func:`install` replaces the check with the same question asked of the file's bytes (a source
file in UTF-8 or any ASCII-compatible encoding contains the bytes of "PySide6" exactly when its
text does); a module without a ``.py`` file, or one whose file cannot be read, still gets
PySide6's own check. Nothing else of PySide6 changes, and when its internals are not the ones
expected (another version), nothing is replaced."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType

_MARK = "_dpexplorer_bytes_check"
_replaced: list[Callable[[ModuleType], bool]] = []
"""PySide6's own check, once :func:`install` has replaced it (for the tests' comparison)."""


def uses_pyside(module: ModuleType, fallback: Callable[[ModuleType], bool]) -> bool:
    """Whether ``module``'s source file contains "PySide6" (``fallback(module)`` when it has no
    readable ``.py`` file)."""
    path = getattr(module, "__file__", None)
    if isinstance(path, str) and path.endswith(".py"):
        try:
            with open(path, "rb") as source:
                return b"PySide6" in source.read()
        except OSError:
            pass
    return fallback(module)


def install() -> bool:
    """Replace PySide6's per-module source check by :func:`uses_pyside` (once); True if it is
    in place. Call after PySide6 is imported and before the heavy imports."""
    import PySide6.QtCore  # noqa: F401  (installs the import hook and its feature module)

    feature = sys.modules.get("shibokensupport.feature")
    original = getattr(feature, "_mod_uses_pyside", None)
    if original is None or not callable(original):
        return False
    if getattr(original, _MARK, False):
        return True

    def check(module: ModuleType) -> bool:
        return uses_pyside(module, original)

    setattr(check, _MARK, True)
    feature._mod_uses_pyside = check  # type: ignore[union-attr]
    _replaced.append(original)
    return True


def pyside_check() -> Callable[[ModuleType], bool] | None:
    """PySide6's own check that :func:`install` replaced (None if it replaced nothing)."""
    return _replaced[0] if _replaced else None
