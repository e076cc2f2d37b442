"""Sweeps: expansion into runs with readable ids, RAGBench as an experiment dataset, retrieval
scores and the seed guide's TRACe JSON, comparisons across runs, and the same sweep on a real
local Ray cluster with a worker killed mid-sweep."""

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from helpers.experiment.config import ConfigError
from helpers.experiment.exports import trace_json
from helpers.experiment.sweep import expand, load_sweep
from ray_heads import start_head, stop_head
from runs import TINY, cli, run_env

RAGBENCH_TINY = {
    **TINY,
    "dataset": {"name": "ragbench", "subset": "covidqa", "split": "test", "n": 3, "seed": 0},
    "architectures": ["bm25", "dense"],
}


def _sweep_file(tmp_path: Path, axes: dict, base: dict | None = None, name: str = "grid") -> Path:
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(base or TINY))
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "base": "base.yaml", "axes": axes}, sort_keys=False))
    return path


def test_a_sweep_expands_into_named_checked_runs(tmp_path, raw_ready):
    path = _sweep_file(
        tmp_path,
        {
            "dataset.options.chunk_size": [300, 800],
            "architectures": ["bm25", "dense"],
            "llm": [{"name": "small", "provider": "local", "max_tokens": 16}],
        },
    )
    runs = expand(*load_sweep(path))
    assert [r["run_id"] for r in runs] == [
        "grid--chunk_size=300--architectures=bm25--llm=small",
        "grid--chunk_size=300--architectures=dense--llm=small",
        "grid--chunk_size=800--architectures=bm25--llm=small",
        "grid--chunk_size=800--architectures=dense--llm=small",
    ]
    config = runs[1]["config"]
    assert config.dataset.options["chunk_size"] == 300 and config.architectures == ["dense"]
    assert config.generation_llm == "small" and [l.name for l in config.llms] == ["small", "local"]
    assert config.dataset.options["pages"] == "124-135"  # the base is kept where no axis sets it
    with pytest.raises(ConfigError, match=r"run grid--chunk_sise=300.*dataset.*unknown option 'chunk_sise'"):
        expand(*load_sweep(_sweep_file(tmp_path, {"dataset.options.chunk_sise": [300]})))
    with pytest.raises(ConfigError, match=r"unknown architecture\(s\) \['bm52'\]"):
        expand(*load_sweep(_sweep_file(tmp_path, {"architectures": ["bm52"]})))
    with pytest.raises(ConfigError, match="every axis needs at least one value"):
        expand(*load_sweep(_sweep_file(tmp_path, {"architectures": []})))


def test_ragbench_is_an_experiment_dataset(raw_ready):
    from helpers.data import DataError, load_dataset

    data = load_dataset("ragbench", subset="covidqa", split="test", n=5, seed=0)
    assert len(data.queries) == 5 and all(data.qrels[q] for q in data.queries)
    assert all(doc_id in data.corpus for rels in data.qrels.values() for doc_id in rels)
    assert load_dataset("ragbench", subset="covidqa", split="test", n=5, seed=0).queries == data.queries
    assert load_dataset("ragbench", subset="covidqa", split="test", n=5, seed=1).queries != data.queries
    with pytest.raises(DataError, match=r"covidqa/dev: no such published subset and split.*'covidqa': \['test'"):
        load_dataset("ragbench", subset="covidqa", split="dev")
    with pytest.raises(
        DataError, match="unknown option 'subst'; valid: n, query_split, ragbench_dir, seed, split, subset"
    ):
        load_dataset("ragbench", subst="covidqa")


def test_per_query_retrieval_values_by_hand():
    """nDCG with linear gains (Järvelin & Kekäläinen 2002), recall and MRR at 3, worked by hand:
    ranking b, c, a against a:1, c:2, z:1. DCG = 2/log2(3) + 1/log2(4); ideal 2, 1, 1."""
    from helpers.retrieval.evaluation.metrics import per_query

    relevant = {"a": 1, "c": 2, "z": 1}
    values = per_query({"q": relevant}, {"q": {"b": 1.0, "c": 0.5, "a": 1 / 3}}, ["ndcg@3", "recall@3", "mrr@3"])["q"]
    dcg, ideal = 2 / math.log2(3) + 1 / math.log2(4), 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert values == {"ndcg@3": pytest.approx(dcg / ideal), "recall@3": pytest.approx(2 / 3), "mrr@3": 0.5}


