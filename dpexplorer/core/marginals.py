"""Marginal-based synthetic data (MST and AIM): the query input, the interface of the two DP
steps, the exact selection score, and the post-processing (estimation of a model from noisy
marginals, records drawn from it, the workload error).

The DP part of MST and AIM is two mechanisms, run through :class:`PrivateSteps`:

* selection: the exponential mechanism (McSherry & Talwar 2007) choosing a marginal r with
  probability proportional to exp(epsilon u_r / (2 Delta_u)). It is epsilon-DP and, having
  bounded range, epsilon^2 / 8-zCDP (Cesar & Rogers 2021, Lemma 3.2; used by McKenna et al.
  2022, Section 4);
* measurement: Gaussian noise of variance sigma^2 on every cell of one marginal's counts:
  Delta_2^2 / (2 sigma^2)-zCDP (Bun & Steinke 2016, Proposition 1.6; the discrete Gaussian of the
  release path the same, Canonne, Kamath & Steinke 2020, Theorem 14), Delta_2 the l2 sensitivity
  of one marginal's count vector.

Budgets are exact rationals (:class:`fractions.Fraction`), rounded so that every step costs at
most what the accounting says: epsilon is rounded down (:func:`sqrt_down`), sigma^2 computed
exactly from the rational budget (a sampler may only round it up).

Scores are exact too: ``u = w (||c - m||_1 - b)`` with c the integer counts (private), m the
model's marginal (public: computed from earlier noisy measurements only) rounded to the public
lattice 2^-20, and b a public float. One person changes the l1 distance by at most the l1
sensitivity of the counts (triangle inequality), exactly, because the lattice is fixed before
the data is read (:func:`l1_distance`).

Everything after the measurements (estimation, records) is post-processing: it reads only the
noisy measurements and public facts (Dwork & Roth 2014, Proposition 2.1). Private-PGM (``mbi``,
McKenna, Sheldon & Miklau 2019) and JAX are imported inside the functions that use them, so
importing this module costs nothing of theirs."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Any, Literal, Protocol

import numpy as np

from dpexplorer.core.cancel import CancelToken, ProgressFn, checkpoint
from dpexplorer.core.errors import InvalidParameterError, NotApplicableError

Clique = tuple[int, ...]
"""A marginal: the indices of its columns, ascending."""

LATTICE_BITS = 20
"""The public lattice 2^-20 on which a model's marginal is rounded before the exact score."""
DENSE_LIMIT = 1 << 16
"""Largest full domain (cells) the dense estimator holds; larger domains need Private-PGM."""


# ---------------------------------------------------------------- the query input
@dataclass(frozen=True, eq=False)
class MarginalInput:
    """The marginals of a table over a public, discretised domain (one per candidate clique).

    ``labels[i]`` are column i's public cells (declared categories plus "(any other)", or declared bins
    plus "missing"); ``marginals_d[clique]`` the integer counts of D over the clique's cells,
    row-major in the order of its columns, for every clique MST and AIM may measure
    (:func:`candidate_cliques`). ``sensitivity_l1`` and ``sensitivity_l2_squared`` are the
    largest change of ONE marginal's count vector between neighbours (add/remove of one person
    with at most ``max_rows`` rows: r and r^2; replace of one row: 2 and 2), integers, exact.
    ``n`` is private (the steward's view only)."""

    columns: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    workload: tuple[Clique, ...]
    marginals_d: Mapping[Clique, np.ndarray]
    n: int
    sensitivity_l1: int = 1
    sensitivity_l2_squared: int = 1
    relation: Literal["add_remove", "replace"] = "add_remove"
    max_rows: int = 1
    differing_row: str = ""
    statistic: str = "marginals"
    bins: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    """Each column's public declaration (categories or bin edges), for the provenance."""

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(lab) for lab in self.labels)

    def size(self, clique: Clique) -> int:
        return math.prod(self.sizes[i] for i in clique)

    def counts(self, clique: Clique) -> np.ndarray:
        """D's integer counts of ``clique`` (private)."""
        return self.marginals_d[clique]

    def name(self, clique: Clique) -> str:
        return " × ".join(self.columns[i] for i in clique)

    def cell_labels(self, clique: Clique) -> list[str]:
        """One label per cell of ``clique``, e.g. "sex = Male, race = White"."""
        names = [[f"{self.columns[i]} = {lab}" for lab in self.labels[i]] for i in clique]
        return [", ".join(combo) for combo in itertools.product(*names)]

    def public_domain(self) -> dict[str, Any]:
        """The domain, workload and sensitivities: public facts for the provenance."""
        return {
            "columns": list(self.columns),
            "cells": {c: list(lab) for c, lab in zip(self.columns, self.labels, strict=True)},
            "bins": list(self.bins),
            "workload": [[self.columns[i] for i in cl] for cl in self.workload],
            "marginal_sensitivity_l1": self.sensitivity_l1,
            "marginal_sensitivity_l2_squared": self.sensitivity_l2_squared,
            "rows_per_person": self.max_rows,
        }


