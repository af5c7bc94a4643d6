"""The noisy-threshold partition selection's delta against an independent computation: the
exact hockey-stick divergence between the output laws on D and D', enumerated from the discrete
Laplace pmf, for a person who adds new keys and for one who also joins an existing key."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpexplorer.core.partition_selection import (
    count_at_probability,
    keep_probability,
    selection_delta,
    threshold_for,
)

T, S = 3, 2  # discrete Laplace scale 1.5
REACH = 80  # |z| <= 80: the pmf beyond weighs < r^80 ~ 1e-23


def _pmf() -> dict[int, float]:
    r = math.exp(-S / T)
    return {z: (1 - r) / (1 + r) * r ** abs(z) for z in range(-REACH, REACH + 1)}


def _key_law(count: int | None, threshold: int) -> dict[object, float]:
    """Output law of one key: "dropped" or its noisy count (kept); None: the key is absent."""
    if count is None:
        return {"dropped": 1.0}
    out: dict[object, float] = {}
    for z, p in _pmf().items():
        o = count + z if count + z >= threshold else "dropped"
        out[o] = out.get(o, 0.0) + p
    return out


def _joint(laws: list[dict[object, float]]) -> dict[tuple, float]:
    return {
        tuple(o for o, _ in combo): math.prod(p for _, p in combo)
        for combo in itertools.product(*(law.items() for law in laws))
    }


def _hockey_stick(p: dict, q: dict, epsilon: float) -> float:
    keys = set(p) | set(q)
    one = sum(max(0.0, p.get(o, 0.0) - math.exp(epsilon) * q.get(o, 0.0)) for o in keys)
    other = sum(max(0.0, q.get(o, 0.0) - math.exp(epsilon) * p.get(o, 0.0)) for o in keys)
    return max(one, other)


@pytest.mark.parametrize("threshold", [2, 4, 7])
def test_two_new_keys_give_exactly_the_formula(threshold: int) -> None:
    epsilon = 2 * S / T  # k = 2 keys per person
    d = _joint([_key_law(None, threshold), _key_law(None, threshold)])
    d_prime = _joint([_key_law(1, threshold), _key_law(1, threshold)])
    exact = _hockey_stick(d, d_prime, epsilon)
    assert exact == pytest.approx(selection_delta(T, S, threshold, 2), rel=1e-9)


@pytest.mark.parametrize(("existing", "threshold"), [(1, 3), (3, 3), (10, 5)])
def test_joining_an_existing_key_stays_within_the_bound(existing: int, threshold: int) -> None:
    """D: key A with ``existing`` persons; D' adds a person to A and to a new key B."""
    epsilon = 2 * S / T
    d = _joint([_key_law(existing, threshold), _key_law(None, threshold)])
    d_prime = _joint([_key_law(existing + 1, threshold), _key_law(1, threshold)])
    exact = _hockey_stick(d, d_prime, epsilon)
    assert exact <= selection_delta(T, S, threshold, 2) * (1 + 1e-9)
    assert exact >= keep_probability(1, T, S, threshold) * (1 - 1e-9)  # B alone costs this much
    # at a smaller epsilon the Laplace part on A is no longer free: delta grows
    assert _hockey_stick(d, d_prime, epsilon / 4) > exact


def test_threshold_is_the_smallest_meeting_delta() -> None:
    for delta, k in ((1e-6, 1), (1e-9, 3), (0.01, 2)):
        tau = threshold_for(T, S, delta, k)
        assert selection_delta(T, S, tau, k) <= delta
        assert tau == 2 or selection_delta(T, S, tau - 1, k) > delta * (1 - 1e-9)
    tau = threshold_for(T, S, 1e-6, 1)
    assert keep_probability(tau, T, S, tau) > 0.5
    c = count_at_probability(T, S, tau, 0.95)
    assert keep_probability(c, T, S, tau) >= 0.95 > keep_probability(c - 1, T, S, tau)
    assert np.isclose(keep_probability(tau + 4, T, S, tau), 1 - keep_probability(tau - 5, T, S, tau))
