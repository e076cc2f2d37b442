"""Retrieval quality and latency per architecture on a labelled dataset.

    python -m helpers retrieval-eval --dataset scifact --architectures bm25,dense,hybrid,rerank --out FILE.json

Metrics are computed with ranx (Bassani 2022), checked against pytrec_eval-equivalent definitions
in the tests: nDCG@10, Recall@10, Recall@100, MRR@10.
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

from helpers.retrieval.options import RetrievalOptions, parse_options

METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")


def evaluate_run(qrels: dict, run: dict, metrics=METRICS) -> dict[str, float]:
    """Mean of each metric over the queries in qrels (a query the run misses scores 0)."""
    from ranx import Qrels, Run, evaluate

    qrels = {q: {d: int(g) for d, g in rels.items()} for q, rels in qrels.items() if rels}
    run = {q: dict(run.get(q, {})) or {"__none__": 0.0} for q in qrels}
    scores = evaluate(Qrels(qrels), Run(run), list(metrics), make_comparable=True)
    return {m: float(scores[m]) if not isinstance(scores, float) else float(scores) for m in metrics}


def retrieval_eval(dataset: str, architectures: list[str], *, qa_file: str | None = None,
                   llm_config: dict | None = None, limit: int | None = None, llm_limit: int | None = 50,
                   seed: int = 0, options: RetrievalOptions | dict | None = None) -> dict:
    """Evaluate architectures on `dataset` (same queries for all). Architectures that call the LLM
    per query (hyde, multi_query) run on a seeded sample of `llm_limit` queries, reported with
    the others' scores on that same sample for a fair comparison. `options`: sections per
    architecture (helpers.retrieval.options; default None: every default)."""
    from helpers.data import load_dataset
    from helpers.llm import LLM
    from helpers.retrieval.registry import build_retriever

    options = parse_options(options)  # a misspelt option fails before any data is loaded

    data = load_dataset(dataset, **({"qa_file": qa_file} if qa_file else {}))
    queries = {q: data.queries[q] for q in data.qrels}
    if limit:
        queries = dict(sorted(random.Random(seed).sample(sorted(queries.items()), min(limit, len(queries)))))
    llm_sample = sorted(random.Random(seed + 1).sample(sorted(queries), min(llm_limit or len(queries), len(queries))))
    needs_llm = {"hyde", "multi_query"}
    llm = LLM(llm_config or {"provider": "local"}) if needs_llm & set(architectures) else None
    shared: dict = {}
    report = {"dataset": dataset, "language": data.language, "documents": len(data.corpus),
              "queries": len(queries), "llm_sample_queries": len(llm_sample) if llm else 0,
              "options": options.model_dump(), "results": {}}
    runs = {}
    for name in architectures:
        retriever = build_retriever(name, language=data.language, llm=llm, options=options, shared=shared)
        start = time.perf_counter()
        retriever.index(data.corpus)
        index_s = time.perf_counter() - start
        subset = {q: queries[q] for q in llm_sample} if name in needs_llm else queries
        start = time.perf_counter()
        run = retriever.retrieve(subset, 100)
        latency = (time.perf_counter() - start) / len(subset)
        runs[name] = run
        entry = {"queries": len(subset), "index_s": round(index_s, 2), "latency_ms_per_query": round(1000 * latency, 2),
                 **{m: round(v, 4) for m, v in evaluate_run({q: data.qrels[q] for q in subset}, run).items()}}
        if name in needs_llm:
            entry["llm_fallbacks"] = len(getattr(retriever, "fallbacks", {}))
        report["results"][name] = entry
    if llm is not None:  # every architecture on the LLM sample, side by side
        sample_qrels = {q: data.qrels[q] for q in llm_sample}
        report["on_llm_sample"] = {name: round(evaluate_run(sample_qrels, {q: r for q, r in run.items() if q in sample_qrels})["ndcg@10"], 4)
                                   for name, run in runs.items()}
        report["llm"] = llm.totals()
    return report


def format_report(report: dict) -> str:
    import pandas as pd

    frame = pd.DataFrame(report["results"]).T
    lines = [f"{report['dataset']} ({report['language']}): {report['documents']} documents, {report['queries']} queries",
             frame.to_string()]
    if "on_llm_sample" in report:
        lines.append(f"nDCG@10 on the {report['llm_sample_queries']}-query LLM sample: {report['on_llm_sample']}")
    return "\n".join(lines)


def save_report(report: dict, out: str | Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return out
