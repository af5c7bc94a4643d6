"""MST and AIM (issue 30): their privacy accounting, the selection's sensitivity against brute
force, and the utility of the synthetic data on small seeded data (dense estimator: no JAX
compile; the Private-PGM path is one slow test)."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
import pytest

from dpexplorer.core.accounting.single import zcdp_to_epsilon
from dpexplorer.core.marginals import (
    Clique,
    MarginalInput,
    SeededSteps,
    candidate_cliques,
    em_cost,
    l1_distance,
    record_marginal,
    tvd,
)
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.aim import weights
from dpexplorer.core.mechanisms.mst import rho_for

SIZES = (3, 4, 2, 3)
COLUMNS = ("a", "b", "c", "e")


def _data(n: int, seed: int = 0) -> np.ndarray:
    """Correlated columns: b depends on a, e on c."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = rng.integers(0, 2, n)
    e = np.where(rng.random(n) < 0.8, c, rng.integers(0, 3, n))
    return np.stack([a, b, c, e], axis=1)


def _input(
    records: np.ndarray, workload: Sequence[Clique] | None = None, l1: int = 1, l2sq: int = 1
) -> MarginalInput:
    chosen = tuple(workload) if workload is not None else tuple(itertools.combinations(range(4), 2))
    marginals = {}
    for clique in candidate_cliques(4, chosen):
        marginals[clique] = record_marginal(records, SIZES, clique).astype(np.int64)
    labels = tuple(tuple(str(k) for k in range(s)) for s in SIZES)
    return MarginalInput(COLUMNS, labels, chosen, marginals, len(records), l1, l2sq)


class Recording:
    """SeededSteps that records every private step's parameters (for an independent account)."""

    def __init__(self, seed: int) -> None:
        self.inner = SeededSteps(np.random.default_rng(seed))
        self.selections: list[tuple[Fraction, Fraction, int]] = []
        self.measurements: list[tuple[Fraction, int]] = []

    def select(self, scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction) -> int:
        self.selections.append((epsilon, sensitivity, len(scores)))
        return self.inner.select(scores, epsilon, sensitivity)

    def measure(self, counts: np.ndarray, sigma2: Fraction) -> np.ndarray:
        self.measurements.append((sigma2, len(counts)))
        return self.inner.measure(counts, sigma2)


def test_rho_for_is_the_largest_rho_within_the_declared_epsilon() -> None:
    for epsilon, delta in ((1.0, 1e-9), (0.1, 1e-6), (5.0, 1e-5)):
        rho = rho_for(epsilon, delta)
        assert zcdp_to_epsilon(rho, delta) <= epsilon
        assert zcdp_to_epsilon(rho * (1 + 1e-6), delta) > epsilon


@pytest.mark.parametrize("name", ["mst", "aim"])
@pytest.mark.parametrize(("l1", "l2sq"), [(1, 1), (3, 9)])
def test_the_zcdp_spent_is_the_declared_budget(name: str, l1: int, l2sq: int) -> None:
    """An independent account of every step the run took (eps^2/8 per selection, Delta_2^2 /
    (2 sigma^2) per measurement) equals the run's own, is at most rho and spends it all (to
    the rounding of epsilon, 2^-40); every selection is calibrated to its score's sensitivity:
    Delta_1 for MST, Delta_1 max_r w_r for AIM."""
    mechanism = registry.get(name)
    params = mechanism.validate({"epsilon": 1.0, "delta": 1e-9, "estimator": "dense", "iterations": 50})
    query = _input(_data(1500), l1=l1, l2sq=l2sq)
    rho = Fraction(mechanism.rho(params))  # type: ignore[attr-defined]
    steps = Recording(3)
    transcript = mechanism.steps(params, query, steps)  # type: ignore[attr-defined]
    spent = sum(em_cost(eps) for eps, _, _ in steps.selections) + sum(
        Fraction(l2sq) / (2 * sigma2) for sigma2, _ in steps.measurements
    )
    assert spent == transcript.rho_spent
    assert spent <= rho
    assert float(spent) == pytest.approx(float(rho), rel=1e-9)
    assert float(mechanism.guarantee(params, query).rho) == float(rho)
    if name == "mst":
        assert len(steps.measurements) == 2 * len(COLUMNS) - 1
        assert [s for _, s, _ in steps.selections] == [l1] * (len(COLUMNS) - 1)
        assert [k for _, _, k in steps.selections] == [6, 5, 4]  # pairs across components
    else:
        w = weights(query.workload)
        assert all(s == l1 * max(w.values()) for _, s, _ in steps.selections)
        assert len(steps.selections) == len(transcript.rounds) >= 2


