"""Offline TRACe judge benchmark: training time, artefact size, judging speed, and the judge-eval
table (our judges vs RAGBench's shipped baselines vs the trivial training mean) on the test splits.
With a trained evidence model (`make evidence-model`) it reports each part: the lexical judge, the
evidence model alone, and the two stacked; its training time and size come from the model's card.

  python benchmarks/judge.py [--retrain] [--limit N] [--out results/benchmarks/judge.json]

Targets (RAGBench test subsets): hallucination AUROC >= 0.75 and above ragas / trulens / gpt3.5;
relevance and utilization RMSE below every baseline and below 0.8 x the trivial predictor.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.judges.judge_eval import format_table, judge_eval, save_result
from helpers.judges.models.evidence_model import EvidenceModel
from helpers.judges.models.trace_trees import DEFAULT_PATH, OfflineJudge, train_judge


def targets(result: dict, judge: str = "offline") -> list[dict]:
    """Per subset: is each target met by `judge`?"""
    rows = []
    for subset, block in result["subsets"].items():
        j = block["judges"]
        ours = j[judge]
        best_base_auroc = max(j[b]["auroc"] for b in ("ragas", "trulens", "gpt3.5") if not math.isnan(j[b]["auroc"]))
        row = {
            "judge": judge,
            "subset": subset,
            "auroc": round(ours["auroc"], 3),
            "auroc_ok": ours["auroc"] >= 0.75 and ours["auroc"] > best_base_auroc,
        }
        for metric, bases in (("relevance", ("ragas", "trulens", "gpt3.5")), ("utilization", ("gpt3.5",))):
            key = f"rmse_{metric}"
            bound = min([0.8 * j["trivial"][key]] + [j[b][key] for b in bases if not math.isnan(j[b][key])])
            row[key], row[f"{metric}_bound"] = round(ours[key], 3), round(bound, 3)
            row[f"{metric}_ok"] = ours[key] < bound
        rows.append(row)
    return rows


def spanish_figures(model: EvidenceModel) -> dict:
    """Support AUROC on MaternaQA-es pairs (gold passage vs another passage vs perturbed answer;
    none of them trained on) and agreement with the seed's Spanish worked examples."""
    from helpers.data.fetch import raw_path
    from helpers.inference.classical import auroc
    from helpers.judges.models.evidence_faithfulness import seed_example_agreement
    from helpers.judges.models.evidence_pairs import maternaqa_pairs

    records = [
        json.loads(line)
        for line in raw_path("maternaqa_es/validation.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    pairs = maternaqa_pairs(records)
    start = time.perf_counter()
    p = model.support([x.claim for x in pairs], [x.evidence for x in pairs])
    seconds = time.perf_counter() - start
    labels = np.array([x.label for x in pairs])
    by_kind = {}
    for kind in sorted({x.source for x in pairs if x.label == 0}):
        keep = np.array([x.label == 1 or x.source == kind for x in pairs])
        by_kind[kind] = round(float(auroc(1 - labels[keep], -p[keep])), 3)
    seed = seed_example_agreement(model)
    return {
        "maternaqa_pairs": len(pairs),
        "maternaqa_auroc": round(float(auroc(1 - labels, -p)), 3),
        "maternaqa_auroc_by_negative": by_kind,
        "pairs_per_s": round(len(pairs) / seconds, 1),
        "seed_examples": seed,
        "seed_mean_agreement": round(float(np.mean([r["agreement"] for r in seed])), 3),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--retrain", action="store_true", help="train even if the artefact exists")
    parser.add_argument("--limit", type=int, default=None, help="first N test rows per subset")
    parser.add_argument("--out", default=str(paths.benchmark_output("judge")))
    args = parser.parse_args(argv)

    report: dict = {}
    if args.retrain or not DEFAULT_PATH.exists():
        report["training"] = train_judge()
    else:
        report["training"] = {
            "path": str(DEFAULT_PATH),
            "artefact_bytes": DEFAULT_PATH.stat().st_size,
            "train_s": None,
            "note": "existing artefact; --retrain to time training",
        }
    print("training:", json.dumps(report["training"]))

    judges = ["lexical"]
    if EvidenceModel.exists():
        card = EvidenceModel.load().card
        report["evidence_training"] = {
            k: card.get(k)
            for k in ("train_s", "artefact_bytes", "steps", "final_loss", "held_out", "data_sha256", "trained_at")
        }
        print("evidence model:", json.dumps(report["evidence_training"]))
        judges += ["evidence", "stacked"]
        report["spanish"] = spanish_figures(EvidenceModel.load())
        print("spanish:", json.dumps(report["spanish"], ensure_ascii=False))
    start = time.perf_counter()
    OfflineJudge.load()
    report["load_s"] = round(time.perf_counter() - start, 3)
    report["judge_eval_s"] = {}
    results = {}
    for judge in judges:  # one at a time, so each is timed on its own
        start = time.perf_counter()
        results[judge] = judge_eval(split="test", judges=[judge], limit=args.limit)
        report["judge_eval_s"][judge] = round(time.perf_counter() - start, 1)
    result = results[judges[0]]
    for judge in judges[1:]:
        result["artefacts"].update(results[judge]["artefacts"])
        for subset, block in results[judge]["subsets"].items():
            result["subsets"][subset]["judges"][judge] = block["judges"][judge]
    result["judges"] = judges
    n = sum(b["n"] for b in result["subsets"].values())
    report["examples"] = n
    report["targets"] = [row for judge in judges for row in targets(result, judge)]
    print(format_table(result))
    print("\njudge-eval seconds:", report["judge_eval_s"], f"({n} examples)")
    print("\ntargets:")
    for row in report["targets"]:
        print(" ", row)
    out = Path(args.out)
    save_result(result, out.with_name(out.stem + "-eval.json"))
    paths.write_json(out, report)
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
