"""Runs over time: every run under results/ with its date, commit and config, a metric per
architecture across them, and what changed between two runs' configs, so a person sees whether
a change helped (and what the change was).

    runs = run_index()                                   # run_id, finished, commit, name, dataset
    table = trend("offline", "adherence")                # one row per run x architecture, with its interval
    config_diff("default-1a2b3c4d", "default-5e6f7a8b")  # key, the first run's value, the second's

The date is the run's `finished_at` (summary.json, UTC), or the modification time of its scores
for runs made before it was recorded; the commit is meta.json's `git_commit` (the code of the
last invocation: a resumed run keeps the commit that finished it).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from helpers import paths
from helpers.experiment.analysis import load_scores, run_config, statistics_settings, summary
from helpers.experiment.config import ConfigError
from helpers.figures import plt


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def run_index(results_dir: Path | None = None) -> pd.DataFrame:
    """One row per run with scores, oldest first: run_id, finished (UTC), commit (12 characters,
    '' when unknown), name and dataset of its config."""
    root = Path(results_dir or paths.RESULTS_DIR)
    rows = []
    for scores in root.glob("*/scores.parquet"):
        directory = scores.parent
        finished = _json(directory / "summary.json").get("finished_at")
        when = (
            datetime.fromisoformat(finished)
            if finished
            else datetime.fromtimestamp(scores.stat().st_mtime, tz=timezone.utc)
        )
        try:
            config = run_config(directory.name, root)
        except ConfigError:  # a run made by an older version whose config no longer validates
            config = None
        rows.append(
            {
                "run_id": directory.name,
                "finished": when,
                "commit": (_json(directory / "meta.json").get("git_commit") or "")[:12],
                "name": config.name if config else "",
                "dataset": config.dataset.name if config else "",
            }
        )
    columns = ["run_id", "finished", "commit", "name", "dataset"]
    return pd.DataFrame(rows, columns=columns).sort_values("finished", kind="stable").reset_index(drop=True)


def trend(judge: str, metric: str, *, dataset: str | None = None, results_dir: Path | None = None) -> pd.DataFrame:
    """`judge/metric` per architecture in every run that scored it (of `dataset`, if given), oldest
    first: run_id, finished, commit, architecture, mean, ci_low, ci_high, n (each run's own
    statistics settings)."""
    index = run_index(results_dir)
    if dataset:
        index = index[index["dataset"] == dataset]
    parts = []
    for run in index.to_dict("records"):
        scores = load_scores(run["run_id"], results_dir)
        scores = scores[(scores["judge"] == judge) & (scores["metric"] == metric)]
        if scores.empty:
            continue
        config = run_config(run["run_id"], results_dir)
        table = summary(scores, statistics_settings(config))
        parts.append(table.assign(run_id=run["run_id"], finished=run["finished"], commit=run["commit"]))
    columns = ["run_id", "finished", "commit", "architecture", "mean", "ci_low", "ci_high", "n"]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


def _flat(value, prefix: str = "") -> dict:
    """{'retrieval.k': 5, 'judges.ragas.llm': 'local', ...}: a config as dotted keys."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def config_diff(run_a: str, run_b: str, results_dir: Path | None = None) -> pd.DataFrame:
    """The keys whose values differ between two runs' resolved configs (dotted paths, as sweep
    axes are written): key, run_a's value, run_b's value; a key only one has shows None."""
    configs = []
    for run_id in (run_a, run_b):
        config = run_config(run_id, results_dir)
        if config is None:
            raise ConfigError(f"run {run_id} has no config.yaml: it cannot be compared")
        configs.append(_flat(config.model_dump(mode="json")))
    a, b = configs
    rows = [
        {"key": key, run_a: a.get(key), run_b: b.get(key)}
        for key in sorted(a.keys() | b.keys())
        if a.get(key) != b.get(key)
    ]
    return pd.DataFrame(rows, columns=["key", run_a, run_b])


def trend_figure(table: pd.DataFrame, title: str):
    """A metric per architecture against the runs in date order (x labels: date and commit), each
    point with its interval (none where n < 5)."""
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * table["run_id"].nunique() + 3), 3.6))
    runs = table.drop_duplicates("run_id").sort_values("finished", kind="stable")
    position = {run_id: i for i, run_id in enumerate(runs["run_id"])}
    for architecture, part in table.groupby("architecture", sort=True):
        x = part["run_id"].map(position)
        low = (part["mean"] - part["ci_low"]).fillna(0)
        high = (part["ci_high"] - part["mean"]).fillna(0)
        ax.errorbar(x, part["mean"], yerr=[low, high], fmt="o-", capsize=3, label=architecture)
    labels = [f"{t:%Y-%m-%d %H:%M}\n{c[:7] or '?'}" for t, c in zip(runs["finished"], runs["commit"])]
    ax.set_xticks(range(len(runs)), labels, fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig
