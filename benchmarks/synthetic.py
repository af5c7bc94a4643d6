"""Synthetic data over marginals on the bundled Adult (issue 30): the workload error of MST and
AIM against the direct release of every workload marginal and the independent-columns baseline,
all at the same budget, with time and memory.

    python benchmarks/synthetic.py [--json] [--ways 3] [--epsilon 1] [--delta 1e-9] [--seed 0]
                                   [--skip aim,mst]

Workload: every ``ways``-way marginal of the 8 columns of
:func:`dpexplorer.data.marginals.adult_marginals` (age and hours per week in public bins, six
categorical columns with declared categories plus "other"). Error: the mean over the workload
of the total-variation distance between the true marginal and the method's, both normalised.

* ``direct``: every workload marginal measured with Gaussian noise, the budget rho split evenly
  (Delta_2^2 = 1 each), negative counts clipped to 0 before normalising;
* ``independent``: every 1-way marginal measured at rho / 8, the workload marginals taken as
  products of the clipped, normalised noisy 1-way marginals;
* ``mst`` and ``aim``: the mechanisms with their defaults (Private-PGM), synthetic records drawn
  and their marginals compared.

Noise comes from the seeded exploration generator (the law of the exact samplers' up to the
discretisation). Keys: ``aim_workload_tvd``, ``mst_workload_tvd``, ``direct_workload_tvd``,
``independent_workload_tvd``, ``aim_seconds``, ``mst_seconds``, ``peak_rss_mb`` (the process's,
JAX compile caches included), ``rho``, ``ways``, ``workload_marginals``."""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from dpexplorer.core.marginals import MarginalInput, workload_errors
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.mst import rho_for
from dpexplorer.core.synthetic_error import direct_errors, independent_errors
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.load import load_dataset
from dpexplorer.data.marginals import adult_marginals, marginal_input
from dpexplorer.data.queries import Axis, Marginals

REFERENCE_RHO = 0.0117812
"""The reference run's budget (epsilon = 1 under epsilon = rho + 2 sqrt(rho ln 1/delta), delta = 1e-9)."""
REFERENCE_CATEGORICAL = ("workclass", "education", "marital_status", "occupation", "race", "sex", "income")


def reference_marginals(codebook: dict) -> Marginals:
    """Issue 42's setup: age in 10 right-open bins, seven categorical columns with the categories
    the codebook declares (public; missing falls in the catch-all cell), all 3-way marginals."""
    columns = codebook["columns"]
    axes = [Axis("age", edges=(17, 25, 30, 35, 40, 45, 50, 55, 60, 65, 91))]
    axes += [Axis(c, categories=tuple(columns[c]["categories"]["value"])) for c in REFERENCE_CATEGORICAL]
    return Marginals(tuple(axes), ways=3)


def direct(query: MarginalInput, rho: float, rng: np.random.Generator) -> float:
    return float(np.mean(direct_errors(query, rho, rng)))


def independent(query: MarginalInput, rho: float, rng: np.random.Generator) -> float:
    return float(np.mean(independent_errors(query, rho, rng)))


def synthetic(name: str, query: MarginalInput, params: dict[str, float], seed: int) -> tuple[float, float]:
    mechanism = registry.get(name)
    start = time.perf_counter()
    result = mechanism.run(mechanism.validate(params), query, np.random.default_rng(seed))  # type: ignore[attr-defined]
    seconds = time.perf_counter() - start
    return float(np.mean(list(workload_errors(query, result.records).values()))), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--ways", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip", default="", help="comma-separated: aim, mst")
    parser.add_argument("--setup", choices=("default", "reference"), default="default")
    parser.add_argument("--seeds", default="", help="comma-separated seeds (reference setup)")
    args = parser.parse_args()
    if args.setup == "reference":
        reference(args)
        return
    skip = {s for s in args.skip.split(",") if s}
    dataset = load_dataset(default_dataset_path())
    query = marginal_input(dataset, adult_marginals(args.ways), bounding_seed=args.seed)
    rho = rho_for(args.epsilon, args.delta)
    rng = np.random.default_rng(args.seed)
    out: dict[str, float | int | None] = {
        "ways": args.ways,
        "workload_marginals": len(query.workload),
        "rho": rho,
        "direct_workload_tvd": direct(query, rho, rng),
        "independent_workload_tvd": independent(query, rho, rng),
    }
    params = {"epsilon": args.epsilon, "delta": args.delta}
    for name in ("mst", "aim"):
        if name in skip:
            out[f"{name}_workload_tvd"] = out[f"{name}_seconds"] = None
            continue
        error, seconds = synthetic(name, query, params, args.seed)
        out[f"{name}_workload_tvd"], out[f"{name}_seconds"] = error, round(seconds, 1)
        if not args.json:
            print(f"{name}: workload TVD {error:.4f} in {seconds:.1f} s", flush=True)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out, indent=None if args.json else 2))


def epsilon_for(rho: float, delta: float) -> dict[str, float]:
    """The declared (epsilon, delta) whose rho (our conversion, rho_for) is the largest at most
    ``rho`` (bisection; rho_for increases with epsilon)."""
    low, high = 0.0, 10.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if rho_for(mid, delta) <= rho else (low, mid)
    return {"epsilon": low, "delta": delta}


def reference(args: argparse.Namespace) -> None:
    """The reference setup over several seeds at rho = REFERENCE_RHO: medians, per-seed lists,
    the slowest fit of each mechanism and the process's peak memory."""
    import importlib.resources

    codebook = json.loads(
        importlib.resources.files("dpexplorer.resources").joinpath("adult.codebook.json").read_text()
    )
    seeds = [int(s) for s in (args.seeds or str(args.seed)).split(",")]
    skip = {s for s in args.skip.split(",") if s}
    dataset = load_dataset(default_dataset_path())
    out: dict[str, object] = {"setup": "reference", "rho": REFERENCE_RHO, "seeds": seeds}
    for name in ("mst", "aim"):
        if name in skip:
            continue
        errors, times = [], []
        for seed in seeds:
            query = marginal_input(dataset, reference_marginals(codebook), bounding_seed=seed)
            error, seconds = synthetic(name, query, epsilon_for(REFERENCE_RHO, args.delta), seed)
            errors.append(error)
            times.append(round(seconds, 1))
        out[f"{name}_workload_tvd"], out[f"{name}_seconds"] = errors, times
        out[f"{name}_workload_tvd_median"] = float(np.median(errors))
        out[f"{name}_seconds_max"] = max(times)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
