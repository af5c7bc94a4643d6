"""Exact samplers over the integers (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for
Differential Privacy", NeurIPS; arXiv:2004.00010).

Every number here is an integer or a :class:`fractions.Fraction`; no floating-point value is
ever used to decide an outcome, so the output distribution is EXACTLY the stated pmf, given
uniform random bits:

* :func:`bernoulli_exp` -- Bernoulli(exp(-gamma)) for rational gamma >= 0 (CKS Algorithm 1 for
  gamma in [0, 1], and gamma > 1 as floor(gamma) Bernoulli(exp(-1)) trials times one for the
  fractional part);
* :func:`discrete_laplace` -- P[x] proportional to exp(-|x| / scale) on Z (CKS Algorithm 2);
* :func:`discrete_gaussian` -- P[x] proportional to exp(-x^2 / (2 sigma^2)) on Z (CKS Algorithm 3).

The scalar functions take any positive rational parameter (Python integers, no overflow). The
vectorised :func:`discrete_laplace_array` / :func:`discrete_gaussian_array` run the same
algorithms in lockstep over numpy int64 arrays (each loop of CKS advances all pending draws at
once; rejected draws are redrawn) with random words taken in batches from the bit source; they
take their parameters as integers (scale t/s with s, t < 2^40; sigma^2 = t * p / q, see there),
which the release path chooses, and stay exact: uniform integers below m come from 64-bit
words by rejection (a word w is used only if w < 2^64 - (2^64 mod m), then w mod m), never from a
float. Randomness comes from a :class:`BitSource`: the operating system's CSPRNG
(:class:`SystemBitSource`, module :mod:`secrets`) unless a seeded one is injected for tests.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable
from fractions import Fraction
from math import isqrt
from typing import Protocol

import numpy as np

from dpexplorer.core.errors import InvalidParameterError

_TWO64 = 1 << 64
_INT64_SAFE = 1 << 62
"""Bounds below which uniform draws use numpy uint64 words (products stay below 2^63)."""
_SQUARE_SAFE = 1 << 31
"""|x| below which x^2 is computed in int64 (else the acceptance test runs in Python ints)."""


class BitSource(Protocol):
    """Uniform random bits. ``randbelow(n)`` is uniform on {0, ..., n-1} for any n >= 1;
    ``words(count)`` are ``count`` independent uniform 64-bit words (numpy uint64)."""

    name: str

    def randbelow(self, n: int) -> int: ...

    def words(self, count: int) -> np.ndarray: ...


class SystemBitSource:
    """The operating system's CSPRNG through :mod:`secrets` (what every release uses)."""

    name = "os-csprng (python secrets)"

    def randbelow(self, n: int) -> int:
        return secrets.randbelow(n)

    def words(self, count: int) -> np.ndarray:
        return np.frombuffer(secrets.token_bytes(8 * count), dtype=np.uint64)


class SeededBitSource:
    """A reproducible bit source (Mersenne Twister, :class:`random.Random`) for tests ONLY:
    not cryptographically secure, never used by a release unless injected."""

    name = "seeded-mt19937 (tests only)"

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def randbelow(self, n: int) -> int:
        return self._rng.randrange(n)

    def words(self, count: int) -> np.ndarray:
        return np.frombuffer(self._rng.randbytes(8 * count), dtype=np.uint64)


def default_bit_source() -> BitSource:
    """The CSPRNG source used when none is given."""
    return SystemBitSource()


# ------------------------------------------------------------------ scalar, any rational
def bernoulli(p: Fraction, bits: BitSource) -> bool:
    """Exact Bernoulli(p) for rational p in [0, 1]: U uniform on {0..den-1}, return U < num."""
    if not 0 <= p <= 1:
        raise ValueError(f"probability {p} is not in [0, 1]")
    return bits.randbelow(p.denominator) < p.numerator


def bernoulli_exp(gamma: Fraction, bits: BitSource) -> bool:
    """Exact Bernoulli(exp(-gamma)) for rational gamma >= 0 (CKS 2020, Algorithm 1 and the
    reduction of its Section 5.1 for gamma > 1)."""
    if gamma < 0:
        raise ValueError(f"gamma {gamma} is negative")
    whole = gamma.numerator // gamma.denominator
    for _ in range(whole):
        if not _bernoulli_exp_unit(Fraction(1), bits):
            return False
    return _bernoulli_exp_unit(gamma - whole, bits)


