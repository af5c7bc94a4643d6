"""What a release publishes (dpexplorer/release/published.py): every published interval covers
at its stated level, through the release path (the exact draw, then the declared
post-processing), and the post-processing options do what they say.

Coverage: for every statistic x mechanism that releases a number, ``REPS`` seeded draws of the
release path on a small dataset; the published interval must hold the true (clipped) answer at
least ``level - 3 standard errors`` of the time. Intervals of kind "range" (the declared range:
smooth sensitivity, the DP quantile) and "exact" cover always (conservative by design), so their
coverage is 1; the DP quantile's rank interval is checked on its own."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dpexplorer.data.answers import query_input, true_answer
from dpexplorer.data.load import load_dataset
from dpexplorer.data.queries import query_from_dict
from dpexplorer.release.presentation import EMPTY
from dpexplorer.release.published import Drawn, declared, publish
from dpexplorer.release.release import prepare_input, published_values
from dpexplorer.release.samplers import SeededBitSource

LEVEL = 0.9
REPS = 200
AGE = {"column": "age", "lower": 17, "upper": 90}
CITIES = ["a", "b", "c", "d"]  # "d" holds no row
BY_CITY = {"type": "group_by", "keys": [{"column": "city", "categories": CITIES}]}
E = {"epsilon": 0.5}
DP = {"epsilon": 0.5, "delta": 1e-6}
CASES = [
    ({"type": "count"}, "laplace", E),
    ({"type": "count"}, "gaussian", DP),
    ({"type": "sum", **AGE}, "laplace", E),
    ({"type": "mean", **AGE}, "laplace", E),
    ({"type": "mean", **AGE}, "gaussian", DP),
    ({"type": "mean", **AGE}, "noisy_mean", E),
    ({"type": "variance", **AGE}, "laplace", E),
    ({"type": "variance", **AGE}, "noisy_variance", E),
    ({"type": "quantile", **AGE, "q": 0.5}, "laplace", E),
    ({"type": "quantile", **AGE, "q": 0.5}, "ptr", {**DP, "bound": 5.0}),
    ({"type": "quantile", **AGE, "q": 0.5}, "dist2instability", {"epsilon": 2.0, "delta": 1e-6}),
    ({"type": "quantile", **AGE, "q": 0.5}, "smooth_student_t", E),
    ({"type": "quantile", **AGE, "q": 0.5}, "dp_quantile", E),
    ({"type": "trimmed_mean", **AGE, "trim_fraction": 0.1}, "gaussian", DP),
    ({"type": "histogram", "axis": {"column": "city", "categories": CITIES}}, "laplace", E),
    ({**BY_CITY, "statistic": "count"}, "gaussian", DP),
    ({**BY_CITY, "statistic": "mean", **AGE}, "laplace", E),
    ({**BY_CITY, "statistic": "mean", **AGE}, "noisy_mean", E),
    ({**BY_CITY, "statistic": "quantile", **AGE, "q": 0.5}, "dp_quantile", E),
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """230 rows: ages 17-90 (a stable median: 80 rows share it), cities a-c (d has none)."""
    rng = np.random.default_rng(7)
    ages = np.concatenate([rng.integers(17, 91, 150), np.full(80, 45)])
    rows = ["age,city"] + [f"{a},{'abc'[i % 3]}" for i, a in enumerate(ages)]
    path: Path = tmp_path_factory.mktemp("published") / "d.csv"
    path.write_text("\n".join(rows) + "\n")
    return load_dataset(path)


def _prepared(dataset: Any, query: dict, mechanism: str, params: dict, **options: bool) -> Any:
    built = query_input(dataset, query_from_dict(query), "add_remove", exact_sums=True)
    return prepare_input(
        built,
        mechanism,
        params,
        fingerprint="f",
        query=query,
        ci_level=LEVEL,
        post_processing=options or None,
    )


def _truth(dataset: Any, query: dict) -> list[float | None]:
    """The true (clipped) answer per released statistic value (None: an empty group's mean)."""
    if query["type"] != "group_by":
        answer = true_answer(dataset, query_from_dict(query))
        return [float(a) for a in np.atleast_1d(answer)]
    out: list[float | None] = []
    frame = dataset.frame
    for city in [*CITIES, "other"]:  # "other": the rows of no declared key (none here)
        ages = np.clip(frame.filter(frame["city"] == city)["age"].to_numpy().astype(float), 17, 90)
        if query["statistic"] == "count":
            out.append(float(len(ages)))
        elif not len(ages):
            out.append(None)
        elif query["statistic"] == "mean":
            out.append(float(ages.mean()))
        else:
            out.append(float(np.sort(ages)[max(1, math.ceil(0.5 * len(ages))) - 1]))
    return out


@pytest.mark.parametrize(
    ("query", "mechanism", "params"), CASES, ids=[f"{q.get('statistic', q['type'])}-{m}" for q, m, _ in CASES]
)
def test_published_intervals_cover_at_their_level(dataset, query, mechanism, params) -> None:
    prepared = _prepared(dataset, query, mechanism, params)
    truth = _truth(dataset, query)
    bits = SeededBitSource(2028)
    hits = np.zeros(len(truth))
    seen = np.zeros(len(truth))
    kinds: set[str | None] = set()
    for _ in range(REPS):
        values = prepared.exact.draw(bits)
        labels = prepared.exact.released_labels()
        published = published_values(prepared, labels, values)
        main = [i for i, label in enumerate(labels) if not label.endswith("(noisy)")]
        assert len(main) == len(truth)
        for j, i in enumerate(main):
            value, interval = published.values[i], published.intervals[i]
            if truth[j] is None or value in ("⊥", EMPTY):  # no answer, or an empty group
                continue
            assert interval is not None, (mechanism, labels[i], value)
            assert interval[0] <= value <= interval[1]
            kinds.add(published.kinds[i])
            seen[j] += 1
            hits[j] += interval[0] <= truth[j] <= interval[1]  # type: ignore[operator]
    covered = seen > 0
    assert covered.any()
    rate = hits[covered] / seen[covered]
    floor = LEVEL - 3 * np.sqrt(LEVEL * (1 - LEVEL) / seen[covered])
    assert (rate >= floor).all(), (mechanism, rate, floor, kinds)
    if kinds <= {"range", "exact"}:  # conservative by design: the declared range, or exact
        assert (rate == 1).all()


def test_dp_quantile_rank_interval_covers(dataset) -> None:
    """The DP quantile's rank interval: the rows below the released value differ from q n by at
    most rank_within more than at the best candidate, at least LEVEL - 3 SE of the time."""
    query = {"type": "quantile", **AGE, "q": 0.5}
    prepared = _prepared(dataset, query, "dp_quantile", {"epsilon": 0.2})
    ages = np.sort(np.clip(dataset.frame["age"].to_numpy().astype(float), 17, 90))
    n, q = len(ages), 0.5
    within = prepared.exact.provenance["rank_within_rows"]
    points = np.linspace(17, 90, prepared.parameters["bins"] + 1)

    def score(c: float) -> float:
        below, above = np.searchsorted(ages, c, "left"), n - np.searchsorted(ages, c, "right")
        return abs((1 - q) * below - q * above)

    best = min(score(c) for c in points)
    bits = SeededBitSource(5)
    hits = sum(score(float(prepared.exact.draw(bits)[0])) <= best + within for _ in range(REPS))
    assert hits / REPS >= LEVEL - 3 * math.sqrt(LEVEL * (1 - LEVEL) / REPS)
    assert 0 < within < n  # and says something


def test_histogram_with_an_empty_bin_never_publishes_a_negative_when_non_negative(dataset) -> None:
    query = {"type": "histogram", "axis": {"column": "city", "categories": CITIES}}
    kept = _prepared(dataset, query, "laplace", E, non_negative=True)
    raw = _prepared(dataset, query, "laplace", E, non_negative=False)
    bits = SeededBitSource(3)
    negatives = 0
    for _ in range(200):
        values = kept.exact.draw(bits)
        published = published_values(kept, kept.exact.released_labels(), values)
        assert min(published.values) >= 0  # type: ignore[type-var]
        assert all(
            ci[0] >= 0 and ci[0] <= v <= ci[1]
            for v, ci in zip(published.values, published.intervals, strict=True)
        )  # type: ignore[index,operator]
        shown = published_values(raw, raw.exact.released_labels(), raw.exact.draw(bits))
        negatives += min(shown.values) < 0  # type: ignore[operator]
    assert negatives > 50  # the empty bin "d" and "other" do go negative without the option


def test_empty_declared_group_is_published_as_empty(dataset) -> None:
    """City d (and "other") has no rows: a noisy mean by city publishes it as empty (not a mean held at a
    bound), its other groups as numbers; without the option, a number in [17, 90]."""
    query = {**BY_CITY, "statistic": "mean", **AGE}
    marked = _prepared(dataset, query, "noisy_mean", {"epsilon": 20.0})
    plain = _prepared(dataset, query, "noisy_mean", {"epsilon": 20.0}, empty_groups=False)
    bits = SeededBitSource(11)
    for _ in range(20):
        published = published_values(marked, marked.exact.released_labels(), marked.exact.draw(bits))
        by_group = [published.values[i : i + 3] for i in range(0, len(published.values), 3)]
        assert by_group[3] == by_group[4] == (EMPTY, EMPTY, EMPTY)  # d, and "other" (no rows)
        assert all(isinstance(v, float) for v in by_group[0])
        assert published.intervals[9] is None
        other = published_values(plain, plain.exact.released_labels(), plain.exact.draw(bits))
        assert isinstance(other.values[9], float) and 17 <= other.values[9] <= 90


def test_laplace_mean_is_clamped_to_its_range_and_its_interval_cut(dataset) -> None:
    """Laplace on a mean of ages in [17, 90] at a small epsilon: every published mean in range
    (it published 120.625 before), its interval within the range and holding it."""
    query = {"type": "mean", **AGE}
    prepared = _prepared(dataset, query, "laplace", {"epsilon": 0.05})
    bits = SeededBitSource(1)
    outside = 0
    for _ in range(100):
        values = prepared.exact.draw(bits)
        outside += not 17 <= values[0] <= 90
        published = published_values(prepared, ("mean",), values)
        (value,), ((low, high),) = published.values, published.intervals
        assert 17 <= low <= value <= high <= 90  # type: ignore[operator]
    assert outside > 10  # the raw draw does leave the range


def test_options_are_checked_before_anything_is_drawn() -> None:
    with pytest.raises(Exception, match="unknown post-processing option 'clamp'"):
        declared({"clamp": True})
    with pytest.raises(Exception, match="true or false"):
        declared({"non_negative": "yes"})
    assert declared(None)["clamp_to_range"] and declared({"integer": True})["integer"]


def test_integer_rounds_counts_and_widens_their_interval_outward() -> None:
    facts = {"statistic": "count", "output_range": [0.0, None]}
    drawn = Drawn(
        "gaussian", facts, provenance={}, dp_outputs={}, labels=("count",), values=[10.6], noise=[(7.3, 13.9)]
    )
    published = publish(drawn, options={"integer": True})
    assert published.values == (11.0,) and published.intervals == ((7.0, 14.0),)


@pytest.mark.parametrize("non_negative", [True, False])
def test_histogram_made_consistent_with_a_released_total_covers(dataset, non_negative: bool) -> None:
    """total_from_entry: the bins add up to the released count (>= 0 with non_negative), and
    each published interval (2 h + h_T at the union-bound level) holds the true bin at least
    LEVEL - 3 SE of the time."""
    query = {"type": "histogram", "axis": {"column": "city", "categories": CITIES}}
    options = {"total_from_entry": 1, "non_negative": non_negative}
    histogram = _prepared(dataset, query, "laplace", {"epsilon": 0.3}, **options)
    count = _prepared(dataset, {"type": "count"}, "gaussian", {"epsilon": 0.3, "delta": 1e-6})
    truth = np.array([float(v) for v in _truth(dataset, query)])
    assert truth.sum() == float(true_answer(dataset, query_from_dict({"type": "count"})))
    bits = SeededBitSource(17)
    hits = np.zeros(len(truth))
    for _ in range(REPS):
        total = float(count.exact.draw(bits)[0])
        item = dataclasses.replace(histogram, total=(total, count.exact.ci_at))
        published = published_values(item, item.exact.released_labels(), item.exact.draw(bits))
        values = np.array(published.values, dtype=float)
        assert values.sum() == pytest.approx(max(total, 0.0) if non_negative else total)
        assert not non_negative or (values >= 0).all()
        lows, highs = np.array(published.intervals, dtype=float).T
        assert (lows <= values).all() and (values <= highs).all()
        hits += (lows <= truth) & (truth <= highs)
    assert (hits / REPS >= LEVEL - 3 * math.sqrt(LEVEL * (1 - LEVEL) / REPS)).all()


def test_a_total_must_be_an_earlier_count_released_with_noise(tmp_path: Path) -> None:
    """total_from_entry naming a later entry, or one that is not a count, is refused before
    anything is charged (exit 2); on a mean it is refused when the entry is prepared."""
    from dpexplorer.cli import main

    data = tmp_path / "d.csv"
    data.write_text("age,city\n" + "".join(f"{20 + i % 50},{'abc'[i % 3]}\n" for i in range(60)))
    histogram = {"type": "histogram", "axis": {"column": "city", "categories": CITIES}}
    cases = [
        [{"query": histogram, "mechanism": "laplace", "post_processing": {"total_from_entry": 2}},
         {"query": {"type": "count"}, "mechanism": "laplace"}],
        [{"query": {"type": "mean", **AGE}, "mechanism": "laplace"},
         {"query": histogram, "mechanism": "laplace", "post_processing": {"total_from_entry": 1}}],
        [{"query": {"type": "count"}, "mechanism": "laplace"},
         {"query": {"type": "mean", **AGE}, "mechanism": "laplace",
          "post_processing": {"total_from_entry": 1}}],
    ]  # fmt: skip
    for number, plan in enumerate(cases):
        path = tmp_path / f"plan{number}.json"
        path.write_text(json.dumps(plan))
        args = ["release", str(path), "--data", str(data), "--out", str(tmp_path / "out")]
        args += ["--ledger", str(tmp_path / "l.sqlite"), "--budget-epsilon", "9"]
        assert main(args) == 2
    assert not (tmp_path / "out").exists()


def test_an_interval_the_clamp_fills_is_of_kind_declared_range() -> None:
    """Issue 41: a Laplace mean whose interval, cut to [17, 90], is the whole range was published
    as a noise interval ("moved by at most ±16" beside a noise scale of 50): now its kind is
    "range"; an interval the clamp only cuts stays the noise's."""
    facts = {"statistic": "mean", "output_range": [17.0, 90.0]}

    def drawn(ci: tuple[float, float]) -> Drawn:
        return Drawn(
            "laplace", facts, provenance={}, dp_outputs={}, labels=("mean",), values=[74.0], noise=[ci]
        )

    assert publish(drawn((-30.0, 178.0))).kinds == ("range",)
    assert publish(drawn((60.0, 120.0))).kinds == ("noise",)


def test_a_count_drawn_below_zero_keeps_the_noise_width_not_a_point() -> None:
    """Issue 41: a Laplace count at ε = 1 (95 % half-width ln 20 ≈ 3.0) drawn at -7 was
    published 0 [0, 0], a certainty no draw of the noise gives; now 0 [0, 3]: the interval
    moved with the value to zero, cut at zero. A count drawn at -1 keeps its reach above too
    ([0, 3], not [0, 2]); one drawn at 5 is unchanged."""
    half = math.log(20.0)
    facts = {"statistic": "count", "output_range": [0.0, None]}

    def published(value: float) -> tuple[float, tuple[float, float]]:
        drawn = Drawn(
            "laplace",
            facts,
            provenance={},
            dp_outputs={},
            labels=("count",),
            values=[value],
            noise=[(value - half, value + half)],
        )
        result = publish(drawn)
        return result.values[0], result.intervals[0]  # type: ignore[return-value]

    assert published(-7.0) == (0.0, (0.0, pytest.approx(half)))
    assert published(-1.0) == (0.0, (0.0, pytest.approx(half)))
    assert published(5.0) == (5.0, (5.0 - half, 5.0 + half))


def test_a_mean_clamped_to_its_range_keeps_the_noise_width_inside_it() -> None:
    """A mean drawn at 120 above its range [17, 90] with ±16 of noise: 90 [74, 90], not 90 [90, 90];
    one whose moved interval reaches past the whole range is of kind "range"."""
    facts = {"statistic": "mean", "output_range": [17.0, 90.0]}

    def drawn(value: float, half: float) -> Drawn:
        return Drawn(
            "laplace",
            facts,
            provenance={},
            dp_outputs={},
            labels=("mean",),
            values=[value],
            noise=[(value - half, value + half)],
        )

    result = publish(drawn(120.0, 16.0))
    assert result.values == (90.0,) and result.intervals == ((74.0, 90.0),) and result.kinds == ("noise",)
    assert publish(drawn(200.0, 80.0)).kinds == ("range",)


def test_clamped_intervals_cover_at_least_as_often_as_the_cut() -> None:
    """The moved interval holds the plain cut (so it covers whenever the cut did) and the value,
    and is never narrower than the noise's half-width: 500 random counts around zero."""
    from dpexplorer.release.published import _cut, clamped

    rng = np.random.default_rng(5)
    for value in rng.normal(0.0, 5.0, 500):
        half = float(rng.uniform(0.1, 6.0))
        interval = (value - half, value + half)
        v, ci = clamped(float(value), interval, 0.0, math.inf)
        cut = _cut(interval, 0.0, math.inf)
        assert ci is not None and ci[0] <= cut[0] and cut[1] <= ci[1] and ci[0] <= v <= ci[1]
        assert ci[1] - ci[0] >= half * (1 - 1e-12)  # never a point at zero