def downward_closure(cliques: Sequence[Clique]) -> list[Clique]:
    """Every non-empty subset of every clique, sorted by size then columns."""
    out = {sub for cl in cliques for k in range(1, len(cl) + 1) for sub in itertools.combinations(cl, k)}
    return sorted(out, key=lambda c: (len(c), c))


def candidate_cliques(n_columns: int, workload: Sequence[Clique]) -> list[Clique]:
    """What MST and AIM may measure: every 1- and 2-way marginal (MST's tree) and the downward
    closure of the workload (AIM's candidates)."""
    pairs = list(itertools.combinations(range(n_columns), 2))
    return downward_closure([*[(i,) for i in range(n_columns)], *pairs, *workload])


def marginalise(counts: np.ndarray, sizes: Sequence[int], clique: Clique, sub: Clique) -> np.ndarray:
    """The counts of ``sub`` (a subset of ``clique``) summed out of ``clique``'s flat counts
    (exact for integer counts)."""
    table = np.asarray(counts).reshape([sizes[i] for i in clique])
    drop = tuple(k for k, i in enumerate(clique) if i not in sub)
    return table.sum(axis=drop).ravel() if drop else table.ravel()


# ---------------------------------------------------------------- exact budgets and scores
def sqrt_down(x: Fraction, bits: int = 40) -> Fraction:
    """A rational lower bound of sqrt(x) within 2^-bits of it (x >= 0)."""
    if x <= 0:
        return Fraction(0)
    scale = 1 << bits
    return Fraction(math.isqrt(math.floor(x * scale * scale)), scale)


def em_cost(epsilon: Fraction) -> Fraction:
    """zCDP of the exponential mechanism at ``epsilon``: epsilon^2 / 8 (module docstring)."""
    return epsilon * epsilon / 8


def gaussian_cost(sigma2: Fraction, l2_squared: int) -> Fraction:
    """zCDP of Gaussian noise of variance ``sigma2`` on a vector of squared l2 sensitivity
    ``l2_squared``: Delta^2 / (2 sigma^2)."""
    return Fraction(l2_squared) / (2 * sigma2)


def sigma2_for(rho: Fraction, l2_squared: int) -> Fraction:
    """The variance whose Gaussian measurement costs exactly ``rho``."""
    return Fraction(l2_squared) / (2 * rho)


def l1_distance(counts: np.ndarray, model: np.ndarray) -> Fraction:
    """||c - m'||_1 exactly, m' the public ``model`` rounded to multiples of 2^-20 (module
    docstring): integers on the lattice, summed in Python integers."""
    scale = 1 << LATTICE_BITS
    c = np.asarray(counts, dtype=np.int64)
    m = np.rint(np.asarray(model, dtype=float) * scale)
    if not np.all(np.isfinite(m)):
        m = np.nan_to_num(m, nan=0.0, posinf=0.0, neginf=0.0)
    diff = np.abs(c.astype(object) * scale - m.astype(np.int64).astype(object))
    return Fraction(int(diff.sum()), scale)


# ---------------------------------------------------------------- the two DP steps
class PrivateSteps(Protocol):
    """Where the noise comes from: the seeded generator (exploration, :class:`SeededSteps`) or
    the exact samplers (release: dpexplorer.release.synthetic_tables)."""

    def select(self, scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction) -> int:
        """Index r drawn with probability proportional to exp(epsilon u_r / (2 sensitivity))."""
        ...

    def measure(self, counts: np.ndarray, sigma2: Fraction) -> np.ndarray:
        """counts + noise of variance at least ``sigma2`` per cell, as floats."""
        ...


