"""The verdicts of a run as a figure (helpers.experiment.diagnosis): per architecture, the share of
its answers in each verdict as one stacked bar, and beside it the two failure shares (lost by
retrieval, lost by generation) with their Clopper-Pearson intervals."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from helpers.experiment.diagnosis import VERDICT_COLOURS as COLOURS
from helpers.experiment.diagnosis import VERDICTS, WRONG
from helpers.experiment.diagnosis_cuts import sources


def verdict_figure(table: pd.DataFrame, *, confidence: float = 0.95, bands: dict | None = None):
    """`table`: diagnosis.verdict_table's rows; `bands`: the cuts the verdicts were read with (their
    source is written under the figure). Returns the figure (the caller saves and closes it)."""
    architectures = list(dict.fromkeys(table["architecture"]))
    shares = table.pivot_table(index="architecture", columns="verdict", values="share", sort=False)
    shares = shares.reindex(index=architectures, columns=list(VERDICTS))
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(11, 0.5 * len(architectures) + 2), sharey=True, gridspec_kw={"width_ratios": [3, 2]}
    )
    start = pd.Series(0.0, index=architectures)
    for verdict in VERDICTS:
        left.barh(architectures, shares[verdict], left=start, color=COLOURS[verdict], label=verdict)
        start += shares[verdict]
    left.set_xlim(0, 1)
    left.set_xlabel("share of the answers with a reference")
    left.invert_yaxis()
    left.legend(ncol=3, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    for offset, verdict in zip((-0.15, 0.15), WRONG):
        rows = table[table["verdict"] == verdict].set_index("architecture").reindex(architectures)
        y = [i + offset for i in range(len(architectures))]
        right.errorbar(
            rows["share"],
            y,
            xerr=[rows["share"] - rows["low"], rows["high"] - rows["share"]],
            fmt="o",
            color=COLOURS[verdict],
            label=f"lost by {verdict}",
            capsize=3,
        )
    right.set_xlim(0, 1)
    right.set_xlabel(f"share, {confidence:.0%} interval (Clopper-Pearson)")
    right.legend(fontsize=8, loc="best")
    fig.suptitle("Why answers fail: each wrong answer blamed on retrieval or on generation")
    fig.tight_layout()
    if bands:
        fig.text(0.01, 0.005, f"cuts: {sources(bands)}", fontsize=6, color="#555", wrap=True)
    return fig
