"""Compose a list of guarantees under every theorem, side by side.

Every epsilon (and delta) returned here is an UPPER bound on the true privacy loss of the
composed list under the theorem named:

* ``basic``: epsilons and deltas add (Dwork & Roth 2014, Theorem 3.16). Guarantees without one
  fixed (epsilon, delta) pair (Gaussian noise, zCDP, RDP curves) get an equal share of the delta
  left and the epsilon their own profile gives at it.
* ``advanced``: Dwork, Rothblum & Vadhan 2010 (Dwork & Roth 2014, Theorem 3.20; seed 001,
  Theorem 5) with the best split of delta' searched, and never reported worse than basic.
* ``optimal``: Kairouz, Oh & Viswanath 2015, Theorem 3.3, for k identical (epsilon, delta) pairs.
* ``zcdp``: rho adds (Bun & Steinke 2016, Lemma 2.3); pure eps -> eps^2/2, Gaussian
  Delta^2/(2 sigma^2); converted with Canonne, Kamath & Steinke 2020, Proposition 12.
* ``rdp``: Renyi curves add order by order (Mironov 2017, Proposition 1) on a grid of orders,
  converted with the improved bound of Balle et al. 2020 (Theorem 21) / Canonne-Kamath-Steinke.
* ``pld``: the tight privacy-loss-distribution accountant of :mod:`.pld` (pessimistic
  discretisation; exact for Gaussian noise).

Guarantees that cannot enter a method make it "not applicable", with the reason. Identical
guarantees are grouped (frozen dataclasses compare by value), so a list of a thousand copies
costs about as much as one; the composed PLD is cached per distinct list.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dpexplorer.core.accounting import classic
from dpexplorer.core.accounting.guarantees import (
    GaussianNoise,
    Guarantee,
    LaplaceNoise,
    PureDP,
    RDPCurve,
    Subsampled,
)
from dpexplorer.core.accounting.pld import PrivacyLossDistribution, TwoSided, compose_pld
from dpexplorer.core.accounting.single import ORDERS, rdp_of, rdp_to_epsilon, rho_of, zcdp_to_epsilon
from dpexplorer.core.accounting.validate import check_delta, check_epsilon, counted
from dpexplorer.core.errors import InvalidParameterError, NotApplicableError
from dpexplorer.core.figures import privacy_number as fig

METHODS: tuple[str, ...] = ("basic", "advanced", "optimal", "zcdp", "rdp", "pld")
Counts = tuple[tuple[Guarantee, int], ...]
Items = Sequence[Guarantee | tuple[Guarantee, int]]
"""A list of guarantees, where an item may be a pair (guarantee, count): k is a count."""


@dataclass(frozen=True)
class MethodResult:
    """One method's answer: ``epsilon`` (an upper bound) or None when the method does not apply;
    ``reason`` says how the number was obtained, or why there is none."""

    method: str
    epsilon: float | None
    reason: str


@dataclass(frozen=True)
class CompositionReport:
    """Every requested method's epsilon at ``delta`` for one list of guarantees."""

    delta: float
    results: tuple[MethodResult, ...]

    def best(self) -> MethodResult:
        """The applicable method with the smallest epsilon (every one is a valid upper bound, so
        the smallest is too). Raises NotApplicableError if no method applies."""
        valid = [r for r in self.results if r.epsilon is not None]
        if not valid:
            reasons = "; ".join(f"{r.method}: {r.reason}" for r in self.results)
            raise NotApplicableError(f"no accounting method applies to this list ({reasons})")
        return min(valid, key=lambda r: r.epsilon)  # type: ignore[arg-type, return-value]

    def get(self, method: str) -> MethodResult:
        """The result of ``method``; KeyError if it was not requested."""
        for result in self.results:
            if result.method == method:
                return result
        raise KeyError(f"method {method!r} was not computed; computed: {[r.method for r in self.results]}")


def _check_method(method: str) -> None:
    if method not in METHODS:
        choices = ", ".join(METHODS)
        raise InvalidParameterError(f"unknown accounting method {method!r}; choose one of {choices}")


@functools.lru_cache(maxsize=32)
def _pld(counts: Counts) -> PrivacyLossDistribution | TwoSided:
    return compose_pld(counts)


def pld_of(guarantees: Items) -> PrivacyLossDistribution | TwoSided:
    """The composed pessimistic PLD of the list (cached per distinct list); NotApplicableError if
    some guarantee has none. Its ``delta(eps)``/``epsilon(delta)`` are upper bounds."""
    return _pld(counted(guarantees))


@functools.lru_cache(maxsize=64)
def _rho_total(counts: Counts) -> float:
    """Total zCDP rho of the list (cached: the profile asks at many deltas)."""
    total = 0.0
    for g, k in counts:
        rho = rho_of(g)
        if rho is None:
            raise NotApplicableError(f"{_describe(g)} has no zCDP bound")
        total += rho * k
    return total


