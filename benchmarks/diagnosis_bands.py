"""The cuts `helpers diagnose` reads its two judges through (helpers.experiment.diagnosis.SHIPPED),
from the hand labels of the default run's answers, and the verdicts against those labels.

    python -m helpers run configs/default.yaml        # the run whose answers the sheets label
    python benchmarks/diagnosis_bands.py [RUN_ID] [--precision 0.9]

For `correct` (the correctness judge against the sheet's `correct`: yes vs partly/no) and `holds`
(context_recall against the contexts sheet's `context`: yes vs partly/no), the lowest
score above which `precision` of the answers are labelled yes and the highest below which
`precision` are labelled otherwise (helpers.experiment.diagnosis.band_from_labels). Only answers
still word for word the labelled ones count. In-sample: the same labels validate the judges.
Results: docs/measurements/diagnosis.md.
"""

from __future__ import annotations

import argparse
import json

import pandas as pd

from helpers.experiment.diagnosis import SHIPPED, Band, agreement, read_run, verdicts
from helpers.experiment.diagnosis_cuts import band_from_labels
from helpers.experiment.store import RunStore
from helpers.paths import PROJECT_ROOT, RESULTS_DIR

SHEETS = PROJECT_ROOT / "benchmarks" / "labels"
ANSWERS = SHEETS / "obstetrics-qwen2.5-coder-1.5b.csv"
CONTEXTS = SHEETS / "contexts-obstetrics-qwen2.5-coder-1.5b.csv"


def labelled(run_id: str) -> pd.DataFrame:
    """The run's answers with their two judges' scores and the sheets' labels, where unchanged."""
    wide = read_run(run_id)
    answers = pd.read_csv(ANSWERS, dtype=str, keep_default_na=False)
    contexts = pd.read_csv(CONTEXTS, dtype=str, keep_default_na=False)
    # the contexts sheet's label is `context` (do the contexts hold the reference's fact?); contexts_holding
    # names the ranks that do
    labels = answers.merge(contexts[["architecture", "qid", "context"]], on=["architecture", "qid"])
    texts = {(r["architecture"], r["qid"]): r.get("answer") for r in RunStore(RESULTS_DIR / run_id).of_kind("answer")}
    labels = labels[
        [texts.get((a, q)) == t for a, q, t in zip(labels["architecture"], labels["qid"], labels["answer"])]
    ]
    return wide.merge(labels[["architecture", "qid", "correct", "context"]], on=["architecture", "qid"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_id", nargs="?", default="obstetrics-default-8eb4bca9")
    parser.add_argument("--precision", type=float, default=0.95)
    args = parser.parse_args()
    frame = labelled(args.run_id)
    source = f"{args.run_id}'s {len(frame)} hand-labelled answers"
    fitted = {
        "correct": band_from_labels(frame["correctness"], frame["correct"] == "yes", precision=args.precision),
        "holds": band_from_labels(frame["context_recall"], frame["context"] == "yes", precision=args.precision),
    }
    fitted = {name: Band(b.low, b.high, source) for name, b in fitted.items()}
    for name, band in fitted.items():
        print(f"{name}: low {band.low!r}, high {band.high!r} (shipped {SHIPPED[name].low!r}, {SHIPPED[name].high!r})")
    sheet = frame.rename(columns={"qid": "id", "context": "reference_in_contexts"})
    sheet_path = RESULTS_DIR / "diagnosis-labels.csv"
    sheet[["id", "architecture", "correct", "reference_in_contexts"]].to_csv(sheet_path, index=False)
    report = {}
    for name, bands in (("shipped", SHIPPED), ("fitted", fitted)):
        answers = verdicts(read_run(args.run_id), bands)
        confusion, kappa, n = agreement(answers, sheet_path)
        print(f"\n{name} cuts: kappa {kappa:.3f} on {n} answers both decide")
        print(confusion.to_string())
        report[name] = {"kappa": kappa, "n": n, "verdicts": answers["verdict"].value_counts().to_dict()}
    # held out: each question's answers read through cuts fitted on the other questions' answers
    held = []
    for qid in sorted(frame["qid"].unique()):
        train = frame[frame["qid"] != qid]
        bands = {
            "correct": band_from_labels(train["correctness"], train["correct"] == "yes", precision=args.precision),
            "holds": band_from_labels(train["context_recall"], train["context"] == "yes", precision=args.precision),
        }
        held.append(verdicts(frame[frame["qid"] == qid], bands))  # read_run's id is the qid
    confusion, kappa, n = agreement(pd.concat(held, ignore_index=True), sheet_path)
    print(f"\nheld out by question (cuts fitted on the other 9): kappa {kappa:.3f} on {n} answers both decide")
    print(confusion.to_string())
    report["held_out"] = {"kappa": kappa, "n": n}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
