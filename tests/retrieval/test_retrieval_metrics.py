"""The NumPy-free retrieval metrics against ranx, the library they replace at run time (ranx compiles
numba containers in every process): the same value per query and per metric on random runs.

ranx runs once for the module, in a process of its own with numba's JIT off (NUMBA_DISABLE_JIT
must be set before numba is imported): its metric functions then run as the Python they are
written in, on plain dicts and lists, and give the same values; compiled, they cost about a
minute of numba compilation in a fresh environment (measured in CI: 30 s and 25 s on two of the
four cases), for 25 queries."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

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


SEEDS = range(4)
# ranx's values for each case: per query (in ranx's query order) and means
_RANX = """
import json, sys
from ranx import Qrels, Run, evaluate
metrics, cases = json.load(sys.stdin)
out = []
for qrels, run in cases:
    ranx_qrels, ranx_run = Qrels(qrels), Run({q: r or {"__none__": 0.0} for q, r in run.items()})
    per = evaluate(ranx_qrels, ranx_run, metrics, return_mean=False, make_comparable=True)
    means = evaluate(ranx_qrels, ranx_run, metrics, make_comparable=True)
    out.append(dict(order=list(ranx_qrels.keys()), per={m: [float(v) for v in per[m]] for m in metrics},
                    means={m: float(v) for m, v in means.items()}))
json.dump(out, sys.stdout)
"""


@pytest.fixture(scope="module")
def ranx_values():
    cases = [_random_case(seed) for seed in SEEDS]
    done = subprocess.run(
        [sys.executable, "-c", _RANX],
        input=json.dumps([METRICS, cases]),
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, NUMBA_DISABLE_JIT="1"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("seed", SEEDS)
def test_per_query_equals_ranx(seed, ranx_values):
    qrels, run = _random_case(seed)
    theirs = ranx_values[seed]
    assert len(theirs["order"]) == len(qrels) == 25
    ours = per_query(qrels, run, METRICS)
    for metric in METRICS:
        for i, qid in enumerate(theirs["order"]):
            assert ours[qid][metric] == pytest.approx(theirs["per"][metric][i], abs=1e-9), (qid, metric)
    assert evaluate_run(qrels, run, METRICS) == pytest.approx(theirs["means"], abs=1e-9)


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


# ranx reads the TREC run file retrieval-eval writes (JIT off, as above)
_RANX_FROM_FILE = """
import json, sys
from ranx import Qrels, Run, evaluate
qrels, path = json.load(sys.stdin)
run = Run.from_file(path, kind="trec")
print(json.dumps({"ndcg@10": float(evaluate(Qrels(qrels), run, "ndcg@10")), "name": run.name}))
"""


def test_retrieval_eval_writes_per_query_rows_and_a_trec_run_ranx_reads(tmp_path):
    from helpers.data import Dataset
    from helpers.retrieval.evaluation.retrieval_eval import retrieval_eval, save_report

    corpus = {
        "d1": {"title": "", "text": "The cat sat on the mat."},
        "d2": {"title": "", "text": "Dogs chase cats in the park."},
        "d3": {"title": "", "text": "Quantum computers use qubits to compute."},
        "d4": {"title": "", "text": "Hamlet is a tragedy written by William Shakespeare."},
    }
    queries = {"q1": "cats", "q2": "qubits and computers", "q3": "a dog in the park", "q4": "tragedy"}
    qrels = {"q1": {"d2": 2, "d1": 1}, "q2": {"d3": 1}, "q3": {"d1": 1}, "q4": {"d4": 1}}
    report = retrieval_eval(Dataset("toy", "en", corpus, queries, qrels), ["bm25"])
    rows = report["per_query"]["bm25"]
    assert sorted(rows) == ["q1", "q2", "q3", "q4"] and rows["q2"]["ndcg@10"] == 1.0
    mean = sum(r["ndcg@10"] for r in rows.values()) / 4
    assert report["results"]["bm25"]["ndcg@10"] == round(mean, 4)
    saved = save_report(report, tmp_path / "toy.json")
    written = json.loads(saved.read_text())
    assert written["run_files"] == {"bm25": "toy.bm25.trec"} and "runs" not in written
    trec = (tmp_path / "toy.bm25.trec").read_text().splitlines()
    assert trec[0].split()[:4] == ["q1", "Q0", next(iter(report["runs"]["bm25"]["q1"])), "1"]
    done = subprocess.run(
        [sys.executable, "-c", _RANX_FROM_FILE],
        input=json.dumps([qrels, str(tmp_path / "toy.bm25.trec")]),
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, NUMBA_DISABLE_JIT="1"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout)
    assert theirs["ndcg@10"] == pytest.approx(mean, abs=1e-6) and theirs["name"] == "bm25"