def test_aim_refuses_fewer_planned_rounds_than_columns() -> None:
    from dpexplorer.core.errors import InvalidParameterError

    aim = registry.get("aim")
    params = aim.validate({"rounds": 3, "estimator": "dense"})
    with pytest.raises(InvalidParameterError, match="at least 4"):
        aim.steps(params, _input(_data(100)), Recording(0))  # type: ignore[attr-defined]


def _neighbours(records: np.ndarray) -> list[np.ndarray]:
    """D plus any one record of the domain, and D minus each distinct record."""
    out = [np.vstack([records, np.array(cell)]) for cell in itertools.product(*(range(s) for s in SIZES))]
    for row in np.unique(records, axis=0):
        k = int(np.flatnonzero((records == row).all(axis=1))[0])
        out.append(np.delete(records, k, axis=0))
    return out


def test_the_selection_score_sensitivity_against_brute_force() -> None:
    """AIM's score w_r (||M_r(D) - m_r||_1 - b) and MST's ||M_r(D) - m_r||_1, computed exactly
    by l1_distance with a fixed public model, move by at most the declared sensitivity (w_r for
    one added or removed row) over EVERY neighbour of a tiny dataset, and reach it."""
    records = _data(12, seed=5)
    rng = np.random.default_rng(1)
    w = weights(tuple(itertools.combinations(range(4), 2)))
    models = {r: rng.uniform(0, 3, math.prod(SIZES[i] for i in r)) for r in w}
    bias = Fraction(0.37)

    def scores(data: np.ndarray) -> dict[Clique, Fraction]:
        return {
            r: w[r] * (l1_distance(record_marginal(data, SIZES, r).astype(np.int64), models[r]) - bias)
            for r in w
        }

    base = scores(records)
    moved = {r: Fraction(0) for r in w}
    for other in _neighbours(records):
        for r, value in scores(other).items():
            moved[r] = max(moved[r], abs(value - base[r]))
    for r in w:
        assert moved[r] <= w[r], r
    assert max(moved.values()) == max(w.values())


def _tolerance(query: MarginalInput, clique: Clique, sigma2: Fraction, cells_total: int, rows: int) -> float:
    """An upper bound of ||synthetic - true||_1 on a measured marginal. The fit minimises the
    weighted squared loss L(p) = sum_m ||A_m p - y_m||^2 / sigma_m^2 and the truth is feasible, so
    ||A(p_hat - p*)||_w <= 2 ||z||_w with ||z||_w^2 ~ chi^2 over all measured cells (at most 2x
    its mean with overwhelming probability here); one marginal's share gives
    ||err_m||_2 <= 2 sigma_m sqrt(2 C), C the measured cells; l1 <= sqrt(cells) l2. Records add
    a multinomial error with E l1 <= sqrt(cells rows), taken 4x."""
    cells = query.size(clique)
    fit = math.sqrt(cells) * 2 * math.sqrt(float(sigma2)) * math.sqrt(2 * cells_total)
    return fit + 4 * math.sqrt(cells * rows)


@pytest.mark.parametrize("name", ["mst", "aim"])
def test_synthetic_marginals_are_close_to_the_true_ones(name: str) -> None:
    """Seeded: every marginal the run measured is reproduced by the synthetic records within the
    noise-derived tolerance above (a model that ignored a measurement, or noise 10x too wide,
    fails it); and the workload error beats the independent-columns baseline on correlated data."""
    mechanism = registry.get(name)
    params = mechanism.validate({"epsilon": 2.0, "delta": 1e-9, "estimator": "dense", "iterations": 800})
    records = _data(20_000, seed=2)
    query = _input(records)
    result = mechanism.run(params, query, np.random.default_rng(11))  # type: ignore[attr-defined]
    measurements = result.transcript.measurements
    cells_total = sum(len(m.values) for m in measurements)
    scale = len(records) / len(result.records)
    for m in measurements:
        synthetic = record_marginal(result.records, SIZES, m.clique) * scale
        error = float(np.abs(synthetic - query.counts(m.clique)).sum())
        assert error <= _tolerance(query, m.clique, m.sigma2, cells_total, len(result.records)), m.clique
    independent = {
        r: np.outer(query.counts((r[0],)), query.counts((r[1],))).ravel() / len(records)
        for r in query.workload
    }
    baseline = np.mean([tvd(query.counts(r), independent[r]) for r in query.workload])
    synthetic_error = np.mean(
        [tvd(query.counts(r), record_marginal(result.records, SIZES, r)) for r in query.workload]
    )
    assert synthetic_error < baseline