def _zcdp(counts: Counts, delta: float) -> classic.Outcome:
    total = _rho_total(counts)
    return classic.Outcome(zcdp_to_epsilon(total, delta), f"ρ = {fig(total)} (Bun-Steinke), CKS conversion")


@functools.lru_cache(maxsize=64)
def _rdp_total(counts: Counts) -> tuple[np.ndarray, np.ndarray]:
    """(orders, total Renyi curve) of the list (cached: the profile asks at many deltas)."""
    extra = [o for g, _ in counts if isinstance(g, RDPCurve) for o in g.orders]
    orders = np.union1d(ORDERS, np.asarray(extra, dtype=float))
    total = np.zeros_like(orders)
    for g, k in counts:
        curve = rdp_of(g, orders)
        if curve is None:
            raise NotApplicableError(f"{_describe(g)} has no Rényi-DP bound")
        with np.errstate(over="ignore"):  # an overflow is +inf: still an upper bound
            total += k * curve
    total.flags.writeable = False
    return orders, total


def _rdp(counts: Counts, delta: float) -> classic.Outcome:
    orders, total = _rdp_total(counts)
    return classic.Outcome(
        rdp_to_epsilon(orders, total, delta), f"{orders.size} Renyi orders, improved conversion (CKS 2020)"
    )


NEGLIGIBLE_EPSILON = 1e-9
"""Pure guarantees whose whole contribution k * epsilon_0 stays below this are composed by
:func:`_split_negligible` instead of on the grid (a grid fine enough for them would collapse)."""


NEGLIGIBLE_GAUSSIAN = 1e-6
"""A subsampled Gaussian with sensitivity / sigma below this is accounted as its base Gaussian
(closed form; subsampling never makes a mechanism less private): its loss is too small for a grid."""


def _pure_bound(g: Guarantee) -> float | None:
    """epsilon_0 of a pure guarantee (a subsampled one is at least as private as its base)."""
    if isinstance(g, LaplaceNoise):
        return g.sensitivity / g.scale
    return g.epsilon if isinstance(g, PureDP) else None


def _split_negligible(counts: Counts) -> tuple[Counts, float]:
    """(the rest, total epsilon of the negligible pure guarantees; subsampled Gaussians too weak to
    grid replaced by their base, see NEGLIGIBLE_GAUSSIAN). Each negligible pure guarantee is
    epsilon_0-DP, so composing them after the rest adds at most their sum to epsilon at the same
    delta (basic composition, Dwork & Roth 2014, Theorem 3.16): an upper bound, at most
    NEGLIGIBLE_EPSILON above the tight value per guarantee kind."""
    rest: list[tuple[Guarantee, int]] = []
    extra = 0.0
    for g, k in counts:
        base = g.base if isinstance(g, Subsampled) else None
        if isinstance(base, GaussianNoise) and base.sensitivity / base.sigma < NEGLIGIBLE_GAUSSIAN:
            rest.append((base, k))  # at least as private as its base, kept in closed form
            continue
        bound = _pure_bound(g.base if isinstance(g, Subsampled) else g)
        if bound is not None and bound * k < NEGLIGIBLE_EPSILON:
            extra += bound * k
        else:
            rest.append((g, k))
    return tuple(rest), math.nextafter(extra, math.inf) if extra else 0.0


def _pld_outcome(counts: Counts, delta: float) -> classic.Outcome:
    rest, extra = _split_negligible(counts)
    if not rest:
        return classic.Outcome(extra, "pure guarantees below 1e-9 each, composed by basic composition")
    pld = _pld(rest)
    total = pld.epsilon(delta) + extra
    total = math.nextafter(total, math.inf) if extra else total
    return classic.Outcome(total, "tight privacy-loss distribution (pessimistic)")


_KINDS = {"PureDP": "a pure ε-DP guarantee", "ApproxDP": "an (ε, δ)-DP guarantee", "ZCDP": "a zCDP guarantee"}
_SYMBOLS = {"epsilon": "ε", "delta": "δ", "rho": "ρ"}


def _describe(g: Guarantee) -> str:
    """A guarantee in words with its figures to three digits: "an (ε, δ)-DP guarantee (ε = 2,
    δ = 1e-6)" (its repr, "ApproxDP(epsilon=1.999999999814008, delta=1e-06)", was printed)."""
    figures = ", ".join(
        f"{_SYMBOLS.get(k, k)} = {fig(v)}" for k, v in vars(g).items() if isinstance(v, int | float) and v
    )
    kind = _KINDS.get(type(g).__name__, f"a {type(g).__name__} guarantee")
    return f"{kind} ({figures})" if figures else kind


