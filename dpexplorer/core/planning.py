"""Budget planning: a plan of measurements as immutable values, its totals under every
accountant against a steward's budget, accuracy-first planning (epsilon solved from a target
error) and sharing what is left of a budget among the statistics not held.

Every epsilon here comes from :mod:`dpexplorer.core.accounting.compose` (an UPPER bound on the
true privacy loss under the theorem named), except for a budget with delta = 0, where only basic
composition of pure-epsilon guarantees applies (epsilons add, Dwork & Roth 2014, Theorem 3.16,
computed here as a plain sum)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import optimize

from dpexplorer.core.accounting.compose import METHODS, compose, pld_of, privacy_profile
from dpexplorer.core.accounting.guarantees import GaussianNoise, Guarantee, poisson_subsampled
from dpexplorer.core.accounting.single import epsilon_of, fixed_approx, gaussian_epsilons
from dpexplorer.core.accounting.validate import counted
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError, NotApplicableError
from dpexplorer.core.figures import left_of, privacy_up
from dpexplorer.core.figures import privacy_number as fig
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import Mechanism, QueryInput
from dpexplorer.core.mechanisms.params import Param

HEADROOM = 1e-8
"""A shared plan is made to compose to at most budget * (1 - HEADROOM): the ledger inflates a
numerical accountant's total by 1e-9 before comparing it with the budget, so a plan filled by
:func:`share_budget` is never refused for round-off."""

METHOD_LABELS = {
    "basic": "basic",
    "advanced": "advanced",
    "optimal": "optimal (KOV)",
    "zcdp": "zCDP",
    "rdp": "Rényi DP",
    "pld": "tight (PLD)",
}
"""How each accountant is named to a user."""

SMALLEST_EPSILON = 1e-6
"""The smallest epsilon the solvers search (above the declared floor, MIN_EPSILON)."""


@dataclass(frozen=True)
class ErrorTarget:
    """Accuracy-first planning: the CI half-width wanted at ``ci_level``."""

    halfwidth: float
    ci_level: float = 0.95


@dataclass(frozen=True, eq=False)
class PlannedMeasurement:
    """One statistic of the plan: ``mechanism`` (a registry name) run on ``query`` with
    ``params``. ``held``: its epsilon is kept when the budget is shared. ``target``: its epsilon
    is solved from a target error (a statistic with a target is also kept when sharing).
    ``params`` is copied on construction; build a changed item with :func:`dataclasses.replace`."""

    label: str
    mechanism: str
    params: dict[str, Any]
    query: QueryInput
    held: bool = False
    target: ErrorTarget | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", dict(self.params))

    @property
    def fixed(self) -> bool:
        """True if :func:`share_budget` must keep its epsilon (held, or solved from a target)."""
        return self.held or self.target is not None


@dataclass(frozen=True)
class ReleasedMeasurement:
    """A measurement already charged to the ledger: only its guarantee counts."""

    label: str
    mechanism: str
    guarantee: Guarantee


Plan = tuple[PlannedMeasurement, ...]


# ------------------------------------------------------------------ guarantees of a plan
def _mechanism(mechanism: Mechanism | str) -> Mechanism:
    if isinstance(mechanism, Mechanism):
        return mechanism
    try:
        return registry.get(mechanism)
    except KeyError as exc:
        raise InvalidParameterError(str(exc.args[0])) from None


def _validated(item: PlannedMeasurement) -> tuple[Mechanism, dict[str, Any]]:
    mechanism = _mechanism(item.mechanism)
    try:
        return mechanism, mechanism.validate(item.params)
    except DPExplorerError as exc:
        raise type(exc)(f"{item.label}: {exc}") from None


GuaranteeOf = Callable[[PlannedMeasurement, "str | None"], Guarantee]
"""How a planned statistic is priced under an accountant method (None: no method chosen): the
mechanism's own guarantee (:func:`claimed_guarantee`, for exploring), or what its release would
be charged (the window's planner: ``dpexplorer.gui.views.budget_jobs.release_charge``, through
``dpexplorer.release.release.planned_charge``; an exact release path may guarantee a little more
or less than the mechanism's claim). A sampling claim is the pricing function's to apply."""


def claimed_guarantee(item: PlannedMeasurement, method: str | None = None) -> Guarantee:
    """The guarantee the statistic's mechanism claims at its parameters (its own, richest form;
    the same under every method)."""
    mechanism, params = _validated(item)
    return mechanism.guarantee(params, item.query)


def plan_guarantees(
    plan: Sequence[PlannedMeasurement],
    sampling_rate: float | None = None,
    *,
    method: str | None = None,
    guarantee_of: GuaranteeOf | None = None,
) -> list[Guarantee]:
    """The guarantee of every planned statistic, in order: priced by ``guarantee_of`` under
    ``method`` when given (which then applies any sampling claim itself); else each mechanism's
    own, richest form, with ``sampling_rate`` (the steward's claim that the data are a secret
    Poisson sample) amplified as the release would charge it (:func:`guarantees.poisson_subsampled`)."""
    if guarantee_of is not None:
        return [guarantee_of(item, method) for item in plan]
    return [poisson_subsampled(claimed_guarantee(item), sampling_rate, item.query.relation) for item in plan]


def guarantees_by_method(
    plan: Sequence[PlannedMeasurement], guarantee_of: GuaranteeOf, methods: Sequence[str] = METHODS
) -> dict[str, list[Guarantee]]:
    """The plan's guarantees as each accountant method would compose them (the argument of
    :func:`budget_report` and :func:`privacy_profiles`)."""
    return {method: plan_guarantees(plan, method=method, guarantee_of=guarantee_of) for method in methods}


PlanGuarantees = Sequence[Guarantee] | Mapping[str, Sequence[Guarantee]]
"""The planned guarantees: one list for every method, or a list per method
(:func:`guarantees_by_method`)."""


def _for_method(guarantees: PlanGuarantees, method: str) -> list[Guarantee]:
    return list(guarantees[method]) if isinstance(guarantees, Mapping) else list(guarantees)


def claimed_epsilon_delta(item: PlannedMeasurement) -> tuple[float, float]:
    """The (epsilon, delta) the statistic's mechanism claims at its parameters."""
    mechanism, params = _validated(item)
    return mechanism.epsilon_delta(params, item.query)


