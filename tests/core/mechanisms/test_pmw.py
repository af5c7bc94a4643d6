"""PMW: the transcript replayed independently, the noise calibration, bottom after L updates,
sparse and dense workloads, cancellation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from dpexplorer.core.cancel import CancelToken
from dpexplorer.core.errors import CancelledError, NotApplicableError
from dpexplorer.core.mechanisms.base import WorkloadInput
from dpexplorer.core.mechanisms.pmw import LAZY, PMW, UPDATE, noise_scales, suggested_updates
from dpexplorer.core.mechanisms.sparse_vector import BOTTOM

MECH = PMW()


def workload_input(k: int = 300, n_cells: int = 64, n: int = 5000, seed: int = 0) -> WorkloadInput:
    rng = np.random.default_rng(seed)
    hist = rng.multinomial(n, rng.dirichlet(np.full(n_cells, 0.3)))
    hist_dp = hist.copy()
    hist_dp[int(np.argmax(hist))] -= 1
    workload = (rng.random((k, n_cells)) < 0.3).astype(np.int8)
    return WorkloadInput(
        tuple(map(str, range(n_cells))), tuple(f"q{i}" for i in range(k)), hist, hist_dp, workload, n
    )


def replay(query: WorkloadInput, transcript, eta: float) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The public distribution before each query, rebuilt from the transcript alone (the
    multiplicative-weights update of seed 004), as the answers a lazy round must give."""
    n_cells = query.workload.shape[1]
    dist = np.full(n_cells, 1.0 / n_cells)
    lazy_answers = np.empty(len(transcript.kinds))
    for i, kind in enumerate(transcript.kinds):
        row = query.workload[i].astype(float)
        lazy_answers[i] = row @ dist
        if kind == UPDATE:
            sign = 1.0 if transcript.answers[i] > row @ dist else -1.0
            dist = dist * np.exp(sign * eta * row)
            dist /= dist.sum()
    return lazy_answers


def test_transcript_is_consistent_with_public_distribution() -> None:
    query = workload_input()
    params = MECH.validate({"epsilon": 1.0, "threshold": 0.05, "updates": 15})
    transcript = MECH.run(params, query, np.random.default_rng(1))
    lazy_expected = replay(query, transcript, 0.05 / 4)
    lazy = np.array([k == LAZY for k in transcript.kinds])
    np.testing.assert_allclose(transcript.answers[lazy], lazy_expected[lazy], rtol=1e-10)
    truth = query.workload @ query.histogram_d / query.histogram_d.sum()
    np.testing.assert_allclose(transcript.true_answers, truth)
    answered = ~np.isnan(transcript.answers)
    np.testing.assert_allclose(transcript.errors[answered], np.abs(transcript.answers - truth)[answered])
    updates = np.array([k == UPDATE for k in transcript.kinds])
    np.testing.assert_array_equal(transcript.updates_used, np.cumsum(updates))


def test_bottom_after_l_updates() -> None:
    query = workload_input()
    params = MECH.validate({"epsilon": 1.0, "threshold": 0.001, "updates": 5})  # every test fails
    transcript = MECH.run(params, query, np.random.default_rng(2))
    kinds = np.array(transcript.kinds)
    last_update = np.flatnonzero(kinds == UPDATE)[-1]
    assert (kinds == UPDATE).sum() == 5
    assert set(kinds[last_update + 1 :]) == {BOTTOM}
    assert np.isnan(transcript.answers[kinds == BOTTOM]).all()


def test_low_noise_lazy_answers_are_accurate() -> None:
    """With a large epsilon the noise is negligible: a lazy answer is within the threshold plus
    a few noise scales, an update happens only where the public answer was off."""
    query = workload_input(n=10**6)
    params = MECH.validate({"epsilon": 10.0, "threshold": 0.05, "updates": 50})
    transcript = MECH.run(params, query, np.random.default_rng(3))
    rho, nu, _ = noise_scales(params, query.n, query.relation)
    slack = 20 * (rho + nu)
    lazy = np.array([k == LAZY for k in transcript.kinds])
    assert np.all(transcript.errors[lazy] <= 0.05 + slack)
    public = replay(query, transcript, 0.05 / 4)
    updates = np.array([k == UPDATE for k in transcript.kinds])
    assert np.all(np.abs(public - transcript.true_answers)[updates] >= 0.05 - slack)


def test_noise_calibration_numeric_sparse() -> None:
    """Dwork & Roth 2014, Algorithm 3 with c = L: eps1 = 8 eps/9, eps2 = 2 eps/9,
    sigma = 2 L Delta / eps1 (threshold), 2 sigma (tests), L Delta / eps2 (answers)."""
    rho, nu, answer = noise_scales({"epsilon": 0.9, "updates": 10}, 1000, "replace")
    assert rho == pytest.approx(2 * 10 / 1000 / 0.8)
    assert nu == pytest.approx(2 * rho)
    assert answer == pytest.approx(10 / 1000 / 0.2)


def test_noise_calibration_leaves_the_row_count_its_share_under_add_remove() -> None:
    """n is private under add/remove: 10% of epsilon = 1 buys the noisy row count, the tests and
    answers share the remaining 0.9 as above (basic composition)."""
    rho, _nu, answer = noise_scales({"epsilon": 1.0, "updates": 10, "count_share": 0.1}, 1000, "add_remove")
    assert rho == pytest.approx(2 * 10 / 1000 / 0.8)
    assert answer == pytest.approx(10 / 1000 / 0.2)


def test_sparse_and_dense_workloads_agree() -> None:
    query = workload_input()
    as_sparse = WorkloadInput(
        query.cell_labels,
        query.query_labels,
        query.histogram_d,
        query.histogram_d_prime,
        sparse.csr_matrix(query.workload),
        query.n,
    )
    params = MECH.validate({"epsilon": 1.0, "threshold": 0.05, "updates": 15})
    dense_run = MECH.run(params, query, np.random.default_rng(4))
    sparse_run = MECH.run(params, as_sparse, np.random.default_rng(4))
    assert dense_run.kinds == sparse_run.kinds
    np.testing.assert_allclose(dense_run.answers, sparse_run.answers, rtol=1e-10)


def test_views_and_guarantee() -> None:
    query = workload_input(k=40, n_cells=16)
    params = MECH.validate({"epsilon": 1.0, "threshold": 0.05, "updates": 5})
    out = MECH.output_distribution(params, query)
    assert "Monte Carlo" in out.note
    assert MECH.epsilon_delta(params, query) == (1.0, 0.0)
    report = MECH.accuracy(params, query)
    assert report.error_tail.kind == "monte_carlo"
    with pytest.raises(NotApplicableError):
        MECH.delta_at(params, query, 1.0)
    assert suggested_updates(16, 0.5) == int(np.ceil(16 * np.log(16) / 0.25))


def test_cancel() -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(CancelledError):
        MECH.run(MECH.validate({}), workload_input(), np.random.default_rng(0), cancel=token)
