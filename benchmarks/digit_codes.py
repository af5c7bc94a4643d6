"""A count release on a Parquet file whose text column holds digit codes, against the floor
(issue 41, "types that do not lie").

    python benchmarks/digit_codes.py --json [--rows 10000000] [--repeat 5] [--dir DIR] [--reuse]
                                     [--before DIR]

Writes a Parquet file of ``rows`` rows: ``zip``, a text column of five-digit codes with their
leading zeros (``"02139"``), ``code``, group codes ``"0"`` .. ``"49"`` as text, and ``value``, a
float. Checks, in a fresh process, that the loader reads both text columns as text (a category
``"02139"`` stays ``"02139"``: before issue 41 the numeric-share rule made them floats), then
runs interleaved, ``--repeat`` times each, :mod:`release_scale`'s children: a fresh
``python -m dpexplorer release`` of the row count (Laplace, a fresh ledger) and the floor, a
fresh ``python`` reading the whole file with polars. ``--before DIR`` releases from the package
in DIR too (``git archive REV | tar -x -C DIR``). Keys: ``count_ratio`` (ours over the floor,
medians; target <= 2), ``peak_rss_mb``, ``text_columns`` (the loader's types: both ``String``)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from release_scale import HERE, LAST_CPU, _peak, child_env, floor, ours


def write_codes(directory: Path, rows: int, reuse: bool = False) -> Path:
    """The Parquet file of digit codes (kept when ``reuse`` and it exists)."""
    import polars as pl

    path = directory / f"codes{rows}.parquet"
    if reuse and path.is_file() and path.stat().st_size:
        return path
    index = pl.int_range(0, rows, eager=True)
    frame = pl.DataFrame(
        {
            "zip": (index * 7919 % 99_999).cast(pl.String).str.zfill(5),
            "code": (index % 50).cast(pl.String),
            "value": (index % 1000).cast(pl.Float64) / 10,
        }
    )
    frame.write_parquet(path)
    return path


def loaded_types(path: Path, tree: Path) -> dict[str, object]:
    """The loader's types of the text columns and the count of ``zip == "02139"``, in a child."""
    code = (
        "import json\n"
        "from dpexplorer.data.load import load_dataset\n"
        "from dpexplorer.data.answers import true_answer\n"
        "from dpexplorer.data.queries import PredicateCount, where\n"
        f"ds = load_dataset({str(path)!r})\n"
        "print(json.dumps({'zip': str(ds.schema['zip']), 'code': str(ds.schema['code']),\n"
        "    'first_zip': ds.preview(3)['zip'].cast(str).to_list(),\n"
        "    'zip_02139': float(true_answer(ds, PredicateCount(where('zip') == '02139')))}))"
    )
    return json.loads(_peak([sys.executable, "-c", code], tree)[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir")
    parser.add_argument("--reuse", action="store_true", help="keep the data file already in --dir")
    parser.add_argument("--before", metavar="DIR", help="also release from the package in DIR, interleaved")
    args = parser.parse_args()
    trees = {"ours": HERE, **({"before": Path(args.before).resolve()} if args.before else {})}
    directory = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="digit_codes"))
    directory.mkdir(parents=True, exist_ok=True)
    child_env(directory, compiling=False)
    path = write_codes(directory, args.rows, args.reuse)
    results: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": args.rows,
        "repeat": args.repeat,
        "command": " ".join(["python", *sys.argv]),
        "load_average_start": os.getloadavg(),
        "text_columns": {side: loaded_types(path, tree) for side, tree in trees.items()},
    }
    for tree in trees.values():  # warm-up: the bytecode cache filled, the file in the page cache
        ours(path, "count", directory, tree)
    times: dict[str, list[float]] = {}
    peaks: dict[str, float] = {}
    for _ in range(args.repeat):
        for side, tree in trees.items():
            wall, rss = ours(path, "count", directory, tree)
            times.setdefault(side, []).append(wall)
            times.setdefault(f"cpu_{side}", []).append(LAST_CPU[0])
            peaks[side] = max(peaks.get(side, 0.0), rss)
        wall, rss = floor(path, "parquet", "count")
        times.setdefault("floor", []).append(wall)
        times.setdefault("cpu_floor", []).append(LAST_CPU[0])
        peaks["floor"] = max(peaks.get("floor", 0.0), rss)
    med = {k: statistics.median(v) for k, v in times.items()}
    results.update(
        median_s=med,
        runs_s=times,
        count_ratio=med["ours"] / med["floor"],
        cpu_ratio=med["cpu_ours"] / med["cpu_floor"],
        peak_rss_mb=peaks,
        load_average_end=os.getloadavg(),
    )
    if args.before:
        results.update(before_ratio=med["before"] / med["floor"])
        results.update(after_over_before=med["ours"] / med["before"])
    print(json.dumps(results, indent=2) if args.json else results)


if __name__ == "__main__":
    main()
