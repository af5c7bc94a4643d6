"""A quantile by privately selected keys (issue 16): the query is accepted, the data layer hands
over each candidate's sorted clipped values and number of persons with sensitivities from the
declared bounds only, the release publishes nothing that depends on keys it does not select, its
exact output law (threshold, then one exponential-mechanism draw per kept key at epsilon / k with
the score sensitivity times r) meets the charged (epsilon, delta) on every output of small data
(brute force), the sampler follows that law, and every released value is a grid point of
[lower, upper]."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats
from scipy.special import softmax

from dpexplorer.core.accounting.guarantees import ApproxDP
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.base import NumericInput
from dpexplorer.core.mechanisms.dp_quantile import candidates, scores
from dpexplorer.core.partition_selection import keep_probability
from dpexplorer.data.answers import query_input
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import GroupBy, PrivacyUnit, PrivateKeys, query_from_dict
from dpexplorer.release import partition_paths
from dpexplorer.release.exact import ExactRelease
from dpexplorer.release.ledger import Ledger
from dpexplorer.release.plans import exact_release
from dpexplorer.release.release import execute, prepare_input
from dpexplorer.release.samplers import SeededBitSource
from tests.release.test_partition_paths import release_by_private_department

LOW, HIGH, BINS = 0.0, 10.0, 2
POINTS = candidates((LOW, HIGH), BINS)


def _query(unit: PrivacyUnit | None = None, delta: float = 0.12, q: float = 0.5, **more: Any) -> GroupBy:
    return GroupBy((), "quantile", "x", LOW, HIGH, unit, PrivateKeys(("g",), 1.0, delta), q, **more)


def _built(tmp_path: Path, frame: pl.DataFrame, query: GroupBy, name: str = "d.csv") -> NumericInput:
    frame.write_csv(tmp_path / name)
    built = query_input(load_dataset(tmp_path / name), query, "add_remove", bounding_seed=0, exact_sums=True)
    assert isinstance(built, NumericInput)
    return built


def _release(built: NumericInput, epsilon: float = 1.0, bins: int = BINS) -> ExactRelease:
    mech = registry.get("dp_quantile")
    return exact_release(mech, mech.validate({"epsilon": epsilon, "bins": bins}), built)


def _rows(groups: dict[str, list[tuple[int, float]]]) -> pl.DataFrame:
    """A frame from {key: [(person, x), ...]}."""
    rows = [(p, g, x) for g, part in groups.items() for p, x in part]
    return pl.DataFrame({"p": [r[0] for r in rows], "g": [r[1] for r in rows], "x": [r[2] for r in rows]})


def test_the_refusal_is_gone_and_the_query_round_trips() -> None:
    """Built from the query alone (it used to be refused: "needs declared keys"), and the same
    after to_dict / query_from_dict, with the quantile and the keys' origin."""
    query = _query(PrivacyUnit("p", 2, 3), q=0.9)
    assert query_from_dict(query.to_dict()) == query
    assert query.to_dict()["keys_origin"] == "selected privately (noisy threshold)"
    assert query.to_dict()["q"] == 0.9


@pytest.mark.parametrize("unit", [True, False])
def test_candidates_carry_their_persons_and_sorted_clipped_values(tmp_path: Path, unit: bool) -> None:
    """Bounds that drop nothing: each candidate key's persons (rows, when each row is a person)
    and sorted clipped values equal a brute-force computation; the missing key is a candidate of
    its own; with a unit, the sensitivities and (k, r) come from the declared k = 5 although only
    three keys occur (their number is private)."""
    rng = np.random.default_rng(4)
    frame = pl.DataFrame(
        {
            "p": rng.integers(0, 30, 120),
            "g": rng.choice(["a", "b", None], 120, p=[0.6, 0.3, 0.1]),
            "x": rng.uniform(-3, 13, 120).round(2),
        }
    )
    built = _built(tmp_path, frame, _query(PrivacyUnit("p", 5, 1000) if unit else None))
    assert built.partition is not None and built.group_values_d is not None
    expected: dict[tuple[str, ...], tuple[int, list[float]]] = {}
    for (g,), part in frame.group_by(["g"]):
        key = ("(missing)",) if g is None else (str(g),)
        persons = part["p"].n_unique() if unit else part.height
        expected[key] = (persons, sorted(np.clip(part["x"].to_numpy(), LOW, HIGH)))
    got = {
        key: (n, list(values))
        for key, n, values in zip(
            built.partition.keys, built.partition.persons, built.group_values_d, strict=True
        )
    }
    assert got == expected
    if unit:
        assert built.group_contribution == (5, 1000) and built.partition.max_keys == 5
        assert built.sensitivity_l1 == 5 * (HIGH - LOW)
    else:
        assert built.group_contribution is None and built.partition.max_keys == 1
        assert built.sensitivity_l1 == HIGH - LOW
    assert len(built.labels) == len(built.value_d) == len(built.group_values_d_prime) == 3  # type: ignore[arg-type]


