"""The release pipeline: charge first, then sample, then write; charged guarantees never above
the mechanism's claim; exact selection against the mechanisms' own pmfs; refusals; the
auditor on the discrete Laplace and discrete Gaussian release paths."""

from __future__ import annotations

import json
import math
import types
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dpexplorer.core.audit import audit
from dpexplorer.core.errors import InvalidParameterError, NotApplicableError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import NumericInput, SelectionInput
from dpexplorer.release.ledger import BudgetExceededError, Ledger
from dpexplorer.release.plans import exact_release
from dpexplorer.release.presentation import show
from dpexplorer.release.rational import float_up
from dpexplorer.release.release import execute, prepare_input
from dpexplorer.release.samplers import SeededBitSource

FP = "cd" * 32
TRUE_VALUE = 12345.678901
SIDECAR_KEYS = {
    "mechanism",
    "parameters",
    "epsilon",
    "delta",
    "rho",
    "sensitivity_l1",
    "bounds",
    "confidence_interval",
    "confidence_level",
    "sampler",
    "software",
    "dataset_id",
    "ledger_row_id",
    "time",
    "query",
    "guarantee_charged",
}


def _numeric(
    value: float = TRUE_VALUE, sensitivity: float = 0.01, statistic: str = "mean", d: int = 1
) -> NumericInput:
    values = np.full(d, value)
    return NumericInput(
        value_d=values,
        value_d_prime=values + sensitivity,
        sensitivity_l1=sensitivity,
        sensitivity_l2=sensitivity,
        n=1000,
        statistic=statistic,
        bounds=(0.0, 20000.0),
    )


def _selection(scores=(30.0, 28.0, 20.0, 29.0)) -> SelectionInput:
    scores_d = np.array(scores)
    return SelectionInput(
        candidates=("a", "b", "c", "d"),
        scores_d=scores_d,
        scores_d_prime=scores_d - 1,
        sensitivity=1.0,
        monotone=True,
        n=100,
    )


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    with Ledger(tmp_path / "ledger.sqlite") as book:
        book.set_budget(FP, 10.0, 1e-5, "zcdp")
        yield book


class _Recording:
    """A seeded bit source that records whether it was used and checks the ledger first."""

    name = "recording"

    def __init__(self, ledger: Ledger) -> None:
        self._inner, self._ledger, self.used = SeededBitSource(0), ledger, False

    def _check(self) -> None:
        if not self.used:
            assert self._ledger.measurements(FP), "noise drawn before the ledger was charged"
        self.used = True

    def randbelow(self, n: int) -> int:
        self._check()
        return self._inner.randbelow(n)

    def words(self, count: int) -> np.ndarray:
        self._check()
        return self._inner.words(count)


def _release(ledger, out, query, mechanism, params, bits=None):
    prepared = prepare_input(query, mechanism, params, fingerprint=FP, query={"kind": "test"})
    return execute(prepared, ledger=ledger, out_dir=out, bits=bits)


@pytest.mark.parametrize(
    ("mechanism", "params"),
    [
        ("laplace", {"epsilon": 0.5}),
        ("gaussian", {"epsilon": 0.5, "delta": 1e-6}),
    ],
)
def test_numeric_release_writes_values_and_provenance(ledger, tmp_path, mechanism, params) -> None:
    bits = _Recording(ledger)
    result = _release(ledger, tmp_path / "out", _numeric(), mechanism, params, bits)
    assert bits.used
    sidecar = json.loads(result.files["provenance"].read_text())
    assert sidecar.keys() >= SIDECAR_KEYS
    assert sidecar["ledger_row_id"] == result.row_id and sidecar["dataset_id"] == ledger.public_id(FP)
    values = json.loads(result.files["json"].read_text())["values"]
    ((low, high),) = result.confidence_intervals
    assert values == [{"label": "mean", "value": result.values[0], "ci_low": low, "ci_high": high}]
    csv_lines = result.files["csv"].read_text().splitlines()  # rounded by the one rule
    shown = show(result.values[0], (low, high))
    assert csv_lines == [
        "label,value,ci_low,ci_high,interval",
        f"mean,{shown.value},{shown.low},{shown.high},95 % noise",
    ]
    spacing = Fraction(sidecar["discretisation"]["grid_spacing"])
    assert (Fraction(result.values[0]) / spacing).denominator == 1
    ((low, high),) = result.confidence_intervals
    assert low < result.values[0] < high
    (row,) = ledger.measurements(FP)
    assert row.status == "released" and row.export_path == str(result.files["provenance"])


def test_true_answers_are_never_written(ledger, tmp_path) -> None:
    out = tmp_path / "out"
    query = _numeric(value=TRUE_VALUE, sensitivity=1.0)
    for seed, (mechanism, params) in enumerate(
        [("laplace", {"epsilon": 1.0}), ("gaussian", {"epsilon": 1.0, "delta": 1e-6})]
    ):
        _release(ledger, out, query, mechanism, params, SeededBitSource(seed))
    secrets_text = {repr(TRUE_VALUE), repr(TRUE_VALUE + 1.0), "12345.6789", "12345.67890"}
    for path in [*out.iterdir(), *tmp_path.glob("ledger.sqlite*")]:
        text = path.read_bytes().decode("utf-8", errors="replace")
        assert not any(s in text for s in secrets_text), path


