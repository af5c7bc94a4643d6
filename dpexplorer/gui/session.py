"""Sessions: the explorer's state saved as JSON and loaded back.

A session records the dataset (path and SHA-256 fingerprint), every query control, the query
itself (the data layer's ``to_dict``), the neighbouring relation, the mechanism and its
parameters, the simulation seed and the plan. On load, a dataset whose fingerprint changed is
reported, never silently used as if it were the same."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dpexplorer.core.errors import DPExplorerError

FORMAT = "dpexplorer-session"
VERSION = 1


@dataclass
class Session:
    dataset_path: str
    dataset_fingerprint: str
    query_controls: dict[str, Any]
    query: dict[str, Any]
    mechanism: str
    params: dict[str, Any]
    seed: int
    plan: list[dict[str, Any]] = field(default_factory=list)
    teaching: bool = False


def save_session(session: Session, path: str | os.PathLike[str]) -> Path:
    """Write atomically (temporary file, fsync, rename)."""
    target = Path(path)
    payload = {"format": FORMAT, "version": VERSION, **asdict(session)}
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, indent=2)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, target)
    return target


def load_session(path: str | os.PathLike[str]) -> Session:
    """Read a session file; DPExplorerError saying what is wrong if it is not one."""
    source = Path(path)
    try:
        payload = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DPExplorerError(f"{source} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DPExplorerError(f"{source.name} is not a dpexplorer session: {exc}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise DPExplorerError(f"{source.name} is not a dpexplorer session file")
    if payload.get("version") != VERSION:
        raise DPExplorerError(
            f"{source.name} is a session of version {payload.get('version')}; this is {VERSION}"
        )
    fields = Session.__dataclass_fields__
    try:
        return Session(**{k: payload[k] for k in fields if k in payload})
    except TypeError as exc:
        raise DPExplorerError(f"{source.name} is incomplete: {exc}") from None
