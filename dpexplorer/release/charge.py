"""The charge: what every release does around it, a statistic's
(:class:`~dpexplorer.release.release.PreparedRelease`) and a synthetic table's
(:class:`~dpexplorer.release.synthetic_tables.TableRelease`) alike.

A release is filed under its dataset's key (:func:`filed`), charged the guarantee its
accountant composes (:func:`charged_for`) only after every check that needs no noise passed,
then drawn and written by the release itself (:meth:`Releasable.write`); its row is then marked
released with its provenance file (:func:`provenance` frames that file for both kinds). Any
failure after the charge marks the row failed and raises :class:`ReleaseFailedError`
(:func:`execute`): the budget stays spent, nothing is half-written, nothing fails
silently."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import dpexplorer
from dpexplorer.core.accounting.guarantees import ApproxDP, Guarantee, Subsampled
from dpexplorer.core.errors import DPExplorerError, InvalidParameterError
from dpexplorer.release.exact import ExactRelease
from dpexplorer.release.export import check_output_dir, remove_partial_files
from dpexplorer.release.ledger import Ledger, LedgerError, guarantee_to_dict
from dpexplorer.release.samplers import BitSource

ZCDP_INCAPABLE = frozenset({"pld", "optimal"})
"""Accountant methods of ``compose`` that take no zCDP guarantee."""


class ReleaseFailedError(DPExplorerError):
    """A release failed after its charge: the budget is spent, nothing was released (or, when
    ``files_written``, the files exist but the ledger could not record it). ``epsilon``/``delta``
    are what was charged for it; the ledger row says the same."""

    def __init__(
        self, message: str, *, row_id: int, epsilon: float, delta: float, files_written: bool
    ) -> None:
        super().__init__(message)
        self.row_id, self.epsilon, self.delta, self.files_written = row_id, epsilon, delta, files_written
        self.interrupted = False


WrittenT = TypeVar("WrittenT", bound="Written", covariant=True)


class Written(Protocol):
    """What a release wrote: its files by kind, the provenance among them."""

    @property
    def files(self) -> dict[str, Path]: ...


class Releasable(Protocol[WrittenT]):
    """A release ready to charge, nothing drawn: what the ledger files it under and what a
    failure after the charge reports (the properties), the checks it needs before the charge and
    the draw and write after it (the methods)."""

    @property
    def fingerprint(self) -> str: ...
    @property
    def token(self) -> str: ...
    @property
    def query(self) -> dict[str, Any]: ...
    @property
    def mechanism(self) -> str: ...
    @property
    def parameters(self) -> dict[str, Any]: ...
    @property
    def relation(self) -> str: ...
    @property
    def exact(self) -> ExactRelease: ...
    @property
    def sampling_rate(self) -> float | None: ...
    @property
    def legacy(self) -> tuple[str, ...]: ...
    @property
    def origins(self) -> Mapping[str, Any]: ...

    def check(self, charged: Guarantee, ledger: Ledger) -> None:
        """Raise (InvalidParameterError) unless the release can be written once charged
        ``charged``: its provenance is valid JSON, everything it needs is known."""

    def write(self, row: Charged, out_dir: str | os.PathLike[str], bits: BitSource | None) -> WrittenT:
        """Draw (from ``bits``, the OS CSPRNG when None) and write the files of the ledger row
        ``row`` into ``out_dir``; the files written are removed again on failure."""


ReleasableT = TypeVar("ReleasableT", bound=Releasable[Any])
W = TypeVar("W", bound=Written)


def filed(prepared: ReleasableT, ledger: Ledger) -> ReleasableT:
    """``prepared`` under its dataset's key in ``ledger``: what that ledger kept under a legacy
    key moves there first (:meth:`Ledger.identify`), and a content filed under a steward's name
    is charged under that name. Unchanged when there is nothing to move."""
    if not prepared.legacy:
        return prepared
    key = ledger.identify(prepared.fingerprint, legacy=prepared.legacy)
    return dataclasses.replace(prepared, fingerprint=key, legacy=())  # type: ignore[type-var]


def charged_for(exact: ExactRelease, method: str | None, sampling_rate: float | None = None) -> Guarantee:
    """The guarantee charged for the exact release ``exact`` under the accountant ``method``
    (None: no budget set): the path's own (e.g. ZCDP for the discrete Gaussian), or, where that
    accountant cannot compose it (``pld`` and ``optimal`` take no zCDP), the path's (epsilon,
    delta) statement (:attr:`ExactRelease.approx`), which is implied by it; with a steward's
    Poisson ``sampling_rate`` < 1, the amplified guarantee. The one rule for the ledger's charge,
    its price and the planner's (:func:`~dpexplorer.release.release.planned_charge`)."""
    if sampling_rate is not None and sampling_rate < 1:
        return Subsampled(exact.guarantee, sampling_rate)  # type: ignore[arg-type]
    if method in ZCDP_INCAPABLE and exact.approx is not None:
        return ApproxDP(*exact.approx)
    return exact.guarantee


def charged_guarantee(prepared: Releasable[Any], ledger: Ledger) -> Guarantee:
    """The guarantee the ledger is charged for ``prepared`` under the dataset's accountant
    (:func:`charged_for`)."""
    budget = ledger.budget(prepared.fingerprint)
    return charged_for(prepared.exact, budget.method if budget else None, prepared.sampling_rate)