def guarantee_epsilon_delta(guarantee: Guarantee, delta: float) -> tuple[float, float]:
    """(epsilon, delta) of one guarantee: its fixed pair when it has one (pure, approximate,
    Laplace), else the epsilon of its own privacy profile at ``delta`` (an upper bound)."""
    pair = fixed_approx(guarantee)
    if pair is not None:
        return pair
    if not 0 < delta < 1:
        return math.inf, 0.0
    return epsilon_of(guarantee, delta), delta


def guarantees_epsilon_delta(guarantees: Sequence[Guarantee], delta: float) -> list[tuple[float, float]]:
    """:func:`guarantee_epsilon_delta` of each guarantee; Gaussian noise solved all together
    (:func:`gaussian_epsilons`, the same upper bounds), as a ledger may hold thousands."""
    pairs: list[tuple[float, float] | None] = [
        None if isinstance(g, GaussianNoise) and 0 < delta < 1 else guarantee_epsilon_delta(g, delta)
        for g in guarantees
    ]
    waiting = [i for i, pair in enumerate(pairs) if pair is None]
    if waiting:
        mus = np.array([guarantees[i].sensitivity / guarantees[i].sigma for i in waiting])  # type: ignore[union-attr]
        for i, eps in zip(waiting, gaussian_epsilons(delta, mus).tolist(), strict=True):
            pairs[i] = (eps, delta)
    return pairs  # type: ignore[return-value]


