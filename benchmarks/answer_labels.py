"""Hand labels of the default benchmark's answers, per model and architecture, and every judge
checked against them (helpers.experiment.label_sheets).

  # a sheet to label: one row per answer, with the question, the seed's ground truth and the contexts
  python benchmarks/answer_labels.py export RUN_ID --model qwen2.5-coder-1.5b --out sheet.csv
  # the labelled sheet kept in benchmarks/labels/ holds COMMITTED_COLUMNS only (answers and labels,
  # not the guideline's text: data stays in data/)
  # the labels side by side, and the judges of the listed runs against them
  python benchmarks/answer_labels.py report --labels benchmarks/labels/*.csv \\
      --run qwen2.5-coder-1.5b=RUN_ID --run smollm2-135m=RUN_ID [--out results/benchmarks/answer_labels.json]

A run given twice for one model (say the default run and a judges-only run over the same cached
answers) adds its judges; the answers are matched by (model, architecture, qid).
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_dataset
from helpers.experiment.analysis import load_scores
from helpers.experiment.label_sheets import (
    AGREEMENT_COLUMNS,
    COMMITTED_COLUMNS,
    answers_sheet,
    judges_vs_labels,
    label_figure,
    label_summary,
    load_labels,
)
from helpers.figures import save_figure


def _export(args) -> int:
    references = load_dataset("obstetrics").answers
    sheet = answers_sheet(args.run_id, model=args.model, references=references)
    if args.compact:  # what the repository keeps: no guideline text, no seed questions
        sheet = sheet[list(COMMITTED_COLUMNS)]
    sheet.to_csv(args.out, index=False)
    print(
        f"{len(sheet)} answers of {args.run_id} written to {args.out}: fill `supported` and `correct` "
        "(yes / partly / no) and, where it helps, `note`"
    )
    return 0


def _report(args) -> int:
    labels = pd.concat([load_labels(path) for path in args.labels], ignore_index=True)
    frames = []
    for pair in args.run:
        model, _, run_id = pair.partition("=")
        scores = load_scores(run_id)
        frames.append(scores.assign(model=model, run_id=run_id))
    scores = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["model", "architecture", "qid", "judge", "metric", "value"])
    )
    summary = label_summary(labels)
    pd.set_option("display.width", 200)
    print("Hand labels (score: yes 1, partly 0.5, no 0; 95% bootstrap interval):")
    print(summary.round(2).to_string(index=False))
    columns = ["models", *AGREEMENT_COLUMNS]
    tables = []
    for positive in (("no",), ("no", "partly")):
        for model in [None, *labels["model"].unique()]:
            subset = labels if model is None else labels[labels["model"] == model]
            table = judges_vs_labels(subset, scores, positive=positive)
            if len(table):
                tables.append(table.assign(models=model or "both"))
    judges = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=columns)
    print("\nJudges against the `supported` labels (AUROC for the positive labels; agreement at 0.5):")
    print(judges[columns].round(3).to_string(index=False) if len(judges) else "(no judge scores)")
    out = paths.write_json(
        args.out or paths.benchmark_output("answer_labels"),
        {
            "labels": [str(p) for p in args.labels],
            "runs": args.run,
            "label_summary": summary.to_dict(orient="records"),
            "judges_vs_labels": judges.to_dict(orient="records"),
        },
    )
    figure = save_figure(
        label_figure(summary),
        "answer-labels",
        run_ids=[r.partition("=")[2] for r in args.run],
        data_sources=[str(p) for p in args.labels],
    )
    print(f"\nwritten to {out}; figure {figure['png']}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("export", help="a sheet of a run's answers to label")
    exp.add_argument("run_id")
    exp.add_argument("--model", required=True, help="the answering model's name in the sheet")
    exp.add_argument("--out", required=True)
    exp.add_argument(
        "--compact",
        action="store_true",
        help="only the columns kept in the repository "
        "(labelling needs the full sheet: question, ground truth and contexts)",
    )
    exp.set_defaults(func=_export)
    rep = sub.add_parser("report", help="labels side by side and judges against them")
    rep.add_argument("--labels", nargs="+", required=True)
    rep.add_argument("--run", action="append", default=[], help="MODEL=RUN_ID (repeatable)")
    rep.add_argument("--out", default=None, help="default: results/benchmarks/answer_labels.json")
    rep.set_defaults(func=_report)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