_SOLVERS: dict[str, Callable[[Counts, float], classic.Outcome]] = {
    "basic": classic.basic,
    "advanced": classic.advanced,
    "optimal": classic.optimal,
    "zcdp": _zcdp,
    "rdp": _rdp,
    "pld": _pld_outcome,
}


@functools.lru_cache(maxsize=512)
def _outcome(counts: Counts, method: str, delta: float) -> classic.Outcome:
    """One method's outcome, cached per (list, method, delta): the budget view asks for the
    released list's total and for released + planned, which is the same list when nothing is
    planned, and redraws often."""
    if not counts:
        return classic.Outcome(0.0, "empty list: nothing spent")
    outcome = _SOLVERS[method](counts, delta)
    if not math.isfinite(outcome.epsilon):
        raise NotApplicableError(f"{method}: no finite ε at δ {fig(delta)}")
    return outcome


def epsilon_at(guarantees: Items, method: str, delta: float) -> float:
    """epsilon of the composed list at ``delta`` under ``method`` (an upper bound, see module doc).

    Raises NotApplicableError (with the reason) when the method does not apply, and
    InvalidParameterError for a bad guarantee, method or delta."""
    _check_method(method)
    check_delta(delta)
    return _outcome(counted(guarantees), method, delta).epsilon


def compose(guarantees: Items, *, delta: float, methods: Sequence[str] = METHODS) -> CompositionReport:
    """Every method of ``methods`` at ``delta``, in that order; a method that does not apply gets
    epsilon None and the reason. Each epsilon is an upper bound under its theorem."""
    for method in methods:
        _check_method(method)
    check_delta(delta)
    counts = counted(guarantees)
    results = []
    for method in methods:
        try:
            outcome = _outcome(counts, method, delta)
            results.append(MethodResult(method, outcome.epsilon, outcome.detail))
        except NotApplicableError as error:
            results.append(MethodResult(method, None, str(error)))
    return CompositionReport(delta, tuple(results))


def _delta_by_search(counts: Counts, method: str, epsilon: float) -> float:
    """Smallest delta (to 1e-6 relative, rounded up) whose epsilon is <= ``epsilon``, by bisection
    on log(delta); the returned delta satisfies the method's bound, so it is an upper bound."""

    def fits(log_delta: float) -> bool:
        try:
            return _outcome(counts, method, math.exp(log_delta)).epsilon <= epsilon
        except NotApplicableError:
            return False

    low, high = math.log(1e-300), math.log1p(-1e-12)
    if not fits(high):
        return 1.0
    if fits(low):
        return math.exp(low)
    while high - low > 1e-6:
        middle = (low + high) / 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    return math.exp(high)


def delta_at(guarantees: Items, method: str, epsilon: float) -> float:
    """delta of the composed list at ``epsilon`` under ``method`` (an upper bound). Exact profile
    for ``pld`` and ``optimal``; for the other methods the smallest delta at which their epsilon
    bound is <= ``epsilon`` (bisection). Returns 1.0 when no delta < 1 reaches ``epsilon``."""
    _check_method(method)
    check_epsilon(epsilon)
    counts = counted(guarantees)
    if not counts:
        return 0.0
    if method == "pld":
        return min(_pld(counts).delta(epsilon), 1.0)
    if method == "optimal":
        eps0, d0, k = classic.homogeneous(counts)
        return min(1.0, -math.expm1(k * math.log1p(-d0) + math.log1p(-classic.kov_delta(eps0, k, epsilon))))
    if method in ("zcdp", "rdp"):
        _SOLVERS[method](counts, 0.5)  # raises NotApplicableError with the reason
    return _delta_by_search(counts, method, epsilon)


def privacy_profile(guarantees: Items, method: str, deltas: np.ndarray) -> np.ndarray:
    """epsilon(delta) at each of ``deltas`` under ``method`` (upper bounds), NaN where the method
    does not apply (or no finite epsilon exists). Meant for plotting: for ``pld`` with Gaussian
    noise in the list the values come from one grid (see PrivacyLossDistribution.epsilons) and
    may exceed :func:`epsilon_at` by one grid step (about 1e-4 of the loss range)."""
    _check_method(method)
    counts = counted(guarantees)
    values = np.asarray(deltas, dtype=float)
    out = np.full(values.shape, np.nan)
    if method == "pld" and counts:
        try:
            inside = (values > 0) & (values < 1)
            out[inside] = _pld(counts).epsilons(values[inside])
        except NotApplicableError:
            pass
        return out
    for index, delta in np.ndenumerate(values):
        try:
            check_delta(float(delta))
            out[index] = _outcome(counts, method, float(delta)).epsilon
        except (NotApplicableError, InvalidParameterError):
            continue
    return out