# ------------------------------------------------------------------ totals
def _pure_sum(guarantees: Sequence[Guarantee]) -> float:
    """Basic composition with delta = 0 (Dwork & Roth 2014, Theorem 3.16): the epsilons of pure
    guarantees add. NotApplicableError if some guarantee has a delta > 0."""
    total = 0.0
    for g in guarantees:
        pair = fixed_approx(g)
        if pair is None or pair[1] > 0:
            raise NotApplicableError(
                f"{type(g).__name__} is not pure ε-DP, so it has no ε at δ = 0; set a budget δ > 0"
            )
        total += pair[0]
    return total


@dataclass(frozen=True)
class _Composed:
    method: str
    epsilon: float | None
    reason: str


def _compose_each(guarantees: PlanGuarantees, delta: float, methods: Sequence[str]) -> list[_Composed]:
    """:func:`_compose_all` of each method's own list (one composition per distinct list)."""
    lists: dict[tuple[Guarantee, ...], list[str]] = {}
    for method in methods:
        lists.setdefault(tuple(_for_method(guarantees, method)), []).append(method)
    out = {}
    for items, names in lists.items():
        grouped = counted(list(items)) if delta > 0 and items else list(items)  # validated once
        out.update({r.method: r for r in _compose_all(grouped, delta, names)})  # type: ignore[arg-type]
    return [out[method] for method in methods]


def _compose_all(guarantees: Sequence[Guarantee], delta: float, methods: Sequence[str]) -> list[_Composed]:
    if delta > 0:
        report = compose(guarantees, delta=delta, methods=methods)
        return [_Composed(r.method, r.epsilon, r.reason) for r in report.results]
    out = []
    for method in methods:
        if method != "basic":
            out.append(_Composed(method, None, "a budget with δ = 0 allows only basic composition"))
            continue
        try:
            out.append(_Composed(method, _pure_sum(guarantees), "epsilons add (Dwork & Roth Thm 3.16)"))
        except NotApplicableError as exc:
            out.append(_Composed(method, None, str(exc)))
    return out


def composed_epsilon(guarantees: Sequence[Guarantee], method: str, delta: float) -> float:
    """epsilon of the list at ``delta`` under ``method`` (upper bound); delta = 0 allows only
    basic composition of pure guarantees. NotApplicableError (with the reason) otherwise."""
    (result,) = _compose_all(guarantees, delta, (method,))
    if result.epsilon is None:
        raise NotApplicableError(f"{method}: {result.reason}")
    return result.epsilon


def best_total(guarantees: Sequence[Guarantee], delta: float) -> tuple[str, float]:
    """(method, epsilon) of the applicable accountant with the smallest epsilon at ``delta`` (each
    is an upper bound, so the smallest is too). NotApplicableError when none applies."""
    results = [r for r in _compose_all(guarantees, delta, METHODS) if r.epsilon is not None]
    if not results:
        raise NotApplicableError(f"no accountant bounds this list at δ = {fig(delta)}")
    best = min(results, key=lambda r: r.epsilon)  # type: ignore[arg-type, return-value]
    return best.method, float(best.epsilon)  # type: ignore[arg-type]


@dataclass(frozen=True)
class MethodTotal:
    """One accountant's totals: epsilon of what is released, and of released + planned, both
    upper bounds at the budget's delta; None when the method does not apply (``reason`` says why,
    else how the number was obtained). ``fits``: the total is within the budget's epsilon."""

    method: str
    released: float | None
    total: float | None
    reason: str
    fits: bool


@dataclass(frozen=True)
class BudgetReport:
    """Totals of a plan under every accountant against the budget (epsilon, delta).

    ``best`` is the applicable method with the smallest total (each is a valid upper bound, so the
    smallest is too); ``remaining`` = budget epsilon - that total (negative when over budget),
    ``remaining_before`` the same for the released measurements alone."""

    budget_epsilon: float
    budget_delta: float
    methods: tuple[MethodTotal, ...]
    best: str | None
    remaining: float | None
    remaining_before: float | None
    fits: bool
    message: str = field(default="")

    def get(self, method: str) -> MethodTotal:
        for total in self.methods:
            if total.method == method:
                return total
        raise KeyError(f"method {method!r} was not computed")


