"""Hybrid fusion chosen on held-out queries rather than fixed.

    python -m helpers tune-fusion --dataset obstetrics-es            # tuned on its dev half
    python -m helpers retrieval-eval --dataset obstetrics-es --query-split test --tune-fusion dev ...

The dense and BM25 runs of the tuning queries are computed once; every fusion in the grid
(RRF with k in RRF_KS and dense weight alpha in ALPHAS, min-max score fusion with each alpha)
re-fuses them, so a grid of ~50 costs seconds. The chosen fusion maximises mean nDCG@10 on the
tuning queries; ties go to plain RRF (k=60, alpha 0.5), then to the fusion nearest to it, so a
flat grid keeps the published default. Report it on queries it was not chosen on.
"""

from __future__ import annotations

from helpers.retrieval.architectures.fusion import fuse
from helpers.retrieval.evaluation.metrics import evaluate_run
from helpers.retrieval.registry import RetrievalOptions, build_retriever, parse_options

RRF_KS = (10, 30, 60, 100)
ALPHAS = tuple(round(a / 10, 1) for a in range(1, 10))  # 0 and 1 are the parts alone, not a fusion
DEFAULT = {"method": "rrf", "rrf_k": 60, "alpha": 0.5}


def fusion_grid() -> list[dict]:
    """Every fusion tried: plain RRF (the default) first."""
    grid = [dict(DEFAULT)]
    grid += [
        {"method": "rrf", "rrf_k": k, "alpha": a}
        for k in RRF_KS
        for a in ALPHAS
        if {"method": "rrf", "rrf_k": k, "alpha": a} != DEFAULT
    ]
    grid += [{"method": "score", "rrf_k": 60, "alpha": a} for a in ALPHAS]
    return grid


def _distance_from_default(fusion: dict) -> tuple:
    return (fusion["method"] != "rrf", abs(fusion["alpha"] - 0.5), abs(fusion["rrf_k"] - 60))


def choose_fusion(
    qrels: dict, dense_run: dict, sparse_run: dict, *, metric: str = "ndcg@10", grid: list[dict] | None = None
) -> dict:
    """The best fusion of two runs ({qid: {doc_id: score}}, dense first) on `qrels`, with the
    whole grid's scores and the parts' own scores for reference."""
    scored = []
    for fusion in grid or fusion_grid():
        fused = fuse([dense_run, sparse_run], top=100, **fusion)
        scored.append({**fusion, metric: round(evaluate_run(qrels, fused, (metric,))[metric], 4)})
    best = max(scored, key=lambda row: (row[metric], tuple(-x for x in _distance_from_default(row))))
    return {
        "chosen": {key: best[key] for key in DEFAULT},
        "metric": metric,
        "score": best[metric],
        "default_score": scored[0][metric],
        "queries": len(qrels),
        "parts": {
            "dense": round(evaluate_run(qrels, dense_run, (metric,))[metric], 4),
            "bm25": round(evaluate_run(qrels, sparse_run, (metric,))[metric], 4),
        },
        "grid": scored,
    }


def tune_fusion(dataset: str, *, query_split: str = "dev", options=None, dataset_options: dict | None = None) -> dict:
    """Choose the hybrid fusion of `dataset` on its `query_split` queries (default the dev half,
    helpers.data.splits; SciFact: dataset_options={"split": "train"} and query_split="all").
    `options`: retrieval sections (the dense embedder, BM25's k1/b and hybrid's candidates are
    used as given). Returns choose_fusion's report plus what it was tuned on."""
    from helpers.data import load_dataset  # pandas: loaded only when this runs

    data = load_dataset(dataset, query_split=query_split, **(dataset_options or {}))
    report = tune_fusion_on(data, options=options)
    report.update({"dataset": dataset, "query_split": query_split, "dataset_options": dataset_options or {}})
    return report


def tune_fusion_on(data, *, options=None, shared: dict | None = None) -> dict:
    """choose_fusion on a loaded Dataset's queries with qrels; `shared` as in build_retriever
    (parts already indexed on this corpus are reused)."""
    options = parse_options(options)
    queries = {qid: data.queries[qid] for qid in data.qrels if data.qrels[qid]}
    shared = {} if shared is None else shared
    runs = []
    for part in ("dense", "bm25"):
        retriever = build_retriever(part, language=data.language, options=options, shared=shared)
        if retriever.corpus is not data.corpus:
            retriever.index(data.corpus)
        runs.append(retriever.retrieve(queries, options.hybrid.candidates))
    report = choose_fusion({q: data.qrels[q] for q in queries}, *runs)
    report.update(
        {
            "dataset": data.name,
            "candidates": options.hybrid.candidates,
            "dense": options.dense.model_dump(),
            "bm25": options.bm25.model_dump(),
        }
    )
    return report


def tuned_options(options: RetrievalOptions | dict | None, fusion: dict) -> RetrievalOptions:
    """`options` (RetrievalOptions or dict of sections) with the hybrid section's fusion replaced."""
    sections = parse_options(options).model_dump()
    sections["hybrid"].update({key: fusion[key] for key in DEFAULT})
    return parse_options(sections)


def format_fusion(report: dict) -> str:
    chosen = report["chosen"]
    return (
        f"{report['dataset']} ({report.get('query_split', 'all')}, {report['queries']} queries): "
        f"hybrid {{method: {chosen['method']}, rrf_k: {chosen['rrf_k']}, alpha: {chosen['alpha']}}} "
        f"{report['metric']} {report['score']:.4f} (plain RRF {report['default_score']:.4f}; "
        f"dense {report['parts']['dense']:.4f}, bm25 {report['parts']['bm25']:.4f})"
    )
