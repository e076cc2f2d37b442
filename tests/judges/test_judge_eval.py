"""judge_eval on a tiny RAGBench-shaped directory written from real rows, and the CLI wiring."""

import argparse
import json
import math

import numpy as np
import pandas as pd
import pytest

from helpers import paths


@pytest.fixture(scope="module")
def tiny_ragbench(tmp_path_factory, raw_ready):
    """<tmp>/<subset>/<split>-00000-of-00001.parquet for covidqa and hotpotqa, from real rows."""
    root = tmp_path_factory.mktemp("ragbench")
    source = paths.RAW_DIR / "ragbench"
    for subset in ("covidqa", "hotpotqa"):
        (root / subset).mkdir()
        for split, n in (("validation", 30), ("test", 24)):
            frame = pd.read_parquet(next((source / subset).glob(f"{split}-*.parquet")))
            if split == "test":  # keep some hallucinations so the AUROC is defined
                frame = pd.concat(
                    [
                        frame[~frame.adherence_score.astype(bool)].head(6),
                        frame[frame.adherence_score.astype(bool)].head(n - 6),
                    ]
                )
            frame.head(n).to_parquet(root / subset / f"{split}-00000-of-00001.parquet")
    return root


@pytest.fixture(scope="module")
def tiny_judge(tiny_ragbench, tmp_path_factory):
    from helpers.judges.models.trace_trees import train_judge

    out = tmp_path_factory.mktemp("judge") / "judge.skops"
    info = train_judge(out_path=out, ragbench_dir=tiny_ragbench, max_iter=15)
    assert info["trained_on"] == ["covidqa/validation", "hotpotqa/validation"]
    return out


def test_judge_eval_side_by_side(tiny_ragbench, tiny_judge, tmp_path):
    from helpers.judges.judge_eval import format_table, judge_eval, result_frame, save_result

    result = judge_eval(tiny_ragbench, split="test", judges=["offline"], judge_path=tiny_judge)
    assert set(result["subsets"]) == {"covidqa", "hotpotqa"}
    block = result["subsets"]["covidqa"]
    assert block["n"] == 24 and block["n_hallucinated"] == 6
    assert set(block["judges"]) == {"offline", "ragas", "trulens", "gpt3.5", "trivial"}
    offline = block["judges"]["offline"]
    assert offline["n_failed"] == 0
    # the same judge's own scores, checked against sklearn's AUROC and RMSE written out by hand
    from sklearn.metrics import roc_auc_score

    from helpers.data import load_ragbench
    from helpers.judges.judge_eval import _offline_judges

    frame = load_ragbench("covidqa", "test", tiny_ragbench)
    scores = [j.scores for j in _offline_judges(["offline"], tiny_judge, None)["offline"].judge_frame(frame)]
    hallucinated = 1 - frame["adherence_score"].astype(float).to_numpy()
    assert offline["auroc"] == pytest.approx(roc_auc_score(hallucinated, [-s.adherence_score for s in scores]))
    for metric, gold in (("relevance", "relevance_score"), ("utilization", "utilization_score")):
        by_hand = np.sqrt(np.mean((np.array([getattr(s, metric) for s in scores]) - frame[gold].to_numpy()) ** 2))
        assert offline[f"rmse_{metric}"] == pytest.approx(by_hand)
    assert block["judges"]["trivial"]["auroc"] == 0.5
    assert math.isnan(block["judges"]["ragas"]["rmse_utilization"])  # ragas has no utilization column
    assert not math.isnan(block["judges"]["gpt3.5"]["rmse_utilization"])
    table = format_table(result)
    assert "covidqa" in table and "hotpotqa" in table and "offline" in table and "gpt3.5" in table
    assert len(result_frame(result)) == 10
    save_result(result, tmp_path / "eval.json")
    assert json.loads((tmp_path / "eval.json").read_text())["split"] == "test"


def test_judge_eval_trivial_rmse_matches_by_hand(tiny_ragbench, tiny_judge):
    from helpers.data import load_ragbench
    from helpers.judges.judge_eval import judge_eval

    result = judge_eval(tiny_ragbench, split="test", judges=["offline"], judge_path=tiny_judge, limit=10)
    frame = load_ragbench("hotpotqa", "test", tiny_ragbench).head(10)
    mean = result["trivial_means"]["relevance"]
    expected = float(np.sqrt(np.mean((frame.relevance_score - mean) ** 2)))
    assert result["subsets"]["hotpotqa"]["judges"]["trivial"]["rmse_relevance"] == pytest.approx(expected)
    assert result["subsets"]["hotpotqa"]["n"] == 10


def test_judge_eval_records_llm_failures(tiny_ragbench, tiny_judge, monkeypatch):
    """An LLM judge that cannot answer yields NaN scores and recorded reasons, not a crash."""
    from helpers.judges import judge_eval as module

    result = module.judge_eval(
        tiny_ragbench,
        split="test",
        judges="llm",
        llm_config={
            "provider": "openai-compatible",
            "base_url": "http://127.0.0.1:9",
            "max_retries": 0,
            "timeout_s": 1,
            "cache": "off",
            "api_key_env": "HELPERS_TEST_NO_SUCH_API_KEY",
        },
        limit=2,
    )
    llm = result["subsets"]["covidqa"]["judges"]["llm"]
    assert llm["n_failed"] == 2 and llm["failures"] and math.isnan(llm["rmse_relevance"])


