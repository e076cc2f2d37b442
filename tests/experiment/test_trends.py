"""Issue 26, trends: every saved run over time (date, commit), a metric per architecture across
them, and the config differences between two runs; the panel shows both."""

import subprocess
from pathlib import Path

import pytest

from helpers.experiment.config import ConfigError
from helpers.experiment.trends import config_diff, run_index, trend, trend_figure
from runs import retrieval_runs

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = (4, 5, 6)  # three runs that differ in one setting: how many questions


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    """Three retrieval-only runs (no answers: a few seconds each) of obstetrics-es's test questions."""
    results = tmp_path_factory.mktemp("results")
    return results, retrieval_runs(results, QUESTIONS)


def test_the_runs_are_listed_oldest_first_with_their_date_and_commit(three_runs):
    results, run_ids = three_runs
    index = run_index(results)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert list(index["run_id"]) == run_ids and index["finished"].is_monotonic_increasing
    assert set(index["commit"]) == {head[:12]} and set(index["dataset"]) == {"obstetrics-es"}


def test_a_metric_per_architecture_across_the_runs(three_runs):
    results, run_ids = three_runs
    table = trend("retrieval", "ndcg@3", results_dir=results)
    assert list(table["run_id"].drop_duplicates()) == run_ids
    assert sorted(set(table["architecture"])) == ["bm25", "hybrid"]
    assert [int(n) for n in table[table.architecture == "bm25"]["n"]] == list(QUESTIONS)
    assert table["mean"].between(0, 1).all() and (table["ci_low"].isna() == (table["n"] < 5)).all()
    assert trend("retrieval", "ndcg@3", dataset="scifact", results_dir=results).empty
    figure = trend_figure(table, "retrieval/ndcg@3")
    assert len(figure.axes[0].get_legend().get_texts()) == 2 and len(figure.axes[0].get_xticklabels()) == 3


def test_the_config_differences_between_two_runs_are_the_changed_keys_only(three_runs):
    results, run_ids = three_runs
    diff = config_diff(run_ids[0], run_ids[2], results)
    assert diff.to_dict("records") == [{"key": "dataset.n_questions", run_ids[0]: 4, run_ids[2]: 6}]
    assert config_diff(run_ids[1], run_ids[1], results).empty
    with pytest.raises(ConfigError, match="no config.yaml"):
        (results / "empty").mkdir()
        config_diff(run_ids[0], "empty", results)


def test_the_trends_panel_draws_the_trend_and_the_differences(three_runs):
    from helpers.explore.run_panels import TrendsPanel

    results, run_ids = three_runs
    panel = TrendsPanel(results_dir=results)
    assert list(panel.run_a.options) == run_ids[::-1] and panel.run_b.value == run_ids[-1]
    assert panel.judge.value == "retrieval" and list(panel.metric.options) == ["mrr@3", "ndcg@3", "recall@3"]
    panel.metric.value = "ndcg@3"
    panel.show()
    assert panel.figure.value[:4] == b"\x89PNG" and panel.table.value.count("<tr") == 1 + 6
    panel.differences()
    assert "dataset.n_questions" in panel.diff.value and "hx-error" not in panel.status.value
