"""Whole runs, as a user meets them: a kill and a resume, faults at the level of a run, a run
that fails saying so, the command line's answer to a mistake, and secrets kept out of
everything a run writes."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from faults import FaultProxy
from helpers.experiment.config import ExperimentConfig, load_config
from helpers.experiment.runner import Experiment
from helpers.llm.serving import local_server
from runs import TINY, cli_in_process, write_config
from runs import cli as _cli
from runs import run_env as _env


def _keys(records: Path) -> list[str]:
    return [json.loads(line)["key"] for line in records.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    """TINY (named "logged") run straight through, in this process: (its config file, the folder
    it ran in, the CLI's result). The run log's test reads its output; the killed run's compares
    its scores with it."""
    folder = tmp_path_factory.mktemp("straight")
    config = write_config(folder, dict(TINY, name="logged"))
    return config, folder, cli_in_process("run", str(config), env=_env(folder))


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_killed_run_resumes_without_redoing_anything(straight_run, tmp_path):
    config, straight_folder, straight = straight_run
    run_id = load_config(config).resolved_run_id()
    assert straight.returncode == 0, straight.stderr[-2000:]
    # the same run in a fresh place, SIGKILLed as soon as two answers are on disk (the resume runs
    # in this process: a new interpreter costs seconds of imports and model loading; the kill needs
    # its own process)
    env = _env(tmp_path / "b")
    records = tmp_path / "b" / "results" / run_id / "records.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "helpers", "run", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not (records.exists() and records.read_text().count("\n") >= 2):
        time.sleep(0.1)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    finished = {k for k in _keys(records) if k.startswith("answer|")}
    assert 2 <= len(finished) < 6, "the kill should land mid-way"
    with open(records, "a") as fh:
        fh.write('{"key": "answer|torn')  # as if killed in the middle of a write
    resumed = cli_in_process("run", str(config), env=env)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    summary = json.loads((records.parent / "summary.json").read_text())
    # one answer call per unfinished sample (bm25 and hybrid call the LLM for the answer only)
    assert summary["llm_usage"]["local"]["calls"] == 6 - len(finished)
    keys = _keys(records)
    assert len(keys) == len(set(keys)) == 12  # 6 answers + 6 offline scores, each exactly once
    from helpers.experiment.store import AnswerRow

    answers = [json.loads(line) for line in records.read_text().splitlines() if '"kind": "answer"' in line]
    assert all(set(a) <= set(AnswerRow.__annotations__) for a in answers)  # the typed record says every key
    a = pd.read_parquet(straight_folder / "results" / run_id / "scores.parquet")
    b = pd.read_parquet(records.parent / "scores.parquet")
    key = ["architecture", "llm", "judge", "qid", "metric"]
    merged = a.merge(b, on=key, suffixes=("_a", "_b"))
    assert len(a) == len(b) == len(merged)
    quality = merged[merged.judge != "system"]  # latency differs between runs, scores must not
    # to float precision: a judge's BLAS products can differ in the last bit from one process to
    # the next (CI once saw adherence 0.8993053159186601 against 0.89930531591866); a different
    # answer or context moves a score by far more than 1e-9
    assert quality.value_a.isna().equals(quality.value_b.isna())
    assert quality.value_a.fillna(-1).to_numpy() == pytest.approx(
        quality.value_b.fillna(-1).to_numpy(), rel=1e-9, abs=1e-12
    )


@pytest.fixture(scope="module")
def server_url():
    with local_server() as url:
        yield url


def _served(base_url, **llm) -> dict:
    return dict(
        TINY,
        architectures=["bm25"],
        judges={"offline": True, "trace_llm": None, "ragas": None, "ragas_evidence": False},
        dataset=dict(TINY["dataset"], questions=[f"q{i}" for i in range(1, 7)]),
        llms=[
            {
                "name": "served",
                "provider": "openai-compatible",
                "model": "smollm2",
                "base_url": base_url,
                "max_tokens": 16,
                "max_retries": 0,
                "timeout_s": 15,
                "concurrency": 3,
                **llm,
            }
        ],
    )


@pytest.mark.slow
def test_faults_in_a_run_are_recorded_once_and_a_rerun_completes_exactly_those(server_url, tmp_path):
    with FaultProxy(server_url.removesuffix("/v1")) as proxy:
        config = ExperimentConfig(**_served(proxy.url + "/v1"), run_id="faults")
        proxy.faults.extend([("429", 0), ("500", None), ("hang", 20), ("malformed", None), ("drop", None)])
        first = Experiment(config, results_dir=tmp_path).run()
        records = tmp_path / first["run_id"] / "records.jsonl"
        answers = [json.loads(line) for line in records.read_text().splitlines() if '"kind": "answer"' in line]
        assert len(answers) == 6 and len({a["key"] for a in answers}) == 6
        failed = [a for a in answers if a.get("error")]
        assert Counter(a["error_kind"] for a in failed) == Counter(
            ["rate_limit", "server_error", "timeout", "malformed_response", "connection"]
        )
        assert all(a["answer"] for a in answers if not a.get("error"))
        assert (
            not first["ok"] and first["failed_samples"] == 5 and first["failure_rate"] == pytest.approx(5 / 6, abs=1e-4)
        )
        # the faults are gone: the rerun calls the LLM for exactly the five failed samples
        requests_before = proxy.requests
        # the same run (same run_id) with a patient timeout: the local server answers one at a time
        patient = config.model_copy(update={"llms": [config.llms[0].model_copy(update={"timeout_s": 120})]})
        second = Experiment(patient, results_dir=tmp_path).run()
        assert proxy.requests - requests_before == 5
        assert second["ok"] and second["failed_samples"] == 0 and second["llm_usage"]["served"]["calls"] == 5
        scores = pd.read_parquet(tmp_path / first["run_id"] / "scores.parquet")
        offline = scores[(scores.judge == "offline") & (scores.metric == "adherence")]
        assert len(offline) == 6 and offline["value"].notna().all()  # failed attempts' NaNs are gone


@pytest.mark.slow
def test_a_run_against_a_dead_server_exits_non_zero_and_names_the_failure(tmp_path):
    dead = dict(
        TINY,
        architectures=["bm25"],
        llms=[
            {
                "name": "down",
                "provider": "openai-compatible",
                "base_url": "http://127.0.0.1:9/v1",
                "model": "x",
                "max_retries": 0,
                "timeout_s": 2,
            }
        ],
    )
    result = _cli("run", str(write_config(tmp_path, dead)), env=_env(tmp_path))
    assert result.returncode == 1
    assert "run FAILED: 3 of 3 samples failed (every sample failed for bm25/down)" in result.stderr
    assert "connection x3: " in result.stderr and "only the failed samples are redone" in result.stderr
    run_dir = next((tmp_path / "results").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["answer_failures"] == {"connection": 3} and summary["all_failed"] == ["bm25/down"]
    scores = pd.read_parquet(run_dir / "scores.parquet")  # the records stay
    offline = scores[scores.judge == "offline"]
    assert offline["value"].isna().all() and (offline["reason"] == "no answer to judge").all()


def test_max_failure_rate_decides_a_run(tmp_path):
    from helpers.experiment.run_accounting import failure_summary

    answers = [{"key": f"answer|bm25|l|q{i}", "architecture": "bm25", "llm": "l", "qid": f"q{i}"} for i in range(10)]
    answers += [{"key": f"answer|dense|l|q{i}", "architecture": "dense", "llm": "l", "qid": f"q{i}"} for i in range(10)]
    for a in answers[:3]:
        a.update(error="ConnectionError: refused", error_kind="connection")
    assert failure_summary(answers, [], 0.2)["ok"]  # 3 of 20 = 15%
    judge_failed = [{"answer_key": answers[5]["key"], "error": "ValueError: x", "error_kind": "judge:ValueError"}]
    summary = failure_summary(answers, judge_failed, 0.15)
    assert not summary["ok"] and summary["failed_samples"] == 4
    assert summary["failures"] == {
        "connection": {"count": 3, "example": "ConnectionError: refused"},
        "judge:ValueError": {"count": 1, "example": "ValueError: x"},
    }
    for a in answers[10:]:
        a.update(error="boom", error_kind="exception")
    assert failure_summary(answers, [], 0.99)["all_failed"] == ["dense/l"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "configs/missing.yaml"], "configs/missing.yaml: config file not found"),
        (["report", "no-such-run"], "no scores; run `python -m helpers run CONFIG.yaml` first"),
        (["retrieval-eval", "--dataset", "colbert-corpus"], "dataset 'colbert-corpus': unknown dataset; valid names"),
        (["judge-eval", "--ragbench-dir", "/nonexistent/ragbench"], "/nonexistent/ragbench"),
    ],
)
def test_a_users_mistake_is_one_line_and_exit_2(args, message, tmp_path):
    result = cli_in_process(*args, env=_env(tmp_path))
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr
    debug = cli_in_process("--debug", *args, env=_env(tmp_path))
    assert debug.returncode != 0 and "Traceback (most recent call last)" in debug.stderr


def test_a_mistake_through_a_real_process_is_one_line_and_exit_2(tmp_path):
    """The same contract across the process boundary: what the shell sees."""
    result = _cli("run", "configs/missing.yaml", env=_env(tmp_path), timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: configs/missing.yaml: config file not found"), result.stderr
    debug = _cli("--debug", "run", "configs/missing.yaml", env=_env(tmp_path), timeout=120)
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr


def test_unknown_architecture_in_a_config_is_one_line(tmp_path):
    result = cli_in_process("run", write_config(tmp_path, dict(TINY, architectures=["colbert"])), env=_env(tmp_path))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "unknown architecture(s) ['colbert']; valid names" in result.stderr


SECRET_ENV = "sk-env-SECRET-5b1f0e7c9a"
SECRET_DOTENV = "sk-dotenv-SECRET-77c2d4a1f3"


@pytest.mark.slow
def test_api_keys_appear_nowhere_a_run_writes(server_url, tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text(f"WORKBENCH_DOTENV_API_KEY={SECRET_DOTENV}\n")
    env = _env(tmp_path, WORKBENCH_ENV_API_KEY=SECRET_ENV, HELPERS_ENV_FILE=str(dotenv), HELPERS_SMOKE="1")
    config = dict(
        _served(server_url),
        figures=True,
        name="secrets",
        judges={"offline": True, "trace_llm": "judge", "ragas": None, "ragas_evidence": False},
        dataset=dict(TINY["dataset"], questions=["q2"]),
    )
    config["llms"] = [
        dict(config["llms"][0], api_key_env="WORKBENCH_ENV_API_KEY"),
        dict(config["llms"][0], name="judge", api_key_env="WORKBENCH_DOTENV_API_KEY", max_tokens=64),
    ]
    result = _cli("run", str(write_config(tmp_path, config)), env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(next((tmp_path / "results").glob("*/summary.json")).read_text())
    assert summary["llm_usage"]["judge"]["calls"] >= 1  # the .env key was used for real calls
    # the seed guide's TRACe JSON for each TRACe judge: the offline one and the LLM one
    run_dir = next((tmp_path / "results").glob("*/summary.json")).parent
    for name in ("trace.json", "trace-llm.json"):
        trace = json.loads((run_dir / name).read_text())
        assert set(trace) == {"bm25"} and {"utilization", "average", "num_samples", "individual_scores"} <= set(
            trace["bm25"]
        ), name
    notebook = Path(__file__).resolve().parents[2] / "notebooks" / "00-data.ipynb"
    executed = tmp_path / "executed.ipynb"
    nb_run = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--output",
            str(executed),
            str(notebook),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert nb_run.returncode == 0, nb_run.stderr[-2000:]
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != dotenv]
    assert any(p.suffix == ".png" for p in written) and any(p.name == "llm.sqlite" for p in written)
    logs = result.stdout + result.stderr + nb_run.stdout + nb_run.stderr
    for secret in (SECRET_ENV, SECRET_DOTENV):
        assert secret not in logs
        leaked = [str(p) for p in written if secret.encode() in p.read_bytes()]
        assert not leaked, f"{secret[:10]}... found in {leaked}"


@pytest.mark.slow
def test_the_run_log_starts_and_ends_with_its_times_and_the_headline(straight_run):
    import re

    result = straight_run[2]
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d"
    assert re.fullmatch(rf"run logged-\w+ started {stamp} \(.*config.yaml\)", lines[0]), lines[0]
    assert re.fullmatch(rf"run logged-\w+ finished {stamp}: took [\d.]+ s; results in .*", lines[-1]), lines[-1]
    # no JSON among the tables (issue 60): the summary is a file, and stdout's with --json
    assert not [line for line in lines if line.lstrip().startswith(("{", '"'))]
    assert any(re.fullmatch(r"6 answers, 0 failed; the run's summary: .*summary\.json", line) for line in lines)
    # the summary's sections end the log, its headline a table of the backed metrics per architecture
    assert lines[-2] == "Every term above: docs/glossary.md"
    at = next(i for i, line in enumerate(lines) if line.startswith("Headline: the metrics people's labels back"))
    assert "retrieval/ndcg@3" in lines[at + 1] and "offline/adherence" not in lines[at + 1]
    assert [line.split()[0] for line in lines[at + 3 : at + 5]] == ["bm25", "hybrid"]


def test_a_missing_provider_key_stops_the_run_before_its_first_call_and_the_dry_run_names_it(tmp_path):
    """Issue 60: `run configs/groq.yaml` with no GROQ_API_KEY exits 2 on one line before anything is
    read or called (no results folder); the dry run of a config that calls Groq says the key is missing."""
    env = _env(tmp_path, GROQ_API_KEY="", HELPERS_ENV_FILE=str(tmp_path / "no.env"))
    result = cli_in_process("run", "configs/groq.yaml", env=env)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [
        "error: llm 'groq': provider 'groq' needs an API key in the environment variable GROQ_API_KEY (or in the "
        "project's .env file) (configs/groq.yaml): nothing was called (--debug for the traceback)"
    ]
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
    hosted = dict(TINY, architectures=["bm25"], dataset=dict(TINY["dataset"], questions=["q2"]))
    hosted |= {"llms": [{"name": "groq", "provider": "groq", "model": "llama-3.1-8b-instant", "max_tokens": 24}]}
    hosted |= {"judges": {"offline": False, "trace_llm": None, "ragas": None, "ragas_evidence": False}}
    dry = cli_in_process("run", str(write_config(tmp_path, hosted)), "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert (
        "note: llm 'groq': provider 'groq' needs an API key in the environment variable GROQ_API_KEY (or in the "
        "project's .env file): the run would stop before its first call"
    ) in dry.stdout
    # a local model needs no key: nothing said
    local = cli_in_process("run", str(write_config(tmp_path, TINY, name="local.yaml")), "--dry-run", env=env)
    assert local.returncode == 0 and "API key" not in local.stdout