def test_add_cli_registers_both_commands():
    from helpers.cli.judge_training_commands import add_cli

    parser = argparse.ArgumentParser()
    add_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["judge-eval", "--ragbench-dir", "d", "--split", "test", "--judges", "offline,llm", "--out", "f.json"]
    )
    assert (args.ragbench_dir, args.split, args.judges, args.out) == ("d", "test", "offline,llm", "f.json")
    args = parser.parse_args(["train-judge", "--seed", "3"])
    assert args.seed == 3 and callable(args.func)


# ---- RAGBench's shipped baselines and the trained judge on the full test splits (data/raw/ragbench)

# Hallucination AUROC of RAGBench's shipped judge columns on the whole test splits (positive class:
# adherence_score False; score: minus the shipped faithfulness / groundedness), as judge-eval
# computed them before helpers.inference.classical existed.
SHIPPED_AUROC = {
    ("covidqa", "ragas"): 0.627,
    ("covidqa", "trulens"): 0.651,
    ("delucionqa", "ragas"): 0.698,
    ("emanual", "trulens"): 0.609,
    ("hotpotqa", "trulens"): 0.665,
}


@pytest.fixture(scope="module")
def baselines_on_test(raw_ready):
    """judge-eval's result for the shipped baselines alone (no judge of ours), default data dir."""
    from helpers.judges.judge_eval import judge_eval

    return judge_eval(split="test", judges=[])


def test_shipped_baseline_auroc_pins(baselines_on_test):
    subsets = baselines_on_test["subsets"]
    assert set(subsets) == {"covidqa", "delucionqa", "emanual", "hotpotqa"}
    for (subset, judge), expected in SHIPPED_AUROC.items():
        result = subsets[subset]["judges"][judge]
        assert result["auroc"] == pytest.approx(expected, abs=0.001), (subset, judge)
        low, high = result["auroc_ci95"]
        assert low < result["auroc"] < high
    for subset, block in subsets.items():
        assert block["judges"]["trivial"]["auroc"] == 0.5, subset  # constant score: all ties


def test_inverted_score_gives_one_minus_auroc(raw_ready):
    from helpers.data import load_ragbench
    from helpers.judges.judge_eval import hallucination_auroc

    frame = load_ragbench("covidqa", "test")
    hallucinated = 1.0 - frame["adherence_score"].astype(float).to_numpy()
    faithfulness = frame["ragas_faithfulness"].astype(float).to_numpy()
    right = hallucination_auroc(hallucinated, faithfulness, n_resamples=200)
    inverted = hallucination_auroc(hallucinated, -faithfulness, n_resamples=200)
    assert right["auroc"] == pytest.approx(0.627, abs=0.001)
    assert inverted["auroc"] == pytest.approx(1 - right["auroc"], abs=1e-12)
    assert inverted["n"] == right["n"] == int(np.isfinite(faithfulness).sum())


@pytest.fixture(scope="module")
def offline_test_eval(raw_ready):
    """judge-eval of the lexical judge `make data` trains (data/models/) on the test splits (the
    evidence model, trained by its own make target, is measured by benchmarks/judge.py)."""
    from helpers.judges.judge_eval import judge_eval
    from helpers.judges.models.trace_trees import DEFAULT_PATH

    assert DEFAULT_PATH.exists(), f"{DEFAULT_PATH} is not trained: run `make data`"
    return judge_eval(split="test", judges=["lexical"])


# hotpotqa's hallucinations are wrong inferences over words the documents contain: the lexical
# judge's AUROC there sits at chance (0.49 here, 0.505 on another machine), so it is pinned near
# 0.5 rather than asserted above it; the trained evidence model (issue 12) is the fix.
AT_CHANCE = {"hotpotqa": (0.40, 0.60)}


@pytest.mark.slow
@pytest.mark.parametrize("subset", ["covidqa", "delucionqa", "emanual", "hotpotqa"])
def test_trained_judge_beats_trivial_predictor(offline_test_eval, subset):
    """On every test subset: relevance / utilization RMSE below the trivial (training-mean)
    predictor's, and hallucination AUROC above the trivial 0.5 (pinned near chance where the
    lexical judge is known to be blind), as `python -m helpers judge-eval` reports them."""
    block = offline_test_eval["subsets"][subset]
    ours, trivial = block["judges"]["lexical"], block["judges"]["trivial"]
    assert ours["n_failed"] == 0, ours["failures"]
    assert trivial["auroc"] == 0.5
    assert ours["rmse_relevance"] < trivial["rmse_relevance"]
    assert ours["rmse_utilization"] < trivial["rmse_utilization"]
    if subset in AT_CHANCE:
        low, high = AT_CHANCE[subset]
        assert low <= ours["auroc"] <= high, f"{subset}: AUROC {ours['auroc']:.3f} left [{low}, {high}]: update the pin"
    else:
        assert ours["auroc"] > 0.6, f"{subset}: AUROC {ours['auroc']:.3f} <= 0.6"