def _check_budget(epsilon: float, delta: float) -> None:
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise InvalidParameterError(f"the budget ε must be a positive number; got {epsilon!r}")
    if not (math.isfinite(delta) and 0 <= delta < 1):
        raise InvalidParameterError(f"the budget δ must be in [0, 1); got {delta!r}")


def _budget_message(best: MethodTotal | None, budget_epsilon: float, budget_delta: float) -> str:
    if best is None:
        return (
            f"No accountant can bound this plan at δ = {fig(budget_delta)}: see each method's reason; "
            "raise the budget δ or remove statistics with a δ of their own."
        )
    assert best.total is not None
    name = METHOD_LABELS.get(best.method, best.method)
    if best.fits:
        return (
            f"The plan fits: it uses ε = {privacy_up(best.total)} of the budget ε = {fig(budget_epsilon)} "
            f"under {name} composition, leaving ε = {left_of(budget_epsilon, best.total)}."
        )
    return (
        f"The plan does not fit: even the tightest accountant ({name}) needs ε = "
        f"{privacy_up(best.total)}, more than the budget ε = {fig(budget_epsilon)}. Remove statistics, "
        "lower their ε, or loosen their target errors."
    )


def budget_report(
    plan_guarantees: PlanGuarantees,
    released_guarantees: Sequence[Guarantee],
    budget_epsilon: float,
    budget_delta: float,
    methods: Sequence[str] = METHODS,
) -> BudgetReport:
    """Compose the released guarantees, and released + planned (each method its own list when
    ``plan_guarantees`` is a mapping), under every method at the budget's delta and compare each
    total with the budget's epsilon (every epsilon an upper bound, see
    :mod:`dpexplorer.core.accounting.compose`)."""
    _check_budget(budget_epsilon, budget_delta)
    ledger: Sequence[Guarantee] = released_guarantees
    if budget_delta > 0:  # validate and group a long ledger once (counted returns its result as is)
        ledger = counted(released_guarantees)  # type: ignore[assignment]
    released = _compose_all(ledger, budget_delta, methods)
    everything = {m: [*released_guarantees, *_for_method(plan_guarantees, m)] for m in methods}
    total = _compose_each(everything, budget_delta, methods)
    rows = tuple(
        MethodTotal(
            method=t.method,
            released=r.epsilon if t.epsilon is not None else None,
            total=t.epsilon,
            reason=t.reason,
            fits=t.epsilon is not None and t.epsilon <= budget_epsilon,
        )
        for r, t in zip(released, total, strict=True)
    )
    applicable = [row for row in rows if row.total is not None]
    best = min(applicable, key=lambda row: row.total) if applicable else None  # type: ignore[arg-type, return-value]
    before = [r.epsilon for r in released if r.epsilon is not None]
    return BudgetReport(
        budget_epsilon=budget_epsilon,
        budget_delta=budget_delta,
        methods=rows,
        best=best.method if best else None,
        remaining=budget_epsilon - best.total if best and best.total is not None else None,
        remaining_before=budget_epsilon - min(before) if before else None,
        fits=bool(best and best.fits),
        message=_budget_message(best, budget_epsilon, budget_delta),
    )


Profile = tuple[np.ndarray, np.ndarray]
"""Points (deltas, epsilons) of a privacy profile epsilon(delta), for plotting."""

PLD_PROFILE_POINTS = 32


def _pld_profile(guarantees: Sequence[Guarantee], deltas: np.ndarray) -> Profile:
    """The tight profile read the other way round: delta(eps) at PLD_PROFILE_POINTS epsilons
    between epsilon(max deltas) and epsilon(min deltas), keeping the points within the deltas'
    span. Each point (delta(eps), eps) lies on the accountant's pessimistic profile (an upper
    bound); delta(eps) costs a fraction of a root-finding epsilon(delta) with Gaussian noise."""
    low, high = float(np.min(deltas)), float(np.max(deltas))
    try:
        pld = pld_of(guarantees)
        top, bottom = pld.epsilon(low), pld.epsilon(high)
    except NotApplicableError:
        return np.asarray(deltas, dtype=float), np.full(np.shape(deltas), np.nan)
    epsilons = np.linspace(bottom, top, PLD_PROFILE_POINTS)
    values = pld.deltas(epsilons)
    keep = (values >= low * (1 - 1e-9)) & (values <= high * (1 + 1e-9))
    return values[keep], epsilons[keep]


