"""The verdicts of a run as a figure (helpers.experiment.diagnosis): per architecture, the share of
its answers in each verdict as one stacked bar, and beside it the two failure shares (lost by
retrieval, lost by generation) with their Clopper-Pearson intervals."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from helpers.experiment.diagnosis import VERDICTS, WRONG

COLOURS = {
    "correct": "#4c9a5b",
    "retrieval": "#d1603d",
    "generation": "#e8a33d",
    "refused": "#7f63b8",
    "unanswerable": "#9fb7d6",
    "cannot tell": "#c9c9c9",
}


def verdict_figure(table: pd.DataFrame, *, confidence: float = 0.95):
    """`table`: diagnosis.verdict_table's rows. Returns the figure (the caller saves and closes it)."""
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
    return fig
