"""The experiment runner: config errors and figures (whole runs: tests/experiment/test_runs.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from helpers.experiment.config import ConfigError, load_config
from helpers.judges import JUDGES
from runs import TINY, cli_in_process, write_config


def _run(config_path, results, *, wait=True):
    env = {**os.environ, "HELPERS_RESULTS_DIR": str(results)}
    cmd = [sys.executable, "-m", "helpers", "run", str(config_path)]
    if wait:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_unknown_key_is_named(tmp_path):
    bad = dict(TINY, judges={**TINY["judges"], "ragass": "local"})
    with pytest.raises(ConfigError, match=r"unknown key 'judges.ragass'"):
        load_config(write_config(tmp_path, bad))
    with pytest.raises(ConfigError, match=r"unknown architecture\(s\) \['colbert'\]; valid names"):
        load_config(write_config(tmp_path, dict(TINY, architectures=["colbert"])))
    with pytest.raises(ConfigError, match=r"judges.ragas.architectures names \['dense'\], not in architectures"):
        judges = {**TINY["judges"], "ragas": {"llm": "local", "architectures": ["dense"]}}
        load_config(write_config(tmp_path, dict(TINY, judges=judges)))
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_load(path):
    config = load_config(path)
    assert config.architectures and config.llms
    for name in (config.generation_llm, *(judge.llm_name(config) for judge in JUDGES.values())):
        if name:
            config.llm(name)  # every LLM a config names is defined in its llms


@pytest.mark.slow
def test_figures_and_sidecars(tmp_path):
    config = dict(TINY, figures=True, name="figs")
    results, figures = tmp_path / "r", tmp_path / "f"
    env = {**os.environ, "HELPERS_RESULTS_DIR": str(results), "HELPERS_FIGURES_DIR": str(figures)}
    done = subprocess.run(
        [sys.executable, "-m", "helpers", "run", str(write_config(tmp_path, config))],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pngs = sorted(figures.glob("*.png"))
    assert {p.stem.split("-", 2)[-1] for p in pngs} >= {
        "metric-bars",
        "heatmap-question",
        "pareto-latency",
        "judge-agreement",
    }
    for png in pngs:
        sidecar = json.loads(png.with_suffix(".json").read_text())
        assert png.with_suffix(".pdf").exists() and sidecar["run_ids"] and sidecar["git_commit"]
    # the summary's sections (helpers.experiment.run_summary), the paired table left to `report`
    assert "Decisions:\n" in done.stdout  # the tiny config scores no correctness: nothing to decide on it
    assert "Every term above: docs/glossary.md" in done.stdout and "Paired permutation" not in done.stdout
    # resumed, with --json: stdout is the summary and nothing else (in this process: the boundary was
    # tested by the run above, and a second interpreter would only import torch again)
    again = cli_in_process("run", tmp_path / "config.yaml", "--json", env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    summary = json.loads(again.stdout)
    assert summary["run_id"] == sidecar["run_ids"][0] and summary["ok"] is True
    assert "Decisions:\n" in again.stderr


def test_seed_table_keeps_unscored_cells_visible():
    from helpers.experiment.analysis import seed_table

    rows = [
        ("bm25", "q1", "faithfulness", 1.0),
        ("bm25", "q2", "faithfulness", 0.5),
        ("bm25", "q1", "context_recall", None),
        ("bm25", "q2", "context_recall", None),
        ("dense", "q1", "faithfulness", None),
        ("dense", "q1", "context_recall", 0.25),
    ]
    scores = pd.DataFrame(
        [{"judge": "ragas", "architecture": a, "qid": q, "metric": m, "value": v} for a, q, m, v in rows]
    )
    table = seed_table(scores)
    assert list(table.columns) == ["faithfulness", "context_recall", "samples", "nan_scores"]
    assert table.loc["bm25", "faithfulness"] == 0.75 and pd.isna(table.loc["bm25", "context_recall"])
    assert table.loc["bm25", "samples"] == 2 and table.loc["bm25", "nan_scores"] == 2
    assert table.loc["dense", "context_recall"] == 0.25 and table.loc["dense", "nan_scores"] == 1
    assert seed_table(scores.assign(judge="offline")).empty
