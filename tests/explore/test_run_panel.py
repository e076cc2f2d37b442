"""Issue 26, the run panel's new choices: RAGBench subset and split from the files present, any
number of samples honoured (the corpus drawn the same way for every number), a judge LLM other
than the answering one, and an API key field whose key lives in the kernel's memory only."""

import json
import subprocess
import sys
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest

from helpers.data import list_splits, load_dataset
from helpers.explore.runs import panel_config, ragbench_choices
from helpers.explore.workbench import ExploreError
from runs import TINY, run_env, write_config


def test_ragbench_subset_and_split_come_from_the_files_present():
    present = ragbench_choices()
    assert present == list_splits() and "covidqa" in present and "test" in present["covidqa"]
    config = panel_config("smoke", dataset="ragbench", subset="covidqa", split="test", n_questions=80)
    assert config.dataset.options == {"subset": "covidqa", "split": "test", "n": 80}
    assert config.dataset.n_questions is None  # the loader samples the 80 examples itself
    with pytest.raises(ExploreError, match="no RAGBench subset 'nosuch'.*present"):
        panel_config("smoke", dataset="ragbench", subset="nosuch")
    with pytest.raises(ExploreError, match="has no split 'dev'.*present"):
        panel_config("smoke", dataset="ragbench", subset="covidqa", split="dev")
    with pytest.raises(ExploreError, match="RAGBench options"):
        panel_config("smoke", subset="covidqa")  # the smoke config's dataset is the guideline


def test_eighty_samples_are_eighty_and_the_corpus_is_drawn_the_same_way_for_any_number():
    """Today's cap was the loader's default n = 50; the panel's N is now the loader's n, and the
    documents of the sampled examples are the corpus whatever N is (a smaller sample is a prefix
    of a larger one with the same seed, so its corpus is a subset)."""
    sets = {}
    for n in (10, 80):
        options = panel_config("smoke", dataset="ragbench", subset="covidqa", n_questions=n).dataset.options
        sets[n] = load_dataset("ragbench", **options)
    assert len(sets[80].queries) == 80 and len(sets[10].queries) == 10
    assert set(sets[10].queries) <= set(sets[80].queries) and set(sets[10].corpus) <= set(sets[80].corpus)
    for data in sets.values():  # every document is some sampled question's own: no other source of distractors
        assert set(data.corpus) == {doc_id for qrel in data.qrels.values() for doc_id in qrel}


def test_a_config_asking_more_questions_than_the_dataset_gives_is_refused(tmp_path):
    from helpers.experiment.config import ConfigError, ExperimentConfig
    from helpers.experiment.runner import Experiment

    config = ExperimentConfig(**dict(TINY, dataset=dict(TINY["dataset"], n_questions=5)))
    with pytest.raises(ConfigError, match="n_questions is 5 but obstetrics gives 3 questions"):
        Experiment(config, results_dir=tmp_path).run()


def test_the_judge_llm_is_chosen_apart_from_the_answering_one():
    config = panel_config("smoke", llm="local", judge="trace_llm", judge_llm="judge")
    assert config.generation_llm == "local" and config.judges.options("trace_llm") == {"llm": "judge"}
    assert {llm.name for llm in config.llms} >= {"local", "judge"}
    same = panel_config("smoke", llm="local", judge="trace_llm")
    assert same.judges.options("trace_llm") == {"llm": "local"}  # by default the answering LLM judges
    with pytest.raises(ExploreError, match="no LLM named 'nosuch'"):
        panel_config("smoke", judge="trace_llm", judge_llm="nosuch")


PANEL_SCRIPT = """
import json, os, sys
from pathlib import Path
from helpers.experiment.config import load_config
from helpers.explore.run_panels import RunPanel
from helpers.explore.runs import run_experiment
from helpers.llm.keys import read_api_key

panel = RunPanel()
panel.key_variable.options = ["WORKBENCH_PANEL_API_KEY"]
panel.key_variable.value = "WORKBENCH_PANEL_API_KEY"
panel.key.value = sys.argv[3]
panel.use_key()
assert panel.key.value == "" and "WORKBENCH_PANEL_API_KEY" not in os.environ
assert read_api_key("WORKBENCH_PANEL_API_KEY") == sys.argv[3]
result = run_experiment(load_config(sys.argv[1]), log=print, results_dir=Path(sys.argv[2]))
print(json.dumps({"ok": result["ok"], "answers": result["answers"], "status": panel.key_status.value,
                  "state": panel.key.get_state()}))
"""


@pytest.mark.slow
def test_a_key_typed_into_the_panel_is_used_and_written_nowhere(tmp_path):
    """The stand-in for a hosted API demands the key (a bearer token); a run from the panel's
    kernel gets answers with it, and no file the session writes (results, caches, figures), nor
    its output, nor the widget's state, holds it."""
    from helpers.llm.serving import local_server

    secret = "sk-panel-" + "7f3a9c" * 6
    with local_server(token=secret) as base_url:
        with pytest.raises(HTTPError) as refused:  # without the key the stand-in answers 401
            urlopen(f"{base_url}/models", timeout=5)
        assert refused.value.code == 401
        llm = {
            "name": "hosted",
            "provider": "openai-compatible",
            "model": "smollm2",
            "base_url": base_url,
            "api_key_env": "WORKBENCH_PANEL_API_KEY",
            "max_tokens": 16,
            "max_retries": 0,
        }
        config = dict(TINY, name="panel-key", architectures=["bm25"], llms=[llm], figures=True)
        config["dataset"] = dict(TINY["dataset"], questions=["q2", "q4"])
        path = write_config(tmp_path, config)
        env = {k: v for k, v in run_env(tmp_path).items() if k != "WORKBENCH_PANEL_API_KEY"}
        done = subprocess.run(
            [sys.executable, "-c", PANEL_SCRIPT, str(path), str(tmp_path / "results"), secret],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["ok"] and out["answers"] == 2 and "set for this session" in out["status"]
    assert secret not in json.dumps(out["state"]) and secret not in done.stdout + done.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "records.jsonl" for p in written) and any(p.suffix == ".png" for p in written)
    holding = [str(p) for p in written if secret.encode() in p.read_bytes()]
    assert holding == []
