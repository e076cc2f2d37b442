"""`run --until-decided` end to end on a retrieval-only run (obstetrics-es's test half, BM25 against
hybrid: seconds): it stops at the first question where every pair is settled, the decision is the
one its stored scores give, a rerun resumes without answering anything again, and a budget stops it."""

import json
import os

import pandas as pd
import pytest

from helpers.inference.sequential import OPEN, settle
from runs import cli_in_process, run_env, write_config

CONFIG = {
    "name": "decide",
    "dataset": {"name": "obstetrics-es", "options": {"query_split": "test"}, "n_questions": 40},
    "architectures": ["bm25", "hybrid", "dense"],
    "retrieval": {"k": 10},
    "generate": False,
    "figures": False,
    "decisions": {"metric": "retrieval/ndcg@10", "batch": 4},
}


@pytest.fixture(scope="module")
def decided(tmp_path_factory, raw_ready):
    tmp = tmp_path_factory.mktemp("decide")
    # the session's cache (the shared embeddings of obstetrics-es's corpus): no minutes of embedding
    env = run_env(tmp, HELPERS_CACHE_DIR=os.environ["HELPERS_CACHE_DIR"])
    path = write_config(tmp, CONFIG)
    first = cli_in_process("run", str(path), "--until-decided", env=env)
    assert first.returncode == 0, first.stderr
    run = next((tmp / "results").glob("decide-*"))
    return tmp, env, path, run, first


def test_it_stops_where_the_stored_scores_settle_it(decided):
    _, _, _, run, first = decided
    decision = json.loads((run / "decisions.json").read_text())
    used = decision["questions_used"]
    assert len(decision["path"]) == used and decision["path"][-1]["pairs"] == decision["pairs"]
    if decision["settled"]:
        assert all(p["status"] != OPEN for p in decision["pairs"])
        assert any(p["status"] == OPEN for p in decision["path"][-2]["pairs"])  # the first question that settles it
    else:
        assert used == 40 and decision["stopped"] == "questions ran out"
    scores = pd.read_parquet(run / "scores.parquet")
    ndcg = scores[(scores["judge"] == "retrieval") & (scores["metric"] == "ndcg@10")]
    assert sorted(ndcg["qid"].unique()) == sorted(decision["order"])  # the scores are of the questions used
    by = {a: dict(zip(g["qid"], g["value"])) for a, g in ndcg.groupby("architecture")}
    values = {a: by[a] for a in CONFIG["architectures"]}  # the config's order, as the run
    again = settle(values, decision["order"], alpha=0.05, bets=decision["bets"], adaptive=decision["adaptive"])
    assert [p.as_dict() for p in again] == decision["pairs"]
    assert f"{used} of 40 questions used" in first.stdout


def test_a_rerun_resumes_without_answering_again(decided):
    _, env, path, run, _ = decided
    before = (run / "records.jsonl").read_text()
    decision = json.loads((run / "decisions.json").read_text())
    rerun = cli_in_process("run", str(path), "--until-decided", env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert (run / "records.jsonl").read_text() == before
    again = json.loads((run / "decisions.json").read_text())
    assert {k: again[k] for k in ("questions_used", "pairs", "order")} == {
        k: decision[k] for k in ("questions_used", "pairs", "order")
    }


def test_a_budget_stops_it_after_a_batch(decided):
    tmp, env, _, _, _ = decided
    path = write_config(tmp, dict(CONFIG, run_id="decide-budget"), name="budget.yaml")
    out = cli_in_process("run", str(path), "--until-decided", "--budget", "0.001m", env=env)
    assert out.returncode == 0, out.stderr
    decision = json.loads((tmp / "results" / "decide-budget" / "decisions.json").read_text())
    assert decision["stopped"] == "budget spent (0.001 min)" and decision["questions_used"] == 4


def test_budget_without_until_decided_is_an_error(decided):
    _, env, path, _, _ = decided
    out = cli_in_process("run", str(path), "--budget", "30m", env=env)
    assert out.returncode == 2
    assert "--budget 30m limits a run --until-decided; add --until-decided" in out.stderr


def test_a_metric_the_run_does_not_produce_is_an_error(decided):
    tmp, env, _, _, _ = decided
    config = dict(CONFIG, run_id="decide-bad", decisions={"metric": "correctness/correctness"})
    out = cli_in_process("run", str(write_config(tmp, config, name="bad.yaml")), "--until-decided", env=env)
    assert out.returncode == 2
    assert "decisions.metric 'correctness/correctness' was not produced by this run's judges" in out.stderr
    assert "retrieval/ndcg@10" in out.stderr


def test_a_plain_run_afterwards_answers_the_rest_and_drops_the_decision(decided):
    # last in this module: it changes the shared run
    _, env, path, run, _ = decided
    out = cli_in_process("run", str(path), env=env)
    assert out.returncode == 0, out.stderr
    assert not (run / "decisions.json").exists()
    scores = pd.read_parquet(run / "scores.parquet")
    assert scores[scores["judge"] == "retrieval"]["qid"].nunique() == 40
    assert "decision on retrieval/ndcg@10 (alpha" in out.stdout  # the fixed-n decision again