def test_d_prime_moves_a_candidate_group(tmp_path: Path) -> None:
    """Two private key columns whose product has empty cells (a, y) and (b, x): the views' D'
    adds its row to a group that occurs (so D and D' differ in a shown coordinate), not to an
    empty cell, which is no candidate."""
    frame = pl.DataFrame({"g": ["a", "b"], "h": ["x", "y"], "x": [2.0, 2.0]})
    query = GroupBy((), "quantile", "x", LOW, HIGH, private=PrivateKeys(("g", "h"), 1.0, 1e-3))
    built = _built(tmp_path, frame, query)
    assert built.partition is not None and built.partition.keys == (("a", "x"), ("b", "y"))
    assert not np.array_equal(built.value_d, built.value_d_prime)
    assert "plus one row in group" in built.differing_row


# ---------------------------------------------------------------- the exact law, brute force
BASE = {
    "a": [(1, 1.0), (2, 3.0), (2, 4.0), (3, 2.0)],
    "b": [(1, 9.0), (4, 6.0)],
    "c": [(5, 7.0)],
}
"""Persons 1 to 5 in keys a, b, c: at most 2 keys and 2 rows per key each (the bounds of UNIT
drop nothing, so the bounded data are these rows whatever the seed)."""
UNIT = PrivacyUnit("p", 2, 2)
NEIGHBOURS = {
    "a person with two new keys' rows and two in a": {
        "a": [(9, 10.0), (9, 10.0)],
        "e": [(9, 10.0), (9, 10.0)],
    },
    "a person in two keys that exist": {"a": [(9, 10.0), (9, 10.0)], "b": [(9, 0.0), (9, 0.0)]},
    "a person with one new key": {"f": [(9, 5.0)]},
}


def _with(extra: dict[str, list[tuple[int, float]]]) -> dict[str, list[tuple[int, float]]]:
    return {g: BASE.get(g, []) + extra.get(g, []) for g in {*BASE, *extra}}


def _law(
    built: NumericInput, release: ExactRelease, epsilon_per_group: float | None = None
) -> dict[tuple[Any, ...], float]:
    """P(output) for every output (kept keys, and a grid point for each), from the candidates'
    persons and values and the release's public parameters: each key kept independently with
    probability P(persons + Z >= threshold), then its value drawn with probability proportional
    to exp(eps_g u(c) / (2 Delta_u))."""
    assert built.partition is not None and built.group_values_d is not None
    t, s, threshold, _ = partition_paths.rule(built.partition)
    eps_g = release.provenance["epsilon_per_group"] if epsilon_per_group is None else epsilon_per_group
    delta_u = release.provenance["score_sensitivity"]
    keys, points = built.partition.keys, candidates((LOW, HIGH), release.provenance["bins"])
    keep = [keep_probability(c, t, s, threshold) for c in built.partition.persons]
    values = [
        softmax(eps_g / (2 * delta_u) * scores(v, points, built.quantile)) for v in built.group_values_d
    ]
    out: dict[tuple[Any, ...], float] = {}
    for chosen in itertools.product((False, True), repeat=len(keys)):
        p_set = math.prod(k if c else 1 - k for k, c in zip(keep, chosen, strict=True))
        kept = [i for i, c in enumerate(chosen) if c]
        for picks in itertools.product(range(points.size), repeat=len(kept)):
            p = p_set * math.prod(float(values[i][j]) for i, j in zip(kept, picks, strict=True))
            out[tuple((keys[i], j) for i, j in zip(kept, picks, strict=True))] = p
    return out


def _hockey_stick(p: dict[Any, float], q: dict[Any, float], epsilon: float) -> float:
    """max over both directions of sum_o max(0, P(o) - e^eps Q(o)): the smallest delta at eps."""
    outputs = p.keys() | q.keys()
    return max(
        sum(max(0.0, a.get(o, 0.0) - math.exp(epsilon) * b.get(o, 0.0)) for o in outputs)
        for a, b in ((p, q), (q, p))
    )


