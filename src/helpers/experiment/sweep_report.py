"""Comparisons across the runs of a sweep (`python -m helpers report --sweep NAME`).

A *cell* is one combination of the sweep's axis values and one architecture. Per quality metric:
the mean of each cell with its bootstrap interval, and paired tests between cells that differ
in exactly one axis (architecture counts as one) over the questions both answered, p-values
Holm-corrected over all the metric's tests. Figures as every other (PNG, PDF, JSON sidecar).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.errors import UserError
from helpers.experiment.analysis import quality_scores, run_config, statistics_settings
from helpers.experiment.sweep import sweep_dir
from helpers.inference.classical import holm, mean_text, paired_permutation_test, summarize


def axis_name(dotted: str) -> str:
    return dotted.split(".")[-1]


def _value(value) -> str:
    if isinstance(value, dict):
        return str(value.get("name") or value.get("model") or json.dumps(value, sort_keys=True))
    if isinstance(value, list):
        return "+".join(map(str, value))
    return str(value)


def sweep_scores(name: str, results_dir: Path | None = None) -> tuple[pd.DataFrame, list[str], dict]:
    """(quality scores of every finished run of the sweep with one column per axis, the axis
    columns, the sweep index). Runs that have no scores yet are listed in the index only."""
    index_path = sweep_dir(name, results_dir) / "sweep.json"
    if not index_path.exists():
        raise UserError(f"{index_path}: no such sweep; run `python -m helpers sweep configs/sweeps/{name}.yaml`")
    index = json.loads(index_path.read_text(encoding="utf-8"))
    axes = [axis_name(a) for a in index["axes"] if axis_name(a) != "architectures"]
    frames = []
    for run in index["runs"]:
        path = Path(results_dir or sweep_dir(name).parents[1]) / run["run_id"] / "scores.parquet"
        if not path.exists():
            continue
        frame = quality_scores(pd.read_parquet(path))
        for dotted, value in run["axes"].items():
            if axis_name(dotted) != "architectures":
                frame[axis_name(dotted)] = _value(value)
        frames.append(frame)
    if not frames:
        raise UserError(f"sweep {name!r}: no run has scores yet; run the sweep first")
    return pd.concat(frames, ignore_index=True), axes, index


def cell_table(
    scores: pd.DataFrame, axes: list[str], *, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0
) -> pd.DataFrame:
    """Mean and bootstrap interval per (metric, axes..., architecture)."""
    return summarize(
        scores, by=("metric", *axes, "architecture"), confidence=confidence, n_resamples=n_resamples, seed=seed
    )


def paired_tests(
    scores: pd.DataFrame, axes: list[str], *, alpha: float = 0.05, n_resamples: int = 10_000, seed: int = 0
) -> pd.DataFrame:
    """Cells that differ in one axis, compared on the questions both answered (same qid)."""
    keys = [*axes, "architecture"]
    rows = []
    for metric, part in scores.dropna(subset=["value"]).groupby("metric"):
        cells = {
            key if isinstance(key, tuple) else (key,): group.groupby("qid")["value"].mean()
            for key, group in part.groupby(keys)
        }
        tests = []
        for (a, va), (b, vb) in itertools.combinations(sorted(cells.items()), 2):
            differing = [k for k, x, y in zip(keys, a, b) if x != y]
            shared = va.index.intersection(vb.index)
            if len(differing) != 1 or len(shared) < 2:
                continue
            x, y = va[shared].to_numpy(), vb[shared].to_numpy()
            tests.append(
                {
                    "metric": metric,
                    "axis": differing[0],
                    **{f"fixed_{k}": v for k, v, w in zip(keys, a, b) if v == w},
                    "a": a[keys.index(differing[0])],
                    "b": b[keys.index(differing[0])],
                    "mean_a": float(x.mean()),
                    "mean_b": float(y.mean()),
                    "mean_diff": float((x - y).mean()),
                    "n_pairs": len(shared),
                    "p_value": paired_permutation_test(x, y, n_resamples=n_resamples, seed=seed),
                }
            )
        if tests:
            adjusted = holm([t["p_value"] for t in tests])
            for test, p in zip(tests, adjusted):
                rows.append({**test, "p_holm": float(p), "significant": bool(p < alpha)})
    return pd.DataFrame(rows)


def sweep_figures(
    table: pd.DataFrame, axes: list[str], name: str, run_ids: list[str], out_dir: Path | None = None
) -> dict:
    """One figure per metric: cells as points with their intervals, architecture on the x axis,
    one colour per combination of the other axes."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from helpers.figures import save_figure  # matplotlib: loaded only when this runs

    written = {}
    for metric, part in table.groupby("metric"):
        part = part.copy()
        part["setting"] = part[axes].astype(str).agg(", ".join, axis=1) if axes else "all"
        fig, ax = plt.subplots(figsize=(max(5, 1.2 * part["architecture"].nunique() + 3), 3.8))
        architectures = sorted(part["architecture"].unique())
        settings = sorted(part["setting"].unique())
        palette = sns.color_palette("colorblind", len(settings))
        width = 0.8 / max(len(settings), 1)
        for i, setting in enumerate(settings):
            rows = part[part["setting"] == setting].set_index("architecture").reindex(architectures)
            x = np.arange(len(architectures)) + (i - (len(settings) - 1) / 2) * width
            error = np.vstack([rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]])
            ax.errorbar(x, rows["mean"], yerr=error, fmt="o", capsize=3, color=palette[i], label=setting)
        ax.set_xticks(range(len(architectures)), architectures, rotation=20)
        ax.set_ylabel(metric)
        ax.set_title(f"sweep {name}: {metric} ({', '.join(axes) or 'architecture'})")
        ax.legend(fontsize=7, title=", ".join(axes) or None, title_fontsize=7, loc="best")
        fig.tight_layout()
        safe = metric.replace("/", "_").replace("@", "at")
        written[metric] = save_figure(fig, f"sweep-{name}-{safe}", run_ids=run_ids, out_dir=out_dir)["png"]
        plt.close(fig)
    return written


