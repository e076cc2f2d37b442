"""Validity of ragas faithfulness with our judge, and of the Spanish prompt adjustments.

  python benchmarks/ragas_validity.py [--judge local|groq|openai-compatible] [--model M] [--base-url U]
         [--subsets covidqa,delucionqa,emanual,hotpotqa] [--per-subset 4] [--seed 0]
         [--max-context-chars 3000] [--max-tokens 256] [--timeout 300] [--spanish] [--out results/benchmarks]

1. Hallucination detection on RAGBench test splits: ragas faithfulness scored by our judge on a
   seeded sample (half of each subset's rows hallucinated, i.e. adherence_score False); AUROC of
   (1 - faithfulness) against adherence_score == False (helpers.inference.classical.auroc), with a 95%
   percentile-bootstrap CI (helpers.inference.classical.bootstrap_ci), beside the AUROC of the shipped
   `ragas_faithfulness` column (GPT-3.5 judge, RAGBench paper) on the same rows. NaN scores are
   counted and left out of our AUROC.
2. --spanish: the seed document's Spanish worked examples, stock ragas prompts vs the
   Spanish-adjusted ones (helpers.ragas_eval.spanish).
3. --evidence: the same AUROC for RAGAS faithfulness with the evidence model's verdicts
   (helpers.judges.models.evidence_faithfulness; statements = the response's sentences, or the
   judge's with --evidence-statements llm) on a larger seeded sample (--evidence-per-subset).

The local judge's output is constrained by ragas's schemas (a llama.cpp grammar), so it parses;
whether its verdicts mean anything is what the AUROC says.

Writes ragas_validity.json (+ per-row CSVs) under --out. With only the bundled 135M model, keep
the sample small (a few minutes): its verdicts are close to chance and it rarely emits ragas's JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.llm import LLM
from helpers.ragas_eval import RagasJudge
from helpers.ragas_eval.ragas_validity import ragbench_samples, sample_ragbench, shipped_auroc_full, validity_table
from helpers.ragas_eval.spanish import measure_seed_examples


def make_judge(args) -> LLM:
    config = {"provider": args.judge, "max_tokens": args.max_tokens, "timeout_s": args.timeout}
    if args.model:
        config["model"] = args.model
    if args.base_url:
        config["base_url"] = args.base_url
    if args.judge == "local":
        config["local_backend"] = "llama-cpp" if importlib.util.find_spec("llama_cpp") else "transformers"
    return LLM(config)


def hallucination_detection(args, judge: LLM) -> dict:
    frame = sample_ragbench(
        args.subsets.split(","), per_subset=args.per_subset, seed=args.seed, max_context_chars=args.max_context_chars
    )
    scorer = RagasJudge(judge, metrics=("faithfulness",), language="en", timeout_s=args.timeout)
    start = time.perf_counter()
    result = scorer.score(ragbench_samples(frame))
    rows = result.rows.set_index("qid")
    frame["ours_faithfulness"] = frame["qid"].map(rows["value"])
    frame["ours_error_kind"] = frame["qid"].map(rows["error_kind"])
    frame["ours_reason"] = frame["qid"].map(rows["reason"])
    table = validity_table(frame)
    out = Path(args.out)
    frame[
        [
            "qid",
            "subset",
            "adherence_score",
            "ragas_faithfulness",
            "ours_faithfulness",
            "ours_error_kind",
            "ours_reason",
        ]
    ].to_csv(out / "ragas_validity_rows.csv", index=False)
    return {
        "judge": judge.name,
        "sample": {
            "subsets": args.subsets,
            "per_subset": args.per_subset,
            "seed": args.seed,
            "max_context_chars": args.max_context_chars,
            "rows": len(frame),
        },
        "table": table.to_dict("records"),
        "shipped_full_splits": shipped_auroc_full(args.subsets.split(",")).to_dict("records"),
        "nan_kinds": frame["ours_error_kind"].value_counts().to_dict(),
        "judge_totals": result.totals,
        "wall_s": round(time.perf_counter() - start, 1),
    }


def evidence_detection(args, judge: LLM) -> dict:
    from helpers.judges.models.evidence_faithfulness import EvidenceFaithfulness
    from helpers.judges.models.evidence_model import EvidenceModel

    model = EvidenceModel.load()
    scorer = EvidenceFaithfulness(model, judge if args.evidence_statements == "llm" else None)
    frame = sample_ragbench(
        args.subsets.split(","),
        per_subset=args.evidence_per_subset,
        seed=args.seed,
        max_context_chars=args.max_context_chars,
    )
    mark, start = len(judge.calls), time.perf_counter()
    scored = [scorer.score(row.question, row.response, list(row.documents)) for row in frame.itertuples()]
    seconds = time.perf_counter() - start
    frame["evidence_faithfulness"] = [r["value"] for r in scored]
    frame["statements_from"] = [r["statements_from"] for r in scored]
    table = validity_table(frame, ours="evidence_faithfulness")
    frame[
        ["qid", "subset", "adherence_score", "ragas_faithfulness", "evidence_faithfulness", "statements_from"]
    ].to_csv(Path(args.out) / "ragas_evidence_rows.csv", index=False)
    return {
        "model": str(model.path),
        "trained_at": model.card.get("trained_at"),
        "statements": args.evidence_statements,
        "sample": {"per_subset": args.evidence_per_subset, "seed": args.seed, "rows": len(frame)},
        "table": table.to_dict("records"),
        "nan": int(frame["evidence_faithfulness"].isna().sum()),
        "statements_from": frame["statements_from"].value_counts().to_dict(),
        "seconds_per_sample": round(seconds / max(len(frame), 1), 3),
        "judge_totals": LLM.usage(judge.calls[mark:]),
    }


def spanish(args, judge: LLM) -> dict:
    start = time.perf_counter()
    table = measure_seed_examples(judge, timeout_s=args.timeout)
    table.to_csv(Path(args.out) / "ragas_spanish_examples.csv", index=False)
    summary = table.groupby("variant").agg(
        nan=("value", lambda v: int(v.isna().sum())),
        agreement=("agreement", "mean"),
        spanish_kept=("spanish_kept", "mean"),
    )
    return {
        "rows": table.drop(columns=["reason"]).to_dict("records"),
        "summary": summary.reset_index().to_dict("records"),
        "wall_s": round(time.perf_counter() - start, 1),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judge", default="local", choices=["local", "groq", "openai-compatible"])
    parser.add_argument("--model")
    parser.add_argument("--base-url")
    parser.add_argument("--subsets", default="covidqa,delucionqa,emanual,hotpotqa")
    parser.add_argument("--per-subset", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-context-chars", type=int, default=3000)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--spanish", action="store_true", help="also measure the Spanish worked examples")
    parser.add_argument("--skip-ragbench", action="store_true")
    parser.add_argument("--evidence", action="store_true", help="also: faithfulness with the evidence model's verdicts")
    parser.add_argument("--evidence-per-subset", type=int, default=50)
    parser.add_argument("--evidence-statements", default="sentences", choices=["sentences", "llm"])
    parser.add_argument("--out", default=str(paths.RESULTS_DIR / "benchmarks"))
    args = parser.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    judge = make_judge(args)
    report = {}
    if not args.skip_ragbench:
        report["hallucination_detection"] = hallucination_detection(args, judge)
    if args.spanish:
        report["spanish_examples"] = spanish(args, judge)
    if args.evidence:
        report["evidence_detection"] = evidence_detection(args, judge)
    report["judge_totals_all"] = judge.totals()
    paths.write_json(Path(args.out) / "ragas_validity.json", report, echo=True)
    return report


if __name__ == "__main__":
    main()