def provenance(
    prepared: Releasable[Any],
    charged: Guarantee,
    row_id: int,
    ledger: tuple[str, str],
    body: Mapping[str, Any],
) -> dict[str, Any]:
    """A release's provenance (its sidecar JSON), the same frame for a statistic and a synthetic
    table: what was declared and charged, then ``body`` (what this kind of release adds), then
    the software, the dataset's public id in the ledger (:meth:`Ledger.public_id`, never a hash
    of the rows), the ledger row and path, and the time. ``ledger``: (its path, that id)."""
    exact = prepared.exact
    return {
        "mechanism": prepared.mechanism,
        "parameters": prepared.parameters,
        "query": prepared.query,
        "relation": prepared.relation,
        "epsilon": exact.epsilon,
        "delta": exact.delta,
        "rho": exact.rho,
        "guarantee_charged": guarantee_to_dict(charged),
        **prepared.origins,  # each public fact's origin, the codebook (public_facts.origins)
        **body,
        "software": f"dpexplorer {dpexplorer.__version__}",
        "dataset_id": ledger[1],
        "ledger_row_id": row_id,
        "ledger_path": ledger[0],
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def check_provenance(trial: Mapping[str, Any]) -> None:
    """InvalidParameterError unless ``trial`` (a release's provenance built before the charge
    with stand-in values) can be written as JSON: finite numbers only."""
    try:
        json.dumps(trial, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidParameterError(f"the release's provenance cannot be written: {exc}") from None


@dataclass(frozen=True)
class Charged:
    """A release's ledger row once charged: the ledger, the row's id, the guarantee charged."""

    ledger: Ledger
    row_id: int
    guarantee: Guarantee


def execute(
    prepared: Releasable[W],
    *,
    ledger: Ledger,
    out_dir: str | os.PathLike[str],
    bits: BitSource | None = None,
    directory_checked: bool = False,
) -> W:
    """Check, charge, then draw, then write (module docstring): a statistic
    (:class:`~dpexplorer.release.release.PreparedRelease`, giving a
    :class:`~dpexplorer.release.release.ReleaseResult`) or a synthetic table
    (:class:`~dpexplorer.release.synthetic_tables.TableRelease`), charged under the dataset's key
    in ``ledger``, legacy keys moved first (:func:`filed`). The release's own checks
    (:meth:`Releasable.check`), the budget (BudgetExceededError, NoBudgetError) and the output
    directory (ExportError) refuse before anything is charged or drawn, leaving no trace, not
    even a directory; ``directory_checked``: the caller has already checked the budget of a whole
    plan, run :func:`check_output_dir` for its tokens and :func:`remove_partial_files` on
    ``out_dir``. After the charge any failure (KeyboardInterrupt included) marks the row failed
    and raises :class:`ReleaseFailedError`; so does a ledger that cannot record the files written
    (``files_written``; the row still says 'charged', so the budget is counted). Otherwise the row
    is marked released with its provenance file."""
    prepared = filed(prepared, ledger)
    charged = charged_guarantee(prepared, ledger)
    prepared.check(charged, ledger)
    if not directory_checked:
        ledger.check(prepared.fingerprint, [charged])
        check_output_dir(out_dir, [prepared.token])
        remove_partial_files(out_dir)
    row_id = ledger.charge(
        prepared.fingerprint,
        query=prepared.query,
        mechanism=prepared.mechanism,
        parameters=prepared.parameters,
        guarantee=charged,
    )
    try:
        result = prepared.write(Charged(ledger, row_id, charged), out_dir, bits)
    except BaseException as exc:
        failure = _failed(prepared, ledger, row_id, exc)
        if failure is exc:
            raise
        raise failure from exc
    try:
        ledger.mark_released(row_id, result.files["provenance"])
    except LedgerError as exc:
        raise ReleaseFailedError(
            f"released to {result.files['provenance']}, but the ledger could not record it (its "
            f"row {row_id} still says 'charged', so the budget is counted): {exc}",
            row_id=row_id,
            epsilon=prepared.exact.epsilon,
            delta=prepared.exact.delta,
            files_written=True,
        ) from exc
    return result


def _failed(prepared: Releasable[Any], ledger: Ledger, row_id: int, exc: BaseException) -> BaseException:
    """Mark the row failed (when the ledger still can) and say what was spent for nothing, as a
    ReleaseFailedError (``interrupted`` for Ctrl+C). SystemExit passes through, the row marked."""
    if isinstance(exc, KeyboardInterrupt):
        reason = "interrupted (Ctrl+C) after the charge"
    elif isinstance(exc, OSError):
        reason = f"the files could not be written: {exc.strerror or exc}"
    else:
        reason = " ".join(str(exc).split()) or type(exc).__name__
    try:
        ledger.mark_failed(row_id, reason)
        recorded = f"ledger row {row_id} records it as failed, with this reason"
    except (LedgerError, KeyboardInterrupt):
        recorded = f"ledger row {row_id} still says 'charged' (the ledger could not be updated)"
    exact = prepared.exact
    error = ReleaseFailedError(
        f"charged epsilon {exact.epsilon:.6g}, delta {exact.delta:.3g} for {prepared.mechanism} "
        f"but released nothing: {reason}; {recorded}",
        row_id=row_id,
        epsilon=exact.epsilon,
        delta=exact.delta,
        files_written=False,
    )
    error.interrupted = isinstance(exc, KeyboardInterrupt)
    return exc if isinstance(exc, SystemExit) else error
