"""Retrieval metrics: nDCG, recall, precision, MRR and MAP at k, per query, with ranx's definitions
(Bassani 2022; nDCG with linear gains, Järvelin & Kekäläinen 2002), in NumPy.

Why not ranx itself: ranx keeps runs in numba typed dicts and lists whose methods numba cannot cache
on disk, so every process compiles them again, 7-9 s on 2 cores, for any number of queries. That was
half of a warm rerun of the default config (10 questions) and is paid by every CLI process. The same
numbers in NumPy take milliseconds; `tests/retrieval/test_retrieval_metrics.py` checks them against ranx on
random runs, metric by metric.

Conventions (ranx's): documents ranked by score, highest first (ties keep the run's order); a
qrel grade below 1 is not relevant; `@k` cuts the ranking at k (no `@k`: the whole ranking); a
query the run misses scores 0; precision@k divides by k however short the ranking.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
NAMES = ("ndcg", "recall", "precision", "mrr", "map")


def parse_metric(metric: str) -> tuple[str, int]:
    """("ndcg", 10) from "ndcg@10"; k = 0 means the whole ranking."""
    name, _, cut = metric.partition("@")
    if name not in NAMES or (cut and not cut.isdigit()):
        raise ValueError(
            f"unknown retrieval metric {metric!r}: use one of {', '.join(NAMES)}, optionally @k (e.g. ndcg@10)"
        )
    return name, int(cut or 0)


def _ranked(scores: dict) -> list:
    # sorted() is stable: documents with equal scores keep the run's order
    return [doc_id for doc_id, _ in sorted(scores.items(), key=lambda item: -float(item[1]))]


def _dcg(gains: Sequence[float]) -> float:
    return sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))


def score_query(relevant: dict, scores: dict, metric: str) -> float:
    """One metric for one query: `relevant` {doc_id: grade}, `scores` {doc_id: score}."""
    name, k = parse_metric(metric)
    grades = {doc_id: int(grade) for doc_id, grade in relevant.items() if int(grade) >= 1}
    if not grades:
        return 0.0
    ranking = _ranked(scores)
    top = ranking[:k] if k else ranking
    hits = [doc_id in grades for doc_id in top]
    if name == "ndcg":
        ideal = sorted(grades.values(), reverse=True)
        ideal_dcg = _dcg(ideal[:k] if k else ideal)  # the ideal is cut at k, not at the run's length
        return _dcg([grades.get(doc_id, 0) for doc_id in top]) / (ideal_dcg or 1.0)
    if name == "recall":
        return sum(hits) / len(grades)
    if name == "precision":
        return sum(hits) / (k or len(top)) if top else 0.0  # a run shorter than k still divides by k
    if name == "mrr":
        return next((1.0 / (rank + 1) for rank, hit in enumerate(hits) if hit), 0.0)
    found, precisions = 0, 0.0  # map: precision at each hit, over all relevant documents
    for rank, hit in enumerate(hits):
        if hit:
            found += 1
            precisions += found / (rank + 1)
    return precisions / len(grades)


def per_query(qrels: dict, run: dict, metrics) -> dict[str, dict[str, float]]:
    """{qid: {metric: value}} for every query of `run` that has qrels, in the run's order."""
    metrics = list(metrics)
    for metric in metrics:
        parse_metric(metric)
    return {
        qid: {metric: score_query(qrels[qid], run[qid], metric) for metric in metrics} for qid in run if qrels.get(qid)
    }


def judged_per_query(qrels: dict, run: dict, metrics=METRICS) -> dict[str, dict[str, float]]:
    """per_query over every query with qrels, a query the run misses scoring 0 (its empty ranking)."""
    judged = {qid: rels for qid, rels in qrels.items() if rels}
    return per_query(judged, {qid: run.get(qid, {}) for qid in judged}, metrics)


def mean_of(values: dict[str, dict[str, float]], metrics=METRICS) -> dict[str, float]:
    """Each metric's mean over the queries of `values` (per_query's); 0 for none."""
    return {metric: sum(v[metric] for v in values.values()) / len(values) if values else 0.0 for metric in metrics}


def evaluate_run(qrels: dict, run: dict, metrics=METRICS) -> dict[str, float]:
    """Mean of each metric over the queries with qrels (a query the run misses scores 0)."""
    return mean_of(judged_per_query(qrels, run, metrics), metrics)
