"""Retrieval metrics with ranx (Bassani 2022), checked against pytrec_eval-equivalent
definitions in the tests."""

from __future__ import annotations

METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")


def evaluate_run(qrels: dict, run: dict, metrics=METRICS) -> dict[str, float]:
    """Mean of each metric over the queries in qrels (a query the run misses scores 0)."""
    from ranx import Qrels, Run, evaluate

    qrels = {q: {d: int(g) for d, g in rels.items()} for q, rels in qrels.items() if rels}
    run = {q: dict(run.get(q, {})) or {"__none__": 0.0} for q in qrels}
    scores = evaluate(Qrels(qrels), Run(run), list(metrics), make_comparable=True)
    return {m: float(scores[m]) if not isinstance(scores, float) else float(scores) for m in metrics}


def per_query(qrels: dict, run: dict, metrics) -> dict[str, dict[str, float]]:
    """{qid: {metric: value}} for every query of `run` that has qrels (ranx, as `evaluate_run`)."""
    from ranx import Qrels, Run, evaluate

    qids = [q for q in run if qrels.get(q)]
    if not qids:
        return {}
    judged = Qrels({q: {d: int(g) for d, g in qrels[q].items()} for q in qids})
    ranked = Run({q: dict(run[q]) or {"__none__": 0.0} for q in qids})
    values = evaluate(judged, ranked, list(metrics), return_mean=False, make_comparable=True)
    # ranx orders queries as the Qrels keys; one metric gives an array, several a dict of arrays
    values = values if isinstance(values, dict) else {metrics[0]: values}
    order = list(judged.keys())
    return {q: {m: float(values[m][i]) for m in metrics} for i, q in enumerate(order)}