def test_trace_json_has_the_seed_guides_shape():
    rows = [
        {"architecture": "bm25", "judge": "offline", "qid": q, "metric": m, "value": v}
        for q, values in {"q1": (0.5, 0.4, 1.0, 0.8), "q2": (0.7, math.nan, 0.0, 0.6)}.items()
        for m, v in zip(("utilization", "relevance", "adherence", "completeness"), values)
    ]
    out = trace_json(pd.DataFrame(rows))["bm25"]
    assert list(out) == [
        "utilization",
        "relevance",
        "adherence",
        "completeness",
        "average",
        "num_samples",
        "individual_scores",
    ]
    assert out["utilization"] == 0.6 and out["relevance"] == 0.4 and out["num_samples"] == 1
    assert out["individual_scores"][0] == {
        "qid": "q1",
        "utilization": 0.5,
        "relevance": 0.4,
        "adherence": 1.0,
        "completeness": 0.8,
        "average": 0.675,
    }
    assert out["individual_scores"][1]["relevance"] is None and out["individual_scores"][1]["average"] is None


def test_a_retrieval_only_run_scores_retrieval_and_calls_no_llm(tmp_path, raw_ready):
    from helpers.experiment.config import ExperimentConfig
    from helpers.experiment.runner import Experiment

    config = ExperimentConfig(
        name="ret",
        dataset={"name": "obstetrics-es", "options": {"query_split": "test"}, "n_questions": 6},
        architectures=["bm25"],
        retrieval={"k": 10},
        generate=False,
        figures=False,
    )
    summary = Experiment(config, tmp_path / "results").run()
    assert summary["ok"] and summary["answers"] == 6
    assert all(usage["calls"] == 0 for usage in summary["llm_usage"].values())
    scores = pd.read_parquet(Path(summary["directory"]) / "scores.parquet")
    assert set(scores.judge) == {"retrieval", "system"}
    assert set(scores[scores.judge == "retrieval"].metric) == {"ndcg@10", "recall@10", "mrr@10"}
    assert scores[scores.metric == "llm_calls"].value.sum() == 0
    # the same six questions whatever the machine: a seeded sample of the test half
    again = Experiment(config.model_copy(update={"run_id": "ret-again"}), tmp_path / "results").run()
    assert (
        pd.read_parquet(Path(again["directory"]) / "scores.parquet").qid.sort_values().tolist()
        == scores.qid.sort_values().tolist()
    )
    # retrieval only, BM25 on the test half: the same nDCG@10 as retrieval-eval on those questions
    from helpers.data import load_dataset
    from helpers.retrieval import BM25
    from helpers.retrieval.evaluation.metrics import evaluate_run

    data = load_dataset("obstetrics-es", query_split="test")
    qids = sorted(set(scores.qid))
    run = BM25("es").index(data.corpus).retrieve({q: data.queries[q] for q in qids}, 10)
    expected = evaluate_run({q: data.qrels[q] for q in qids}, run, ("ndcg@10",))["ndcg@10"]
    assert scores[scores.metric == "ndcg@10"].value.mean() == pytest.approx(expected, abs=1e-9)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_ragbench_sweep_runs_resumes_and_compares(tmp_path, raw_ready):
    path = _sweep_file(tmp_path, {"retrieval.k": [2, 3]}, base=RAGBENCH_TINY, name="rb")
    env = run_env(tmp_path)
    done = cli("sweep", str(path), env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    results = tmp_path / "results"
    index = json.loads((results / "sweeps" / "rb" / "sweep.json").read_text())
    assert [r["status"] for r in index["runs"]] == ["finished", "finished"]
    run_dir = results / "rb--k=2"
    scores = pd.read_parquet(run_dir / "scores.parquet")
    retrieval = scores[scores.judge == "retrieval"]
    assert set(retrieval.metric) == {"ndcg@2", "recall@2", "mrr@2"} and len(retrieval) == 3 * 3 * 2
    assert retrieval.value.between(0, 1).all()
    trace = json.loads((run_dir / "trace.json").read_text())
    assert set(trace) == {"bm25", "dense"} and trace["bm25"]["num_samples"] == 3
    assert len(trace["bm25"]["individual_scores"]) == 3
    records = (run_dir / "records.jsonl").read_text()
    again = cli("sweep", str(path), env=env)  # finished: skipped, nothing redone
    assert again.returncode == 0 and "already finished" in again.stdout
    assert (run_dir / "records.jsonl").read_text() == records
    report = cli("report", "--sweep", "rb", env=env)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "offline/adherence" in report.stdout and "paired tests" in report.stdout
    tests = pd.read_csv(results / "sweeps" / "rb" / "paired_tests.csv")
    assert set(tests.axis) == {"k", "architecture"} and tests.p_holm.between(0, 1).all()
    assert (tests.p_holm >= tests.p_value - 1e-12).all()
    assert list((tmp_path / "figures").glob("sweep-rb-offline_adherence.png"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head():
    """A real Ray head on 127.0.0.1 (two CPUs, every port on loopback), stopped after the module's
    tests: started once (about 15 s up and 15 s down). The killed-worker test kills a worker, never
    the head, so the next test finds it as a user would."""
    import shutil
    import tempfile

    port = _free_port()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    started = start_head(temp, port)
    assert started.returncode == 0, started.stderr[-2000:]
    yield f"127.0.0.1:{port}"
    stop_head(temp, port)
    shutil.rmtree(temp, ignore_errors=True)


def _task_workers() -> list[int]:
    """PIDs of Ray worker processes running a sweep task (Ray names them after the task)."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines() if "ray::run_one" in line]


@pytest.mark.xdist_group("ray")  # a Ray head takes every core it is given: one at a time
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_sweep_on_a_ray_cluster_survives_a_killed_worker(tmp_path, raw_ready, ray_head):
    path = _sweep_file(tmp_path, {"retrieval.k": [2, 3]}, base=RAGBENCH_TINY, name="ray")
    env = run_env(tmp_path, RAY_USAGE_STATS_ENABLED="0")
    sweep = subprocess.Popen(
        [sys.executable, "-m", "helpers", "sweep", str(path), "--executor", "ray", "--address", ray_head],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    records = tmp_path / "results" / "ray--k=2" / "records.jsonl"
    deadline = time.time() + 600
    while time.time() < deadline and not (records.exists() and records.read_text().count('"kind": "answer"') >= 1):
        time.sleep(0.5)
    workers = _task_workers()
    assert workers, "no Ray task worker found while the sweep was answering"
    os.kill(workers[0], signal.SIGKILL)  # a worker dies mid-run: Ray retries its task
    out, err = sweep.communicate(timeout=900)
    assert sweep.returncode == 0, out[-3000:] + err[-1500:]
    for run_id in ("ray--k=2", "ray--k=3"):
        lines = [json.loads(l) for l in (tmp_path / "results" / run_id / "records.jsonl").read_text().splitlines() if l]
        answers = Counter(r["key"] for r in lines if r.get("kind") == "answer" and not r.get("error"))
        assert len(answers) == 3 * 2 and set(answers.values()) == {1}, answers  # every sample answered once
        assert json.loads((tmp_path / "results" / run_id / "summary.json").read_text())["ok"]


@pytest.mark.parametrize(
    "path", sorted(Path(__file__).parents[2].joinpath("configs", "sweeps").glob("*.yaml")), ids=lambda p: p.stem
)
def test_shipped_sweeps_expand(path, raw_ready):
    runs = expand(*load_sweep(path))
    assert runs and len({r["run_id"] for r in runs}) == len(runs)
    assert all(r["run_id"].startswith(load_sweep(path)[0].name + "--") for r in runs)


@pytest.mark.xdist_group("ray")  # a Ray head takes every core it is given: one at a time
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_corpus_embedding_spreads_over_ray_workers(tmp_path, ray_head, monkeypatch):
    import ray

    from helpers.retrieval import Dense
    from helpers.retrieval.embedders.models import EmbeddingCache

    corpus = {f"d{i}": {"title": "", "text": f"Sentence number {i} about topic {i % 7}."} for i in range(600)}
    monkeypatch.setenv("RAY_ADDRESS", ray_head)
    try:
        on_ray = Dense("minilm", cache=EmbeddingCache(tmp_path / "ray.sqlite"), embed_on_ray=True).index(corpus)
        assert on_ray.embedder.computed == 0  # every document came back from a worker
        assert len(on_ray.embedder.missing_documents([d["text"] for d in corpus.values()])) == 0
    finally:
        ray.shutdown()
    here = Dense("minilm", cache=EmbeddingCache(tmp_path / "here.sqlite")).index(corpus)
    queries = {"q": "topic 3 sentence"}
    assert list(on_ray.retrieve(queries, 5)["q"]) == list(here.retrieve(queries, 5)["q"])


def test_the_sweep_report_says_which_cell_each_comparison_is_in():
    """A paired test's row names the settings held fixed (dataset, architecture): without them the
    embedder sweep printed 162 comparisons nobody could place."""
    import pandas as pd

    from helpers.experiment.sweep_report import format_sweep_report

    metric = "retrieval/ndcg@10"
    tests = pd.DataFrame(
        [
            dict(metric=metric, axis="embedder", fixed_dataset="scifact", fixed_architecture="dense", a="e5", b="use")
            | dict(mean_diff=0.267, n_pairs=200, p_value=0.0001, p_holm=0.011, significant=True)
        ]
    )
    cells = pd.DataFrame(
        [
            dict(
                metric=metric,
                dataset="scifact",
                embedder="e5",
                architecture="dense",
                mean=0.66,
                ci_low=0.6,
                ci_high=0.7,
            )
        ]
    ).assign(n=200)
    text = format_sweep_report(
        {"runs": [], "axes": ["dataset", "embedder"], "cells": cells, "tests": tests, "figures": {}}
    )
    row = next(line for line in text.splitlines() if " e5 " in line and " use " in line)
    assert "scifact" in row and "dense" in row and "0.011" in row


@pytest.mark.xdist_group("ray")  # a Ray head takes every core it is given: one at a time
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_search_answers_on_ray_workers_and_the_same_search_here_asks_nothing_again(tmp_path, ray_head, monkeypatch):
    """`search --executor ray`: each look's answers are Ray tasks (the local model in the workers),
    this process only scores; rerun here, the same search finds every answer in the runs and chooses
    the same. This process's LLM may not answer: it raises if asked."""
    import helpers.experiment.runner as runner
    from helpers.experiment.search import search

    sweep = {
        "name": "ray-search",
        "base": {
            "name": "ray-search",
            "dataset": {"name": "xquad-es", "options": {"query_split": "test"}, "n_questions": 2},
            "generate": True,
            "architectures": ["bm25"],
            "llms": [{"name": "local", "provider": "local", "max_tokens": 16}],
            "figures": False,
        },
        "axes": {"retrieval.k": [1, 2]},
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep))
    monkeypatch.setenv("HELPERS_CACHE_DIR", str(tmp_path / "cache"))  # the workers' LLM cache: every call real

    def no_local_answers(settings):
        raise AssertionError("this process answered: the Ray workers should have")

    import ray

    ray.shutdown()  # joined afresh, so the workers get this test's HELPERS_ variables
    try:
        with monkeypatch.context() as patched:
            patched.setattr(runner, "LLM", no_local_answers)
            on_ray = search(path, batch=2, executor="ray", address=ray_head, results_dir=tmp_path, log=lambda _: None)
    finally:
        ray.shutdown()
    answering = [c for c in on_ray["cells"] if c["stage"] == "answers"]
    assert len(answering) == 2 and on_ray["llm_calls"] == 4  # two arms, two questions each
    for cell in answering:
        records = (tmp_path / cell["run"] / "records.jsonl").read_text().splitlines()
        answers = [json.loads(r) for r in records if '"kind": "answer"' in r]
        assert len(answers) == 2 and all(a["answer"] and not a.get("error") for a in answers)
    here = search(path, batch=2, results_dir=tmp_path, log=lambda _: None)  # nothing answered again
    assert here["chosen"] == on_ray["chosen"] and here["llm_calls"] == on_ray["llm_calls"]
    with pytest.raises(Exception, match="--executor 'dask' is not one of: local, ray"):
        search(path, executor="dask", results_dir=tmp_path)
