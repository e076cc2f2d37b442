"""Fusing runs {qid: {doc_id: score}}."""

from __future__ import annotations

from helpers.retrieval.architectures.retriever_base import top_k


def rrf(
    runs: list[dict[str, dict[str, float]]], *, k: int = 60, weights: list[float] | None = None, top: int | None = None
) -> dict[str, dict[str, float]]:
    """Reciprocal rank fusion, Cormack et al. 2009: score(d) = sum_r w_r / (k + rank_r(d)),
    ranks 1-based; k=60 as in the paper."""
    weights = weights or [1.0] * len(runs)
    fused: dict[str, dict[str, float]] = {}
    for run, weight in zip(runs, weights):
        for qid, scores in run.items():
            ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
            target = fused.setdefault(qid, {})
            for rank, (doc_id, _) in enumerate(ranked, 1):
                target[doc_id] = target.get(doc_id, 0.0) + weight / (k + rank)
    return {qid: top_k(scores, top) if top else scores for qid, scores in fused.items()}


def score_fusion(
    runs: list[dict[str, dict[str, float]]], *, weights: list[float] | None = None, top: int | None = None
) -> dict[str, dict[str, float]]:
    """Convex combination of min-max normalised scores per query (Bruch et al. 2023, 'An Analysis
    of Fusion Functions for Hybrid Retrieval'); a document missing from a run scores 0 there."""
    weights = weights or [1.0 / len(runs)] * len(runs)
    fused: dict[str, dict[str, float]] = {}
    for run, weight in zip(runs, weights):
        for qid, scores in run.items():
            if not scores:
                continue
            low, high = min(scores.values()), max(scores.values())
            span = (high - low) or 1.0
            target = fused.setdefault(qid, {})
            for doc_id, score in scores.items():
                target[doc_id] = target.get(doc_id, 0.0) + weight * (score - low) / span
    return {qid: top_k(scores, top) if top else scores for qid, scores in fused.items()}


def fuse(
    runs: list[dict[str, dict[str, float]]],
    *,
    method: str = "rrf",
    rrf_k: int = 60,
    alpha: float = 0.5,
    top: int | None = None,
) -> dict[str, dict[str, float]]:
    """Two runs (dense first, then sparse) fused by `method`: 'rrf' with weights (alpha, 1 - alpha)
    (alpha 0.5 ranks as plain RRF), or 'score', min-max score fusion with weight alpha on dense."""
    weights = [alpha, 1 - alpha]
    if method == "rrf":
        return rrf(runs, k=rrf_k, weights=weights, top=top)
    if method == "score":
        return score_fusion(runs, weights=weights, top=top)
    raise ValueError(f"fusion method must be 'rrf' or 'score', got {method!r}")
