"""The three attacks of "Why DP" (dpexplorer.core.attacks), on the bundled Adult's ``sex``.

Tolerances come from the sampling error: a recovered fraction of n rows has standard deviation
at most 1 / (2 sqrt(n)); a rate from T releases at most 1 / (2 sqrt(T))."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpexplorer.core import attacks
from dpexplorer.core.errors import InvalidParameterError
from dpexplorer.core.risk import posterior_bound
from dpexplorer.data.attack_rows import column_count, secret_bits
from dpexplorer.data.default import default_dataset_path
from dpexplorer.data.engine import open_dataset
from dpexplorer.data.errors import DataError

ROWS, QUERIES = 500, 1000


@pytest.fixture(scope="module")
def adult():
    return open_dataset(default_dataset_path())


@pytest.fixture(scope="module")
def sex_bits(adult) -> np.ndarray:
    return secret_bits(adult, "sex", "Female", ROWS, np.random.default_rng(11))


def test_the_secret_is_a_sample_of_the_column(adult, sex_bits):
    assert sex_bits.shape == (ROWS,) and set(np.unique(sex_bits)) == {0, 1}
    # Adult is about a third women: the sample's share within 4 sigma of the column's
    share = column_count(adult, "sex", "Female") / adult.n_rows
    assert abs(sex_bits.mean() - share) < 4 * math.sqrt(share * (1 - share) / ROWS)


def test_exact_answers_reconstruct_the_column(sex_bits):
    result = attacks.reconstruction_attack(sex_bits, QUERIES, np.random.default_rng(1))
    assert result.recovered >= 0.99
    assert result.baseline == pytest.approx(max(sex_bits.mean(), 1 - sex_bits.mean()))


def test_laplace_answers_at_total_epsilon_one_recover_no_more_than_the_baseline(sex_bits):
    # Each answer gets eps / Q = 0.001: Laplace of scale 1,000 on counts of ~250: no information,
    # so the guess is right on at most the baseline's share in expectation; 0.05 > 2 sigma (0.045).
    result = attacks.reconstruction_attack(
        sex_bits, QUERIES, np.random.default_rng(1), noise="laplace", epsilon=1.0
    )
    assert result.scale == pytest.approx(QUERIES / 1.0)
    assert result.recovered <= result.baseline + 0.05


def test_small_bounded_noise_still_reconstructs_and_large_noise_does_not():
    rng = np.random.default_rng(5)
    bits = (rng.random(200) < 0.35).astype(int)
    curve = attacks.recovered_vs_noise(bits, 400, np.array([0.0, 1.0, 60.0]), np.random.default_rng(6))
    assert curve.recovered[0] == 1.0 and curve.recovered[1] >= 0.95
    # B = 60 >> sqrt(200): within 4 sigma (0.14) of the baseline or below
    assert curve.recovered[2] <= curve.baseline + 4 / (2 * math.sqrt(200))


def test_more_queries_recover_more():
    bits = (np.random.default_rng(7).random(150) < 0.4).astype(int)
    curve = attacks.recovered_vs_queries(bits, np.array([15, 300]), np.random.default_rng(8))
    assert curve.recovered[1] == 1.0 > curve.recovered[0]


def test_the_reconstruction_checks_its_cancel_token():
    from dpexplorer.core.cancel import CancelToken
    from dpexplorer.core.errors import CancelledError

    token = CancelToken()
    token.cancel()
    with pytest.raises(CancelledError):
        attacks.recovered_vs_noise(
            np.array([0, 1, 1]), 6, np.array([0.0, 1.0]), np.random.default_rng(0), cancel=token
        )


def test_differencing_on_exact_counts_reveals_the_person(sex_bits):
    for person in (int(np.argmax(sex_bits)), int(np.argmin(sex_bits))):
        result = attacks.differencing_attack(sex_bits, person, np.random.default_rng(0))
        assert result.count_all - result.count_others == sex_bits[person]
        assert result.guess == result.truth == sex_bits[person]
        assert result.posterior == float(sex_bits[person])


@pytest.mark.parametrize("prior", [0.1, 0.5, 0.9])
def test_differencing_under_laplace_never_exceeds_the_epsilon_bound(sex_bits, prior):
    person = int(np.argmax(sex_bits))  # a woman: the posterior is pushed up
    posts = attacks.differencing_trials(
        sex_bits, person, 200_000, np.random.default_rng(3), epsilon=1.0, prior=prior
    )
    bound = posterior_bound(1.0, 0.0, prior)
    assert posts.max() <= bound + 1e-12
    assert posts.mean() > prior  # the attacker does learn, within the bound
    single = attacks.differencing_attack(
        sex_bits, person, np.random.default_rng(4), noise="laplace", prior=prior
    )
    assert single.bound == pytest.approx(bound) and single.posterior <= bound


def _sigma(trials: int, epsilon: float) -> float:
    """Largest standard deviation of TPR - e^eps FPR from ``trials`` releases of each (both
    rates binomial proportions, variance at most 1 / (4 T))."""
    return math.sqrt((1 + math.exp(2 * epsilon)) / (4 * trials))


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("epsilon", [0.25, 1.0, 2.0])
def test_membership_rates_lie_in_the_dp_region(noise, epsilon):
    trials, delta = 100_000, 1e-5
    result = attacks.membership_attack(
        500, trials, np.random.default_rng(9), noise=noise, epsilon=epsilon, delta=delta
    )
    excess = attacks.dp_region_excess(result.tpr, result.fpr, epsilon, result.delta)
    assert excess.max() <= 4 * _sigma(trials, epsilon)  # 4-sigma bound, per threshold
    # and the test is strong: it leaves the region of half the epsilon (Laplace is tight)
    if noise == "laplace":
        assert attacks.dp_region_excess(result.tpr, result.fpr, epsilon / 2, 0.0).max() > 4 * _sigma(
            trials, epsilon
        )


def test_membership_on_exact_answers_is_perfect():
    result = attacks.membership_attack(500, 10, np.random.default_rng(0), noise="exact")
    assert np.all(result.tpr == 1) and np.all(result.fpr == 0)


def test_bad_parameters_are_refused(adult):
    with pytest.raises(InvalidParameterError, match="0s and 1s"):
        attacks.reconstruction_attack(np.array([0, 2]), 5, np.random.default_rng(0))
    with pytest.raises(InvalidParameterError, match="ε"):
        attacks.reconstruction_attack(
            np.array([0, 1]), 5, np.random.default_rng(0), noise="laplace", epsilon=0
        )
    with pytest.raises(DataError, match="no column"):
        secret_bits(adult, "gender", "Female", 10, np.random.default_rng(0))
    with pytest.raises(DataError, match="from 1 to 48,842"):
        secret_bits(adult, "sex", "Female", 48_843, np.random.default_rng(0))
    with pytest.raises(DataError, match="no row has sex == 'female'"):
        secret_bits(adult, "sex", "female", 10, np.random.default_rng(0))