class SeededSteps:
    """Exploration: the Gumbel-max exponential mechanism and continuous Gaussian noise from a
    seeded numpy Generator (never used by a release)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def select(self, scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction) -> int:
        logits = np.array([float(epsilon * u / (2 * sensitivity)) for u in scores])
        return int(np.argmax(logits + self.rng.gumbel(size=len(logits))))

    def measure(self, counts: np.ndarray, sigma2: Fraction) -> np.ndarray:
        return np.asarray(counts, dtype=float) + self.rng.normal(0.0, math.sqrt(sigma2), size=len(counts))


@dataclass(frozen=True)
class Measurement:
    """One noisy marginal: its clique, the noisy counts and the noise variance (public)."""

    clique: Clique
    values: np.ndarray
    sigma2: Fraction


@dataclass(frozen=True)
class Round:
    """One selection round of AIM (or MST): what was measured, at what budget, chosen among how
    many candidates. All DP outputs or public."""

    clique: Clique
    epsilon: float
    sigma: float
    candidates: int


@dataclass
class Transcript:
    """The DP outputs of a run: every measurement, the selection rounds, the zCDP spent (exact)."""

    measurements: list[Measurement] = field(default_factory=list)
    rounds: list[Round] = field(default_factory=list)
    rho_spent: Fraction = Fraction(0)
    model: Any = None
    """The last model a run fitted on the way (AIM; post-processing, None for MST): the final
    fit starts from it."""

    def describe(self, query: MarginalInput) -> dict[str, Any]:
        """JSON-ready: the selected marginals and the rounds (DP outputs)."""
        return {
            "measured": [
                {"marginal": [query.columns[i] for i in m.clique], "sigma": math.sqrt(m.sigma2)}
                for m in self.measurements
            ],
            "rounds": [
                {
                    "marginal": [query.columns[i] for i in r.clique],
                    "epsilon": r.epsilon,
                    "sigma": r.sigma,
                    "candidates": r.candidates,
                }
                for r in self.rounds
            ],
            "rho_spent": float(self.rho_spent),
        }


# ---------------------------------------------------------------- estimation (post-processing)
class Model(Protocol):
    """A distribution over the domain fitted to the noisy marginals, scaled to ``total`` rows."""

    total: float

    def project(self, clique: Clique) -> np.ndarray:
        """The model's counts on ``clique``'s cells (floats, row-major)."""
        ...

    def sample(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        """``rows`` records as an (rows, columns) int array of cell indices."""
        ...


def estimated_total(measurements: Sequence[Measurement]) -> float:
    """The inverse-variance weighted mean of the measured marginals' sums (at least 1)."""
    weights = [1.0 / (float(m.sigma2) * len(m.values)) for m in measurements]
    sums = [float(np.sum(m.values)) for m in measurements]
    total = sum(w * s for w, s in zip(weights, sums, strict=True)) / sum(weights)
    return max(total, 1.0)


