"""Tables and figures of a finished run (results/<run_id>/scores.parquet)."""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import yaml

from helpers import paths
from helpers.errors import UserError
from helpers.experiment.config import StatisticsConfig
from helpers.figures import save_figure
from helpers.ragas_eval import RAGAS_METRICS
from helpers.stats import compare_to_baseline, summarize
from helpers.trace.scoring import METRICS as TRACE_METRICS

RAGAS_COLUMNS = list(RAGAS_METRICS)
# judge -> its quality metrics (the other score rows of a run are costs: latency, tokens, ...)
QUALITY = {"ragas": RAGAS_COLUMNS, "offline": list(TRACE_METRICS), "trace_llm": list(TRACE_METRICS),
           "ragas_evidence": ["faithfulness"]}


def statistics_settings(config: dict | None) -> dict:
    """A run's `statistics` block (baseline, confidence, alpha, n_resamples, seed), with the
    defaults of helpers.experiment.config.StatisticsConfig for keys it lacks."""
    return StatisticsConfig().model_dump() | ((config or {}).get("statistics") or {})


def _percent(confidence: float) -> str:
    """0.95 -> '95%', 0.995 -> '99.5%'."""
    return f"{100 * confidence:g}%"


def run_dir(run_id: str, results_dir: Path | None = None) -> Path:
    return Path(results_dir or paths.RESULTS_DIR) / run_id


def load_scores(run_id: str, results_dir: Path | None = None) -> pd.DataFrame:
    path = run_dir(run_id, results_dir) / "scores.parquet"
    if not path.exists():
        raise UserError(f"{path}: no scores; run `python -m helpers run CONFIG.yaml` first")
    return pd.read_parquet(path)


def quality_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Quality metrics only, named judge/metric (e.g. ragas/faithfulness)."""
    # retrieval rows (ndcg@k, recall@k, mrr@k, where the dataset has qrels) are quality at any k
    keep = scores[scores.apply(lambda r: r["metric"] in QUALITY.get(r["judge"], []) or r["judge"] == "retrieval",
                               axis=1)].copy()
    keep["metric"] = keep["judge"] + "/" + keep["metric"]
    return keep


def summary(scores: pd.DataFrame, config: dict | None = None) -> pd.DataFrame:
    """Mean and bootstrap interval per (architecture, judge/metric), at the run's confidence."""
    stats = statistics_settings(config)
    return summarize(quality_scores(scores), confidence=stats["confidence"], n_resamples=stats["n_resamples"],
                     seed=stats["seed"])


def comparisons(scores: pd.DataFrame, config: dict | None = None) -> pd.DataFrame:
    stats = statistics_settings(config)
    baseline = stats["baseline"]
    quality = quality_scores(scores).dropna(subset=["value"])
    if quality["architecture"].nunique() < 2:
        return pd.DataFrame()  # nothing to compare (one architecture, or every score failed)
    if baseline not in set(quality["architecture"]):
        baseline = sorted(set(quality["architecture"]))[0]
    return compare_to_baseline(quality, baseline, alpha=stats["alpha"], n_resamples=stats["n_resamples"],
                               seed=stats["seed"])


def seed_table(scores: pd.DataFrame) -> pd.DataFrame:
    """The seed benchmark's table: architectures x the four RAGAS metrics (means over the scored
    samples; NaN where none could be scored), with how many samples were judged and how many
    of their scores are NaN, so an empty cell is never mistaken for a low score."""
    ragas = scores[(scores.judge == "ragas") & scores.metric.isin(RAGAS_COLUMNS)]
    evidence = scores[(scores.judge == "ragas_evidence") & (scores.metric == "faithfulness")]
    if ragas.empty and evidence.empty:
        return pd.DataFrame()
    by = ragas.groupby(["architecture", "metric"])["value"]
    table = by.mean().unstack().reindex(columns=[c for c in RAGAS_COLUMNS if c in set(ragas.metric)]).round(3)
    table["samples"] = ragas.groupby("architecture")["qid"].nunique()
    table["nan_scores"] = ragas["value"].isna().groupby(ragas["architecture"]).sum()
    if len(evidence):     # faithfulness with the evidence model's verdicts, on every answer
        by_architecture = evidence.groupby("architecture")["value"]
        table = table.reindex(sorted(set(table.index) | set(evidence.architecture)))
        table["faithfulness (evidence model)"] = by_architecture.mean().round(3)
        table["evidence samples"] = by_architecture.size()
    return table