@pytest.mark.parametrize("neighbour", NEIGHBOURS)
def test_every_output_meets_the_charged_epsilon_and_delta(tmp_path: Path, neighbour: str) -> None:
    """D and D' = D plus one person (at most 2 keys, 2 rows in each): over every output (which
    keys are kept and the grid point of each), the exact laws differ by at most the charged
    (epsilon, delta); a new key alone spends the delta on the chance of keeping it."""
    on_d = _built(tmp_path, _rows(BASE), _query(UNIT), "d.csv")
    on_dp = _built(tmp_path, _rows(_with(NEIGHBOURS[neighbour])), _query(UNIT), "dp.csv")
    release, release_p = _release(on_d), _release(on_dp)
    assert isinstance(release.guarantee, ApproxDP) and release.delta == 0.12
    assert release.provenance == release_p.provenance and release.epsilon == release_p.epsilon
    assert release.provenance["epsilon_per_group"] == 0.5 and release.provenance["score_sensitivity"] == 1.0
    law, law_p = _law(on_d, release), _law(on_dp, release_p)
    assert sum(law.values()) == pytest.approx(1.0) and sum(law_p.values()) == pytest.approx(1.0)
    delta = _hockey_stick(law, law_p, release.epsilon)
    t, s, threshold, exact = partition_paths.rule(on_d.partition)  # type: ignore[arg-type]
    assert delta <= exact
    if neighbour == "a person with one new key":  # all of it: the chance the new key is kept
        assert delta == pytest.approx(keep_probability(1, t, s, threshold), rel=1e-9)


def _max_loss(p: dict[Any, float], q: dict[Any, float]) -> float:
    return max(abs(math.log(p[o] / q[o])) for o in p)


def test_the_worst_person_reaches_the_charged_epsilon_and_no_more(tmp_path: Path) -> None:
    """Two keys of 20 persons each, every value 5 (each median concentrated on the grid point 5),
    below the threshold (each key's chance of being kept moves by the full e^(s/t)); D' adds a
    person with 2 rows at 10 in both. The same keys on both sides, so the law is pure DP: its
    largest privacy loss over all outputs is at most the charged epsilon (4 + 1) and within 0.15
    of it, so drawing each key at the whole epsilon (no split by k = 2) would exceed it."""
    base = {"a": [(i, 5.0) for i in range(20)], "b": [(i + 20, 5.0) for i in range(20)]}
    person = {"a": [(99, 10.0), (99, 10.0)], "b": [(99, 10.0), (99, 10.0)]}
    query = _query(UNIT, delta=1e-6)
    on_d = _built(tmp_path, _rows(base), query, "d.csv")
    on_dp = _built(tmp_path, _rows({g: base[g] + person[g] for g in base}), query, "dp.csv")
    release, release_p = _release(on_d, 4.0, 4), _release(on_dp, 4.0, 4)
    assert partition_paths.rule(on_d.partition)[2] > 21  # type: ignore[arg-type]
    law, law_p = _law(on_d, release), _law(on_dp, release_p)
    assert law.keys() == law_p.keys()
    assert release.epsilon - 0.15 < _max_loss(law, law_p) <= release.epsilon + 1e-9
    assert _max_loss(_law(on_d, release, 4.0), _law(on_dp, release_p, 4.0)) > release.epsilon + 1


def test_the_sampler_follows_the_law(tmp_path: Path) -> None:
    """3,000 releases on BASE: each key's keep frequency within 4.5 standard errors of its exact
    probability, and its values, when kept, follow the exponential mechanism at epsilon / k
    (chi-square p > 1e-4); every value a grid point of [lower, upper]."""
    built = _built(tmp_path, _rows(BASE), _query(UNIT))
    release = _release(built)
    assert built.partition is not None and built.group_values_d is not None
    t, s, threshold, _ = partition_paths.rule(built.partition)
    bits, draws = SeededBitSource(8), 3_000
    seen: dict[tuple[str, ...], list[float]] = {key: [] for key in built.partition.keys}
    for _ in range(draws):
        values = release.draw(bits)
        kept = [tuple(k) for k in release.dp_outputs["kept_keys"]]
        assert len(values) == len(kept) == len(release.released_labels())
        for key, value in zip(kept, values, strict=True):
            seen[key].append(float(value))
    assert all(v in set(POINTS) for part in seen.values() for v in part)
    for key, n, values in zip(
        built.partition.keys, built.partition.persons, built.group_values_d, strict=True
    ):
        p = keep_probability(n, t, s, threshold)
        assert 0.01 < p < 0.99  # the test can fail
        assert abs(len(seen[key]) / draws - p) <= 4.5 * math.sqrt(p * (1 - p) / draws), key
        law = softmax(0.5 / 2 * scores(values, POINTS, 0.5))
        observed = np.array([seen[key].count(float(c)) for c in POINTS])
        assert stats.chisquare(observed, law * observed.sum()).pvalue > 1e-4


