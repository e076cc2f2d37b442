"""Tables of a finished run (results/<run_id>/scores.parquet); its figures: helpers.experiment.figures_run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from helpers import paths
from helpers.errors import UserError
from helpers.experiment.config import DecisionsConfig, ExperimentConfig, StatisticsConfig, load_config
from helpers.inference.classical import (
    MIN_INTERVAL_N,
    bootstrap_ci,
    compare_to_baseline,
    settle,
    summarize,
)
from helpers.inputs import inside
from helpers.judges import is_quality, validity
from helpers.ragas_eval import RAGAS_METRICS

RAGAS_COLUMNS = list(RAGAS_METRICS)


Settings = ExperimentConfig | StatisticsConfig | None  # what the tables below take: a run's config


def statistics_settings(config: Settings) -> StatisticsConfig:
    """A run's statistics settings (baseline, confidence, alpha, n_resamples, seed): its config's
    own, or StatisticsConfig's defaults without a config."""
    if config is None:
        return StatisticsConfig()
    return config if isinstance(config, StatisticsConfig) else config.statistics


def _percent(confidence: float) -> str:
    """0.95 -> '95%', 0.995 -> '99.5%'."""
    return f"{100 * confidence:g}%"


def natural_key(text) -> tuple:
    """Sort key that reads numbers as numbers: q1, q2, ..., q10 (not q1, q10, q2); a tuple, so
    pandas can sort by it too."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", str(text)))


def natural_sorted(values) -> list:
    return sorted(values, key=natural_key)


def run_dir(run_id: str, results_dir: Path | None = None) -> Path:
    return inside(results_dir or paths.RESULTS_DIR, run_id, what="run id")


def load_scores(run_id: str, results_dir: Path | None = None) -> pd.DataFrame:
    path = run_dir(run_id, results_dir) / "scores.parquet"
    if not path.exists():
        root = Path(results_dir or paths.RESULTS_DIR)
        known = natural_sorted(p.parent.name for p in root.glob("*/scores.parquet"))
        runs = (
            f"runs with scores in {root}: {', '.join(known[:8])}{' ...' if len(known) > 8 else ''}"
            if known
            else f"no run has scores in {root}"
        )
        raise UserError(f"{path}: no scores; run `python -m helpers run CONFIG.yaml` first ({runs})")
    return pd.read_parquet(path)


def quality_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Quality metrics only, named judge/metric (e.g. ragas/faithfulness)."""
    # which (judge, metric) is a quality score: the judges' registry (helpers.judges)
    pairs = scores[["judge", "metric"]].drop_duplicates()
    quality = {(j, m) for j, m in zip(pairs["judge"], pairs["metric"]) if is_quality(j, m)}
    keep = scores[[pair in quality for pair in zip(scores["judge"], scores["metric"])]].copy()
    keep["metric"] = keep["judge"] + "/" + keep["metric"]
    return keep


def summary(scores: pd.DataFrame, config: Settings = None) -> pd.DataFrame:
    """Mean and bootstrap interval per (architecture, judge/metric), at the run's confidence, and
    each metric's `validity` (how far people agree with its judge: helpers.judges.validity.status)."""
    stats = statistics_settings(config)
    table = summarize(
        quality_scores(scores), confidence=stats.confidence, n_resamples=stats.n_resamples, seed=stats.seed
    )
    table["validity"] = table["metric"].map(lambda metric: validity.status(metric))
    return table


def baseline_of(quality: pd.DataFrame, config: Settings = None) -> str | None:
    """The configured baseline, or the first architecture (by name) where it has no scores;
    None when fewer than two architectures have any (nothing to compare)."""
    present = set(quality.dropna(subset=["value"])["architecture"])
    if len(present) < 2:
        return None
    baseline = statistics_settings(config).baseline
    return baseline if baseline in present else sorted(present)[0]


def comparisons(scores: pd.DataFrame, config: Settings = None) -> pd.DataFrame:
    stats = statistics_settings(config)
    quality = quality_scores(scores).dropna(subset=["value"])
    baseline = baseline_of(quality, config)
    if baseline is None:
        return pd.DataFrame()  # nothing to compare (one architecture, or every score failed)
    return compare_to_baseline(quality, baseline, alpha=stats.alpha, n_resamples=stats.n_resamples, seed=stats.seed)


