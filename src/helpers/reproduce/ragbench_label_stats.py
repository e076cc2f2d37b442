"""RAGBench label statistics per subset and split, beside what the paper prints about them:
§3.3's hallucination shares and Table 1's split sizes (helpers.reproduce.ragbench_paper, with their
source), and Figure 3's score distributions redrawn with seaborn from the gold labels here.

Gold labels are recomputed from the annotators' sentence keys (helpers.trace.scoring.gold_scores);
the hallucination rate is the share of responses that are not adherent.
"""

from __future__ import annotations

import pandas as pd

from helpers.data import list_splits, load_ragbench
from helpers.data.ragbench import default_dir
from helpers.reproduce.ragbench_paper import PAPER_HALLUCINATION_SHARE, TABLE1_DEV_TEST, gold_labels, printed_count

SCORES = ("relevance", "utilization", "completeness")


def label_frame(subsets=None, splits=None, *, ragbench_dir=None) -> pd.DataFrame:
    """One row per example: subset, split and its gold relevance, utilization, completeness, adherence."""
    frames = []
    for subset, available in list_splits(ragbench_dir).items():
        for split in available:
            if (subsets is None or subset in subsets) and (splits is None or split in splits):
                frame = load_ragbench(subset, split, ragbench_dir)
                frames.append(gold_labels(frame).assign(subset=subset, split=split))
    if not frames:
        raise ValueError(f"no RAGBench subset/split matches subsets={subsets}, splits={splits}")
    return pd.concat(frames, ignore_index=True)


def label_statistics(labels: pd.DataFrame) -> pd.DataFrame:
    """Per subset and split: rows (and Table 1's count), hallucination rate (and §3.3's share where
    printed), mean of each score."""
    grouped = labels.groupby(["subset", "split"], sort=True)
    table = grouped.agg(
        rows=("adherence", "size"),
        hallucination_rate=("adherence", lambda a: 1 - a.mean()),
        **{f"mean_{s}": (s, "mean") for s in SCORES},
    ).reset_index()
    table["table1_rows"] = [
        printed_count(TABLE1_DEV_TEST[s][0 if sp == "validation" else 1])
        if s in TABLE1_DEV_TEST and sp in ("validation", "test")
        else None
        for s, sp in zip(table["subset"], table["split"])
    ]
    table["paper_hallucination_share"] = table["subset"].map(PAPER_HALLUCINATION_SHARE)
    table["difference"] = table["hallucination_rate"] - table["paper_hallucination_share"]
    return table


def score_distributions(labels: pd.DataFrame):
    """Figure 3 of the paper redrawn: violins of relevance, utilization and completeness per subset
    (all splits here pooled; density per subset, as the paper normalises its y-axis)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    long = labels.melt(id_vars=["subset", "split"], value_vars=list(SCORES), var_name="score", value_name="value")
    fig, axes = plt.subplots(1, len(SCORES), figsize=(4.2 * len(SCORES), 3.8), sharey=True)
    order = sorted(labels["subset"].unique())
    for ax, score in zip(axes, SCORES):
        sns.violinplot(
            data=long[long.score == score],
            y="subset",
            x="value",
            order=order,
            cut=0,
            density_norm="width",
            inner="quartile",
            color="#8DA0CB",
            ax=ax,
        )
        ax.set_title(score)
        ax.set_xlim(0, 1)
        ax.set_xlabel("gold score")
    fig.suptitle("RAGBench gold label distributions (recomputed from the sentence keys)")
    fig.tight_layout()
    return fig


def hallucination_rates(statistics: pd.DataFrame):
    """Share of non-adherent responses per subset and split, with §3.3's printed shares marked."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, ax = plt.subplots(figsize=(7, 3.8))
    sns.barplot(data=statistics, x="subset", y="hallucination_rate", hue="split", ax=ax, palette="Set2")
    printed = statistics.dropna(subset=["paper_hallucination_share"]).drop_duplicates("subset")
    order = [t.get_text() for t in ax.get_xticklabels()]
    ax.scatter(
        [order.index(s) for s in printed["subset"]],
        printed["paper_hallucination_share"],
        marker="D",
        color="black",
        zorder=5,
        label="paper §3.3",
    )
    ax.set_ylabel("share not adherent")
    ax.set_xlabel("")
    ax.legend(fontsize=8)
    ax.set_title("Hallucination rate here vs the paper's §3.3")
    fig.tight_layout()
    return fig


def save_label_figures(labels: pd.DataFrame, statistics: pd.DataFrame | None = None, out_dir=None) -> dict:
    """Both figures saved with helpers.figures.save_figure; {name: png path}."""
    import matplotlib.pyplot as plt

    from helpers.figures import save_figure  # matplotlib: loaded only when this runs

    statistics = label_statistics(labels) if statistics is None else statistics
    sources = [str(default_dir())]
    config = {"subsets": sorted(labels["subset"].unique()), "splits": sorted(labels["split"].unique())}
    written = {}
    for name, fig in (
        ("ragbench-label-distributions", score_distributions(labels)),
        ("ragbench-hallucination-rates", hallucination_rates(statistics)),
    ):
        written[name] = save_figure(fig, name, config=config, data_sources=sources, out_dir=out_dir)["png"]
        plt.close(fig)
    return written


def save_hallucination_shares(
    statistics: pd.DataFrame, figures: dict | None = None, *, results_dir=None
) -> pd.DataFrame:
    """§3.3's hallucination shares beside ours (the subsets it prints), with our two label
    figures, saved for the book (helpers.reproduce.published)."""
    from helpers.reproduce.published import save_comparison
    from helpers.reproduce.ragbench_paper import PAPER_SOURCE

    printed = statistics[statistics["paper_hallucination_share"].notna()]
    table = pd.DataFrame(
        {
            "subset": printed["subset"],
            "split": printed["split"],
            "rows": printed["rows"],
            "published": printed["paper_hallucination_share"],
            "ours": printed["hallucination_rate"],
            "difference": printed["difference"],
        }
    )
    save_comparison(
        "ragbench-hallucination-shares",
        table,
        title="RAGBench §3.3: the share of hallucinated (not adherent) responses per subset",
        published_source=f"{PAPER_SOURCE['paper']}, §3.3 'RAGBench Statistics' (all splits, presumably)",
        data_source="gold adherence recomputed from the annotators' sentence keys in the RAGBench parquet files "
        "(helpers.trace.scoring.gold_scores), per split",
        notes="The paper rounds to whole percents and does not say which splits it pooled.",
        figures=list((figures or {}).values()),
        results_dir=results_dir,
    )
    return table