@dataclass
class DenseModel:
    """The whole joint distribution over the (small) domain, fitted by entropic mirror descent
    to the weighted least-squares loss sum_m ||total A_m p - y_m||^2 / sigma_m^2 (Private-PGM's
    objective, McKenna et al. 2019, without the graphical model's factorisation)."""

    sizes: tuple[int, ...]
    p: np.ndarray
    total: float

    def project(self, clique: Clique) -> np.ndarray:
        table = self.p.reshape(self.sizes)
        drop = tuple(i for i in range(len(self.sizes)) if i not in clique)
        return self.total * (table.sum(axis=drop).ravel() if drop else table.ravel())

    def sample(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        cells = rng.choice(self.p.size, size=rows, p=self.p / self.p.sum())
        return np.stack(np.unravel_index(cells, self.sizes), axis=1).astype(np.int64)


def fit_dense(
    sizes: tuple[int, ...],
    measurements: Sequence[Measurement],
    iterations: int = 500,
    *,
    warm: DenseModel | None = None,
    cancel: CancelToken | None = None,
) -> DenseModel:
    """:class:`DenseModel` of the noisy measurements (post-processing)."""
    cells = math.prod(sizes)
    if cells > DENSE_LIMIT:
        raise NotApplicableError(
            f"the domain has {cells:,} cells, more than the dense estimator holds ({DENSE_LIMIT:,}); "
            "choose the Private-PGM estimator"
        )
    total = estimated_total(measurements)
    p = warm.p.copy() if warm is not None and warm.p.size == cells else np.full(cells, 1.0 / cells)
    index = np.indices(sizes).reshape(len(sizes), -1)
    parts = []
    for m in measurements:
        # each full cell's position in the clique's marginal
        sub = np.ravel_multi_index(tuple(index[i] for i in m.clique), tuple(sizes[i] for i in m.clique))
        parts.append((sub, np.asarray(m.values, dtype=float) / total, 1.0 / float(m.sigma2)))
    norm = sum(w for _, _, w in parts)
    parts = [(sub, target, w / norm) for sub, target, w in parts]

    def loss(q: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = 0.0, np.zeros(cells)
        for sub, target, w in parts:
            residual = np.bincount(sub, weights=q, minlength=target.size) - target
            value += w * float(residual @ residual)
            gradient += (2 * w) * residual[sub]
        return value, gradient

    # entropic mirror descent with a backtracking step (the loss is 2-smooth relative to the
    # entropy once the weights sum to 1; the step grows while the sufficient-decrease test holds)
    eta = 1.0
    value, gradient = loss(p)
    for it in range(iterations):
        if it % 25 == 0:
            checkpoint(cancel)
        log_p = np.log(np.maximum(p, 1e-300))
        while True:
            logits = log_p - eta * gradient
            logits -= logits.max()
            q = np.exp(logits)
            q /= q.sum()
            new_value, new_gradient = loss(q)
            kl = float(q @ (np.log(np.maximum(q, 1e-300)) - log_p))
            if new_value <= value + float(gradient @ (q - p)) + kl / eta or eta < 1e-12:
                break
            eta /= 2
        done = value - new_value <= 1e-15 * max(value, 1e-300)
        p, value, gradient, eta = q, new_value, new_gradient, eta * 2
        if done:
            break
    return DenseModel(sizes, p, total)


def _jax() -> Any:
    """JAX configured for Private-PGM (64-bit floats; no persistent compilation cache), imported
    on first use only."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import jax
    except ImportError:
        raise NotApplicableError(
            "Private-PGM needs JAX and mbi: install dpexplorer's synth extra "
            "(pip install 'dpexplorer[synth]')"
        ) from None
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)
    return jax


@dataclass
class PGMModel:
    """A Private-PGM graphical model (``mbi.MarkovRandomField``) over the named domain."""

    columns: tuple[str, ...]
    sizes: tuple[int, ...]
    model: Any
    total: float
    _tree: Any = field(default=None, repr=False)

    def calibrated(self) -> tuple[Any, list[str], Any]:
        """(junction tree, elimination order, the tree's clique marginals), computed once: one
        message-passing pass (``mbi.marginal_oracles.message_passing_stable``)."""
        if self._tree is None:
            _jax()
            from mbi import junction_tree, marginal_oracles

            model = self.model
            tree, order = junction_tree.make_junction_tree(model.domain, [tuple(c) for c in model.cliques])
            beliefs = marginal_oracles.message_passing_stable(
                model.potentials.expand(list(tree.nodes)), model.total
            )
            self._tree = (tree, order, beliefs)
        return self._tree

    def project(self, clique: Clique) -> np.ndarray:
        """The model's counts on ``clique``: from the calibrated junction tree, in numpy (a
        clique inside one tree node is that node's marginal summed down; one across nodes is
        the product of the beliefs over the smallest subtree holding its columns divided by its
        separators' beliefs, summed by einsum: exact for a calibrated tree). mbi's own
        variable elimination compiled JAX code for every new clique and model: about a second
        each, 36 per AIM round on Adult."""
        names = tuple(self.columns[i] for i in clique)
        tree, _, beliefs = self.calibrated()
        if beliefs.supports(names):
            return np.asarray(beliefs.project(names).datavector(flatten=True), dtype=float)
        try:
            return self._across(names, tree, beliefs)
        except Exception:  # anything the tree cannot answer: mbi's own way (compiles JAX code)
            factor = self.model.project(names)
            return np.asarray(factor.datavector(flatten=True), dtype=float)

    def _across(self, names: tuple[str, ...], tree: Any, beliefs: Any) -> np.ndarray:
        import networkx as nx  # type: ignore[import-untyped]

        index = {c: i for i, c in enumerate(self.columns)}
        holders = [next(node for node in tree.nodes if a in node) for a in names]
        # the tree may be a forest: columns in different components are independent under the
        # model, so their joint is the product of the components' marginals over total^(k-1)
        component = {node: k for k, part in enumerate(nx.connected_components(tree)) for node in part}
        first: dict[int, Any] = {}
        nodes = set()
        for holder in holders:
            start = first.setdefault(component[holder], holder)
            nodes.update(nx.shortest_path(tree, start, holder))
        sub = tree.subgraph(nodes)
        operands: list[Any] = [np.asarray(float(self.model.total) ** (1 - len(first))), []]
        for node in sub.nodes:
            table = beliefs.project(tuple(node)).datavector(flatten=False)
            operands += [np.asarray(table, dtype=float), [index[a] for a in node]]
        for u, v in sub.edges:
            separator = tuple(a for a in u if a in v)
            if separator:
                mu = np.asarray(beliefs.project(separator).datavector(flatten=False), dtype=float)
            else:
                mu = np.asarray(float(self.model.total))
            inverse = np.divide(1.0, mu, out=np.zeros_like(mu), where=mu > 0)
            operands += [inverse, [index[a] for a in separator]]
        out = np.einsum(*operands, [index[a] for a in names], optimize="greedy")
        return np.asarray(out, dtype=float).ravel()

    def sample(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        return _sample_pgm(self, rows, rng)


def fit_pgm(
    columns: tuple[str, ...],
    sizes: tuple[int, ...],
    measurements: Sequence[Measurement],
    iterations: int = 1000,
    *,
    warm: PGMModel | None = None,
    cancel: CancelToken | None = None,
) -> PGMModel:
    """Private-PGM's mirror descent (``mbi.estimation.MirrorDescent``) on the noisy marginals
    (post-processing). The first fit of a clique structure compiles JAX code (seconds, not
    cancellable); ``cancel`` is checked every 50 steps of the fit (mbi's callback)."""
    _jax()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import mbi
        from mbi.estimation import MirrorDescent

    domain = mbi.Domain(columns, sizes)
    linear = [
        mbi.LinearMeasurement(
            np.asarray(m.values, dtype=float),
            tuple(columns[i] for i in m.clique),
            stddev=math.sqrt(m.sigma2),
        )
        for m in measurements
    ]
    total = estimated_total(measurements)
    model = MirrorDescent().estimate(
        domain,
        linear,
        known_total=total,
        iters=iterations,
        warm_start=warm.model if warm else None,
        callback_fn=lambda _: checkpoint(cancel),
    )
    return PGMModel(columns, sizes, model, total)


def _sample_pgm(pgm: PGMModel, rows: int, rng: np.random.Generator) -> np.ndarray:
    """Records drawn i.i.d. from the graphical model with ``rng``: the columns in the junction
    tree's elimination order, each from its conditional law given the columns already drawn in
    its cliques (as ``mbi.MarkovRandomField.synthetic_data(method="sample")``, whose global numpy
    randomness a release cannot choose)."""
    domain = pgm.model.domain
    jtree, order, marginals = pgm.calibrated()
    cliques = [set(cl) for cl in jtree.nodes]
    index = {c: i for i, c in enumerate(pgm.columns)}
    out = np.zeros((rows, len(pgm.columns)), dtype=np.int64)
    used: list[str] = []
    for col in order[::-1]:
        related = set().union(*[cl for cl in cliques if col in cl])
        parents = tuple(c for c in used if c in related)
        table = np.asarray(marginals.project((*parents, col)).datavector(flatten=False), dtype=float)
        table = np.maximum(table, 0.0).reshape(-1, domain[col])
        sums = table.sum(axis=1, keepdims=True)
        cond = np.divide(table, sums, out=np.full_like(table, 1.0 / domain[col]), where=sums > 0)
        cdf = np.cumsum(cond, axis=1)
        if parents:
            parent_sizes = tuple(domain[c] for c in parents)
            key = np.ravel_multi_index(tuple(out[:, index[c]] for c in parents), parent_sizes)
        else:
            key = np.zeros(rows, dtype=np.int64)
        u = rng.random(rows)
        drawn = (u[:, None] >= cdf[key]).sum(axis=1)
        out[:, index[col]] = np.minimum(drawn, domain[col] - 1)
        used.append(col)
    return out


Estimator = Literal["auto", "pgm", "dense"]


def choose_estimator(sizes: Sequence[int], estimator: str) -> str:
    """ "dense" or "pgm": ``auto`` takes the dense estimator when the whole domain holds at most
    :data:`DENSE_LIMIT` cells (no JAX compile; decided from the public domain alone)."""
    if estimator == "auto":
        return "dense" if math.prod(sizes) <= DENSE_LIMIT else "pgm"
    if estimator == "dense" and math.prod(sizes) > DENSE_LIMIT:
        raise InvalidParameterError(
            f"the dense estimator holds at most {DENSE_LIMIT:,} cells; this domain has "
            f"{math.prod(sizes):,}: choose pgm or auto"
        )
    return estimator


Fitter = Callable[[Sequence[Measurement], "Model | None"], "Model"]


def fitter(
    query: MarginalInput, estimator: str, iterations: int, cancel: CancelToken | None = None
) -> Fitter:
    """fit(measurements, warm model) with the chosen estimator (:func:`choose_estimator`)."""
    dense = choose_estimator(query.sizes, estimator) == "dense"
    estimate: Callable[..., Model] = fit_dense if dense else partial(fit_pgm, query.columns)
    model_type = DenseModel if dense else PGMModel

    def fit(measurements: Sequence[Measurement], warm: Model | None) -> Model:
        checkpoint(cancel)
        start = warm if isinstance(warm, model_type) else None  # a warm start of the other kind is ignored
        return estimate(query.sizes, measurements, iterations, warm=start, cancel=cancel)

    return fit


def model_size_mb(query: MarginalInput, cliques: Sequence[Clique], estimator: str) -> float:
    """The memory of the model over ``cliques`` in MB: Private-PGM's junction-tree size
    (``mbi.junction_tree.hypothetical_model_size``), or the dense table's (public facts only)."""
    if choose_estimator(query.sizes, estimator) == "dense":
        return math.prod(query.sizes) * 8 / 2**20
    _jax()
    import mbi
    from mbi import junction_tree

    domain = mbi.Domain(query.columns, query.sizes)
    return float(
        junction_tree.hypothetical_model_size(domain, [tuple(query.columns[i] for i in c) for c in cliques])
    )


# ---------------------------------------------------------------- records and their error
def record_marginal(records: np.ndarray, sizes: Sequence[int], clique: Clique) -> np.ndarray:
    """Counts of the records over ``clique``'s cells (row-major)."""
    shape = tuple(sizes[i] for i in clique)
    if len(records) == 0:
        return np.zeros(math.prod(shape))
    idx = np.ravel_multi_index(tuple(records[:, i] for i in clique), shape)
    return np.bincount(idx, minlength=math.prod(shape)).astype(float)


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    """Total-variation distance between two count vectors, each normalised (0 if one is empty)."""
    sa, sb = float(np.sum(a)), float(np.sum(b))
    if sa <= 0 or sb <= 0:
        return 1.0 if sa != sb else 0.0
    return 0.5 * float(np.abs(np.asarray(a) / sa - np.asarray(b) / sb).sum())


def workload_errors(
    query: MarginalInput, records: np.ndarray, cliques: Sequence[Clique] | None = None
) -> dict[Clique, float]:
    """The total-variation distance between the true and the synthetic marginal of every
    workload clique (or ``cliques``): EXPLORATION ONLY, it reads the true counts."""
    chosen = query.workload if cliques is None else cliques
    return {cl: tvd(query.counts(cl), record_marginal(records, query.sizes, cl)) for cl in chosen}


@dataclass(frozen=True, eq=False)
class SyntheticResult:
    """A run: the DP transcript, the fitted model and the synthetic records (cell indices)."""

    transcript: Transcript
    model: Model
    records: np.ndarray
    seconds: float = 0.0

    def table(self, query: MarginalInput) -> dict[str, list[str]]:
        """The records as columns of cell labels."""
        return {col: [query.labels[i][v] for v in self.records[:, i]] for i, col in enumerate(query.columns)}


def synthesise(
    query: MarginalInput,
    transcript: Transcript,
    fit: Fitter,
    rows: int,
    rng: np.random.Generator,
    model: Model | None = None,
    progress: ProgressFn | None = None,
) -> SyntheticResult:
    """Post-processing of ``transcript``: the model (refitted unless given) and ``rows`` records
    (0: the model's estimated total, rounded)."""
    if model is None:
        model = fit(transcript.measurements, transcript.model)
    count = int(rows) if rows > 0 else max(1, round(float(model.total)))
    records = model.sample(count, rng)
    if progress is not None:
        progress(1.0)
    return SyntheticResult(transcript, model, records)