def paired_differences(scores: pd.DataFrame, config: Settings = None) -> pd.DataFrame:
    """Per question: architecture minus baseline on each quality metric (metric, architecture,
    baseline, qid, diff), on the questions both have scored; empty when nothing to compare."""
    quality = quality_scores(scores).dropna(subset=["value"])
    baseline = baseline_of(quality, config)
    if baseline is None:
        return pd.DataFrame(columns=["metric", "architecture", "baseline", "qid", "diff"])
    rows = []
    for metric, part in quality.groupby("metric"):
        wide = part.pivot_table(index="qid", columns="architecture", values="value", aggfunc="mean")
        if baseline not in wide:
            continue
        for architecture in (c for c in wide.columns if c != baseline):
            diff = (wide[architecture] - wide[baseline]).dropna()
            rows += [
                {"metric": metric, "architecture": architecture, "baseline": baseline, "qid": qid, "diff": d}
                for qid, d in diff.items()
            ]
    return pd.DataFrame(rows, columns=["metric", "architecture", "baseline", "qid", "diff"])


def difference_intervals(scores: pd.DataFrame, config: Settings = None) -> pd.DataFrame:
    """Mean paired difference against the baseline with its bootstrap interval (questions
    resampled), at the run's confidence: metric, architecture, baseline, mean_diff, ci_low,
    ci_high, n_pairs."""
    stats = statistics_settings(config)
    rows = []
    for (metric, architecture, baseline), part in paired_differences(scores, config).groupby(
        ["metric", "architecture", "baseline"], sort=True
    ):
        mean, low, high = bootstrap_ci(
            part["diff"].to_numpy(float),
            confidence=stats.confidence,
            n_resamples=stats.n_resamples,
            seed=stats.seed,
        )
        if len(part) < MIN_INTERVAL_N:  # as in summaries: too few pairs for an interval
            low = high = float("nan")
        rows.append(
            {
                "metric": metric,
                "architecture": architecture,
                "baseline": baseline,
                "mean_diff": mean,
                "ci_low": low,
                "ci_high": high,
                "n_pairs": len(part),
            }
        )
    return pd.DataFrame(
        rows, columns=["metric", "architecture", "baseline", "mean_diff", "ci_low", "ci_high", "n_pairs"]
    )


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
    if len(evidence):  # faithfulness with the evidence model's verdicts, on every answer
        by_architecture = evidence.groupby("architecture")["value"]
        table = table.reindex(sorted(set(table.index) | set(evidence.architecture)))
        table["faithfulness (evidence model)"] = by_architecture.mean().round(3)
        table["evidence samples"] = by_architecture.size()
    return table


def run_config(run_id: str, results_dir: Path | None = None) -> ExperimentConfig | None:
    """The run's resolved config (config.yaml in its folder), typed and checked as `helpers run`
    checks one (a ConfigError names the file and key); None for a folder without one."""
    path = run_dir(run_id, results_dir) / "config.yaml"
    return load_config(path) if path.exists() else None


def decision_text(run_id: str, scores: pd.DataFrame, config: Settings, results_dir=None, *, empty=None) -> list[str]:
    """The decision's lines: `run --until-decided`'s where it stopped the run, else decided_lines;
    `empty` (default: a line saying why) where there is nothing to decide."""
    decision = run_dir(run_id, results_dir) / DECISIONS_FILE
    if decision.exists():  # stopped by a confidence sequence: fixed-n p-values would not be valid here
        return decision_lines(json.loads(decision.read_text(encoding="utf-8")))
    lines = decided_lines(scores, config)
    if lines:
        return lines
    return (
        ["fewer than two architectures with scores on the decision metric: nothing to decide"]
        if empty is None
        else empty
    )


