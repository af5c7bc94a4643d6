"""Reading a JSON file a steward wrote (a release plan, a codebook): one size limit, one line
for each way it can fail, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read_json_file(
    path: str | os.PathLike[str], noun: str, limit: int, error: type[Exception], utf8_hint: str = ""
) -> tuple[bytes, Any]:
    """(the file's bytes, its JSON value); ``error`` with one line naming "the {noun} {path}"
    for a file over ``limit`` bytes, one that cannot be read, is not UTF-8 (a BOM is allowed;
    ``utf8_hint`` is added to that message), is not JSON, nests deeper than the decoder goes, or
    holds a value it refuses (an integer of more than 4,300 digits)."""
    where = f"the {noun} {path}"
    try:
        if Path(path).stat().st_size > limit:
            raise error(f"{where} is larger than {limit >> 20} MiB")
        data = Path(path).read_bytes()
    except OSError as exc:
        raise error(f"cannot read {where}: {exc.strerror or exc}") from None
    try:
        return data, json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise error(f"{where} is not UTF-8 text (byte {exc.start}){utf8_hint}") from None
    except json.JSONDecodeError as exc:
        raise error(f"{where} is not valid JSON: {exc}") from None
    except RecursionError:
        raise error(f"{where} is nested too deeply to be a {noun}") from None
    except ValueError as exc:
        raise error(f"{where} cannot be read: {str(exc)[:80]}") from None
