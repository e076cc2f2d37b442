"""A tiny experiment config shared by the run tests: 3 questions on 12 guideline pages, two
architectures without an LLM in retrieval, the local model with short answers."""

import os
import subprocess
import sys
from pathlib import Path

import yaml

TINY = {
    "name": "tiny",
    "dataset": {"name": "obstetrics", "options": {"pages": "124-135"}, "questions": ["q2", "q4", "q3"]},
    "architectures": ["bm25", "hybrid"],
    "retrieval": {"k": 3},
    "llms": [{"name": "local", "provider": "local", "max_tokens": 24}],
    "judges": {"offline": True, "trace_llm": None, "ragas": None, "ragas_evidence": False},
    "statistics": {"baseline": "bm25", "n_resamples": 200},
    "figures": False,
}


def retrieval_runs(results: Path, n_questions=(4, 5, 6)) -> list[str]:
    """Runs that differ in one setting (how many of obstetrics-es's test questions), retrieval only:
    a few seconds each; their run ids, oldest first."""
    from helpers.experiment.config import ExperimentConfig
    from helpers.experiment.runner import Experiment

    run_ids = []
    for n in n_questions:
        dataset = {"name": "obstetrics-es", "options": {"query_split": "test"}, "n_questions": n}
        config = ExperimentConfig(**dict(TINY, name="trend", generate=False, dataset=dataset))
        run_ids.append(Experiment(config, results_dir=results).run()["run_id"])
    return run_ids


def write_config(tmp_path: Path, config: dict, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    return path


def run_env(tmp_path: Path, **extra) -> dict:
    """A run of its own: its own results, figures and LLM cache (so every call is real)."""
    return {
        **os.environ,
        "HELPERS_RESULTS_DIR": str(tmp_path / "results"),
        "HELPERS_FIGURES_DIR": str(tmp_path / "figures"),
        "HELPERS_CACHE_DIR": str(tmp_path / "cache"),
        "HELPERS_INDEX_DIR": str(tmp_path / "cache" / "indexes"),
        **extra,
    }


def cli(*args, env=None, timeout=900):
    """`python -m helpers ARGS` in a subprocess, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "helpers", *args],
        env=env or os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
