"""What the neighbouring-datasets view says in words: what it shows (no numbers: that changes
only with the mechanism), and under the plots the claim beside the exact δ(ε) or, for a simulated
mechanism, what the simulation can and cannot say."""

from __future__ import annotations

from dpexplorer.core.mechanisms.base import NumericOutput
from dpexplorer.gui import palette
from dpexplorer.gui.jobs import NeighboursResult
from dpexplorer.gui.views.base import BLUE, ORANGE, RED
from dpexplorer.gui.views.neighbours_shapes import MIN_RUNS_FOR_LOSS, SimulatedBins

SHADED_AREA = "Shaded area ∫ max(0, p_D − e^ε p_D'), in the larger direction (D→D' or D'→D),"
"""What δ(ε) is on a numeric output's plot."""
RED_BARS = "Dark red bars: Σ max(0, P_D − e^ε P_D')"
"""What δ(ε) is on a categorical output's plot."""


def delta_text(result: NeighboursResult) -> str:
    """δ(ε) as the label shows it, inside a bold span: proved 0, exact, or why not computable."""
    if result.delta_source == "proved":
        return "0</b> (proved: the mechanism is pure ε-DP, so δ = 0 exactly)<b>"
    if result.delta_exact is None:
        return f"not computable exactly here</b> ({result.delta_note})<b>"
    return f"{result.delta_exact:.3g}</b> (exact)<b>"


def explain(result: NeighboursResult) -> str:
    """What the view shows, in words (no numbers: it changes only with the mechanism)."""
    same = (
        f"<b>{result.mechanism}</b>. "
        f"<span style='color:{palette.css(BLUE)}'>■ M(D)</span> and "
        f"<span style='color:{palette.css(ORANGE)}'>■ M(D')</span>: the closer they are, the less an "
        "observer learns about the one person who differs. "
    )
    output = result.output
    if isinstance(output, NumericOutput) and output.monte_carlo_runs:
        return same + (
            f"<i>Simulated, not exact</i>: histograms of {output.monte_carlo_runs:,} runs on "
            "each side, with bars of ±2 standard errors (sampling uncertainty). The loss "
            "below is estimated only where both sides have enough runs; gaps between the "
            "histograms are sampling noise, not a privacy failure. The guarantee is the "
            "proven ε under the plots."
        )
    return same + (
        f"<span style='color:{palette.css(RED)}'>Red bands</span> mark the outputs where the privacy "
        "loss exceeds ε, i.e. where seeing the output shifts the odds between D and D' by "
        "more than e^ε. The dark red area is how much more likely those outputs are under "
        "D than e^ε times their chance under D'; in total it is δ(ε) (below), the "
        "chance that ε-privacy fails."
    )


def claimed_numbers(result: NeighboursResult, shaded: str, note: str) -> str:
    """The claim and the exact δ(ε) (``shaded``: what it is on the plot), then ``note``."""
    return (
        f"Claimed: ε = {result.epsilon:.4g}, δ = {result.delta_claim:.3g}. "
        f"<span style='color:{palette.css(RED)}'>{shaded}</span> = "
        f"δ(ε = {result.epsilon:.3g}) = <b>{delta_text(result)}</b>. "
        f"{result.claim_note} {note}"
    )


def numeric_note(out: NumericOutput, cut_stems: bool, *, hidden_draws: bool) -> str:
    """The output's note, and why a stem is cut (▲) or the draws are not overlaid."""
    note = out.note
    if cut_stems:
        note += (
            " ▲: a point mass far taller than the densities (another unit: a probability, not a "
            "density); its stems are cut at the top and its label gives its probability."
        )
    if hidden_draws:
        note += (
            " The draws are not overlaid: float64 rounds each simulated output to a grid far "
            "coarser than this noise."
        )
    return note


def simulated_numbers(result: NeighboursResult, bins: SimulatedBins) -> str:
    """The claim under a simulated mechanism's plots: proved (and so not estimated), or with its
    exact δ(ε) where it has one; the simulation's size and where the loss is estimated."""
    runs, shown = bins.runs, int(bins.enough.sum())
    if result.delta_source == "proved":
        return (
            f"Claimed: ε = {result.epsilon:.4g}, δ = {result.delta_claim:.3g}, <b>proved</b> for "
            "this mechanism (pure ε-DP, so δ(ε) = 0 exactly), not estimated from the simulation. "
            f"Simulated: {runs:,} runs on D and {runs:,} on D' (seed 0), {bins.grid.size} bins; the "
            f"loss is estimated in {shown} bin{'s' if shown != 1 else ''} with at least "
            f"{MIN_RUNS_FOR_LOSS} runs on each side."
        )
    return (
        f"Claimed: ε = {result.epsilon:.4g}, δ = {result.delta_claim:.3g}. Simulated: "
        f"{runs:,} runs per side, {bins.grid.size} bins; δ(ε) = <b>{delta_text(result)}</b>."
    )