# ---------------------------------------------------------------- what is published
def test_the_release_publishes_the_same_when_a_person_brings_new_keys(tmp_path: Path) -> None:
    """D against D' = D plus one person whose only key is new (kept or not, same random bits):
    the same grid of candidates, the same provenance outside ``dp_outputs`` (no number of
    groups), the same charge."""
    query = _query(UNIT, delta=1e-6)
    sidecars, grids = [], []
    for i, groups in enumerate((BASE, _with({"new": [(9, 10.0)]}))):
        built = _built(tmp_path, _rows(groups), query, f"{i}.csv")
        grids.append(registry.get("dp_quantile").points({"epsilon": 1.0, "bins": BINS}, built))
        prepared = prepare_input(
            built, "dp_quantile", {"epsilon": 1.0, "bins": BINS}, fingerprint="ab" * 32, query=query.to_dict()
        )
        with Ledger(tmp_path / f"{i}.sqlite") as ledger:
            ledger.set_budget("ab" * 32, 10.0, 1e-3, "basic")
            result = execute(prepared, ledger=ledger, out_dir=tmp_path / f"out{i}", bits=SeededBitSource(5))
        sidecar = json.loads(result.files["provenance"].read_text())
        assert "groups" not in sidecar["discretisation"]
        sidecars.append(
            {
                k: v
                for k, v in sidecar.items()
                if k not in {"time", "ledger_path", "dataset_id", "dp_outputs", "files"}
            }
        )
    assert np.array_equal(grids[0], grids[1])
    assert sidecars[0] == sidecars[1]
    assert sidecars[0]["guarantee_charged"] == {"type": "ApproxDP", "epsilon": 2.0, "delta": 1e-6}


def test_the_stewards_views_show_each_candidate_and_the_whole_charge(tmp_path: Path) -> None:
    """The accuracy notes name every candidate with its persons and chance of being kept (the
    steward's own view, as for a mean by private keys); the claim adds the selection's (epsilon,
    delta); the neighbours' pmfs are those of a candidate where D and D' differ."""
    built = _built(tmp_path, _rows(BASE), _query(UNIT))
    mech = registry.get("dp_quantile")
    params = mech.validate({"epsilon": 1.0, "bins": BINS})
    notes = " ".join(mech.accuracy(params, built).notes)
    assert "Keys selected privately" in notes
    for key, n in zip(built.partition.keys, built.partition.persons, strict=True):  # type: ignore[union-attr]
        assert f"g = {key[0]}: {n} persons, kept with probability" in notes
    assert mech.epsilon_delta(params, built) == (2.0, 0.12)
    assert mech.guarantee(params, built) == ApproxDP(2.0, 0.12)
    out = mech.output_distribution(params, built)
    assert out.density_d.sum() == pytest.approx(1.0) and "of 3" in out.note


def test_median_cost_by_private_department_from_the_cli(tmp_path: Path) -> None:
    """visits.csv, departments selected privately, each patient bounded to 2 departments and 3
    visits: one CSV row per kept department, every median a grid point of [0, 500], the rule and
    the exact delta in the provenance, (epsilon + epsilon_keys, delta) charged."""
    sidecar, kept, table = release_by_private_department(
        tmp_path, {"statistic": "quantile", "q": 0.5}, "dp_quantile", {"epsilon": 1.0, "bins": 100}
    )
    assert sidecar["epsilon"] == 1.5 and sidecar["delta"] == 1e-6
    assert sidecar["discretisation"]["epsilon_per_group"] == 0.5
    assert sidecar["discretisation"]["score_sensitivity"] == 1.5
    assert kept and table.columns == [
        "department",
        "label",
        "value",
        "ci_low",
        "ci_high",
        "interval",
        "rank_within_rows",
    ]
    assert set(table["department"]) == kept and table.height == len(kept)
    assert (table["interval"] == "declared range").all() and (table["rank_within_rows"] > 0).all()
    grid = set(np.round(candidates((0.0, 500.0), 100), 9))
    (values,) = (p for p in (tmp_path / "out").glob("*.json") if not p.name.endswith("provenance.json"))
    assert all(
        round(v["value"], 9) in grid for v in json.loads(values.read_text())["values"]
    )  # full precision
