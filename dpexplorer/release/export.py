"""Export of released values with provenance (DESIGN.md, Export).

Three files per release in the output directory, named ``release-<ledger id>-<token>-<mechanism>``
(``token`` random, drawn before the charge, so that two ledgers writing into one directory never
produce the same name): ``.csv`` (label, value, ci_low, ci_high, interval, rounded for people:
:func:`value_rows`), ``.json`` (the same values and intervals at full precision) and
``.provenance.json`` (the sidecar). Each is written under a hidden temporary name
(``.<name>.<pid>.tmp``), flushed, fsync'ed and hard-linked to its final name, which fails if that
name exists (nothing is ever overwritten), then the directory is fsync'ed; the sidecar is linked
last, so a release whose sidecar exists is complete. Before its first value file a release writes
a hidden journal, ``.<name>.journal``, listing the files it is about to write, and removes it
once the sidecar is in place (:func:`write_release_files`). :func:`check_output_dir` checks
before any charge that the directory can be written (a probe file is created and removed) and
holds no file of the release's names. A crash can leave temporary files and value files without
a sidecar, which :func:`remove_partial_files` deletes before the next release into the
directory, under a lock that a live writer holds (so a concurrent release is never taken for a
dead one's leftovers). Only the app's own leftovers go (issue 43): a value file only when its
name has the exact shape the app writes (:data:`STEM`) AND a journal of the app lists it, a
temporary file only when its name is exactly that of one of the app's temporary files; any other
file (``release-notes.csv``, a look-alike name, a file named like a release but never journaled)
is never touched. Nothing here ever receives a true answer: callers pass released values and
public facts only."""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import json
import os
import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpexplorer.core.errors import DPExplorerError

TMP_SUFFIX = ".tmp"
KINDS = {"csv": ".csv", "json": ".json", "provenance": ".provenance.json"}
TABLE_KINDS = {"parquet": ".parquet"}
"""Further value files a synthetic table may have (beside its CSV): removed with their release."""
JOURNAL_SUFFIX = ".journal"
JOURNAL_MARK = "dpexplorer release journal"
"""The journal's ``journal`` field: what makes it the app's (with its exact name)."""
STEM = r"release-\d{6,}-[0-9a-f]{16}-[a-z0-9_]+(?:-synthetic)?"
"""The shape of a release's name (``release-<ledger row, 6 digits or more>-<16 hex token>-<mechanism>``
and ``-synthetic`` for a synthetic table): release.py and synthetic_tables.py write no other."""
_SUFFIXES = "|".join(re.escape(s) for s in (*KINDS.values(), *TABLE_KINDS.values()))
_JOURNAL = re.compile(rf"\.(?P<stem>{STEM}){re.escape(JOURNAL_SUFFIX)}")
_TEMPORARY = re.compile(
    rf"\.(?:(?:{STEM})(?:{_SUFFIXES})|\.(?:{STEM}){re.escape(JOURNAL_SUFFIX)}"
    rf"|report-[0-9a-f]{{16}}(?:-\d+)?\.(?:html|pdf))\.\d+{re.escape(TMP_SUFFIX)}"
    rf"|\.release-probe\.\d+\.[0-9a-f]{{16}}{re.escape(TMP_SUFFIX)}"
)
"""The exact names of the app's temporary files (:func:`write_new`'s ``.<name>.<pid>.tmp`` of a
release file, of a journal or of a report ``report-<token>[-N].html``/``.pdf``; the probe)."""


class ExportError(DPExplorerError):
    """The output directory cannot take the release's files (not writable, or a name is taken)."""


def new_token() -> str:
    """A random id for one release's file names (64 bits: unique across ledgers in practice, and
    a clash is still refused, never overwritten)."""
    return secrets.token_hex(8)


def release_paths(out_dir: str | os.PathLike[str], stem: str) -> dict[str, Path]:
    """The three final paths of the release named ``stem``, by kind."""
    return {kind: Path(out_dir) / f"{stem}{suffix}" for kind, suffix in KINDS.items()}