def privacy_profiles(
    guarantees: PlanGuarantees, deltas: np.ndarray, methods: Sequence[str] = METHODS
) -> dict[str, Profile]:
    """epsilon(delta) of the composed list under each method (each its own list when
    ``guarantees`` is a mapping), as (deltas, epsilons) points: at ``deltas`` from
    :func:`compose.privacy_profile` (NaN where the method does not apply), and for ``pld`` read
    from its delta(eps) (:func:`_pld_profile`). Every epsilon is an upper bound."""
    grid = np.asarray(deltas, dtype=float)
    out = {}
    for method in methods:
        items = _for_method(guarantees, method)
        if not items:
            out[method] = (grid, np.zeros(grid.shape))
        elif method == "pld":
            out[method] = _pld_profile(counted(items), grid)  # type: ignore[arg-type]
        else:
            out[method] = (grid, privacy_profile(counted(items), method, grid))
    return out


REPEATS = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000)
"""The numbers of releases :func:`repeated_totals` is drawn at by the window (compare mode)."""


def repeated_totals(
    guarantee: Guarantee | Mapping[str, Guarantee],
    repeats: Sequence[int],
    delta: float,
    methods: Sequence[str] = METHODS,
) -> dict[str, np.ndarray]:
    """epsilon at ``delta`` of k releases of one statistic, for each k of ``repeats``, under each
    method of ``methods`` (``guarantee``: one release's, or one per method as
    :func:`guarantees_by_method` prices it). Every value is an upper bound under its theorem
    (:func:`_compose_all`: with delta = 0 only basic composition of a pure guarantee applies, k
    times its epsilon); NaN where the method does not apply at that k. The k copies enter the
    accountants as one (guarantee, k) pair, so k = 1000 costs about as much as k = 1."""
    ks = [int(k) for k in repeats]
    if any(k < 1 for k in ks):
        raise InvalidParameterError(f"the numbers of releases must be >= 1; got {list(repeats)!r}")
    if not (math.isfinite(delta) and 0 <= delta < 1):
        raise InvalidParameterError(f"δ must be in [0, 1); got {delta!r}")
    out = {}
    for method in methods:
        one = guarantee[method] if isinstance(guarantee, Mapping) else guarantee
        values = np.full(len(ks), np.nan)
        for i, k in enumerate(ks):
            if delta > 0:
                (result,) = compose([(one, k)], delta=delta, methods=(method,)).results
                epsilon = result.epsilon
            else:
                (composed,) = _compose_all([one], 0.0, (method,))
                epsilon = None if composed.epsilon is None else k * composed.epsilon
            if epsilon is not None and math.isfinite(epsilon):
                values[i] = epsilon
        out[method] = values
    return out


# ------------------------------------------------------------------ accuracy-first planning
def _epsilon_param(mechanism: Mechanism) -> Param:
    for param in mechanism.params:
        if param.name == "epsilon":
            return param
    raise InvalidParameterError(
        f"{mechanism.label} has no ε parameter, so its ε cannot be solved for or shared"
    )


def _epsilon_range(param: Param) -> tuple[float, float]:
    low = max(param.low or 0.0, SMALLEST_EPSILON)
    high = param.high if param.high is not None else param.slider_span()[1]
    return low, high


