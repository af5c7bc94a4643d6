"""What the window's start imports before its first paint (issue 29: the start under a second).
Everything here is imported later, on a worker with the mechanisms or when first used: a module
that slips back onto the start-up path fails this test, with its name."""

from __future__ import annotations

import json
import os
import subprocess
import sys

LATER = (
    "scipy",
    "superqt",
    "qtpy",
    "dpexplorer.core.clipping",
    "dpexplorer.gui.workspace",
    "dpexplorer.gui.views.clipping",
)


def test_the_main_window_imports_nothing_its_first_paint_does_not_need():
    code = (
        "import sys, json; import dpexplorer.gui.main_window; "
        "check = sys.modules['shibokensupport.feature']._mod_uses_pyside; "
        "print(json.dumps([sorted(sys.modules), getattr(check, '_dpexplorer_bytes_check', False)]))"
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    modules, bytes_check = json.loads(out.stdout.splitlines()[-1])
    loaded = {name for name in modules if any(name == m or name.startswith(m + ".") for m in LATER)}
    assert not loaded, f"imported before the first paint: {sorted(loaded)[:10]}"
    assert bytes_check  # PySide6's per-module source check is the cheap one (gui/pyside_scan.py)