def _bars(table: pd.DataFrame, confidence: float):
    metrics = list(dict.fromkeys(table["metric"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.2 * len(metrics), 3.6), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        part = table[table.metric == metric]
        err = np.vstack([part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]])
        ax.bar(part["architecture"], part["mean"], yerr=err, capsize=3, color="#4C72B0")
        ax.set_title(metric, fontsize=9)
        ax.set_ylim(0, 1.05)
        ax.tick_params(axis="x", rotation=60, labelsize=8)
        if part["mean"].isna().all():  # say why a panel is empty rather than leave it blank
            ax.text(0.5, 0.5, "no sample could be scored\n(NaN: see reasons in scores)", ha="center",
                    va="center", fontsize=8, transform=ax.transAxes)
    fig.suptitle(f"Mean per architecture with {_percent(confidence)} bootstrap intervals", fontsize=10)
    fig.tight_layout()
    return fig


def _heatmap(matrix: pd.DataFrame, title: str):
    fig, ax = plt.subplots(figsize=(1.0 + 0.7 * matrix.shape[1], 1.2 + 0.4 * matrix.shape[0]))
    image = ax.imshow(matrix.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(matrix.shape[1]), matrix.columns, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(matrix.shape[0]), matrix.index, fontsize=8)
    for (i, j), value in np.ndenumerate(matrix.to_numpy(dtype=float)):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color="white" if value < 0.6 else "black")
    fig.colorbar(image, ax=ax, fraction=0.04)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def _pareto(scores: pd.DataFrame, quality_metric: str, cost_metric: str):
    quality = quality_scores(scores)
    q = quality[quality.metric == quality_metric].groupby("architecture")["value"].mean()
    c = scores[scores.metric == cost_metric].groupby("architecture")["value"].mean()
    both = pd.concat([q.rename("quality"), c.rename("cost")], axis=1).dropna()
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.scatter(both["cost"], both["quality"], color="#C44E52")
    for name, row in both.iterrows():
        ax.annotate(name, (row["cost"], row["quality"]), fontsize=8, xytext=(3, 3), textcoords="offset points")
    frontier = both.sort_values("cost")
    frontier = frontier[frontier["quality"] >= frontier["quality"].cummax()]
    ax.plot(frontier["cost"], frontier["quality"], "--", color="grey", lw=1, label="Pareto front")
    ax.set_xlabel(f"mean {cost_metric} per question")
    ax.set_ylabel(quality_metric)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _agreement(scores: pd.DataFrame):
    pairs = {"ragas/faithfulness": ("ragas", "faithfulness"), "offline/adherence_score": ("offline", "adherence_score"),
             "trace_llm/adherence": ("trace_llm", "adherence"),
             "ragas_evidence/faithfulness": ("ragas_evidence", "faithfulness")}
    wide = {}
    for name, (judge, metric) in pairs.items():
        part = scores[(scores.judge == judge) & (scores.metric == metric)]
        if len(part):
            wide[name] = part.set_index(["architecture", "qid"])["value"]
    frame = pd.DataFrame(wide)
    names = list(frame.columns)
    fig, axes = plt.subplots(1, max(1, len(names) - 1), figsize=(4 * max(1, len(names) - 1), 3.6), squeeze=False)
    for ax, other in zip(axes[0], names[1:]):
        ax.scatter(frame[names[0]], frame[other], alpha=0.6)
        rho = frame[[names[0], other]].corr(method="spearman").iloc[0, 1]
        ax.set_xlabel(names[0])
        ax.set_ylabel(other)
        ax.set_title(f"per answer, Spearman rho = {rho:.2f}", fontsize=9)
    if len(names) < 2:
        axes[0][0].text(0.5, 0.5, "one judge only: nothing to compare", ha="center")
    fig.tight_layout()
    return fig


def make_figures(run_id: str, results_dir: Path | None = None, out_dir: Path | None = None) -> dict[str, Path]:
    """Every figure of a run, as PNG + PDF + JSON sidecar, under figures/."""
    directory = run_dir(run_id, results_dir)
    scores = load_scores(run_id, results_dir)
    config = yaml.safe_load((directory / "config.yaml").read_text(encoding="utf-8"))
    meta = {"run_ids": [run_id], "config": config, "data_sources": [str(directory / "scores.parquet")], "out_dir": out_dir}
    table = summary(scores, config)
    written = {}
    figures = {
        "metric-bars": lambda: _bars(table, statistics_settings(config)["confidence"]),
        "heatmap-architecture-metric": lambda: _heatmap(table.pivot(index="architecture", columns="metric", values="mean"),
                                                        "Mean score: architecture x metric"),
        "heatmap-question": lambda: _heatmap(
            quality_scores(scores).pivot_table(index="qid", columns="architecture", values="value", aggfunc="mean"),
            "Mean quality per question and architecture (which questions fail where)"),
        "pareto-latency": lambda: _pareto(scores, table["metric"].iloc[0], "latency_s"),
        "pareto-cost": lambda: _pareto(scores, table["metric"].iloc[0], "output_tokens"),
        "judge-agreement": lambda: _agreement(scores),
    }
    for name, build in figures.items():
        fig = build()
        written[name] = save_figure(fig, f"{run_id}-{name}", **meta)["png"]
        plt.close(fig)
    seed = seed_table(scores)
    (Path(out_dir or paths.FIGURES_DIR) / f"{run_id}-obstetrics-table.md").write_text(
        seed.to_markdown() if len(seed) else "(RAGAS not run)", encoding="utf-8")
    return written


def report(run_id: str, results_dir: Path | None = None) -> str:
    """Text report: the seed-form table, means with intervals, and the paired comparisons."""
    directory = run_dir(run_id, results_dir)
    scores = load_scores(run_id, results_dir)
    config = yaml.safe_load((directory / "config.yaml").read_text(encoding="utf-8"))
    summary_json = json.loads((directory / "summary.json").read_text()) if (directory / "summary.json").exists() else {}
    parts = [f"run {run_id}: {summary_json.get('answers', '?')} answers, failures {summary_json.get('answer_failures', {})}, "
             f"NaN scores {summary_json.get('nan_scores', {})}"]
    seed = seed_table(scores)
    if len(seed):
        parts += ["", "RAGAS (seed benchmark form):", seed.to_string()]
    table = summary(scores, config)
    if table.empty:
        return "\n".join(parts + ["", "no quality scores to summarise"])
    level = _percent(statistics_settings(config)["confidence"])
    column = f"mean [{level} CI]"
    table[column] = table.apply(lambda r: f"{r['mean']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]", axis=1)
    parts += ["", f"Means with {level} bootstrap intervals, {column}:",
              table.pivot(index="architecture", columns="metric", values=column).to_string()]
    comp = comparisons(scores, config)
    if len(comp):
        parts += ["", f"Paired permutation tests vs {comp['baseline'].iloc[0]} (Holm-corrected):",
                  comp.round(4).to_string(index=False)]
    return "\n".join(parts)
