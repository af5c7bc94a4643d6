"""A group-by mean with privately selected keys released through the CLI (issue 16's acceptance).

    python benchmarks/private_keys.py [--json] [--persons 100000] [--groups 50] [--keep DIR]

Writes a CSV of ``persons`` persons with 1 to 20 rows each (uniform; about 1.05M rows for 100k
persons), each row in one of ``groups`` groups drawn with weights proportional to 1/(g+1)^3 (a
long tail: the rarest groups have a handful of rows, so the threshold drops some), and a value
normal(50, 20). Then runs ``dpexplorer release PLAN --data FILE`` with a mean of ``value``
clipped to [0, 100] by privately selected ``group`` keys (epsilon 0.5, delta 1e-6 for the keys;
epsilon 1 for the means), at most 2 groups per person and 3 rows per group, and checks what the
steward would: every released mean inside [0, 100], only kept keys in the CSV.

Printed: rows, persons, wall seconds of the CLI, the threshold and the delta, the groups kept
(out of the candidates, which the generator knows; the release never says), and the check."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def write_data(path: Path, persons: int, groups: int, seed: int = 0) -> int:
    import polars as pl

    rng = np.random.default_rng(seed)
    per_person = rng.integers(1, 21, persons)
    person = np.repeat(np.arange(persons), per_person)
    weights = 1.0 / (np.arange(groups) + 1.0) ** 3
    group = rng.choice(groups, person.size, p=weights / weights.sum())
    pl.DataFrame(
        {
            "person": np.char.add("p", person.astype(str)),
            "group": np.char.add("g", group.astype(str)),
            "value": np.round(rng.normal(50.0, 20.0, person.size), 2),
        }
    ).write_csv(path)
    return int(person.size)


PLAN = [
    {
        "query": {
            "type": "group_by",
            "keys": [],
            "private_keys": {"columns": ["group"], "epsilon": 0.5, "delta": 1e-6},
            "statistic": "mean",
            "column": "value",
            "lower": 0,
            "upper": 100,
            "unit": {"column": "person", "max_groups": 2, "max_rows": 3},
        },
        "mechanism": "noisy_mean",
        "parameters": {"epsilon": 1.0},
    }
]


def run(folder: Path, persons: int, groups: int) -> dict[str, object]:
    import polars as pl

    data, plan, out = folder / "visits.csv", folder / "plan.json", folder / "released"
    rows = write_data(data, persons, groups)
    plan.write_text(json.dumps(PLAN))
    command = [sys.executable, "-m", "dpexplorer.cli", "release", str(plan), "--data", str(data)]
    command += ["--out", str(out), "--ledger", str(folder / "ledger.sqlite")]
    command += ["--budget-epsilon", "2", "--budget-delta", "1e-5"]
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    (provenance,) = out.glob("*.provenance.json")
    sidecar = json.loads(provenance.read_text())
    (csv,) = out.glob("*.csv")
    means = pl.read_csv(csv)["mean"].to_list()  # one row per kept group
    selection = sidecar["discretisation"]["keys_selection"]
    return {
        "rows": rows,
        "persons": persons,
        "groups_in_data": groups,
        "cli_seconds": seconds,
        "threshold": selection["threshold"],
        "delta_exact": selection["delta_exact"],
        "epsilon_charged": sidecar["epsilon"],
        "delta_charged": sidecar["delta"],
        "groups_kept": len(sidecar["dp_outputs"]["kept_keys"]),
        "means_released": len(means),
        "all_means_in_range": all(0 <= m <= 100 for m in means),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--persons", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=50)
    parser.add_argument("--keep", metavar="DIR", help="write the files to DIR and keep them")
    args = parser.parse_args()
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        result = run(Path(args.keep), args.persons, args.groups)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result = run(Path(tmp), args.persons, args.groups)
    print(json.dumps(result) if args.json else "\n".join(f"{k}: {v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
