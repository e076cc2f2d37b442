"""Retrieval quality and latency per architecture on a labelled dataset.

    python -m helpers retrieval-eval --dataset scifact --architectures bm25,dense,hybrid,rerank --out FILE.json

Metrics have ranx's definitions (Bassani 2022; `metrics`, tested against ranx itself): nDCG@10, Recall@10, Recall@100, MRR@10.
The report keeps every query's metrics (`per_query`), and `save_report` writes each architecture's
run beside the JSON as a TREC run file (`FILE.ARCHITECTURE.trec`: qid Q0 doc_id rank score name),
which `ranx.Run.from_file(path, kind="trec")`, `ranx.compare` and `trec_eval` read.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

from helpers.llm import LLM
from helpers.retrieval.architectures.retriever_base import RetrievalError
from helpers.retrieval.evaluation.fusion_tuning import tune_fusion_on, tuned_options
from helpers.retrieval.evaluation.metrics import METRICS, evaluate_run, judged_per_query, mean_of
from helpers.retrieval.registry import RetrievalOptions, build_retriever, needs_llm, parse_options


def retrieval_eval(
    dataset,
    architectures: list[str],
    *,
    qa_file: str | None = None,
    llm_config: dict | None = None,
    limit: int | None = None,
    llm_limit: int | None = 50,
    seed: int = 0,
    options: RetrievalOptions | dict | None = None,
    query_split: str = "all",
    tune_fusion: str | None = None,
) -> dict:
    """Evaluate architectures on `dataset` (a name, or a loaded Dataset; same queries for all). Architectures that call the LLM
    per query (hyde, multi_query) run on a seeded sample of `llm_limit` queries, reported with
    the others' scores on that same sample for a fair comparison. `options`: sections per
    architecture (helpers.retrieval.architectures.options; default None: every default). `query_split`: 'all'
    (default), or the 'dev' / 'test' half (helpers.data.splits). `tune_fusion`: a query split
    ('dev') on which hybrid's fusion is chosen first (helpers.retrieval.evaluation.fusion_tuning); every
    architecture built on hybrid then uses it, and the report keeps the choice."""
    from helpers.data import load_dataset, split_queries  # pandas: loaded only when this runs

    options = parse_options(options)  # a misspelt option fails before any data is loaded
    if tune_fusion is not None and tune_fusion == query_split != "all":
        raise RetrievalError(
            f"tune_fusion={tune_fusion!r} is the split being evaluated: tune on 'dev', evaluate on 'test'"
        )

    from helpers.data import Dataset  # pandas: loaded only when this runs

    full = (
        dataset if isinstance(dataset, Dataset) else load_dataset(dataset, **({"qa_file": qa_file} if qa_file else {}))
    )
    data = split_queries(full, query_split)
    shared: dict = {}
    fusion = None
    if tune_fusion is not None:
        fusion = tune_fusion_on(split_queries(full, tune_fusion), options=options, shared=shared)
        fusion["query_split"] = tune_fusion
        options = tuned_options(options, fusion["chosen"])
    queries = {q: data.queries[q] for q in data.qrels}
    if limit:
        queries = dict(sorted(random.Random(seed).sample(sorted(queries.items()), min(limit, len(queries)))))
    llm_sample = sorted(random.Random(seed + 1).sample(sorted(queries), min(llm_limit or len(queries), len(queries))))
    with_llm = {name for name in architectures if needs_llm(name, options)}
    llm = LLM(llm_config or {"provider": "local"}) if with_llm else None
    results: dict[str, dict] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}  # {architecture: {qid: {metric: value}}}, unrounded
    runs: dict[str, dict[str, dict[str, float]]] = {}  # {architecture: {qid: {doc_id: score}}}
    report = {
        "dataset": full.name,
        "query_split": query_split,
        "language": data.language,
        "documents": len(data.corpus),
        "queries": len(queries),
        "llm_sample_queries": len(llm_sample) if llm else 0,
        "options": options.model_dump(),
        "results": results,
        "per_query": per_query,
        "runs": runs,  # written as TREC run files by save_report
    }
    for name in architectures:
        retriever = build_retriever(name, language=data.language, llm=llm, options=options, shared=shared)
        start = time.perf_counter()
        retriever.index(data.corpus)
        index_s = time.perf_counter() - start
        subset = {q: queries[q] for q in llm_sample} if name in with_llm else queries
        start = time.perf_counter()
        run = retriever.retrieve(subset, 100)
        latency = (time.perf_counter() - start) / len(subset)
        runs[name] = run
        # every judged query (a missed one scores 0), once: the means below are theirs
        scored = per_query[name] = judged_per_query({q: data.qrels[q] for q in subset}, run, METRICS)
        entry = {
            "queries": len(subset),
            "index_s": round(index_s, 2),
            "latency_ms_per_query": round(1000 * latency, 2),
            **{m: round(v, 4) for m, v in mean_of(scored, METRICS).items()},
        }
        if name in with_llm:
            entry["llm_fallbacks"] = len(getattr(retriever, "fallbacks", {}))
        results[name] = entry
    if llm is not None:  # every architecture on the LLM sample, side by side
        sample_qrels = {q: data.qrels[q] for q in llm_sample}
        report["on_llm_sample"] = {
            name: round(evaluate_run(sample_qrels, {q: r for q, r in run.items() if q in sample_qrels})["ndcg@10"], 4)
            for name, run in runs.items()
        }
        report["llm"] = llm.totals()
    if fusion is not None:
        report["fusion_tuning"] = {
            key: fusion[key]
            for key in ("chosen", "metric", "score", "default_score", "parts", "queries", "query_split")
        }
    return report


def format_report(report: dict) -> str:
    import pandas as pd

    frame = pd.DataFrame(report["results"]).T
    split = f", {report['query_split']} queries" if report.get("query_split", "all") != "all" else ""
    lines = [
        f"{report['dataset']} ({report['language']}{split}): {report['documents']} documents, "
        f"{report['queries']} queries",
        frame.to_string(),
    ]
    if "fusion_tuning" in report:
        tuning = report["fusion_tuning"]
        lines.append(
            f"hybrid fusion chosen on the {tuning['query_split']} queries ({tuning['queries']}): "
            f"{tuning['chosen']} ({tuning['metric']} there {tuning['score']:.4f}, plain RRF "
            f"{tuning['default_score']:.4f})"
        )
    if "on_llm_sample" in report:
        lines.append(f"nDCG@10 on the {report['llm_sample_queries']}-query LLM sample: {report['on_llm_sample']}")
    return "\n".join(lines)


def write_trec_run(run: dict, path: str | Path, name: str) -> Path:
    """`run` {qid: {doc_id: score}} as a TREC run file: `qid Q0 doc_id rank score name`, ranked by
    score (ties in the run's order, as the metrics rank them). Written here rather than by
    ranx.Run.save: building a ranx Run compiles numba code, 7-9 s in every process (metrics.py)."""
    path = Path(path)
    lines = []
    for qid, scores in run.items():
        ranked = sorted(scores.items(), key=lambda item: -float(item[1]))
        lines += [f"{qid} Q0 {doc_id} {rank} {float(score)!r} {name}" for rank, (doc_id, score) in enumerate(ranked, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def save_report(report: dict, out: str | Path) -> Path:
    """The report as JSON at `out`, and each architecture's run beside it (`OUT.ARCHITECTURE.trec`,
    named in the JSON's `run_files`)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    report = dict(report)
    runs = report.pop("runs", None) or {}
    report["run_files"] = {
        name: write_trec_run(run, out.with_name(f"{out.stem}.{name}.trec"), name).name for name, run in runs.items()
    }
    if not report["run_files"]:
        report.pop("run_files")
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return out
