"""`python -m helpers compare BASELINE CANDIDATE` (helpers.experiment.compare): each verdict and its
exit status on runs built by hand, the interval the anytime-valid sequence gives, and the errors."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from helpers.errors import UserError
from helpers.sequential import confidence_sequence
from runs import cli_in_process


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
    with pytest.raises(UserError, match="margin in \\[0, 1\\) and alpha in \\(0, 1\\); got 2.0, 0.05"):
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
