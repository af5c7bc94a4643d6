"""MWEM: calibration, the selection step against the exponential mechanism, accuracy in the
low-noise limit, and that it handles a universe BLR refuses."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from dpexplorer.core.cancel import CancelToken
from dpexplorer.core.errors import CancelledError, DPExplorerError
from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.blr import BLR
from dpexplorer.core.mechanisms.mwem import MWEM, mwem_scales

MECH = MWEM()


def workload_input(
    k: int = 60, n_cells: int = 32, n: int = 4000, seed: int = 0, relation: str = "add_remove"
) -> WorkloadInput:
    rng = np.random.default_rng(seed)
    hist = rng.multinomial(n, rng.dirichlet(np.full(n_cells, 0.5)))
    workload = (rng.random((k, n_cells)) < 0.3).astype(np.int8)
    labels = tuple(map(str, range(n_cells)))
    return WorkloadInput(labels, tuple(f"q{i}" for i in range(k)), hist, hist, workload, n, relation=relation)


def test_scales_compose_to_epsilon() -> None:
    sigma, laplace_scale = mwem_scales(1.0, 5, 1000)
    # 2T mechanisms, each at epsilon/(2T) = 0.1: EM sigma = 2 Delta / 0.1, Laplace Delta / 0.1
    assert sigma == pytest.approx(2 / 1000 / 0.1)
    assert laplace_scale == pytest.approx(1 / 1000 / 0.1)


def test_low_noise_fits_the_workload() -> None:
    query = workload_input(n=10**7)
    result = MECH.run(MECH.validate({"epsilon": 10.0, "rounds": 60}), query, np.random.default_rng(1))
    uniform_error = np.abs(query.workload @ np.full(32, 1 / 32) - result.true_answers).max()
    assert result.max_error < 0.5 * uniform_error
    assert result.synthetic_distribution.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(result.query_errors, np.abs(result.synthetic_answers - result.true_answers))


def test_first_selection_follows_exponential_mechanism() -> None:
    """Round 1 starts from the uniform distribution, so its selection pmf is the softmax of
    |q(uniform) - q(x)| / sigma: compare the empirical frequency of the first choice."""
    query = workload_input(k=5, n=200, relation="replace")  # n public: no share for the row count
    params = MECH.validate({"epsilon": 2.0, "rounds": 1})
    sigma, _ = mwem_scales(2.0, 1, 200)
    truth = query.workload @ query.histogram_d / 200
    scores = np.abs(query.workload @ np.full(32, 1 / 32) - truth)
    pmf = np.exp(scores / sigma) / np.exp(scores / sigma).sum()
    rng = np.random.default_rng(5)
    firsts = np.array([MECH.run(params, query, rng).selected[0] for _ in range(3000)])
    observed = np.bincount(firsts, minlength=5) / 3000
    np.testing.assert_allclose(observed, pmf, atol=4 * np.sqrt(0.25 / 3000))


def test_handles_what_blr_refuses() -> None:
    rng = np.random.default_rng(2)
    n_cells, k = 1 << 12, 200
    workload = sparse.csr_matrix((rng.random((k, n_cells)) < 0.1).astype(float))
    hist = rng.multinomial(20_000, rng.dirichlet(np.full(n_cells, 0.1)))
    query = WorkloadInput(
        tuple(map(str, range(n_cells))), tuple(map(str, range(k))), hist, hist, workload, 20_000
    )
    with pytest.raises(DPExplorerError, match="MWEM"):
        blr = BLR()
        blr.run(blr.validate({"m": 20}), query, rng)
    result = MECH.run(MECH.validate({"epsilon": 1.0, "rounds": 20}), query, rng)
    assert result.max_error < 0.2


def test_views_and_cancel() -> None:
    query = workload_input(k=10, n_cells=8)
    params = MECH.validate({"rounds": 3})
    assert "Monte Carlo" in MECH.output_distribution(params, query).note
    assert MECH.accuracy(params, query).error_tail.kind == "monte_carlo"
    token = CancelToken()
    token.cancel()
    with pytest.raises(CancelledError):
        MECH.run(params, query, np.random.default_rng(0), cancel=token)
