"""The replay audit of a plan (issue 44, dpexplorer/release/replay.py): the release path run on D
and on neighbours with the same random bits, everything published compared.

* every registered mechanism on every query kind it releases, in one plan, on the 64 rows of
  tests/release/test_public_facts.py: every entry passes (nothing published depends on the data
  but the DP outputs, which move within the declared sensitivity);
* a refusal is replayed too (refused alike on every neighbour);
* planted leaks, each in a test-only mechanism registered by the test: the row count in a
  label, the true sum in the provenance, a sensitivity smaller than the neighbours' difference;
  the replay names the field (or the movement);
* the black box: its lower bound stays below the claim on a sound plan, and exceeds it on a
  mechanism whose noise is four times too small.

The throwaway ledgers and files go to a RAM folder when there is one (the release path fsyncs
every file: ten times slower on a disk), else to pytest's tmp_path."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from dpexplorer.core.errors import DPExplorerError
from dpexplorer.core.mechanisms import registry
from dpexplorer.core.mechanisms.laplace import LaplaceMechanism
from dpexplorer.data.queries import query_from_dict
from dpexplorer.release import plans
from dpexplorer.release.release import prepare
from dpexplorer.release.replay import audit_plan
from tests.release.test_public_facts import QUERIES, _cases, load_neighbours

RAM = Path("/dev/shm")
REPRESENTATIVE = (
    "one row added",
    "one row removed",
    "a row far beyond the upper bound",
    "a row in a new category",
)
"""The neighbours of the every-mechanism replay (the whole catalogue runs in the other tests)."""


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    if RAM.is_dir() and os.access(RAM, os.W_OK):
        with tempfile.TemporaryDirectory(dir=RAM) as folder:
            yield Path(folder)
    else:
        yield tmp_path


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return load_neighbours(tmp_path_factory.mktemp("replay"), ("D",))["D"]


def _released(dataset: Any) -> list[tuple[str, str]]:
    """Every (mechanism, query kind) of the public-facts catalogue that releases on D."""
    out = []
    for mechanism, kind in _cases():
        try:
            if kind != "marginals":
                prepare(dataset, query_from_dict(QUERIES[kind]), mechanism, {}, key="x")
        except DPExplorerError:
            continue
        out.append((mechanism, kind))
    return out


def _entry(mechanism: str, kind: str, **parameters: Any) -> dict[str, Any]:
    return {"query": QUERIES[kind], "mechanism": mechanism, "parameters": parameters}


def _only(*names: str) -> Any:
    return lambda name: name.startswith(names)


def test_the_replay_passes_every_mechanism_on_every_query_kind(base: Any, work: Path) -> None:
    cases = _released(base)
    assert {m for m, _ in cases} == {m.name for m in registry.all_mechanisms()}
    audit = audit_plan(
        base, [_entry(m, k) for m, k in cases], draws=0, seed=2024, work_dir=work, only=_only(*REPRESENTATIVE)
    )
    assert len(audit.neighbours) == 4, audit.neighbours
    failed = [e.to_dict() for e in audit.entries if e.replay != "pass"]
    assert not failed, failed
    checked = {e.mechanism for e in audit.entries if e.sensitivity == "pass"}
    assert {"laplace", "gaussian", "mst", "aim"} <= checked  # (b) ran on the additive releases
    assert all(len(e.neighbours) >= 4 for e in audit.entries)


def test_a_refusal_is_replayed_with_its_wording(base: Any, work: Path) -> None:
    """Laplace by privately selected keys on a mean is refused (a public rule): on D and alike on
    every neighbour, so the replay passes and says so."""
    audit = audit_plan(
        base,
        [_entry("laplace", "mean_by_private_key")],
        draws=0,
        work_dir=work,
        only=_only("one row", "a key"),
    )
    (entry,) = audit.entries
    assert entry.replay == "pass" and entry.refused is not None
    assert "privately selected keys" in entry.refused


class _Planted(LaplaceMechanism):
    name: ClassVar[str] = "planted_laplace"
    label: ClassVar[str] = "Laplace with a planted leak (tests)"


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Register the test-only mechanism ``planted_laplace``; the test sets its exact path."""
    monkeypatch.setitem(registry._MECHANISMS, _Planted.name, _Planted())

    def install(path: Any) -> None:
        monkeypatch.setitem(plans.PATHS, _Planted.name, path)

    yield install