def check_output_dir(out_dir: str | os.PathLike[str], tokens: Sequence[str] = ()) -> None:
    """Raise :class:`ExportError` unless ``out_dir`` is (or can be made) a directory this process
    can write (a probe file is created and removed) and holds no file of a release with
    one of ``tokens``. Called before anything is charged."""
    directory = Path(out_dir)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".release-probe.{os.getpid()}.{new_token()}{TMP_SUFFIX}"
        with open(probe, "x", encoding="utf-8") as handle:
            handle.write("probe")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ExportError(
            f"cannot write to the output directory {directory}: {reason}; choose another --out"
        ) from None
    wanted = set(tokens)
    if not wanted:
        return
    for entry in os.scandir(directory):  # one listing for the whole plan
        parts = entry.name.split("-")
        if entry.name.startswith("release-") and len(parts) > 3 and parts[2] in wanted:
            raise ExportError(
                f"{directory / entry.name} already exists: nothing is ever overwritten; choose another --out"
            )


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_new(path: Path, write: Callable[[Path], object]) -> None:
    """Make the file ``path`` so that it is either absent or complete, never replacing an
    existing file: ``write`` fills a temporary name beside it, which is fsynced and hard-linked
    to ``path`` (atomic on POSIX; :class:`ExportError` if ``path`` exists), then removed; the
    directory is fsynced. Every file a release or its report writes is made so."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}{TMP_SUFFIX}")
    try:
        write(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.link(tmp, path)
    except FileExistsError:
        raise ExportError(f"{path} already exists: nothing is ever overwritten") from None
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def atomic_write(path: Path, text: str | bytes) -> None:
    """Write ``text`` (UTF-8 text, or bytes as they are) to ``path`` by :func:`write_new`."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    write_new(path, lambda tmp: tmp.write_bytes(data))


@contextlib.contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """An exclusive lock on ``directory`` itself (``flock`` of the open directory: no lock file
    is left behind) for writing one release or cleaning up: the kernel drops it when its holder
    dies, so a lock that can be taken means no release is half-written by a live process."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


def _journal(directory: Path, stem: str) -> Path:
    return directory / f".{stem}{JOURNAL_SUFFIX}"


def write_release_files(
    directory: Path, stem: str, paths: Mapping[str, Path], texts: Mapping[str, str | bytes]
) -> None:
    """Write one release's files under the directory's lock, each by :func:`atomic_write`, in
    the order of ``texts`` (by kind; the sidecar, ``"provenance"``, last: then it is complete).
    First the journal ``.<stem>.journal`` is written, listing the files' names: the mark by which
    :func:`remove_partial_files` knows a dead writer's files for the app's own; it is removed
    once the sidecar is linked. On any failure what was written is removed again (then the
    journal, if nothing is left of it) and the error raised."""
    kinds = list(texts)
    if not re.fullmatch(STEM, stem) or kinds[-1:] != ["provenance"]:
        raise ValueError(f"a release is named like {STEM} and its sidecar is written last: {stem}, {kinds}")
    journal = _journal(directory, stem)
    listed = {"journal": JOURNAL_MARK, "stem": stem, "files": [paths[k].name for k in kinds]}
    written: dict[str, Path] = {}
    with _directory_lock(directory):
        try:
            atomic_write(journal, json.dumps(listed, indent=2) + "\n")
            for kind in kinds:
                atomic_write(paths[kind], texts[kind])
                written[kind] = paths[kind]
        except BaseException:
            remove_release(written)
            if not any(p.exists() for p in written.values()):
                with contextlib.suppress(OSError):
                    journal.unlink(missing_ok=True)
            raise
        with contextlib.suppress(OSError):  # the release is complete: a journal left is only litter
            journal.unlink()
            _fsync_dir(directory)


def _journaled(directory: Path, stem: str, names: set[str]) -> list[Path]:
    """What a dead writer's journal ``.<stem>.journal`` marks for removal: the value files it
    lists that exist (none if the sidecar exists: the release is complete), then the journal.
    A file only counts if its name is the stem and one of the release's suffixes; a journal that
    is not the app's (unreadable, another mark, another stem) marks nothing and stays."""
    journal = _journal(directory, stem)
    try:
        listed = json.loads(journal.read_text(encoding="utf-8"))
        files = listed["files"] if listed["journal"] == JOURNAL_MARK and listed["stem"] == stem else None
    except (OSError, ValueError, TypeError, KeyError):
        files = None
    if not isinstance(files, list):
        return []
    if f"{stem}{KINDS['provenance']}" in names:
        return [journal]
    ours = re.compile(rf"{re.escape(stem)}(?:{_SUFFIXES})")
    return [
        *(directory / f for f in files if isinstance(f, str) and ours.fullmatch(f) and f in names),
        journal,
    ]


def remove_partial_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete what an interrupted export left in ``directory``, under the directory's lock, and
    return it: the app's temporary files (:data:`_TEMPORARY`'s exact names), and the value files
    a dead writer's journal lists whose sidecar was never written, then the journal. Nothing
    else: a user's file is kept whatever its name (module docstring)."""
    folder = Path(directory)
    if not folder.is_dir():
        return []
    with _directory_lock(folder):
        return _remove_partial(folder)


def directory_lock(directory: str | os.PathLike[str]) -> contextlib.AbstractContextManager[None]:
    """The lock a release's files are written under (:func:`_directory_lock`), for writing a
    report into ``directory``: its temporary files are then never taken for a dead writer's."""
    return _directory_lock(Path(directory))


def _remove_partial(folder: Path) -> list[Path]:
    names = {entry.name for entry in os.scandir(folder)}
    removed = [folder / name for name in sorted(names) if _TEMPORARY.fullmatch(name)]
    for name in sorted(names):
        found = _JOURNAL.fullmatch(name)
        if found:
            removed += _journaled(folder, found["stem"], names)  # the journal last: it marks the rest
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