def test_over_budget_is_refused_before_any_noise(tmp_path) -> None:
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget(FP, 0.4, 0.0, "basic")
        bits = _Recording(book)
        with pytest.raises(BudgetExceededError, match="left"):
            _release(book, tmp_path / "out", _numeric(), "laplace", {"epsilon": 0.5}, bits)
        assert not bits.used and not (tmp_path / "out").exists() and not book.measurements(FP)


@pytest.mark.parametrize("sensitivity", [1.0, 0.01, 3.7e-5, 250.0])
@pytest.mark.parametrize("epsilon", [0.01, 0.3, 1.0, 7.5])
@pytest.mark.parametrize("statistic", ["mean", "count"])
def test_charged_guarantee_never_exceeds_the_claim(sensitivity, epsilon, statistic) -> None:
    query = _numeric(value=17.0, sensitivity=sensitivity, statistic=statistic)
    laplace = registry.get("laplace")
    release = exact_release(laplace, laplace.validate({"epsilon": epsilon}), query)
    scale = laplace.noise_scale({"epsilon": epsilon}, query)
    assert release.guarantee.epsilon <= float_up(Fraction(sensitivity) / Fraction(scale))
    assert release.guarantee.epsilon >= epsilon * (1 - 2e-3)  # discretisation costs < 0.2%
    gaussian = registry.get("gaussian")
    params = gaussian.validate({"epsilon": min(epsilon, 1.0), "delta": 1e-6})
    release = exact_release(gaussian, params, query)
    sigma = gaussian.noise_scale(params, query)
    claimed_rho = Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2)
    assert release.guarantee.rho <= float_up(claimed_rho)
    assert release.guarantee.rho >= float(claimed_rho) * (1 - 5e-3)


def test_vector_release_uses_every_coordinate(ledger, tmp_path) -> None:
    query = _numeric(value=5.0, sensitivity=1.0, statistic="histogram", d=3)
    result = _release(ledger, tmp_path / "out", query, "laplace", {"epsilon": 1.0})
    assert len(result.values) == 3 and all(float(v).is_integer() for v in result.values)


@pytest.mark.parametrize(
    ("mechanism", "params"),
    [
        ("exponential", {"epsilon": 0.4, "use_monotone": False}),
        ("noisy_max", {"epsilon": 0.4, "noise": "gumbel"}),
        ("noisy_max", {"epsilon": 0.4, "noise": "exponential"}),
    ],
)
def test_exact_selection_matches_the_mechanism_pmf(mechanism, params) -> None:
    mech = registry.get(mechanism)
    values = mech.validate(params)
    query = _selection()
    release = exact_release(mech, values, query)
    bits = SeededBitSource(9)
    picks = [release.draw(bits)[0] for _ in range(4000)]
    observed = np.array([picks.count(c) for c in query.candidates])
    expected = mech.output_distribution(values, query).pmf_d * len(picks)
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    assert release.guarantee.epsilon == 0.4


def test_refusals_are_clear() -> None:
    fake = types.SimpleNamespace(name="bogus", label="Bogus", accepts=lambda q: None)
    with pytest.raises(NotApplicableError, match="cannot be released exactly"):
        exact_release(fake, {}, _numeric())
    with pytest.raises(NotApplicableError):
        exact_release(registry.get("laplace"), {"epsilon": 1.0}, _selection())
    with pytest.raises(InvalidParameterError, match="unknown mechanism"):
        prepare_input(_numeric(), "nope", {}, fingerprint=FP, query={})
    with pytest.raises(InvalidParameterError):
        prepare_input(_numeric(), "laplace", {"epsilon": -1}, fingerprint=FP, query={})
    with pytest.raises(InvalidParameterError, match="NaN"):
        prepare_input(_numeric(value=math.nan), "laplace", {"epsilon": 1}, fingerprint=FP, query={})


@pytest.mark.parametrize(
    ("mechanism", "params"),
    [
        ("laplace", {"epsilon": 1.0}),
        ("gaussian", {"epsilon": 1.0, "delta": 1e-3}),
    ],
)
def test_auditor_on_the_release_path(mechanism, params) -> None:
    """Neighbouring true answers 0 and 1 (count, Delta = 1): the audit's lower bound on epsilon
    stays within the charged guarantee, and is not vacuous (the auditor sees the loss)."""
    mech = registry.get(mechanism)
    values = mech.validate(params)
    paths = [
        exact_release(mech, values, _numeric(value=v, sensitivity=1.0, statistic="count")) for v in (0.0, 1.0)
    ]

    def sampler(path):
        return lambda rng, size: path.simulate(SeededBitSource(int(rng.integers(2**32))), size)

    result = audit(
        sampler(paths[0]),
        sampler(paths[1]),
        values.get("delta", 0.0),
        rng=np.random.default_rng(4),
        n_draws=200_000,
    )
    claimed = mech.epsilon_delta(values, _numeric(value=0.0, sensitivity=1.0, statistic="count"))[0]
    assert result.epsilon_lb <= min(paths[0].epsilon, claimed)
    assert result.epsilon_lb > 0.3 * params["epsilon"]


