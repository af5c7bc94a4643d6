"""Export of released values with provenance (DESIGN.md, Export).

Three files per release in the output directory, named ``release-<ledger id>-<mechanism>``:
``.csv`` (label, value), ``.json`` (the same values) and ``.provenance.json`` (the sidecar).
Each is written under a hidden temporary name (``.<name>.<pid>.tmp``), flushed, fsync'ed and
renamed over its final name, then the directory is fsync'ed; the sidecar is renamed last, so a
release whose sidecar exists is complete. A crash can leave only temporary files, which
:func:`remove_partial_files` deletes. Nothing here ever receives a true answer: callers pass
released values and public facts only."""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

TMP_SUFFIX = ".tmp"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that ``path`` is either absent or complete: temporary name,
    flush, fsync, rename (atomic on POSIX), fsync of the directory."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")
    with open(tmp, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def remove_partial_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete temporary files left by an interrupted export in ``directory``; returns them."""
    removed = []
    for path in Path(directory).glob(f".release-*{TMP_SUFFIX}"):
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


def _csv_text(labels: Sequence[str], values: Sequence[float | str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["label", "value"])
    for label, value in zip(labels, values, strict=True):
        writer.writerow([label, repr(value) if isinstance(value, float) else value])
    return buffer.getvalue()


def export_release(
    out_dir: str | os.PathLike[str],
    stem: str,
    labels: Sequence[str],
    values: Sequence[float | str],
    provenance: Mapping[str, Any],
) -> dict[str, Path]:
    """Write the values (CSV, JSON) and the sidecar; returns the three final paths by kind
    (``"csv"``, ``"json"``, ``"provenance"``)."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "csv": directory / f"{stem}.csv",
        "json": directory / f"{stem}.json",
        "provenance": directory / f"{stem}.provenance.json",
    }
    values_doc = {"values": [{"label": k, "value": v} for k, v in zip(labels, values, strict=True)]}
    sidecar = {**provenance, "files": {k: p.name for k, p in paths.items() if k != "provenance"}}
    atomic_write(paths["csv"], _csv_text(labels, values))
    atomic_write(paths["json"], json.dumps(values_doc, indent=2) + "\n")
    atomic_write(paths["provenance"], json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
    return paths
