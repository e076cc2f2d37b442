"""Prediction-powered inference on the shipped hand-labelled answers (benchmarks/labels): the
correctness judge scores every answer, and 20 of them keep their person's label, drawn at random.

    python benchmarks/ppi_labels.py                      # 20 seeds, 20 labels; writes the figure too
    python benchmarks/ppi_labels.py --seeds 100 --json out.json

For each pool (all 120 labelled answers of both models; the default model's 60) and each seed:
20 answers drawn at random keep their label (`correct`: yes 1, partly 0.5, no 0), the others only
the judge's score. Reported: how often each interval covers the mean of all the pool's labels
(issue 46's target: PPI in >= 19 of 20), and the mean widths. Then the default run's figure:
the first 5 questions of the labelling panel's order (helpers.experiment.run_labels: whole
questions in a seeded random order, 30 answers) labelled, the three intervals per architecture.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np
import pandas as pd

from helpers.experiment.estimates import Scores, estimate_table
from helpers.experiment.estimates_figure import estimates_figure
from helpers.experiment.label_format import LABEL_SCORE
from helpers.experiment.label_sheets import labelled_sheets, sheet_scores
from helpers.inference.ppi import METHODS, three_estimates

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def coverage(labels: np.ndarray, scores: np.ndarray, *, n_labels: int, seeds: int) -> dict:
    truth = float(labels.mean())
    covered = {m: 0 for m in METHODS}
    widths = {m: [] for m in METHODS}
    for seed in range(seeds):
        chosen = np.random.default_rng(seed).choice(len(labels), size=n_labels, replace=False)
        kept = np.full(len(labels), np.nan)
        kept[chosen] = labels[chosen]
        for e in three_estimates(kept, scores):
            covered[e.method] += e.low <= truth <= e.high
            widths[e.method].append(e.width)
    return {
        "answers": len(labels),
        "all_labels_mean": truth,
        "covered": covered,
        "mean_width": {m: float(np.mean(w)) for m, w in widths.items()},
        "ppi_narrower_share": float(np.mean(np.array(widths["ppi"]) < np.array(widths["labels"]))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--labels", type=int, default=20)
    parser.add_argument("--questions", type=int, default=5, help="whole questions labelled for the figure")
    parser.add_argument("--json", default=None)
    parser.add_argument("--figure", default=str(ROOT / "docs" / "measurements" / "ppi-default-run.png"))
    args = parser.parse_args()
    start = time.perf_counter()
    sheets = labelled_sheets(ROOT / "benchmarks" / "labels")
    scored = sheet_scores(sheets, judges=["correctness"])
    scored = scored[scored["metric"] == "correctness"]
    merged = sheets.merge(scored[["model", "architecture", "qid", "value"]], on=["model", "architecture", "qid"])
    merged["label"] = merged["correct"].map(LABEL_SCORE)
    print(f"{len(merged)} labelled answers scored by the correctness judge in {time.perf_counter() - start:.1f} s")
    out = {"args": vars(args), "pools": {}}
    for name, pool in (("both models", merged), (DEFAULT_MODEL, merged[merged["model"] == DEFAULT_MODEL])):
        result = coverage(
            pool["label"].to_numpy(float), pool["value"].to_numpy(float), n_labels=args.labels, seeds=args.seeds
        )
        out["pools"][name] = result
        c, w = result["covered"], result["mean_width"]
        print(
            f"{name}: {result['answers']} answers, mean of all labels {result['all_labels_mean']:.3f}; "
            f"{args.labels} labels x {args.seeds} seeds: covered labels {c['labels']}, judge {c['judge']}, "
            f"ppi {c['ppi']} of {args.seeds}; mean width labels {w['labels']:.3f}, judge {w['judge']:.3f}, "
            f"ppi {w['ppi']:.3f} (ppi narrower in {result['ppi_narrower_share']:.0%})"
        )
    default = merged[merged["model"] == DEFAULT_MODEL]
    qids = sorted(default["qid"].unique())
    random.Random(0).shuffle(qids)  # the labelling panel's order of questions (RunLabels, seed 0)
    labelled_qids = set(qids[: args.questions])
    frame = default.rename(columns={"qid": "item"}).assign(judge="correctness", metric="correctness")
    labels = frame[frame["item"].isin(labelled_qids)][["item", "architecture", "label"]]
    metric, table = estimate_table(
        Scores(frame[["item", "architecture", "judge", "metric", "value"]], "the default's 60 labelled answers",
               baseline="bm25"),
        labels,
        labels_name=f"the labels of questions {sorted(labelled_qids)}",
    )  # fmt: skip
    truth = default.groupby("architecture")["label"].mean()
    table["all_labels_mean"] = table["architecture"].map(truth)
    print(f"\nthe default run, questions {sorted(labelled_qids)} labelled ({len(labels)} answers):")
    print(table.round(3).to_string(index=False))
    fig = estimates_figure(
        metric,
        table,
        title=f"The default run's 60 answers: {len(labels)} labelled (questions {', '.join(sorted(labelled_qids))})",
    )
    fig.savefig(args.figure, dpi=130, bbox_inches="tight")
    print(f"figure: {args.figure}; took {time.perf_counter() - start:.1f} s")
    out["default_run"] = table.replace({np.nan: None}).to_dict("records")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=float))


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    main()
