"""PySide6's per-module source check, replaced at start-up by a read of the file's bytes
(dpexplorer/gui/pyside_scan.py): in place once the gui package is imported, and giving PySide6's
own answer for every module the window has loaded."""

from __future__ import annotations

import sys

import pytest

import dpexplorer.gui.main_window  # noqa: F401  (the window's imports, so that the modules below are its)
from dpexplorer.gui import pyside_scan


def test_the_check_is_replaced_once_the_gui_package_is_imported():
    feature = sys.modules["shibokensupport.feature"]
    assert getattr(feature._mod_uses_pyside, "_dpexplorer_bytes_check", False)
    assert pyside_scan.install()  # a second call keeps the one in place
    assert pyside_scan.pyside_check() is not None


# reading every module's attributes wakes deprecated lazy ones (mpmath 1.4's rational, math2)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_it_answers_as_pyside_does_for_every_loaded_module():
    original = pyside_scan.pyside_check()
    assert original is not None
    modules = [m for m in list(sys.modules.values()) if str(getattr(m, "__file__", "")).endswith(".py")]
    assert len(modules) > 300
    answers = {m.__name__: pyside_scan.uses_pyside(m, original) for m in modules}
    assert answers == {m.__name__: original(m) for m in modules}
    assert answers["dpexplorer.gui.main_window"] and not answers["numpy"]
    assert answers["pyqtgraph.Qt"]