@pytest.mark.parametrize(("method", "kind"), [("zcdp", "ZCDP"), ("pld", "ApproxDP"), ("basic", "ZCDP")])
def test_gaussian_charge_follows_the_accountant(tmp_path, method, kind) -> None:
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget(FP, 5.0, 1e-5, method)
        result = _release(book, tmp_path / "out", _numeric(), "gaussian", {"epsilon": 0.5, "delta": 1e-6})
        assert type(result.guarantee).__name__ == kind
        assert type(book.measurements(FP)[0].guarantee).__name__ == kind
        sidecar = json.loads(result.files["provenance"].read_text())
        assert sidecar["guarantee_charged"]["type"] == kind
        if kind == "ApproxDP":  # the exact discrete-Gaussian curve at the mechanism's delta:
            rho = float(Fraction(result.rho))  # below the rho conversion, near the claimed 0.5
            assert result.guarantee.delta == 1e-6
            assert 0.49 < result.guarantee.epsilon < rho + 2 * math.sqrt(rho * math.log(1e6))


def test_price_matches_the_charge(tmp_path) -> None:
    from dpexplorer.release.release import price

    with Ledger(tmp_path / "l.sqlite") as book:
        prepared = prepare_input(_numeric(), "laplace", {"epsilon": 0.5}, fingerprint=FP, query={})
        assert price(prepared, book).refusal  # no budget yet
        book.set_budget(FP, 0.75, 0.0, "basic")
        first = price(prepared, book)
        assert first.refusal == "" and first.spent_epsilon == 0.0
        assert first.cost_epsilon == 0.5 and first.left_after == 0.25
        execute(prepared, ledger=book, out_dir=tmp_path / "out")
        second = price(prepared, book)
        assert second.spent_epsilon == 0.5 and "left" in second.refusal and second.left_after < 0
        with pytest.raises(BudgetExceededError):
            execute(prepared, ledger=book, out_dir=tmp_path / "out")


def test_lazy_real_and_synthetic_paths_release_end_to_end(tmp_path) -> None:
    """Smooth sensitivity, report-noisy-max with Laplace noise, MWEM and BLR through the whole
    pipeline on the bundled data: charged in the ledger, files written, no interval where the
    path publishes none (a smooth-sensitivity interval would reveal the data-dependent scale)."""
    from dpexplorer.data import queries as q
    from dpexplorer.data.default import default_dataset_path
    from dpexplorer.data.load import load_dataset
    from dpexplorer.release.release import release_one

    dataset = load_dataset(default_dataset_path())
    workload = q.marginal_workload([q.Axis("age", edges=(17.0, 40.0, 60.0, 90.0))], ways=(1,))
    plan = [
        (q.Median("age", 17, 90), "smooth_cauchy", {"epsilon": 1.0}),
        (q.ArgMax("sex", ("Female", "Male")), "noisy_max", {"epsilon": 1.0, "noise": "laplace"}),
        (workload, "mwem", {"epsilon": 1.0, "rounds": 2}),
        (workload, "blr", {"epsilon": 1.0, "alpha": 0.9}),
    ]
    with Ledger(tmp_path / "l.sqlite") as book:
        book.set_budget(dataset.fingerprint, 10.0, 1e-6, "basic")
        for query, mechanism, params in plan:
            result = release_one(dataset, query, mechanism, params, ledger=book, out_dir=tmp_path / "out")
            assert all(path.exists() for path in result.files.values())
            sidecar = json.loads(result.files["provenance"].read_text())
            assert sidecar["mechanism"] == mechanism and sidecar["ledger_row_id"] == result.row_id
            if mechanism == "smooth_cauchy":
                # no noise interval (its width would reveal the data-dependent scale): the
                # declared range, which always holds the clipped median
                assert result.confidence_intervals == ((17.0, 90.0),) and result.interval_kinds == ("range",)
                assert sidecar["confidence_interval"] == [[17.0, 90.0]]
                assert sidecar["interval_kinds"] == ["range"]
                spacing = Fraction(2) ** (math.floor(math.log2(90 - 17)) - 30)  # the public grid
                assert (Fraction(result.values[0]) / spacing).denominator == 1
            if mechanism == "noisy_max":
                assert result.values[0] in ("Female", "Male")
        charged = [m.guarantee.epsilon for m in book.measurements(dataset.content_fingerprint)]
    assert len(charged) == 4 and all(0.99 <= e <= 1.0 for e in charged)
