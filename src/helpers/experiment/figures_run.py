"""The figures of one run (`build_figures` is the entry point): metric
bars in a grid, heatmaps, per-question score distributions and paired differences against the
baseline (seaborn), quality against latency and cost (Pareto), and judge agreement.

A metric nothing was scored on (every value NaN) gets no panel; a note beneath the panels names
it, so a missing panel is never mistaken for a forgotten one."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np
import pandas as pd
import seaborn as sns  # noqa: E402

from helpers import paths  # noqa: E402
from helpers.experiment.analysis import (  # noqa: E402
    Settings,
    _percent,
    comparisons,
    difference_intervals,
    load_scores,
    natural_sorted,
    paired_differences,
    quality_scores,
    run_config,
    run_dir,
    seed_table,
    statistics_settings,
    summary,
)
from helpers.experiment.diagnosis import run_diagnosis  # noqa: E402
from helpers.experiment.diagnosis_figure import verdict_figure  # noqa: E402
from helpers.experiment.estimates_figure import estimates_figure  # noqa: E402
from helpers.experiment.run_labels import run_estimates  # noqa: E402
from helpers.figures import (  # first: it selects the headless backend before pyplot loads
    BAR_COLOR,
    PER_ROW,
    POINT_COLOR,
    fixed_jitter,
    grid,
    note_empty,
    nothing_to_show,
    place_labels,
    png_bytes,
    save_figure,
    split_empty,
)
from helpers.inference.classical import MIN_INTERVAL_N
from helpers.inputs import inside  # noqa: E402
from helpers.interpretation import TRUSTED, band_table, base_metric
from helpers.judges import grounding_metrics

# ---- the figures (the layout they share: helpers.figures)


def metric_bars(table: pd.DataFrame, *, confidence: float = 0.95, per_row: int = PER_ROW):
    """Mean per architecture with its bootstrap interval, one panel per metric (summary table:
    architecture, metric, mean, ci_low, ci_high, n), each bar labelled with its n. A mean over fewer
    than MIN_INTERVAL_N samples is a point marked with its n, without an interval; where a reference
    document bands the metric, its band floors are drawn as dotted lines (helpers.interpretation)."""
    scored, empty = split_empty(table, "mean")
    fig, axes = grid(len(scored), per_row=per_row)
    for ax, metric in zip(axes, scored):
        part = table[table.metric == metric].reset_index(drop=True)
        x = np.arange(len(part))
        wide = part["ci_low"].notna().to_numpy() & part["ci_high"].notna().to_numpy()
        if wide.any():
            rows = part[wide]
            err = np.vstack([rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]])
            ax.bar(x[wide], rows["mean"], yerr=err, capsize=3, color=BAR_COLOR)
        if (~wide).any():
            ax.plot(x[~wide], part.loc[~wide, "mean"], "o", color=BAR_COLOR, markersize=6)
        for i, row in part.iterrows():
            if row["mean"] == row["mean"]:
                top = row["ci_high"] if wide[i] else row["mean"]
                ax.text(i, min(top + 0.03, 1.08), f"n={int(row['n'])}", ha="center", fontsize=6, color="#333")
        status = part["validity"].iloc[0] if "validity" in part else None
        trusted = status is None or status in TRUSTED
        table_of = band_table(metric) if trusted else None  # no band where people's labels do not back it
        if table_of is not None:
            for b in table_of.bands[base_metric(metric)][:-1]:
                ax.axhline(b.floor, color=b.colour, linestyle=":", linewidth=0.8)
                ax.text(len(part) - 0.5, b.floor, b.name, fontsize=5, color=b.colour, ha="right", va="bottom")
        ax.set_xticks(x, part["architecture"])
        ax.set_title(metric if trusted else f"{metric}\n({status})", fontsize=9 if trusted else 7)
        ax.set_ylim(0, 1.12)
        ax.tick_params(axis="x", rotation=60, labelsize=8)
    if not scored:
        axes[0].axis("off")
        axes[0].text(
            0.5,
            0.5,
            "no sample could be scored\n(NaN: see reasons in scores)",
            ha="center",
            va="center",
            fontsize=8,
            transform=axes[0].transAxes,
        )
    pointed = (table["ci_low"].isna() & table["mean"].notna()).any() if len(table) else False
    points = f" (points: n < {MIN_INTERVAL_N}, no interval)" if pointed else ""
    fig.suptitle(f"Mean per architecture with {_percent(confidence)} bootstrap intervals{points}", fontsize=10)
    fig.tight_layout()
    note_empty(fig, empty)
    return fig


def heatmap(matrix: pd.DataFrame, title: str, *, empty=()):
    """Values in [0, 1] as colours with their numbers; `empty` names the columns left out."""
    if matrix.empty:
        return nothing_to_show(f"{title}\n(nothing scored)")
    fig, ax = plt.subplots(figsize=(1.6 + 0.7 * matrix.shape[1], 1.2 + 0.4 * matrix.shape[0]))
    values = matrix.to_numpy(dtype=float)
    image = ax.imshow(values, vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(matrix.shape[1]), matrix.columns, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(matrix.shape[0]), matrix.index, fontsize=8)
    for (i, j), value in np.ndenumerate(values):
        if not np.isnan(value):
            ax.text(
                j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color="white" if value < 0.6 else "black"
            )
    fig.colorbar(image, ax=ax, fraction=0.04)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    note_empty(fig, empty)
    return fig


def architecture_heatmap(table: pd.DataFrame):
    scored, empty = split_empty(table, "mean")
    if not scored:
        return nothing_to_show("Mean score: architecture x metric\n(nothing scored)")
    matrix = table.pivot(index="architecture", columns="metric", values="mean")[scored]
    return heatmap(matrix, "Mean score: architecture x metric", empty=empty)


def question_heatmap(scores: pd.DataFrame):
    """Mean quality per question (rows, in natural order: q1, q2, ..., q10) and architecture."""
    quality = quality_scores(scores)
    if quality.empty:
        return nothing_to_show("no quality scores")
    matrix = quality.pivot_table(index="qid", columns="architecture", values="value", aggfunc="mean", dropna=False)
    empty = [c for c in matrix.columns if matrix[c].isna().all()]
    matrix = matrix.drop(columns=empty).reindex(natural_sorted(matrix.index))
    return heatmap(matrix, "Mean quality per question and architecture (which questions fail where)", empty=empty)


def distributions(scores: pd.DataFrame, *, per_row: int = PER_ROW):
    """Per-question scores per architecture, one panel per quality metric: box (quartiles)
    with every question as a point."""
    quality = quality_scores(scores)
    scored, empty = split_empty(quality, "value")
    scored = sorted(scored)  # the panels in the metric bars' order
    order = sorted(set(quality["architecture"])) if len(quality) else []
    with sns.axes_style("whitegrid"):
        fig, axes = grid(len(scored), per_row=per_row)
    for ax, metric in zip(axes, scored):
        part = quality[quality.metric == metric].dropna(subset=["value"])
        sns.boxplot(
            data=part, x="architecture", y="value", order=order, ax=ax, color="#DDE4F0", fliersize=0, linewidth=0.8
        )
        with fixed_jitter():
            sns.stripplot(
                data=part,
                x="architecture",
                y="value",
                order=order,
                ax=ax,
                color=BAR_COLOR,
                size=3.5,
                alpha=0.75,
                jitter=0.15,
            )
        first_column = ax.get_subplotspec().is_first_col()
        ax.set(title=metric, xlabel="", ylabel="score per question" if first_column else "", ylim=(-0.05, 1.05))
        ax.title.set_fontsize(9)
        ax.tick_params(axis="x", rotation=60, labelsize=8)
    if not scored:
        axes[0].text(0.5, 0.5, "no sample could be scored", ha="center", va="center", transform=axes[0].transAxes)
    fig.suptitle("Scores per question and architecture (box: quartiles; points: questions)", fontsize=10)
    fig.tight_layout()
    note_empty(fig, empty)
    return fig


def difference_plot(
    diffs: pd.DataFrame,
    intervals: pd.DataFrame,
    *,
    tests: pd.DataFrame | None = None,
    empty=(),
    confidence: float = 0.95,
    alpha: float = 0.05,
    per_row: int = PER_ROW,
):
    """Architecture minus baseline per question (points) and the mean difference with its
    bootstrap interval, one panel per metric; p is the Holm-corrected paired permutation test
    (`tests`: helpers.experiment.analysis.comparisons), bold where below `alpha`."""
    if intervals.empty:
        return nothing_to_show("fewer than two architectures with scores: nothing to compare with a baseline")
    metrics = list(dict.fromkeys(intervals["metric"]))
    p_holm = {} if tests is None or tests.empty else tests.set_index(["metric", "architecture"])["p_holm"].to_dict()
    with sns.axes_style("whitegrid"):
        fig, axes = grid(len(metrics), per_row=per_row)
    for ax, metric in zip(axes, metrics):
        rows = intervals[intervals.metric == metric].set_index("architecture")
        order = sorted(rows.index)
        with fixed_jitter():
            sns.stripplot(
                data=diffs[diffs.metric == metric],
                x="architecture",
                y="diff",
                order=order,
                ax=ax,
                color="#999999",
                size=3,
                alpha=0.7,
                jitter=0.12,
            )
        rows = rows.reindex(order)
        err = np.vstack([rows["mean_diff"] - rows["ci_low"], rows["ci_high"] - rows["mean_diff"]])
        ax.errorbar(range(len(order)), rows["mean_diff"], yerr=err, fmt="o", color=POINT_COLOR, capsize=4, zorder=3)
        ax.axhline(0, color="black", lw=0.8)
        # the test's p under each architecture's name, bold where significant
        p_values = [p_holm.get((metric, a), math.nan) for a in order]
        ax.set_xticks(range(len(order)), [a if p != p else f"{a}\np={p:.2g}" for a, p in zip(order, p_values)])
        for label, p in zip(ax.get_xticklabels(), p_values):
            if p < alpha:
                label.set_fontweight("bold")
        first_column = ax.get_subplotspec().is_first_col()
        ax.set(title=metric, xlabel="", ylabel=f"minus {rows['baseline'].iloc[0]}" if first_column else "")
        ax.title.set_fontsize(9)
        ax.tick_params(axis="x", labelsize=8, rotation=35)  # long names (multi_query) would collide flat
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
    fig.suptitle(
        f"Paired difference against {intervals['baseline'].iloc[0]}: questions (grey), mean with "
        f"{_percent(confidence)} bootstrap interval (red); p: permutation test, Holm",
        fontsize=10,
    )
    fig.tight_layout()
    note_empty(fig, empty)
    return fig


def cost_axis(scores: pd.DataFrame) -> tuple[str, str]:
    """(cost metric, axis label): dollars where prices are known (any nonzero cost_usd), else
    output tokens, and the label says which."""
    cost = scores.loc[scores["metric"] == "cost_usd", "value"]
    if (cost.fillna(0) != 0).any():
        return "cost_usd", "mean cost per question (USD)"
    return "output_tokens", "mean output tokens per question (no prices known: tokens, not USD)"


def pareto(scores: pd.DataFrame, quality_metric: str | None, cost_metric: str, *, cost_label: str | None = None):
    """Mean quality against mean cost per architecture (architecture / llm where a run has
    several LLMs), the Pareto front dashed (no other point is cheaper and better)."""
    quality, system = quality_scores(scores), scores[scores["metric"] == cost_metric]
    several_llms = scores["llm"].nunique() > 1 if "llm" in scores else False

    def point(frame):
        return frame["architecture"] + (" / " + frame["llm"] if several_llms else "")

    q = quality[quality.metric == quality_metric].assign(point=point).groupby("point")["value"].mean()
    c = system.assign(point=point).groupby("point")["value"].mean()
    both = pd.concat([q.rename("quality"), c.rename("cost")], axis=1).dropna()
    with sns.axes_style("whitegrid"):
        fig, ax = plt.subplots(figsize=(5.5, 4))
    sns.scatterplot(x=both["cost"].to_numpy(), y=both["quality"].to_numpy(), ax=ax, color=POINT_COLOR, s=40)
    frontier = both.sort_values(["cost", "quality"], ascending=[True, False])
    frontier = frontier[frontier["quality"] >= frontier["quality"].cummax()]
    ax.plot(frontier["cost"], frontier["quality"], "--", color="grey", lw=1, label="Pareto front")
    ax.set_xlabel(cost_label or f"mean {cost_metric} per question")
    ax.set_ylabel(f"mean {quality_metric}" if quality_metric else "no quality metric scored")
    ax.margins(x=0.25, y=0.2)  # room for the labels inside the axes
    if len(both):
        ax.legend(fontsize=8, loc="lower right")
    else:
        ax.text(0.5, 0.5, "no architecture has both a quality score and this cost", ha="center", transform=ax.transAxes)
    fig.tight_layout()  # before the labels: they are placed in the final pixel positions
    place_labels(ax, list(both["cost"]), list(both["quality"]), list(both.index))
    return fig


def agreement(scores: pd.DataFrame):
    """Per answer, the first faithfulness-like judge against each other one (Spearman rho)."""
    # every judge's grounding metric (the registry's: faithfulness, adherence), RAGAS's first
    grounding = sorted(grounding_metrics(), key=lambda g: g[0] != "ragas")
    pairs = {f"{judge}/{metric}": (judge, metric) for judge, metric, _ in grounding}
    wide = {}
    for name, (judge, metric) in pairs.items():
        part = scores[(scores.judge == judge) & (scores.metric == metric)]
        if len(part):
            wide[name] = part.groupby(["architecture", "llm", "qid"])["value"].mean()
    frame = pd.DataFrame(wide)
    empty = [c for c in frame.columns if frame[c].isna().all()]
    names = [c for c in frame.columns if c not in empty]
    fig, axes = grid(max(1, len(names) - 1), per_row=3, panel=(4, 3.6))
    for ax, other in zip(axes, names[1:]):
        ax.scatter(frame[names[0]], frame[other], alpha=0.6)
        rho = frame[[names[0], other]].corr(method="spearman").iloc[0, 1]
        ax.set(xlabel=names[0], ylabel=other)
        ax.set_title(f"per answer, Spearman rho = {rho:.2f}", fontsize=9)
    if len(names) < 2:
        axes[0].text(0.5, 0.5, "one judge only: nothing to compare", ha="center", transform=axes[0].transAxes)
    fig.tight_layout()
    note_empty(fig, empty)
    return fig


# ---- all of a run's figures


def run_figures(scores: pd.DataFrame, config: Settings = None) -> dict:
    """{figure name: a function drawing it}; drawn one at a time so each can be closed at once."""
    stats = statistics_settings(config)
    table = summary(scores, config)
    scored, empty = split_empty(quality_scores(scores), "value")
    first = scored[0] if scored else None  # the Pareto plots' quality axis
    cost_metric, cost_label = cost_axis(scores)
    return {
        "metric-bars": lambda: metric_bars(table, confidence=stats.confidence),
        "heatmap-architecture-metric": lambda: architecture_heatmap(table),
        "heatmap-question": lambda: question_heatmap(scores),
        "distributions": lambda: distributions(scores),
        "paired-differences": lambda: difference_plot(
            paired_differences(scores, config),
            difference_intervals(scores, config),
            tests=comparisons(scores, config),
            empty=empty,
            confidence=stats.confidence,
            alpha=stats.alpha,
        ),
        "pareto-latency": lambda: pareto(scores, first, "latency_s", cost_label="mean latency per question (s)"),
        "pareto-cost": lambda: pareto(scores, first, cost_metric, cost_label=cost_label),
        "judge-agreement": lambda: agreement(scores),
    }


def save_run_figures(
    run_id: str,
    scores: pd.DataFrame,
    config: Settings = None,
    *,
    data_sources: list[str] | None = None,
    out_dir: Path | None = None,
) -> dict[str, Path]:
    """Every figure as PNG + PDF + JSON sidecar ({name: PNG path}), named <run_id>-<figure>."""
    written = {}
    for name, draw in run_figures(scores, config).items():
        fig = draw()
        written[name] = save_figure(
            fig,
            f"{run_id}-{name}",
            run_ids=[run_id],
            config=config.model_dump(mode="json") if config is not None else None,
            data_sources=data_sources,
            out_dir=out_dir,
        )["png"]
        plt.close(fig)
    return written


def build_figures(run_id: str, results_dir: Path | None = None, out_dir: Path | None = None) -> dict[str, Path]:
    """Every figure of a run, as PNG + PDF + JSON sidecar, under figures/ ({name: PNG path});
    also the seed-form RAGAS table as Markdown there."""
    directory = run_dir(run_id, results_dir)
    scores = load_scores(run_id, results_dir)
    config = run_config(run_id, results_dir)
    written = save_run_figures(
        run_id, scores, config, data_sources=[str(directory / "scores.parquet")], out_dir=out_dir
    )
    estimates = run_estimates(run_id, results_dir)
    if estimates is not None:  # a person's labels of the run: labels only, judge only, prediction-powered
        fig = estimates_figure(*estimates, confidence=statistics_settings(config).confidence)
        written["estimates"] = save_figure(
            fig, f"{run_id}-estimates", run_ids=[run_id], data_sources=[str(directory / "labels.csv")], out_dir=out_dir
        )["png"]
        plt.close(fig)
    diagnosed = run_diagnosis(run_id, results_dir, confidence=statistics_settings(config).confidence)
    if diagnosed is not None:  # answers with references: why the wrong ones failed
        fig = verdict_figure(diagnosed.table, confidence=statistics_settings(config).confidence, bands=diagnosed.bands)
        written["verdicts"] = save_figure(
            fig,
            f"{run_id}-verdicts",
            run_ids=[run_id],
            data_sources=[str(directory / "scores.parquet")],
            out_dir=out_dir,
        )["png"]
        plt.close(fig)
    seed = seed_table(scores)
    inside(out_dir or paths.FIGURES_DIR, f"{run_id}-obstetrics-table.md", what="run id").write_text(
        seed.to_markdown() if len(seed) else "(RAGAS not run)", encoding="utf-8"
    )
    return written


def run_figure_pngs(scores: pd.DataFrame, config: Settings = None, *, dpi: int = 110) -> dict[str, bytes]:
    """Every figure as PNG bytes, nothing written (for the self-contained HTML report)."""
    pngs = {}
    for name, draw in run_figures(scores, config).items():
        fig = draw()
        pngs[name] = png_bytes(fig, dpi=dpi)
        plt.close(fig)
    return pngs