def remove_release(paths: Mapping[str, Path]) -> None:
    """Delete what was written of one release, sidecar first (so a half-removed release is never
    taken for a complete one). Errors are ignored: the caller is already reporting a failure."""
    for kind in ("provenance", "json", "csv", *TABLE_KINDS):
        if kind not in paths:
            continue
        with contextlib.suppress(OSError):
            paths[kind].unlink(missing_ok=True)


Table = tuple[list[str], list[list[Any]]]
"""A CSV's header and rows."""

INTERVAL_WORDS = {"noise": "noise", "exact": "exact", "range": "declared range"}
"""The CSV's ``interval`` column: what the interval is (dpexplorer/release/published.py)."""


def value_rows(
    labels: Sequence[str],
    values: Sequence[float | str],
    intervals: Sequence[Sequence[float] | None] | None,
    kinds: Sequence[str | None] = (),
    *,
    level: float = 0.95,
    integral: Sequence[bool] = (),
    key_columns: Sequence[str] = (),
    groups: Sequence[Sequence[str]] = (),
    part: str = "value",
    rank_within: int | None = None,
) -> Table:
    """Every release's CSV, one shape: ``[key columns...,] label, value, ci_low, ci_high,
    interval`` (and ``rank_within_rows`` for a quantile's rank interval), one row per released
    value, numbers rounded by the one rule (:mod:`dpexplorer.release.presentation`: a value to
    the digits its interval supports, the interval outward). ``interval`` says what the interval
    is ("95 % noise", "exact", "declared range"); a category, ⊥ or an empty group leaves the
    interval cells empty. A statistic by group (``key_columns``, ``groups``): the group's key
    values first, then the part ("mean", "count (noisy)", ...: the end of a label after ": "
    when a group has several values, else ``part``). ``values`` (and ``intervals``) hold the
    groups' values one group after another."""
    from dpexplorer.release.presentation import level_text, show

    header = [*key_columns, "label", "value", "ci_low", "ci_high", "interval"]
    if rank_within is not None:
        header.append("rank_within_rows")
    per = len(values) // len(groups) if groups else 1
    rows = []
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        interval = intervals[i] if intervals is not None else None
        kind = kinds[i] if i < len(kinds) else ("noise" if interval is not None else None)
        shown = show(
            value,
            None if interval is None else (float(interval[0]), float(interval[1])),
            level,
            integral=bool(integral[i]) if i < len(integral) else False,
        )
        words = "" if interval is None else INTERVAL_WORDS.get(kind or "noise", kind or "")
        if words == "noise":
            words = f"{level_text(level)} noise"
        name = label
        keys: list[str] = []
        if groups:
            keys = list(groups[i // per])
            name = label.rsplit(": ", 1)[1] if per > 1 and ": " in label else part
        row: list[Any] = [*keys, name, shown.value, shown.low or "", shown.high or "", words]
        if rank_within is not None:
            row.append(rank_within if interval is not None else "")
        rows.append(row)
    return header, rows


def _table_text(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table[0])
    for row in table[1]:
        writer.writerow([repr(v) if isinstance(v, float) else v for v in row])
    return buffer.getvalue()


def export_release(
    out_dir: str | os.PathLike[str],
    stem: str,
    labels: Sequence[str],
    values: Sequence[float | str],
    provenance: Mapping[str, Any],
    table: Table | None = None,
    intervals: Sequence[Sequence[float] | None] | None = None,
) -> dict[str, Path]:
    """Write the values (CSV, JSON) and the sidecar; returns the three final paths by kind
    (``"csv"``, ``"json"``, ``"provenance"``). On any failure what was written is removed again
    and the error raised (OSError, or :class:`ExportError` for a name that exists). ``table``:
    the CSV (:func:`value_rows`; default: those rows without intervals). The JSON keeps every
    value and interval end at full precision (``ci_low``/``ci_high`` null without one)."""
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    paths = release_paths(directory, stem)
    ends = list(intervals) if intervals is not None else [None] * len(values)
    values_doc = {
        "values": [
            {
                "label": k,
                "value": v,
                "ci_low": None if ci is None else ci[0],
                "ci_high": None if ci is None else ci[1],
            }
            for k, v, ci in zip(labels, values, ends, strict=True)
        ]
    }
    sidecar = {**provenance, "files": {k: p.name for k, p in paths.items() if k != "provenance"}}
    texts = {
        "csv": _table_text(table if table is not None else value_rows(labels, values, None)),
        "json": json.dumps(values_doc, indent=2, allow_nan=False) + "\n",
        "provenance": json.dumps(sidecar, indent=2, sort_keys=True, allow_nan=False) + "\n",
    }
    write_release_files(directory, stem, paths, texts)
    return paths