def decision_lines(decision: dict) -> list[str]:
    """What a person reads at the end of the run: questions used, why it stopped, each pair."""
    lines = [
        f"until decided on {decision['metric']} (alpha {decision['alpha']}, every pair's interval anytime-valid): "
        f"{decision['questions_used']} of {decision['questions_available']} questions used; {decision['stopped']}"
    ]
    for pair in decision["pairs"]:
        lines.append(
            f"  {pair['better']} - {pair['other']}: {pair['mean_diff']:+.3f}, interval "
            f"[{pair['low']:+.3f}, {pair['high']:+.3f}] over {pair['n']} questions: {pair['status']}"
        )
    return lines


DECISIONS_FILE = "decisions.json"  # what `run --until-decided` decided (helpers.experiment.until_decided)


def decided_lines(scores: pd.DataFrame, config: Settings = None) -> list[str]:
    """The decision on the decision metric (ExperimentConfig.decision_metric), each architecture
    against the one with the highest mean, by helpers.inference.classical `settle`: tied (its interval within
    ±decisions.margin), decided (paired permutation test, Holm-corrected, below alpha) or not
    decided, with the questions needed to tell a difference of the margin. A "best" is named only
    when it is decided against every other; a tie at the top says so. `run --until-decided`
    answers only as many questions as it takes."""
    stats = statistics_settings(config)
    if isinstance(config, ExperimentConfig):
        metric, margin = config.decision_metric(), config.decisions.margin
    else:
        metric, margin = "correctness/correctness", DecisionsConfig().margin
    quality = quality_scores(scores).dropna(subset=["value"])
    part = quality[quality["metric"] == metric]
    if part["architecture"].nunique() < 2:
        return []
    means = part.groupby("architecture")["value"].mean().sort_values(ascending=False, kind="stable")
    top = str(means.index[0])
    tests = compare_to_baseline(part, top, alpha=stats.alpha, n_resamples=stats.n_resamples, seed=stats.seed)
    wide = part.pivot_table(index="qid", columns="architecture", values="value", aggfunc="mean")
    pairs = {
        row.architecture: settle(
            (wide[row.architecture] - wide[top]).to_numpy(),
            row.p_holm,
            alpha=stats.alpha,
            margin=margin,
            confidence=stats.confidence,
            n_resamples=stats.n_resamples,
            seed=stats.seed,
        )
        | {"p_holm": row.p_holm}
        for row in tests.itertuples()
    }
    level = _percent(stats.confidence)
    lines = [
        f"decision on {metric} (alpha {stats.alpha}, Holm; a difference within ±{margin:g} does not matter: "
        f"decisions.margin; {level} bootstrap interval of each difference):",
        "  " + _verdict_at_the_top(top, means, pairs),
    ]
    for architecture, pair in pairs.items():
        gap = (
            f"{architecture} {pair['mean']:+.3f} [{pair['low']:+.3f}, {pair['high']:+.3f}] against {top} "
            f"over {pair['n']} questions"
        )
        if pair["status"] == "tied":
            lines.append(f"  {gap}: tied (the interval lies within ±{margin:g})")
        elif pair["status"] == "decided":
            lines.append(f"  {gap}: decided (p = {pair['p_holm']:.3g})")
        else:
            more = (
                f"about {pair['needed']} questions needed to tell a difference of {margin:g}"
                if pair["needed"]
                else "no difference to look for (margin 0)"
            )
            lines.append(f"  {gap}: not decided (p = {pair['p_holm']:.2f}): {more}")
    return lines


def _verdict_at_the_top(top: str, means: pd.Series, pairs: dict) -> str:
    """'best: X', or who is tied with or not yet told apart from the highest mean."""
    tied = [a for a, p in pairs.items() if p["status"] == "tied"]
    open_ = [a for a, p in pairs.items() if p["status"] == "not decided"]
    if not tied and not open_:
        return f"best: {top} ({means[top]:.3f}), decided against every other"
    parts = []
    if tied:
        parts.append(f"{top} ({means[top]:.3f}) tied with {', '.join(f'{a} ({means[a]:.3f})' for a in tied)}")
    if open_:
        who = f"{top} has the highest mean ({means[top]:.3f})," if not tied else ", and"
        parts.append(f"{who} not yet told apart from {', '.join(open_)}")
    return "no best: " + " ".join(parts).replace(" , and", ", and")
