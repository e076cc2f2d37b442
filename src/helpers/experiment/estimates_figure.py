"""The three estimates of helpers.experiment.estimates as one figure: per architecture (left) and
per paired difference against the baseline (right), labels only, judge only (grey, hollow:
biased, not valid) and prediction-powered, each with its interval."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from helpers.figures import nothing_to_show

STYLE = {  # method: (label, colour, marker, filled)
    "labels": ("labels only", "#4C72B0", "o", True),
    "judge": ("judge only (biased: not valid)", "#999999", "s", False),
    "ppi": ("prediction-powered", "#C44E52", "D", True),
}
OFFSETS = {"labels": 0.22, "judge": 0.0, "ppi": -0.22}


def estimates_figure(metric: str, table: pd.DataFrame, *, confidence: float = 0.95, title: str = ""):
    """One forest plot per kind of estimate (means; differences when the table has them)."""
    if table.empty:
        return nothing_to_show("no architecture has enough labels for an estimate")
    kinds = [("means", table[table["baseline"].isna()]), ("differences", table[table["baseline"].notna()])]
    kinds = [(k, part) for k, part in kinds if len(part)]
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.2 * len(kinds), 0.55 * table["architecture"].nunique() + 1.8))
    axes = [axes] if len(kinds) == 1 else list(axes)
    for ax, (kind, part) in zip(axes, kinds):
        names = list(dict.fromkeys(part["architecture"]))
        for method, (label, colour, marker, filled) in STYLE.items():
            rows = part[part["method"] == method].set_index("architecture").reindex(names)
            ys = [len(names) - 1 - i + OFFSETS[method] for i in range(len(names))]
            ax.errorbar(
                rows["estimate"],
                ys,
                xerr=[rows["estimate"] - rows["low"], rows["high"] - rows["estimate"]],
                fmt=marker,
                color=colour,
                mfc=colour if filled else "white",
                capsize=3,
                linestyle="none",
                label=label,
                alpha=0.75 if method == "judge" else 1.0,
            )
        ax.set_yticks(range(len(names)), labels=[f"{n}\n({_counts(part, n)})" for n in reversed(names)], fontsize=8)
        if kind == "differences":
            ax.axvline(0, color="black", linewidth=0.8)
            ax.set_xlabel(f"difference in {metric}")
        else:
            ax.set_xlabel(metric)
        ax.set_title(f"{'per architecture' if kind == 'means' else 'against ' + part['baseline'].iloc[0]}", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.suptitle(title or f"{confidence:.0%} intervals: a few people's labels and the judge's scores", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.94), ncol=3, frameon=False)
    return fig


def _counts(part: pd.DataFrame, name: str) -> str:
    row = part[(part["architecture"] == name) & (part["method"] == "ppi")]
    if row.empty:
        return ""
    return f"{int(row['n_labels'].iloc[0])} labelled of {int(row['n_labels'].iloc[0] + row['n_unlabelled'].iloc[0])}"