def _bernoulli_exp_unit(gamma: Fraction, bits: BitSource) -> bool:
    """CKS Algorithm 1: K = the first k with Bernoulli(gamma/k) = 0; return K odd.
    P[K odd] = sum_k (-gamma)^k / k! = exp(-gamma) for gamma in [0, 1]."""
    k = 1
    while bernoulli(gamma / k, bits):
        k += 1
    return k % 2 == 1


def discrete_laplace(scale: Fraction, bits: BitSource) -> int:
    """One exact draw with P[x] = (1 - e^(-1/scale)) / (1 + e^(-1/scale)) * e^(-|x|/scale)
    (CKS 2020, Algorithm 2, with scale = t/s)."""
    if scale <= 0:
        raise ValueError(f"scale {scale} must be positive")
    s, t = scale.denominator, scale.numerator
    while True:
        u = bits.randbelow(t)
        if not bernoulli_exp(Fraction(u, t), bits):
            continue
        v = 0
        while bernoulli_exp(Fraction(1), bits):
            v += 1
        y = (u + t * v) // s
        negative = bits.randbelow(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma2: Fraction, bits: BitSource) -> int:
    """One exact draw with P[x] proportional to exp(-x^2 / (2 sigma2)) on Z (CKS 2020,
    Algorithm 3: a discrete Laplace proposal of scale t = floor(sigma) + 1, accepted with
    probability exp(-(|y| - sigma2/t)^2 / (2 sigma2)))."""
    if sigma2 <= 0:
        raise ValueError(f"sigma^2 {sigma2} must be positive")
    t = isqrt(sigma2.numerator // sigma2.denominator) + 1
    while True:
        y = discrete_laplace(Fraction(t), bits)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if bernoulli_exp(gamma, bits):
            return y


# ------------------------------------------------------------------ vectorised, integers
def uniform_below(m: int, size: int, bits: BitSource) -> np.ndarray:
    """``size`` exact uniform draws on {0, ..., m-1} as int64 (m < 2^62): 64-bit words by
    rejection below the largest multiple of m, then reduced mod m."""
    if not 1 <= m < _INT64_SAFE:
        raise ValueError(f"uniform bound {m} out of the vectorised range")
    limit = np.uint64(_TWO64 - _TWO64 % m) if _TWO64 % m else None
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        want = size - filled
        w = bits.words(want + want // 16 + 4)
        if limit is not None:
            w = w[w < limit]
        w = w[:want]
        out[filled : filled + w.size] = (w % np.uint64(m)).astype(np.int64)
        filled += w.size
    return out


def _bernoulli_exp_unit_array(num: np.ndarray, den: int, bits: BitSource) -> np.ndarray:
    """CKS Algorithm 1 in lockstep: Bernoulli(exp(-num/den)) elementwise, 0 <= num <= den.
    Round k draws Bernoulli(num/(den k)) as U < num with U uniform below den*k."""
    result = np.zeros(num.size, dtype=bool)
    pending = np.arange(num.size)
    k = 1
    while pending.size:
        if den * k >= _INT64_SAFE:
            raise ValueError("denominator too large for the vectorised sampler")
        go_on = uniform_below(den * k, pending.size, bits) < num[pending]
        stopped = pending[~go_on]
        result[stopped] = k % 2 == 1
        pending = pending[go_on]
        k += 1
    return result


def _all_bernoulli_exp1(trials: np.ndarray, bits: BitSource) -> np.ndarray:
    """Elementwise: do ``trials[i]`` independent Bernoulli(exp(-1)) draws all succeed?
    (probability exp(-trials[i]), exactly)."""
    alive = np.ones(trials.size, dtype=bool)
    j = 0
    while True:
        active = np.flatnonzero(alive & (trials > j))
        if not active.size:
            return alive
        alive[active] = _bernoulli_exp_unit_array(np.ones(active.size, dtype=np.int64), 1, bits)
        j += 1


def bernoulli_exp_array(num: np.ndarray, den: int, bits: BitSource) -> np.ndarray:
    """Exact Bernoulli(exp(-num/den)) elementwise for int64 num >= 0 and den >= 1: the
    whole part as that many Bernoulli(exp(-1)) trials, the rest by CKS Algorithm 1."""
    whole, rest = np.divmod(num, den)
    ok = _all_bernoulli_exp1(whole, bits)
    index = np.flatnonzero(ok)
    ok[index] = _bernoulli_exp_unit_array(rest[index], den, bits)
    return ok


def geometric_exp1_array(size: int, bits: BitSource) -> np.ndarray:
    """Number of successes before the first failure of Bernoulli(exp(-1)) trials:
    P[V = v] = (1 - 1/e) e^(-v), exactly."""
    count = np.zeros(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        success = _bernoulli_exp_unit_array(np.ones(pending.size, dtype=np.int64), 1, bits)
        pending = pending[success]
        count[pending] += 1
    return count


def _fill(size: int, draw: Callable[[int], np.ndarray]) -> np.ndarray:
    """Collect ``size`` accepted values from ``draw(n)``, which returns the accepted subset of n
    independent proposals (rejection sampling keeps every accepted value's exact law)."""
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        want = size - filled
        got = draw(want + want // 2 + 8)[:want]
        out[filled : filled + got.size] = got
        filled += got.size
    return out


def _check_int(name: str, value: int, high: int) -> None:
    if not 1 <= value < high:
        raise InvalidParameterError(f"{name} = {value} is outside the sampler's range [1, {high})")


def discrete_laplace_array(t: int, s: int, size: int, bits: BitSource) -> np.ndarray:
    """``size`` exact draws of the discrete Laplace of scale t/s (CKS Algorithm 2, vectorised):
    P[x] = (1 - e^(-s/t)) / (1 + e^(-s/t)) * e^(-|x| s / t), x in Z. Requires 1 <= s, t < 2^40."""
    _check_int("t", t, 1 << 40)
    _check_int("s", s, 1 << 40)

    def draw(n: int) -> np.ndarray:
        u = uniform_below(t, n, bits)
        u = u[bernoulli_exp_array(u, t, bits)]
        v = geometric_exp1_array(u.size, bits)
        y = (u + t * v) // s
        negative = uniform_below(2, y.size, bits) == 1
        keep = ~(negative & (y == 0))
        return np.where(negative, -y, y)[keep]

    return _fill(size, draw)


def discrete_gaussian_array(t: int, p: int, q: int, size: int, bits: BitSource) -> np.ndarray:
    """``size`` exact draws of the discrete Gaussian with sigma^2 = t * p / q (CKS Algorithm 3,
    vectorised): a discrete Laplace proposal of scale t accepted with probability
    exp(-(|y| - p/q)^2 / (2 t p/q)) = exp(-(q|y| - p)^2 / (2 t p q)). The caller picks t close to
    sigma (CKS: floor(sigma) + 1) for efficiency; any t >= 1 is exact."""
    _check_int("t", t, 1 << 40)
    _check_int("p", p, 1 << 44)
    _check_int("q", q, 1 << 24)
    den = 2 * t * p * q
    if den >= 1 << 61:
        raise InvalidParameterError("sigma^2 too large for the vectorised discrete Gaussian")

    def draw(n: int) -> np.ndarray:
        y = discrete_laplace_array(t, 1, n, bits)
        if np.abs(y).max(initial=0) < (1 << 40) // q:  # then |q|y| - p| < 2^45: no overflow
            diff = q * np.abs(y) - p
            if np.abs(diff).max(initial=0) < _SQUARE_SAFE:  # then diff^2 < 2^62
                return y[bernoulli_exp_array(diff * diff, den, bits)]
        # astronomically rare tails: the same acceptance test in Python integers
        gammas = [Fraction((q * abs(int(v)) - p) ** 2, den) for v in y]
        return y[[bernoulli_exp(gamma, bits) for gamma in gammas]]

    return _fill(size, draw)


def discrete_laplace_pmf(x: np.ndarray, scale: Fraction) -> np.ndarray:
    """The exact pmf of the discrete Laplace (float evaluation of the closed form, for tests
    and accuracy statements only; never used to sample)."""
    r = np.exp(-1.0 / float(scale))
    return (1 - r) / (1 + r) * r ** np.abs(x)


def discrete_gaussian_pmf(x: np.ndarray, sigma2: float) -> np.ndarray:
    """The discrete Gaussian pmf, normalised over |x| <= 60 sigma + 10 (the rest is < 1e-300);
    float evaluation for tests and confidence intervals only, never used to sample."""
    reach = int(60 * sigma2**0.5) + 10
    support = np.arange(-reach, reach + 1)
    norm = np.exp(-(support.astype(float) ** 2) / (2 * sigma2)).sum()
    return np.exp(-(np.asarray(x, dtype=float) ** 2) / (2 * sigma2)) / norm
