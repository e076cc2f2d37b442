"""The trained retrieval cross-encoder against the offline LTR reranker, over one first stage.

  python benchmarks/cross_encoder.py [--model data/models/cross-encoder-retrieval] [--candidates 30]
      [--datasets obstetrics-es,xquad-es,scifact] [--xquad-sample 300] [--threads 1] [--out results/benchmarks/cross_encoder.json]

Per dataset, on queries no model was trained on (obstetrics-es: the test half; xquad-es: a seeded
sample of `--xquad-sample` questions; scifact: BEIR's test claims), nDCG@10 (ranx) of:
hybrid (dense + BM25, RRF), rerank with the offline LTR scorer (the default `rerank`
architecture) and rerank with the cross-encoder (`options={"rerank": {"scorer": PATH}}`), both
re-scoring hybrid's top `--candidates`. Each reranker's seconds per query count its scorer only
(the first stage is timed apart). Built through the registry with one `shared` dict, so the three
use the same hybrid index.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_dataset
from helpers.retrieval.evaluation.metrics import evaluate_run
from helpers.retrieval.registry import build_retriever

DEFAULT_MODEL = paths.MODELS_DIR / "cross-encoder-retrieval"
DATASETS = ("obstetrics-es", "xquad-es", "scifact")


class TimedScorer:
    """Wraps a scorer; counts its seconds and calls."""

    def __init__(self, scorer):
        self.scorer, self.name, self.seconds, self.calls = scorer, scorer.name, 0.0, 0

    def score(self, query, first_stage, retriever):
        start = time.perf_counter()
        out = self.scorer.score(query, first_stage, retriever)
        self.seconds += time.perf_counter() - start
        self.calls += 1
        return out


def evaluation_queries(name: str, xquad_sample: int, seed: int = 0):
    if name == "obstetrics-es":
        data = load_dataset(name, query_split="test")
    elif name == "scifact":
        data = load_dataset(name, split="test")
    else:
        data = load_dataset(name)
    qids = sorted(q for q in data.queries if data.qrels.get(q))
    if name.startswith("xquad") and xquad_sample and xquad_sample < len(qids):
        qids = sorted(random.Random(seed).sample(qids, xquad_sample))
    return data, {q: data.queries[q] for q in qids}


def bench_dataset(name: str, model: Path, candidates: int, xquad_sample: int, seed: int = 0) -> dict:
    data, queries = evaluation_queries(name, xquad_sample, seed)
    qrels = {q: data.qrels[q] for q in queries}
    shared: dict = {}
    hybrid_options = {"hybrid": {"candidates": 100}}
    hybrid = build_retriever("hybrid", language=data.language, options=hybrid_options, shared=shared)
    start = time.perf_counter()
    hybrid.index(data.corpus)
    index_s = time.perf_counter() - start
    hybrid.retrieve(queries, candidates)  # warm: query embeddings computed and cached once
    start = time.perf_counter()
    first = hybrid.retrieve(queries, candidates)
    first_s = (time.perf_counter() - start) / len(queries)
    report = {
        "dataset": data.name,
        "language": data.language,
        "documents": len(data.corpus),
        "queries": len(queries),
        "candidates": candidates,
        "index_s": round(index_s, 1),
        "results": {
            "hybrid": {
                "ndcg@10": round(evaluate_run(qrels, first)["ndcg@10"], 4),
                "recall@candidates": round(
                    evaluate_run(qrels, first, (f"recall@{candidates}",))[f"recall@{candidates}"], 4
                ),
                "s_per_query": round(first_s, 4),
            }
        },
    }
    rerankers = {
        "rerank_ltr": {"rerank": {"candidates": candidates}},
        "rerank_cross_encoder": {"rerank": {"candidates": candidates, "scorer": str(model)}},
    }
    for label, section in rerankers.items():
        retriever = build_retriever("rerank", language=data.language, options=hybrid_options | section, shared=shared)
        retriever.index(data.corpus)
        retriever.scorer = TimedScorer(retriever.scorer)
        first_query = next(iter(queries))  # warm-up (model load, feature extractor): not timed
        retriever.retrieve({first_query: queries[first_query]}, 10)
        retriever.scorer.seconds, retriever.scorer.calls = 0.0, 0
        run = retriever.retrieve(queries, 10)
        report["results"][label] = {
            "ndcg@10": round(evaluate_run(qrels, run)["ndcg@10"], 4),
            "s_per_query": round(retriever.scorer.seconds / max(1, retriever.scorer.calls), 4),
            "scorer": retriever.scorer.name,
        }
        print(f"  {data.name} {label}: {report['results'][label]}", flush=True)
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="the cross-encoder folder")
    parser.add_argument("--candidates", type=int, default=30, help="hybrid's top-N that both rerankers re-score")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--xquad-sample", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: the reported timings)")
    parser.add_argument("--out", default=str(paths.benchmark_output("cross_encoder")))
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    model = Path(args.model)
    if not (model / "config.json").exists():
        print(f"{model}: no trained cross-encoder (helpers.retrieval.learned.cross_encoder_training)", file=sys.stderr)
        return 2
    card_path = model / "card.json"
    card = json.loads(card_path.read_text(encoding="utf-8")) if card_path.exists() else {}
    report = {
        "model": str(model),
        "candidates": args.candidates,
        "threads": args.threads,
        "model_card": {
            k: card.get(k) for k in ("base", "pairs", "seconds", "held_out", "artefact_bytes", "data_sha256")
        },
        "datasets": {},
    }
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        print(f"{name}...", flush=True)
        report["datasets"][name] = bench_dataset(name, model, args.candidates, args.xquad_sample, args.seed)
        paths.write_json(args.out, report)  # what is done so far survives an interruption
    lines = [f"{'dataset':<16}{'hybrid':>9}{'LTR':>9}{'cross-enc':>11}{'LTR s/q':>10}{'CE s/q':>9}"]
    for name, entry in report["datasets"].items():
        r = entry["results"]
        lines.append(
            f"{name:<16}{r['hybrid']['ndcg@10']:>9.4f}{r['rerank_ltr']['ndcg@10']:>9.4f}"
            f"{r['rerank_cross_encoder']['ndcg@10']:>11.4f}{r['rerank_ltr']['s_per_query']:>10.4f}"
            f"{r['rerank_cross_encoder']['s_per_query']:>9.4f}"
        )
    report["table"] = lines
    print("\n".join(lines))
    paths.write_json(args.out, report)
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
