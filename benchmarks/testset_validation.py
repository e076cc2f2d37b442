"""Are generated questions a valid stand-in for people's? The six architectures ranked by nDCG@10 on
a test set generated from the guideline (helpers.testsets.writer) and on MaternaQA-es's questions, written
by people over the same guideline and passages (obstetrics-es), side by side; Kendall's tau of the
two rankings.

  python benchmarks/testset_validation.py --n 40 --config configs/local-qwen.yaml \
      --out results/benchmarks/testset_validation.json

Corpus: obstetrics-es (the guideline's chunks and MaternaQA's gold passages), the same for both
question sets. Human questions: MaternaQA's `test` half (the dev half chose hybrid's fusion in
configs/default.yaml). Generated questions: `--n` kept questions of kinds single and two written
from the guideline's chunks by the config's generation LLM (unanswerable ones have no qrels and are
left out of nDCG), their source chunks as qrels. Retrieval settings: configs/default.yaml's, and its
LLM (the bundled model) for HyDE's passage and multi-query's rewrites, on both sets alike.
LLM calls are cached: a rerun reuses every question already written.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from scipy.stats import kendalltau

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_dataset, split_queries
from helpers.experiment.config import load_config
from helpers.llm import LLM
from helpers.retrieval.evaluation.retrieval_eval import retrieval_eval
from helpers.testsets.writer import generate_testset

ARCHITECTURES = ["dense", "bm25", "hybrid", "hyde", "multi_query", "rerank"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", default="configs/local-qwen.yaml", help="whose generation LLM writes the questions")
    parser.add_argument("--llm-limit", type=int, default=60, help="queries for hyde and multi_query (both sets)")
    parser.add_argument("--out", default=str(paths.benchmark_output("testset_validation")))
    args = parser.parse_args()

    human = split_queries(load_dataset("obstetrics-es"), "test")
    guideline = {d: doc for d, doc in human.corpus.items() if not d.startswith("mqa_")}
    cfg = load_config(args.config)
    writer = LLM(cfg.llm(cfg.generation_llm or cfg.llms[0].name).model_dump(exclude={"name"}))
    testset = generate_testset(
        guideline, writer, n=args.n, language="es", seed=args.seed, mix={"single": 0.7, "two": 0.3}
    )
    print(testset.format_report())
    kept = testset.kept
    generated = replace(
        human,
        name="obstetrics-es-generated",
        queries={i.id: i.question for i in kept},
        qrels={i.id: {d: 1 for d in i.source_doc_ids} for i in kept},
        answers={i.id: i.reference for i in kept},
    )
    base = load_config("configs/default.yaml")
    retrieval_llm = base.llm(base.generation_llm or base.llms[0].name).model_dump(exclude={"name"})
    options = base.retrieval.options
    reports = {}
    for name, data in (("human", human), ("generated", generated)):
        start = time.perf_counter()
        reports[name] = retrieval_eval(
            data, ARCHITECTURES, llm_config=retrieval_llm, options=options, llm_limit=args.llm_limit, seed=args.seed
        )
        reports[name]["seconds"] = round(time.perf_counter() - start, 1)
    ndcg = {name: {a: reports[name]["results"][a]["ndcg@10"] for a in ARCHITECTURES} for name in reports}
    # on the LLM sample every architecture is scored on the same queries: the fair ranking
    same_sample = {name: reports[name].get("on_llm_sample", ndcg[name]) for name in reports}
    tau = kendalltau(
        [same_sample["human"][a] for a in ARCHITECTURES], [same_sample["generated"][a] for a in ARCHITECTURES]
    )
    tau_all = kendalltau([ndcg["human"][a] for a in ARCHITECTURES], [ndcg["generated"][a] for a in ARCHITECTURES])
    out = {
        "generated": {
            "settings": testset.settings,
            "counts": testset.counts(),
            "seconds": round(testset.seconds, 1),
            "seconds_per_kept": round(testset.seconds / max(1, len(kept)), 1),
            "questions": [
                {
                    "id": i.id,
                    "kind": i.kind,
                    "question": i.question,
                    "reference": i.reference,
                    "qrels": i.source_doc_ids,
                }
                for i in kept
            ],
        },
        "writer_llm": writer.name,
        "retrieval_llm": f"{retrieval_llm['provider']}:{retrieval_llm['model']}",
        "ndcg@10": ndcg,
        "ndcg@10_same_sample": same_sample,
        "kendall_tau_same_sample": {"tau": round(float(tau.statistic), 3), "p_value": round(float(tau.pvalue), 4)},
        "kendall_tau_all_queries": {
            "tau": round(float(tau_all.statistic), 3),
            "p_value": round(float(tau_all.pvalue), 4),
        },
        "reports": reports,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"{'architecture':12s} {'human':>8s} {'generated':>10s}   (nDCG@10; same-sample values)")
    for a in ARCHITECTURES:
        print(f"{a:12s} {same_sample['human'][a]:8.3f} {same_sample['generated'][a]:10.3f}")
    print(f"Kendall tau {out['kendall_tau_same_sample']} (all queries: {out['kendall_tau_all_queries']}); {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
