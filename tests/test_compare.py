"""`python -m helpers compare BASELINE CANDIDATE` (helpers.experiment.compare): each verdict and its
exit status on runs built by hand, the interval the anytime-valid sequence gives, and the errors."""

import json
import random

import numpy as np
import pandas as pd
import pytest
import yaml

from helpers.errors import UserError
from helpers.inference.sequential import confidence_sequence
from runs import cli_in_process, scripted_llms, write_config


def _run(root, run_id, values, architecture="bm25"):
    directory = root / run_id
    directory.mkdir(parents=True)
    rows = [
        {"run_id": run_id, "dataset": "d", "architecture": architecture, "llm": "local", "judge": "correctness"}
        | {"qid": f"q{i}", "metric": "correctness", "value": float(v), "reason": ""}
        for i, v in enumerate(values)
    ]
    pd.DataFrame(rows).to_parquet(directory / "scores.parquet")
    config = {"name": run_id, "dataset": {"name": "obstetrics"}, "architectures": [architecture]}
    (directory / "config.yaml").write_text(yaml.safe_dump(config))


@pytest.fixture
def runs(tmp_path):
    rng = np.random.default_rng(0)
    base = (rng.random(80) < 0.5).astype(float)
    _run(tmp_path, "base", base)
    _run(tmp_path, "same", base)
    _run(tmp_path, "good", np.maximum(base, rng.random(80) < 0.6))
    _run(tmp_path, "bad", base * (rng.random(80) < 0.2))
    _run(tmp_path, "few", base[:6])
    return tmp_path, base


@pytest.mark.parametrize(
    "candidate, margin, status, code",
    [
        ("good", 0.05, "better", 0),
        ("same", 0.1, "not worse", 0),
        ("bad", 0.05, "worse", 1),
        ("few", 0.05, "undecided", 3),
    ],
)
def test_each_verdict_and_its_exit_status(runs, candidate, margin, status, code):
    root, _ = runs
    args = ("compare", "base", candidate, "--margin", margin, "--json")
    done = cli_in_process(*args, env={"HELPERS_RESULTS_DIR": str(root)})
    assert done.returncode == code, done.stderr
    result = json.loads(done.stdout)
    assert (
        result["status"] == status
        and result["baseline"] == "base:bm25"
        and result["metric"] == "correctness/correctness"
    )
    if status == "undecided":
        assert result["n"] == 6 and result["more_questions"] > 0


def test_the_interval_is_the_anytime_valid_sequence_of_the_differences(runs):
    from helpers.experiment.compare import compare

    root, base = runs
    result = compare("base", "bad", results_dir=root, seed=0)
    bad = pd.read_parquet(root / "bad" / "scores.parquet").set_index("qid")["value"]
    import random

    order = sorted(bad.index)
    random.Random(0).shuffle(order)
    low, high = confidence_sequence(np.array([bad[q] - base[int(q[1:])] for q in order]), alpha=0.05)
    assert (result["low"], result["high"]) == (low[-1], high[-1])
    # "worse" first when the sequence lies below 0 and reaches below -margin
    assert (
        result["status"] == "worse" and result["decided_at"] == int(np.flatnonzero((high < 0) & (low < -0.05))[0]) + 1
    )


def test_what_a_user_gets_wrong_is_named(runs):
    from helpers.experiment.compare import compare

    root, _ = runs
    with pytest.raises(UserError, match="'nope' is neither a config file nor a finished run under results/"):
        compare("base", "nope", results_dir=root)
    with pytest.raises(
        UserError, match="base:bm25 has no retrieval/ndcg@5 scores; its metrics: \\['correctness/correctness'\\]"
    ):
        compare("base", "good", metric="retrieval/ndcg@5", results_dir=root)
    with pytest.raises(UserError, match="has no architecture 'dense'; it has \\['bm25'\\]"):
        compare("base", "good:dense", results_dir=root)
    with pytest.raises(UserError, match="margin in \\[0, 1\\), alpha in \\(0, 1\\), batch >= 1; got 2.0, 0.05, 10"):
        compare("base", "good", margin=2.0, results_dir=root)


def test_undecided_says_when_the_same_differences_would_decide(runs):
    """80 identical answers: the sequence of zeros is [-0.06, 0.06], not yet within the margin 0.05;
    it is at 92 questions (the sequence's own first t with low >= -0.05), so 12 more."""
    from helpers.experiment.compare import compare

    root, _ = runs
    low, _ = confidence_sequence(np.zeros(200), alpha=0.05)
    first = int(np.flatnonzero(low >= -0.05)[0]) + 1
    result = compare("base", "same", margin=0.05, results_dir=root)
    assert (result["status"], first, result["more_questions"]) == ("undecided", 92, 12)