def sweep_report(name: str, results_dir: Path | None = None, figures: bool = True, out_dir: Path | None = None) -> dict:
    """Tables (and figures) of a sweep; written to results/sweeps/<name>/ as CSV too."""
    scores, axes, index = sweep_scores(name, results_dir)
    first = next((r["run_id"] for r in index["runs"]), None)
    # the statistics settings of the sweep's first run (a sweep varies other axes)
    stats = statistics_settings(run_config(first, results_dir) if first else None)
    table = cell_table(scores, axes, confidence=stats.confidence, n_resamples=stats.n_resamples, seed=stats.seed)
    tests = paired_tests(scores, axes, alpha=stats.alpha, n_resamples=stats.n_resamples, seed=stats.seed)
    out = sweep_dir(name, results_dir)
    table.to_csv(out / "cells.csv", index=False)
    tests.to_csv(out / "paired_tests.csv", index=False)
    written = sweep_figures(table, axes, name, [r["run_id"] for r in index["runs"]], out_dir) if figures else {}
    return {"cells": table, "tests": tests, "axes": axes, "figures": written, "runs": index["runs"]}


def format_sweep_report(report: dict) -> str:
    lines = [f"{len(report['runs'])} runs; axes: {', '.join(report['axes']) or '(architecture only)'}"]
    for run in report["runs"]:
        lines.append(f"  {run['run_id']}: {run.get('status', 'not run')}")
    cells = report["cells"].copy()
    cells["mean [CI]"] = [mean_text(r["mean"], r["ci_low"], r["ci_high"], r["n"]) for r in cells.to_dict("records")]
    for metric, part in cells.groupby("metric"):
        index = report["axes"] or ["metric"]
        lines += [
            "",
            metric,
            part.pivot_table(index=index, columns="architecture", values="mean [CI]", aggfunc="first").to_string(),
        ]
    tests = report["tests"]
    if len(tests):
        shown = tests[tests["significant"]] if tests["significant"].any() else tests.nsmallest(5, "p_holm")
        fixed = [c for c in tests.columns if c.startswith("fixed_")]
        lines += [
            "",
            f"paired tests ({len(tests)}, Holm-corrected); "
            + ("significant:" if tests["significant"].any() else "none significant; smallest p:"),
            # the settings held fixed say which cell a comparison is in (dataset, architecture, ...)
            shown[["metric", "axis", *fixed, "a", "b", "mean_diff", "n_pairs", "p_holm"]]
            .round(4)
            .to_string(index=False),
        ]
    for metric, path in report["figures"].items():
        lines.append(f"figure {metric}: {path}")
    return "\n".join(lines)