def solve_epsilon_for_error(
    mechanism: Mechanism | str,
    params: Mapping[str, Any],
    query: QueryInput,
    target_halfwidth: float,
    ci_level: float = 0.95,
) -> float:
    """The smallest epsilon (within the declared range) at which the mechanism's own exact
    ``accuracy(...).ci_halfwidth`` at ``ci_level`` is at most ``target_halfwidth``.

    Root finding (scipy.optimize.brentq) on log halfwidth(log epsilon), which is linear for
    Laplace and Gaussian noise, so it converges in a few evaluations; the root is then nudged
    up until the target is met (the returned epsilon meets it and is within 1e-9 relative of
    the exact root). Raises DPExplorerError when the target cannot be met in the declared range.
    Assumes the half-width decreases as epsilon grows (true of every noise-adding mechanism)."""
    mech = _mechanism(mechanism)
    if not (math.isfinite(target_halfwidth) and target_halfwidth > 0):
        raise InvalidParameterError(f"the target error must be a positive number; got {target_halfwidth!r}")
    if not 0 < ci_level < 1:
        raise InvalidParameterError(f"the confidence level must be in (0, 1); got {ci_level!r}")
    param = _epsilon_param(mech)
    low, high = _epsilon_range(param)

    def halfwidth(epsilon: float) -> float:
        values = mech.validate({**params, "epsilon": epsilon})
        return mech.accuracy(values, query, ci_level=ci_level).ci_halfwidth

    def gap(log_epsilon: float) -> float:
        return math.log(halfwidth(math.exp(log_epsilon))) - math.log(target_halfwidth)

    best = halfwidth(high)
    if best > target_halfwidth:
        raise DPExplorerError(
            f"a half-width of {target_halfwidth:.4g} at {ci_level:.0%} cannot be reached: even "
            f"ε = {high:g} (the largest {mech.label} allows) gives ±{best:.4g}; accept a larger error"
        )
    if halfwidth(low) <= target_halfwidth:
        return low
    root = math.exp(optimize.brentq(gap, math.log(low), math.log(high), xtol=1e-12, rtol=1e-12))
    for _ in range(60):
        if root >= high or halfwidth(root) <= target_halfwidth:
            break
        root *= 1 + 1e-10
    return min(root, high)


def _param_items(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((k, v) for k, v in params.items() if k != "epsilon"))


@functools.lru_cache(maxsize=128)
def _solved(
    mechanism: str, params: tuple[tuple[str, Any], ...], query: QueryInput, halfwidth: float, level: float
) -> float:
    return solve_epsilon_for_error(mechanism, dict(params), query, halfwidth, level)


def apply_target(item: PlannedMeasurement) -> PlannedMeasurement:
    """The item with its epsilon solved from its target (unchanged when it has none). Results
    are cached per (mechanism, other parameters, query, target), so a redraw does not re-solve."""
    if item.target is None:
        return item
    target, others = item.target, _param_items(item.params)
    try:
        hash(others)
    except TypeError:  # a parameter that is not a plain value: solve without the cache
        epsilon = solve_epsilon_for_error(
            item.mechanism, item.params, item.query, target.halfwidth, target.ci_level
        )
    else:
        epsilon = _solved(item.mechanism, others, item.query, target.halfwidth, target.ci_level)
    return replace(item, params={**item.params, "epsilon": epsilon})


# ------------------------------------------------------------------ sharing what is left
def _scaled(item: PlannedMeasurement, factor: float) -> PlannedMeasurement:
    return replace(item, params={**item.params, "epsilon": item.params["epsilon"] * factor})


def _with_epsilon(item: PlannedMeasurement) -> PlannedMeasurement:
    """The item with its epsilon written out (the declared default filled in)."""
    mechanism, params = _validated(item)
    _epsilon_param(mechanism)
    return replace(item, params={**item.params, "epsilon": params["epsilon"]})


def _largest_factor(free: Sequence[PlannedMeasurement]) -> float:
    factors = []
    for item in free:
        _, high = _epsilon_range(_epsilon_param(_mechanism(item.mechanism)))
        factors.append(high / item.params["epsilon"])
    return min(factors) * (1 - 1e-12)  # so that round-off never takes an epsilon past its range


def _smallest_factor(free: Sequence[PlannedMeasurement]) -> float:
    return max(SMALLEST_EPSILON / item.params["epsilon"] for item in free)


