"""The exact release path of every mechanism, or a clear refusal.

A path turns (mechanism, validated parameters, query input) into an
:class:`~dpexplorer.release.exact.ExactRelease` WITHOUT drawing anything: the guarantee to
charge, what to write in the provenance, and a ``draw(bits)`` that produces the released values.
The release pipeline (:mod:`.release`) charges the ledger first and calls ``draw`` afterwards.

| mechanism | exact path | charged |
| --- | --- | --- |
| laplace | discrete Laplace on a 2^k grid | PureDP(eps' <= eps) |
| gaussian | discrete Gaussian on a 2^k grid | ZCDP(rho' <= rho); (eps, delta) of CKS Thm 7 under pld |
| exponential, noisy_max (gumbel) | rejection sampling with Bernoulli(exp(-gamma)) | PureDP(eps) |
| noisy_max (exponential noise) | permute-and-flip | PureDP(eps) |
| noisy_max (Laplace noise) | argmax of lazy exact Laplace noise (interval arithmetic) | PureDP(eps) |
| smooth_* (3) | admissible noise from lazy uniforms, rounded to a public grid | the claim |
| topk (both methods) | peeling, k exact exponential mechanisms | PureDP(eps) |
| ptr | discrete distance test, discrete Laplace answer | the mechanism's (2 eps, delta) |
| dist2instability(_mode) | discrete distance test, exact median / mode | the mechanism's (eps, delta) |
| sparse_vector | discrete Laplace thresholds and tests on a grid | PureDP(eps) |
| pmw | discrete Laplace thresholds, tests and answers on a grid | PureDP(eps) |
| blr | error level by lazy-uniform inversion, then a uniform candidate of it | PureDP(eps) |
| mwem | exact exponential selections, discrete Laplace measurements | PureDP(eps' <= eps) |
| noisy_mean | discrete Laplace on the centred sum and the count, clamped ratio | PureDP(eps' <= eps) |
| noisy_mean, private keys | noisy_mean on the keys a noisy threshold keeps | ApproxDP(eps'+eps_sel', delta) |
| noisy_variance | discrete Laplace on the count, centred sum and squares, clamped | PureDP(eps' <= eps) |
| dp_quantile | exact exponential mechanism over the declared grid | PureDP(eps) |
| mst, aim | exact exponential selections, discrete Gaussian measurements of marginals | ZCDP(rho) |

Refused (NotApplicableError says so): any mechanism added later until it gets a path here. Details and
citations: :mod:`.numeric_paths`, :mod:`.selection_paths`, :mod:`.svt_paths`, :mod:`.exact`."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import ModuleType
from typing import Any

from dpexplorer.core.accounting.guarantees import GaussianNoise, LaplaceNoise
from dpexplorer.core.errors import NotApplicableError
from dpexplorer.core.mechanisms.base import Mechanism, NumericInput, QueryInput
from dpexplorer.release.exact import ExactRelease

Path = Callable[[Mechanism, Mapping[str, Any], Any, float], ExactRelease]


def _paths(name: str) -> ModuleType:
    """``dpexplorer.release.<name>``, imported when a release first needs it: the smooth paths
    import scipy.stats, the synthetic ones their own stack, which a count never needs."""
    return importlib.import_module(f"dpexplorer.release.{name}")


def _lazy(module: str, function: str) -> Path:
    """The path ``module.function`` (mechanism, params, query, level), imported on first call."""

    def path(mechanism: Mechanism, params: Mapping[str, Any], query: Any, level: float) -> ExactRelease:
        return getattr(_paths(module), function)(mechanism, params, query, level)

    return path


def _laplace(mechanism: Mechanism, params: Mapping[str, Any], query: Any, level: float) -> ExactRelease:
    noise = mechanism.noise(params, query)  # type: ignore[attr-defined]
    assert isinstance(noise, LaplaceNoise)
    return _paths("numeric_paths").laplace_release(query, noise, level)


def _gaussian(mechanism: Mechanism, params: Mapping[str, Any], query: Any, level: float) -> ExactRelease:
    noise = mechanism.noise(params, query)  # type: ignore[attr-defined]
    assert isinstance(noise, GaussianNoise)
    return _paths("numeric_paths").gaussian_release(query, noise, float(params["delta"]), level)


def _noisy_max(mechanism: Mechanism, params: Mapping[str, Any], query: Any, level: float) -> ExactRelease:
    noise = params.get("noise", "gumbel")
    if noise == "gumbel":
        return _exponential(mechanism, params, query, level)
    if noise == "exponential":
        selection = _paths("selection_paths")
        return selection.selection_release(
            query, params, selection.permute_and_flip_pick, selection.PERMUTE_AND_FLIP_SAMPLER
        )
    return _paths("continuous_paths").noisy_max_laplace_release(mechanism, params, query, level)


def _exponential(mechanism: Mechanism, params: Mapping[str, Any], query: Any, level: float) -> ExactRelease:
    selection = _paths("selection_paths")
    return selection.selection_release(
        query, params, selection.exponential_pick, selection.EXPONENTIAL_SAMPLER
    )


PATHS: dict[str, Path] = {
    "laplace": _laplace,
    "gaussian": _gaussian,
    "exponential": _exponential,
    "noisy_max": _noisy_max,
    "topk": lambda m, p, q, level: _paths("selection_paths").topk_release(q, p),
    "ptr": _lazy("numeric_paths", "ptr_release"),
    "dist2instability": lambda m, p, q, level: _paths("numeric_paths").d2i_median_release(m, p, q),
    "dist2instability_mode": lambda m, p, q, level: _paths("selection_paths").d2i_mode_release(m, p, q),
    "sparse_vector": lambda m, p, q, level: _paths("svt_paths").sparse_vector_release(q, p),
    "pmw": lambda m, p, q, level: _paths("svt_paths").pmw_release(q, p),
    "smooth_cauchy": _lazy("continuous_paths", "smooth_release"),
    "smooth_student_t": _lazy("continuous_paths", "smooth_release"),
    "smooth_lln": _lazy("continuous_paths", "smooth_release"),
    "blr": _lazy("synthetic_paths", "blr_release"),
    "mwem": _lazy("synthetic_paths", "mwem_release"),
    "noisy_mean": _lazy("ratio_paths", "noisy_mean_release"),
    "dp_quantile": _lazy("selection_paths", "dp_quantile_release"),
    "noisy_variance": _lazy("ratio_paths", "noisy_variance_release"),
    "mst": _lazy("synthetic_tables", "marginal_release"),
    "aim": _lazy("synthetic_tables", "marginal_release"),
}
"""Mechanism name -> exact path (module docstring)."""


def exact_release(
    mechanism: Mechanism, params: Mapping[str, Any], query: QueryInput, ci_level: float = 0.95
) -> ExactRelease:
    """The exact release path of ``mechanism`` at validated ``params``; NotApplicableError with
    the reason when there is none (nothing is ever sampled with floating point)."""
    reason = mechanism.accepts(query)
    if reason is not None:
        raise NotApplicableError(reason)
    path = PATHS.get(mechanism.name)
    if path is None:
        raise NotApplicableError(
            f"{mechanism.label} cannot be released exactly (no exact sampler for it here); explore "
            f"it in the app, or release with one of: {', '.join(PATHS)}"
        )
    candidates = query.partition if isinstance(query, NumericInput) else None
    if isinstance(query, NumericInput) and candidates is not None:
        refused = _paths("partition_paths").refusal(mechanism.name, query.statistic)
        if refused is not None:
            raise NotApplicableError(refused)
    release = path(mechanism, params, query, ci_level)
    if not isinstance(query, NumericInput) or not query.key_columns:
        return release
    if candidates is not None:
        release = _paths("partition_paths").select_keys(release, candidates, ci_level)
    else:
        release = replace(release, group_keys=query.group_keys)
    return replace(release, key_columns=query.key_columns)
