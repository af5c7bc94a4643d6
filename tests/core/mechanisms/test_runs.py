"""The run view's contract written once (core/mechanisms/runs.py): the Monte-Carlo views draw
the very run the run view shows, a run's seconds are stamped, and the mechanisms without an
exact output law refuse delta_at naming their proven guarantee."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.marginals import MarginalInput, candidate_cliques, record_marginal
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.mst import workload_tvd
from dpexplorer.core.mechanisms.runs import RunMechanism


def _workload() -> WorkloadInput:
    rng = np.random.default_rng(0)
    hist = rng.multinomial(400, rng.dirichlet(np.full(8, 0.5)))
    workload = (rng.random((12, 8)) < 0.3).astype(np.int8)
    labels = tuple(map(str, range(8)))
    return WorkloadInput(labels, tuple(f"q{i}" for i in range(12)), hist, hist, workload, 400)


def _marginals() -> MarginalInput:
    rng = np.random.default_rng(0)
    records = np.stack([rng.integers(0, 3, 300), rng.integers(0, 2, 300), rng.integers(0, 2, 300)], axis=1)
    sizes, chosen = (3, 2, 2), tuple(itertools.combinations(range(3), 2))
    marginals = {c: record_marginal(records, sizes, c).astype(np.int64) for c in candidate_cliques(3, chosen)}
    labels = tuple(tuple(str(k) for k in range(s)) for s in sizes)
    return MarginalInput(("a", "b", "c"), labels, chosen, marginals, 300, 1, 1)


def _runner(name: str) -> RunMechanism[Any]:
    mechanism = registry.get(name)
    assert isinstance(mechanism, RunMechanism), f"{name} has a run view: it is a RunMechanism"
    return mechanism


def test_every_mechanism_with_a_run_view_shares_the_contract() -> None:
    for name in ("blr", "pmw", "mwem", "mst", "aim"):
        _runner(name)


@pytest.mark.parametrize(
    ("name", "values"),
    [("pmw", {"epsilon": 1.0, "threshold": 0.05, "updates": 4}), ("mwem", {"epsilon": 1.0, "rounds": 3})],
)
def test_a_simulated_run_is_the_run_the_run_view_shows(name: str, values: dict[str, float]) -> None:
    """With the same seed, simulate's one draw on D is the max error of run's result: the
    accuracy and output-law views are Monte Carlo over exactly the runs ``run`` makes."""
    mechanism, query = _runner(name), _workload()
    params = mechanism.validate(values)
    for seed in range(5):
        result = mechanism.run(params, query, np.random.default_rng(seed))
        drawn = mechanism.simulate(params, query, np.random.default_rng(seed), 1, "D")
        assert drawn[0] == result.max_error
        assert result.seconds > 0


def test_a_simulated_marginal_run_is_the_run_the_run_view_shows() -> None:
    mst, query = _runner("mst"), _marginals()
    params = mst.validate({"epsilon": 1.0, "delta": 1e-9, "estimator": "dense", "iterations": 20})
    result = mst.run(params, query, np.random.default_rng(3))
    assert mst.simulate(params, query, np.random.default_rng(3), 1)[0] == workload_tvd(query, result)
    assert result.seconds > 0


@pytest.mark.parametrize(
    ("name", "guarantee"),
    [("pmw", "pure ε = 0.5 (Dwork & Roth 2014, Theorem 3.28)"), ("mwem", "pure ε = 0.5 (basic composition")],
)
def test_refusals_name_the_proven_guarantee(name: str, guarantee: str) -> None:
    mechanism = registry.get(name)
    with pytest.raises(NotApplicableError, match="no exact privacy profile") as refused:
        mechanism.delta_at(mechanism.validate({"epsilon": 0.5}), _workload(), 0.5)
    assert guarantee in str(refused.value)
    mst = registry.get("mst")
    params = mst.validate({"epsilon": 1.0, "delta": 1e-9})
    with pytest.raises(NotApplicableError, match=r"proven ρ-zCDP, ρ = "):
        mst.delta_at(params, _marginals(), 1.0)