def _config(tmp_path, name, **changes):
    config = {
        "name": name,
        "dataset": {"name": "xquad-es", "options": {"query_split": "test"}},
        "generate": False,
        "architectures": ["bm25"],
        "retrieval": {"k": 10, "bm25": {"k1": 1.5}},
        "llms": [{"name": "local", "provider": "local"}],
        "figures": False,
    }
    for key, value in changes.items():
        config[key] = config[key] | value if isinstance(value, dict) and key in config else value
    return write_config(tmp_path, config, f"{name}.yaml")


def test_two_configs_are_compared_a_batch_at_a_time_and_stop_at_the_first_look_that_decides(tmp_path):
    """bm25 with k1 = 0 against k1 = 1.5 on xquad-es's 605 test questions: `not worse` within 0.05,
    reached at the look after 120 questions; the interval is the one the two full runs' differences
    give on those 120 questions in the same order."""
    from helpers.experiment.compare import compare
    from helpers.experiment.config import load_config
    from helpers.experiment.runner import Experiment

    base = _config(tmp_path, "zero", retrieval={"bm25": {"k1": 0.0}})
    cand = _config(tmp_path, "tf")
    result = compare(str(base), str(cand), results_dir=tmp_path)
    assert (result["status"], result["n"], result["available"]) == ("not worse", 120, 605)
    assert result["evaluated"] == {"baseline": 120, "candidate": 120} and result["metric"] == "retrieval/ndcg@10"
    ids = [Experiment(load_config(p), results_dir=tmp_path).run()["run_id"] for p in (base, cand)]
    full = compare(*ids, results_dir=tmp_path)  # two finished runs: every shared question
    assert full["n"] == 605 and full["decided_at"] == result["decided_at"]
    a, b = (pd.read_parquet(tmp_path / i / "scores.parquet").query("metric == 'ndcg@10'") for i in ids)
    a, b = (x.set_index("qid")["value"] for x in (a, b))
    order = sorted(a.index)
    random.Random(0).shuffle(order)
    low, high = confidence_sequence(np.array([b[q] - a[q] for q in order[:120]]), alpha=0.05)
    assert (result["low"], result["high"]) == (low[-1], high[-1])


@pytest.mark.xdist_group("test_search")  # the search tests' worker: the correctness judge's model loads once
def test_configs_that_answer_are_compared_on_their_answers_and_resume_for_free(tmp_path, monkeypatch):
    """correctness of an LLM that answers with the reference against one that never knows: `better`
    at the second look (8 questions each: 4 agreeing differences do not yet leave 0), answered through one run per config; again, no LLM call."""
    from helpers.data import load_dataset
    from helpers.experiment.compare import compare

    data = load_dataset("xquad-es", query_split="test")
    calls = scripted_llms(monkeypatch, {data.queries[q]: data.answers[q] for q in data.queries})
    llm = {"provider": "local", "cache": "off", "max_tokens": 32}
    common = {"generate": True, "dataset": {"n_questions": 30}}
    bad = _config(tmp_path, "bad", llms=[llm | {"name": "bad", "model": "bad"}], **common)
    good = _config(tmp_path, "good", llms=[llm | {"name": "good", "model": "good"}], **common)
    result = compare(str(bad), str(good), batch=4, results_dir=tmp_path)
    assert (result["status"], result["metric"], result["available"]) == ("better", "correctness/correctness", 30)
    assert (
        result["evaluated"]
        == {"baseline": 8, "candidate": 8}
        == {"baseline": len(calls["bad"]), "candidate": len(calls["good"])}
    )
    means = []
    for side in ("baseline", "candidate"):  # each a plain run of the 8 questions it answered
        run = result[side].partition(":")[0]
        scores = pd.read_parquet(tmp_path / run / "scores.parquet").query("metric == 'correctness'")
        assert len(scores) == 8
        means.append(scores["value"].mean())
    assert result["mean_diff"] == pytest.approx(means[1] - means[0]) and means[1] > 0.9 > 0.1 > means[0]
    again = compare(str(bad), str(good), batch=4, results_dir=tmp_path)
    assert again == result and (len(calls["bad"]), len(calls["good"])) == (8, 8)
    with pytest.raises(
        UserError, match="compare: --metric 'correctness/bleu' is not an answer metric a judge produces"
    ):
        compare(str(bad), str(good), metric="correctness/bleu", results_dir=tmp_path)
