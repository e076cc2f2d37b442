"""`python -m helpers search` (helpers.experiment.search, helpers.sequential.eliminate): successive
elimination with anytime-valid confidence sequences, worked on known values, then on a tiny real
grid (XQuAD-es, BM25 cells), whose chosen config `run` reproduces; and each bad input's error."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from helpers.errors import UserError
from helpers.sequential import confidence_sequence, eliminate


def test_an_arm_is_eliminated_exactly_when_its_interval_against_the_leader_leaves_zero():
    rng = np.random.default_rng(1)
    qids = [f"q{i}" for i in range(60)]
    good = {q: float(v) for q, v in zip(qids, rng.random(60) < 0.9)}
    bad = {q: float(v) for q, v in zip(qids, rng.random(60) < 0.2)}
    close = {q: min(1.0, good[q]) for q in qids}  # the same values as the leader: never separable
    arms, done = eliminate({"good": good, "bad": bad, "close": close}, ["good", "bad", "close"], delta=0.05)
    by = {a.name: a for a in arms}
    assert by["good"].status == "leader"
    # delta split over the 3 pairs (Bonferroni): the CS of good - bad at 0.05 / 3
    low, high = confidence_sequence(np.array([good[q] - bad[q] for q in qids]), alpha=0.05 / 3)
    assert (by["bad"].low, by["bad"].high) == (low[-1], high[-1]) and low[-1] > 0
    assert by["bad"].status == "eliminated" and by["close"].status == "open"
    assert not done  # close's interval reaches below -epsilon (0): not settled
    # within epsilon: the tie is declared and the search done
    arms, done = eliminate({"good": good, "close": close}, ["good", "close"], delta=0.05, epsilon=0.5)
    assert done and [a.status for a in arms] == ["leader", "open"]


SWEEP = {
    "name": "tiny-search",
    "base": {
        "name": "tiny-search",
        "dataset": {"name": "xquad-es", "options": {"query_split": "test"}, "n_questions": 40},
        "generate": False,
        "llms": [{"name": "local", "provider": "local"}],
        "figures": False,
    },
    "axes": {"retrieval.bm25.k1": [0.0, 1.5], "retrieval.k": [10], "architectures": [["bm25"]]},
}


def test_a_tiny_grid_is_searched_and_its_choice_reproduced(tmp_path):
    from helpers.experiment.config import load_config
    from helpers.experiment.runner import Experiment
    from helpers.experiment.search import format_table, search

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    summary = search(path, epsilon=0.0, delta=0.05, batch=10, results_dir=tmp_path, log=lambda _: None)
    statuses = {c["axes"]["retrieval.bm25.k1"]: c for c in summary["cells"]}
    assert set(statuses) == {0.0, 1.5}
    assert summary["chosen"]["axes"]["retrieval.bm25.k1"] == 1.5  # k1 = 0 ignores term frequency
    assert summary["evaluations"] <= summary["full_grid_evaluations"] == 2 * 40
    assert "chosen config:" in format_table(summary)
    trace = json.loads((tmp_path / "search" / "tiny-search" / "search.json").read_text())
    assert trace["rounds"][0]["questions"] == 10
    # `run chosen.yaml` reproduces the chosen arm's values on the questions the search used
    chosen = load_config(summary["chosen_config"])
    assert chosen.architectures == ["bm25"] and chosen.retrieval.options.bm25.k1 == 1.5
    result = Experiment(chosen, results_dir=tmp_path).run()
    scores = pd.read_parquet(tmp_path / result["run_id"] / "scores.parquet")
    ndcg = scores[scores["metric"] == "ndcg@10"].set_index("qid")["value"]
    seen = trace["order"][: statuses[1.5]["questions"]]  # the questions the chosen arm was scored on
    assert summary["chosen"]["estimate"] == pytest.approx(ndcg.loc[seen].mean())


def test_arms_that_do_the_same_retrieval_are_evaluated_once(tmp_path):
    """k (the generator's contexts) is no retrieval axis: four arms, two retrievals."""
    from helpers.experiment.search import search

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP | {"axes": SWEEP["axes"] | {"retrieval.k": [3, 5]}}))
    summary = search(path, epsilon=0.0, results_dir=tmp_path, log=lambda _: None)
    assert len(summary["cells"]) == 4 and summary["full_grid_evaluations"] == 2 * 40
    by_k = {(c["axes"]["retrieval.bm25.k1"], c["axes"]["retrieval.k"]): c["estimate"] for c in summary["cells"]}
    assert by_k[(1.5, 3)] == by_k[(1.5, 5)] and by_k[(0.0, 3)] == by_k[(0.0, 5)]


def test_bad_searches_are_one_line_errors(tmp_path):
    from helpers.experiment.search import search

    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    with pytest.raises(
        UserError, match="metric 'bleu' is not one the retrieval stage measures; valid: ndcg, recall, mrr"
    ):
        search(path, metric="bleu", results_dir=tmp_path)
    with pytest.raises(
        UserError, match=r"epsilon in \[0, 1\), delta in \(0, 1\), batch >= 1, at >= 1; got 0.02, 0.05, 0, 10"
    ):
        search(path, batch=0, results_dir=tmp_path)
    path.write_text(yaml.safe_dump(SWEEP | {"axes": {}}))
    with pytest.raises(UserError, match="every axis needs at least one value"):
        search(path, results_dir=tmp_path)
    path.write_text(yaml.safe_dump(SWEEP | {"axes": {"retrieval.bm25.kone": [1.0]}}))
    with pytest.raises(UserError, match="kone"):
        search(path, results_dir=tmp_path)
    path.write_text(yaml.safe_dump(SWEEP | {"axes": {"architectures": [["hyde"]]}}))
    with pytest.raises(UserError, match="retrieves with the LLM \\(hyde\\)"):
        search(path, results_dir=tmp_path)
