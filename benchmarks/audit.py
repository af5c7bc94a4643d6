"""The audit button's time (issue 21): the auditor at the default sample size (1,000,000
simulated outputs per side, 95 % confidence) on the Laplace mechanism at ε = 1 over Adult's row
count, as the button runs it (chunked, with progress callbacks), median of 5 seeded runs, with
the measured lower bound of each. Also a Gaussian at ε = 1, δ = 1e-5 on Adult's age sum.

    python benchmarks/audit.py --json"""

from __future__ import annotations

import argparse
import json
import statistics

from dpexplorer.core.mechanisms import registry
from dpexplorer.data.answers import query_input
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.gui.views.audit_panel import DEFAULT_DRAWS, run_audit

RUNS = 5
CASES = {
    "laplace eps=1, count": ("laplace", {"epsilon": 1.0}, {"type": "count"}),
    "gaussian eps=1 delta=1e-5, sum of age": (
        "gaussian",
        {"epsilon": 1.0, "delta": 1e-5},
        {"type": "sum", "column": "age", "lower": 17, "upper": 90},
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dataset = load_dataset(default_dataset_path())
    out: dict[str, object] = {"n_draws_per_side": DEFAULT_DRAWS, "runs": RUNS}
    for name, (mechanism, params, query) in CASES.items():
        built = query_input(dataset, query_from_dict(query), "add_remove")
        reports = [
            run_audit(registry.get(mechanism), params, built, seed=seed, progress=lambda _f: None)
            for seed in range(RUNS)
        ]
        out[name] = {
            "seconds_median": round(statistics.median(r.seconds for r in reports), 3),
            "seconds_max": round(max(r.seconds for r in reports), 3),
            "epsilon_lb": [round(r.result.epsilon_lb, 4) for r in reports],
            "claimed_epsilon": reports[0].claimed_epsilon,
        }
    print(json.dumps(out, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
