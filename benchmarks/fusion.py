"""Hybrid fusion chosen on held-out queries, and the reranker on top of it, measured on queries
neither was chosen or trained on.

  python benchmarks/fusion.py [--datasets obstetrics-es,xquad-es,scifact] [--scorer ltr] [--out results/benchmarks/fusion.json]

Per dataset, on its test queries: BM25, dense, plain RRF (k=60), the fusion chosen on the dev
queries (helpers.retrieval.evaluation.fusion_tuning), and `rerank` over each hybrid. obstetrics-es and xquad-es
are split in halves by gold passage / article (helpers.data.splits); SciFact tunes on its train
claims and reports on its test claims (the BEIR split). The offline reranker is trained on
SciFact train claims and the dev half of obstetrics-es only (`python -m helpers train-reranker`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_dataset, split_queries
from helpers.retrieval.evaluation.fusion_tuning import tune_fusion_on, tuned_options
from helpers.retrieval.evaluation.metrics import evaluate_run
from helpers.retrieval.registry import build_retriever


def splits(name: str):
    """(tuning data, test data) over one corpus object."""
    if name == "scifact":
        test, train = load_dataset("scifact", split="test"), load_dataset("scifact", split="train")
        return train, test
    full = load_dataset(name)
    return split_queries(full, "dev"), split_queries(full, "test")


def measure(name: str, rerank_options: dict) -> dict:
    dev, test = splits(name)
    shared: dict = {}
    base = {"rerank": rerank_options}
    tuning = tune_fusion_on(dev, options=base, shared=shared)
    variants = {"plain": base, "tuned": tuned_options(base, tuning["chosen"]).model_dump()}
    queries = {q: test.queries[q] for q in test.qrels}
    scores, seconds = {}, {}
    for label, options in variants.items():
        for architecture in ("bm25", "dense", "hybrid", "rerank"):
            key = architecture if architecture in ("bm25", "dense") else f"{architecture} ({label} fusion)"
            if key in scores:
                continue
            retriever = build_retriever(architecture, language=test.language, options=options, shared=shared)
            if retriever.corpus is not test.corpus:
                retriever.index(test.corpus)
            start = time.perf_counter()
            run = retriever.retrieve(queries, 100)
            seconds[key] = round((time.perf_counter() - start) / len(queries), 4)
            scores[key] = round(evaluate_run(test.qrels, run, ("ndcg@10",))["ndcg@10"], 4)
    return {
        "dataset": name,
        "tuned_on": f"{dev.name} ({tuning['queries']} queries)",
        "tested_on": f"{test.name} ({len(queries)} queries)",
        "chosen": tuning["chosen"],
        "dev_ndcg@10": {"plain": tuning["default_score"], "tuned": tuning["score"], **tuning["parts"]},
        "test_ndcg@10": scores,
        "seconds_per_query": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default="obstetrics-es,xquad-es,scifact")
    parser.add_argument("--scorer", default="ltr", help="rerank scorer: 'ltr' or a CrossEncoder path")
    parser.add_argument("--scorer-path", help="the LTR artefact (default data/models/reranker-ltr.skops)")
    parser.add_argument("--out", default=str(paths.benchmark_output("fusion")))
    args = parser.parse_args()
    rerank = {"scorer": args.scorer, **({"scorer_path": args.scorer_path} if args.scorer_path else {})}
    report = [measure(name, rerank) for name in args.datasets.split(",")]
    for entry in report:
        print(f"{entry['dataset']}: chosen on {entry['tuned_on']}: {entry['chosen']}; test {entry['tested_on']}")
        for key, value in entry["test_ndcg@10"].items():
            print(f"  {key:24s} nDCG@10 {value:.4f}  ({1000 * entry['seconds_per_query'][key]:.1f} ms/query)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"scorer": rerank, "results": report}, indent=2))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