def _laplace(mechanism: Any, params: Any, query: Any, level: float) -> Any:
    return plans.PATHS["laplace"](mechanism, params, query, level)


def test_a_row_count_in_a_label_is_named(base: Any, work: Path, planted: Any) -> None:
    planted(
        lambda m, p, q, level: dataclasses.replace(_laplace(m, p, q, level), labels=(f"sum of {q.n} rows",))
    )
    audit = audit_plan(
        base, [_entry("planted_laplace", "sum")], draws=0, work_dir=work, only=_only("one row")
    )
    (entry,) = audit.entries
    assert entry.replay == "result.labels[0]"
    assert entry.detail is not None and entry.detail["on_d"] == "sum of 64 rows"
    assert not audit.passed


def test_the_true_answer_in_the_provenance_is_named(base: Any, work: Path, planted: Any) -> None:
    def leaky(m: Any, p: Any, q: Any, level: float) -> Any:
        release = _laplace(m, p, q, level)
        return dataclasses.replace(
            release, provenance={**release.provenance, "true_sum": float(q.value_d[0])}
        )

    planted(leaky)
    plan = [_entry("laplace", "count"), _entry("planted_laplace", "sum")]
    audit = audit_plan(base, plan, draws=0, work_dir=work, only=_only("a row at the upper bound"))
    first, second = audit.entries
    assert first.replay == "pass"
    assert second.replay == "provenance.discretisation.true_sum"
    assert second.detail is not None and second.detail["neighbour"].startswith(
        "a row at the upper bound of x"
    )


def test_a_sensitivity_smaller_than_a_row_moves_is_found(base: Any, work: Path, planted: Any) -> None:
    """A count released as if one row moved it by 0.5: with the same bits the values differ by
    the true difference, 1, more than the declared sensitivity."""

    def narrow(m: Any, p: Any, q: Any, level: float) -> Any:
        return _laplace(m, p, dataclasses.replace(q, sensitivity_l1=0.5, sensitivity_l2=0.5), level)

    planted(narrow)
    audit = audit_plan(
        base, [_entry("planted_laplace", "count")], draws=0, work_dir=work, only=_only("one row")
    )
    (entry,) = audit.entries
    assert entry.replay == "result.values"
    assert "more than the declared 0.5" in entry.sensitivity


def test_the_black_box_stays_below_a_sound_claim(base: Any, work: Path) -> None:
    plan = [_entry("laplace", "histogram", epsilon=1.0), _entry("exponential", "argmax", epsilon=1.0)]
    audit = audit_plan(
        base, plan, draws=400, seed=7, work_dir=work, only=_only("one row", "a row in the least")
    )
    for entry in audit.entries:
        assert entry.lower_bound is not None and entry.claimed_epsilon is not None
        assert entry.lower_bound <= entry.claimed_epsilon, entry.to_dict()
        assert entry.replay == "pass" and entry.searched
    assert audit.passed


def test_the_black_box_finds_noise_four_times_too_small(base: Any, work: Path, planted: Any) -> None:
    """A count charged epsilon 1 but drawn at scale 1/4: its true epsilon is 4. With 2,000 draws
    per side the lower bound (95 %) is above the claim (seeded; the bound is about 2)."""

    def small(m: Any, p: Any, q: Any, level: float) -> Any:
        release = _laplace(m, {**p, "epsilon": 4 * p["epsilon"]}, q, level)
        return dataclasses.replace(release, epsilon=p["epsilon"])

    planted(small)
    audit = audit_plan(
        base,
        [_entry("planted_laplace", "count", epsilon=1.0)],
        draws=2_000,
        seed=3,
        work_dir=work,
        only=_only("one row added"),
    )
    (entry,) = audit.entries
    assert entry.lower_bound is not None and entry.lower_bound > 1.0, entry.to_dict()
    assert not entry.passed


def test_a_synthetic_table_is_audited_in_one_run(base: Any, work: Path) -> None:
    entry_ = {**_entry("mst", "marginals", epsilon=1.0), "kind": "synthetic"}
    audit = audit_plan(base, [entry_], draws=100, seed=5, work_dir=work, only=_only("one row"))
    (entry,) = audit.entries
    assert entry.replay == "pass" and entry.sensitivity == "pass"
    assert entry.test.startswith("one-run audit")
    assert entry.lower_bound is not None and entry.lower_bound <= entry.claimed_epsilon  # type: ignore[operator]
