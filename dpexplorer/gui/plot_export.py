"""Save a plot as PNG, SVG or the CSV of its data.

SVG goes through QSvgGenerator and ``QWidget.render``: pyqtgraph 0.14's SVGExporter fails on
Qt 6.11 and later. Files are written to a temporary name and renamed, like every export."""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from PySide6.QtCore import QPoint, QRect, QSize
from PySide6.QtGui import QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QWidget

SAVE_FILTER = "PNG image (*.png);;SVG drawing (*.svg);;CSV data (*.csv)"

Column = Sequence[object] | np.ndarray
"""One column of a view's CSV export: a list, or an array (no copy into Python floats)."""


def _atomic_target(path: Path) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    return Path(tmp)


def save_png(widget: QWidget, path: Path) -> None:
    tmp = _atomic_target(path)
    if not widget.grab().save(str(tmp), "PNG"):
        tmp.unlink(missing_ok=True)
        raise OSError(f"could not write {path}")
    os.replace(tmp, path)


def save_svg(widget: QWidget, path: Path, title: str = "dpexplorer plot") -> None:
    tmp = _atomic_target(path)
    generator = QSvgGenerator()
    generator.setFileName(str(tmp))
    size = widget.size()
    generator.setSize(QSize(size.width(), size.height()))
    generator.setViewBox(QRect(0, 0, size.width(), size.height()))
    generator.setResolution(widget.logicalDpiX())
    generator.setTitle(title)
    painter = QPainter(generator)
    try:
        widget.render(painter, QPoint(0, 0))
    finally:
        painter.end()
    os.replace(tmp, path)


def save_csv(columns: Mapping[str, Column], path: Path) -> None:
    """One column per series; shorter series are padded with empty cells."""
    tmp = _atomic_target(path)
    names = list(columns)
    length = max((len(v) for v in columns.values()), default=0)
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(names)
        for i in range(length):
            writer.writerow([_cell(columns[n], i) for n in names])
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _cell(values: Column, i: int) -> object:
    return values[i] if i < len(values) else ""


def save_plot(widget: QWidget, columns: Mapping[str, Column], path: str | Path) -> Path:
    """Save by the file's suffix: .png, .svg or .csv. Raises ValueError for another suffix."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix == ".png":
        save_png(widget, target)
    elif suffix == ".svg":
        save_svg(widget, target)
    elif suffix == ".csv":
        save_csv(columns, target)
    else:
        raise ValueError(f"cannot save a plot as {suffix or 'a file without suffix'}: use .png, .svg or .csv")
    return target
