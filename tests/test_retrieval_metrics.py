"""The NumPy-free retrieval metrics against ranx, the library they replace at run time (ranx compiles
numba containers in every process): the same value per query and per metric on random runs."""

from __future__ import annotations

import random

import pytest

from helpers.retrieval.evaluation.metrics import evaluate_run, parse_metric, per_query

METRICS = ["ndcg@10", "ndcg@3", "ndcg", "recall@5", "recall@100", "precision@5", "mrr@10", "map@10", "map"]


def _random_case(seed: int):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(30)]
    qrels, run = {}, {}
    for q in range(25):
        qid = f"q{q}"
        qrels[qid] = {d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 6))}
        scored = rng.sample(docs, rng.randint(0, 15))  # some runs shorter than k, one may be empty
        run[qid] = {d: 1.0 - i / 100 for i, d in enumerate(scored)}  # distinct scores: ranx's tie order is unspecified
    return qrels, run


@pytest.mark.parametrize("seed", range(4))
def test_per_query_equals_ranx(seed):
    from ranx import Qrels, Run, evaluate

    qrels, run = _random_case(seed)
    ours = per_query(qrels, run, METRICS)
    ranx_run = Run({q: r or {"__none__": 0.0} for q, r in run.items()})
    theirs = evaluate(Qrels(qrels), ranx_run, METRICS, return_mean=False, make_comparable=True)
    order = list(Qrels(qrels).keys())
    for metric in METRICS:
        for i, qid in enumerate(order):
            assert ours[qid][metric] == pytest.approx(float(theirs[metric][i]), abs=1e-9), (qid, metric)
    means = evaluate_run(qrels, run, METRICS)
    ranx_means = evaluate(Qrels(qrels), ranx_run, METRICS, make_comparable=True)
    assert means == pytest.approx({m: float(v) for m, v in ranx_means.items()}, abs=1e-9)


def test_known_values_and_missing_queries():
    qrels = {"q": {"a": 2, "c": 1, "x": 0}, "missed": {"a": 1}}
    run = {"q": {"b": 3.0, "a": 2.0, "c": 1.0}}
    scores = evaluate_run(qrels, run, ["mrr@10", "recall@2", "precision@2"])
    assert scores == {"mrr@10": 0.25, "recall@2": 0.25, "precision@2": 0.25}  # "missed" scores 0
    assert per_query(qrels, run, ["ndcg@1"]) == {"q": {"ndcg@1": 0.0}}


def test_unknown_metric_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown retrieval metric 'hits@3'.*ndcg, recall, precision, mrr, map"):
        parse_metric("hits@3")
    with pytest.raises(ValueError, match="ndcg@ten"):
        per_query({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ndcg@ten"])