@pytest.mark.slow
def test_private_pgm_fits_and_samples_the_same_way() -> None:
    """The Private-PGM estimator (JAX compile: seconds) on MST's measurements: the records'
    measured marginals within the same tolerance; the model's marginals read from the calibrated
    junction tree (numpy, across tree nodes too) equal mbi's own variable elimination."""
    mst = registry.get("mst")
    params = mst.validate({"epsilon": 2.0, "estimator": "pgm", "iterations": 300})
    records = _data(20_000, seed=2)
    query = _input(records)
    result = mst.run(params, query, np.random.default_rng(11))  # type: ignore[attr-defined]
    measurements = result.transcript.measurements
    cells_total = sum(len(m.values) for m in measurements)
    scale = len(records) / len(result.records)
    for m in measurements:
        synthetic = record_marginal(result.records, SIZES, m.clique) * scale
        error = float(np.abs(synthetic - query.counts(m.clique)).sum())
        assert error <= _tolerance(query, m.clique, m.sigma2, cells_total, len(result.records)), m.clique
    model = result.model
    for clique in [(0, 2), (1, 3), (0, 1, 2), (1, 2, 3)]:
        theirs = model.model.project(tuple(COLUMNS[i] for i in clique))  # type: ignore[attr-defined]
        expected = np.asarray(theirs.datavector(flatten=True))
        np.testing.assert_allclose(model.project(clique), expected, rtol=1e-9, atol=1e-9)
    # a forest (the one-way marginals and one pair): columns in different trees are independent
    from dpexplorer.core.marginals import fit_pgm

    forest = fit_pgm(query.columns, query.sizes, measurements[:5], 100)
    assert len(list(forest.calibrated()[0].edges)) == 0
    for clique in [(0, 2), (1, 3), (0, 1, 2)]:
        theirs = forest.model.project(tuple(COLUMNS[i] for i in clique))
        np.testing.assert_allclose(
            forest.project(clique), np.asarray(theirs.datavector()), rtol=1e-9, atol=1e-9
        )


def test_importing_the_mechanisms_does_not_import_jax_or_mbi() -> None:
    code = (
        "import sys, dpexplorer.core.mechanisms\n"
        "from dpexplorer.core.mechanisms import registry\n"
        "registry.all_mechanisms()\n"
        "import dpexplorer.release.plans, dpexplorer.data.answers, dpexplorer.release.synthetic_tables\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'mbi')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_a_private_pgm_fit_stops_at_its_next_checkpoint_after_cancel(monkeypatch: pytest.MonkeyPatch) -> None:
    """After the structure's first (compiling, uncancellable) fit, a long fit is cancelled through
    mbi's callback (every 50 steps): it raises CancelledError at the first callback after the
    token is set (counted), never running on. How soon that is in seconds:
    benchmarks/cancel_latency.py."""
    import threading

    from dpexplorer.core import marginals
    from dpexplorer.core.cancel import CancelToken
    from dpexplorer.core.errors import CancelledError
    from dpexplorer.core.marginals import fit_pgm

    query = _input(_data(2000))
    transcript = registry.get("mst").steps(  # type: ignore[attr-defined]
        registry.get("mst").validate({}), query, Recording(1)
    )
    fit_pgm(query.columns, query.sizes, transcript.measurements, 50)  # compiles
    token, outcome, fitting = CancelToken(), {}, threading.Event()
    checks = {"before": 0, "after": 0}
    real_checkpoint = marginals.checkpoint

    def counted(cancel: CancelToken | None, *args: object) -> None:
        checks["after" if token.cancelled else "before"] += 1
        if checks["before"] >= 2:
            fitting.set()
        real_checkpoint(cancel, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(marginals, "checkpoint", counted)

    def long_fit() -> None:
        try:
            fit_pgm(query.columns, query.sizes, transcript.measurements, 10_000_000, cancel=token)
        except CancelledError:
            outcome["stopped"] = True

    worker = threading.Thread(target=long_fit)
    worker.start()
    assert fitting.wait(120), "the fit is running (two callbacks passed)"
    token.cancel()
    worker.join(timeout=120)  # a hang guard
    assert not worker.is_alive() and outcome == {"stopped": True}
    # the first checkpoint after the cancel raised (0: the cancel fell between a callback's count
    # and its check of the token)
    assert checks["after"] <= 1, f"{checks['after']} checkpoints after the cancel"
