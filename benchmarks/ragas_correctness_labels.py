"""RAGAS's answer correctness (an LLM judge) and the offline correctness judge against the hand
labels, on the same answers: the validity table (helpers.judges.validity.agreement: AUROC for
"correct: yes", kappa at each metric's threshold, bootstrap intervals) of one run's scores.

  python -m helpers run configs/ragas-correctness.yaml
  python benchmarks/ragas_correctness_labels.py obstetrics-ragas-correctness-019fc83f \\
      [--labels benchmarks/labels/obstetrics-qwen2.5-coder-1.5b.csv] [--model qwen2.5-coder-1.5b]

The run's answers must be the sheet's (the same model and settings; checked: an answer that is
not the sheet's word for word is left out and counted).
"""

from __future__ import annotations

import argparse

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers.experiment.analysis import load_scores
from helpers.experiment.label_sheets import answers_sheet, load_labels
from helpers.judges import validity


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_id")
    parser.add_argument("--labels", default="benchmarks/labels/obstetrics-qwen2.5-coder-1.5b.csv")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    args = parser.parse_args(argv)

    labels = load_labels(args.labels)
    answers = answers_sheet(args.run_id)[["architecture", "qid", "answer"]]
    merged = labels.merge(answers, on=["architecture", "qid"], suffixes=("", "_run"))
    same = merged[merged["answer"] == merged["answer_run"]]
    print(f"{len(same)} of {len(merged)} answers of {args.run_id} are the sheet's word for word")
    scores = load_scores(args.run_id).assign(model=args.model)
    scores = scores.merge(same[["architecture", "qid"]], on=["architecture", "qid"])
    picked = scores[scores["judge"].isin(["ragas", "correctness"])]
    table = validity.agreement(same, picked)
    print(table.to_string(index=False))
    nan = scores[(scores["judge"] == "ragas") & scores["value"].isna()]
    print(f"RAGAS values that are NaN: {len(nan)} ({', '.join(sorted(set(nan['reason'].dropna())))[:200]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
