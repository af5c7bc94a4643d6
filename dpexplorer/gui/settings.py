"""What the window keeps between runs: recent files and window layout (QSettings)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

MAX_RECENT = 8


def settings() -> QSettings:
    return QSettings("dpexplorer", "dpexplorer")


def recent_files() -> list[str]:
    value = settings().value("recent_files", [])
    if isinstance(value, str):  # QSettings returns a lone string for a one-item list
        return [value]
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def add_recent_file(path: str | Path) -> list[str]:
    """Put ``path`` first in the recent list (deduplicated, at most MAX_RECENT); return it."""
    resolved = str(Path(path).resolve())
    files = [resolved] + [f for f in recent_files() if f != resolved]
    files = files[:MAX_RECENT]
    settings().setValue("recent_files", files)
    return files


def lazy_share() -> float:
    """Files larger than this share of memory are streamed, not read into memory (setting
    ``data/lazy_share``; default dpexplorer.data.scan.LAZY_SHARE, an eighth)."""
    from dpexplorer.data.scan import LAZY_SHARE

    try:
        value = float(str(settings().value("data/lazy_share", LAZY_SHARE)))
    except (TypeError, ValueError):
        return LAZY_SHARE
    return value if value > 0 else LAZY_SHARE
