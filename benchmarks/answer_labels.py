"""Hand labels of the default benchmark's answers, per model and architecture, and every judge
checked against them (helpers.experiment.labels).

  # a sheet to label: one row per answer, with the question, the seed's ground truth and the contexts
  python benchmarks/answer_labels.py export RUN_ID --model qwen2.5-coder-1.5b --out benchmarks/labels/obstetrics-qwen.csv
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

import helpers  # noqa: F401  (offline defaults)
from helpers import paths
from helpers.data import load_dataset
from helpers.experiment.analysis import load_scores
from helpers.experiment.labels import answers_sheet, judges_vs_labels, label_summary, load_labels


def _export(args) -> int:
    references = load_dataset("obstetrics").answers
    sheet = answers_sheet(args.run_id, model=args.model, references=references)
    sheet.to_csv(args.out, index=False)
    print(f"{len(sheet)} answers of {args.run_id} written to {args.out}: fill `supported` and `correct` "
          "(yes / partly / no) and, where it helps, `note`")
    return 0


def _report(args) -> int:
    labels = pd.concat([load_labels(path) for path in args.labels], ignore_index=True)
    frames = []
    for pair in args.run:
        model, _, run_id = pair.partition("=")
        scores = load_scores(run_id)
        frames.append(scores.assign(model=model, run_id=run_id))
    scores = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["model", "architecture", "qid", "judge", "metric", "value"])
    summary = label_summary(labels)
    judges = judges_vs_labels(labels, scores)
    pd.set_option("display.width", 200)
    print("Hand labels (score: yes 1, partly 0.5, no 0; 95% bootstrap interval):")
    print(summary.round(2).to_string(index=False))
    print("\nJudges against the `supported` labels (AUROC for 'no'; agreement at 0.5):")
    print(judges.drop(columns=["description"]).round(3).to_string(index=False) if len(judges) else "(no judge scores)")
    per_model = pd.concat([judges_vs_labels(labels[labels["model"] == m], scores).assign(model_only=m)
                           for m in labels["model"].unique()], ignore_index=True)
    if len(per_model):
        print("\nThe same, per answering model:")
        print(per_model[["model_only", "judge", "metric", "n", "labelled_no", "auroc", "auroc_low", "auroc_high",
                         "accuracy", "kappa"]].round(3).to_string(index=False))
    out = paths.write_json(args.out or paths.RESULTS_DIR / "benchmarks" / "answer_labels.json", {
        "labels": [str(p) for p in args.labels], "runs": args.run,
        "label_summary": summary.to_dict(orient="records"), "judges_vs_labels": judges.to_dict(orient="records"),
        "judges_vs_labels_per_model": per_model.to_dict(orient="records")})
    print(f"\nwritten to {out}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    exp = sub.add_parser("export", help="a sheet of a run's answers to label")
    exp.add_argument("run_id")
    exp.add_argument("--model", required=True, help="the answering model's name in the sheet")
    exp.add_argument("--out", required=True)
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