def share_budget(
    plan: Sequence[PlannedMeasurement],
    budget_epsilon: float,
    budget_delta: float,
    method: str,
    *,
    released: Sequence[Guarantee] = (),
    sampling_rate: float | None = None,
    guarantee_of: GuaranteeOf | None = None,
) -> Plan:
    """The plan with the epsilons of the statistics not held (nor solved from a target) scaled by
    one common factor so that everything (``released`` + held + scaled) composes under ``method``
    to the budget (HEADROOM below it, or a little more where the accountant's total jumps with
    the epsilons, as the pessimistic PLD grid does: about 1e-5 relative). The factor is found by
    brentq on its logarithm; the composed epsilon is then checked and the factor lowered until it
    fits, so the returned plan is within the budget under ``method`` (an upper bound), each
    statistic priced by ``guarantee_of``. If even the largest declared epsilons fit, they are
    used. Raises DPExplorerError when the held statistics alone do not fit, or the method does
    not apply."""
    _check_budget(budget_epsilon, budget_delta)
    fixed = [item for item in plan if item.fixed]
    free = [_with_epsilon(item) for item in plan if not item.fixed]
    base = list(released) + plan_guarantees(fixed, sampling_rate, method=method, guarantee_of=guarantee_of)
    target = budget_epsilon * (1 - HEADROOM)
    name = METHOD_LABELS.get(method, method)

    @functools.cache  # the bracket and the checks ask for some factors twice
    def total(factor: float) -> float:
        scaled = [_scaled(item, factor) for item in free]
        try:
            return composed_epsilon(
                base + plan_guarantees(scaled, sampling_rate, method=method, guarantee_of=guarantee_of),
                method,
                budget_delta,
            )
        except NotApplicableError as exc:
            raise DPExplorerError(f"cannot share the budget under {name} composition: {exc}") from None

    used = composed_epsilon(base, method, budget_delta) if base else 0.0
    whose = "the held statistics alone" + (" (with what is already released)" if released else "")
    if used > target or (free and total(_smallest_factor(free)) > target):
        raise DPExplorerError(
            f"{whose} use ε = {used:.4g} of the budget ε = {budget_epsilon:g} under {name} "
            "composition, leaving nothing for the others: release a hold, loosen a target error, "
            "or raise the budget"
        )
    if not free:
        return tuple(plan)
    factor = _largest_factor(free)
    if total(factor) > target:
        now = total(1.0)  # the guess below is exact for basic composition (epsilons add)
        guess = (target - used) / (now - used) if now > used else factor
        low, high = _bracket(total, target, guess, math.log(_smallest_factor(free)), math.log(factor))
        log_root = optimize.brentq(lambda x: total(math.exp(x)) - target, low, high, xtol=1e-10)
        factor = _lower_until_fits(total, math.exp(log_root), target)
    shared = iter(_scaled(item, factor) for item in free)
    return tuple(item if item.fixed else next(shared) for item in plan)


def _bracket(
    total: Callable[[float], float], target: float, guess: float, low: float, high: float
) -> tuple[float, float]:
    """A bracket [a, b] of log factors around log ``guess`` with total(e^a) <= target < total(e^b),
    widened geometrically; ``low`` and ``high`` are known to fit and not to fit."""
    a = b = min(max(math.log(guess), low), high)
    step = 0.02
    if total(math.exp(a)) > target:
        while a > low and total(math.exp(a)) > target:
            b, a, step = a, max(a - step, low), step * 2
    else:
        while b < high and total(math.exp(b)) <= target:
            a, b, step = b, min(b + step, high), step * 2
    return a, b


def _lower_until_fits(total: Callable[[float], float], factor: float, target: float) -> float:
    """Lower ``factor`` by relative steps 1e-10, 2e-10, 4e-10, ... until ``total(factor) <=
    target`` (a handful of steps: brentq leaves the root within 1e-10 of a point that fits)."""
    step = 1e-10
    for _ in range(40):
        if total(factor) <= target:
            return factor
        factor *= 1 - step
        step *= 2
    raise DPExplorerError("the shared budget could not be made to fit (the accountant is not monotone)")
