"""The `judges` section (helpers.experiment.judges_config): one form for every judge, each judge's
options in its own `Options` model, the flat keys of earlier configs read into it, and run ids
digesting the earlier form so that no config's run id changed."""

from __future__ import annotations

import pytest

from helpers.experiment.config import ExperimentConfig, load_config
from helpers.experiment.judges_config import JudgesConfig
from helpers.judges.ragas import RagasOptions
from helpers.ragas_eval import RAGAS_METRICS

RAGAS_DEFAULTS = {"llm": "local", "metrics": list(RAGAS_METRICS), "questions": None, "architectures": None}


def test_a_flat_config_of_before_reads_as_each_judges_options():
    flat = {
        "offline": False,
        "trace_llm": "judge",
        "ragas": "judge",
        "ragas_metrics": ["answer_correctness"],
        "ragas_timeout_s": 900,
        "ragas_evidence": None,
        "other": {"correctness": {}},
    }
    judges = JudgesConfig(flat)
    assert judges.root == {
        "offline": False,
        "trace_llm": {"llm": "judge"},
        "ragas": {**RAGAS_DEFAULTS, "llm": "judge", "metrics": ["answer_correctness"], "timeout_s": 900.0},
        "ragas_evidence": {"enabled": None, "statements": "llm"},
        "correctness": {},
    }
    assert JudgesConfig(judges.root).root == judges.root  # the new form reads as itself
    assert judges.id_form() == {
        "offline": False,
        "trace_llm": "judge",
        "ragas": "judge",
        "ragas_metrics": ["answer_correctness"],
        "ragas_questions": None,
        "ragas_architectures": None,
        "ragas_timeout_s": 900.0,
        "ragas_evidence": None,
        "ragas_evidence_statements": "llm",
        "other": {"correctness": {}},
    }


def test_defaults_on_off_and_shorthands():
    assert JudgesConfig({}).root == {
        "offline": {},
        "ragas": {**RAGAS_DEFAULTS, "timeout_s": 180.0},
        "ragas_evidence": {"enabled": None, "statements": "llm"},
    }
    judges = JudgesConfig({"ragas": None, "ragas_evidence": False, "offline": True, "correctness": True})
    assert [name for name in judges.root if judges.on(name)] == ["offline", "correctness"]
    assert judges.options("ragas") == {} and judges.id_form()["ragas_evidence"] is False
    assert JudgesConfig({"ragas": {"llm": "x", "timeout_s": 5}}).options("ragas")["timeout_s"] == 5.0
    assert RagasOptions(**JudgesConfig({}).options("ragas")) == RagasOptions()


def test_bad_judges_sections_are_named():
    with pytest.raises(ValueError, match=r"unknown key 'judges.ragass' \(check its spelling\): not a registered judge"):
        JudgesConfig({"ragass": {}})
    with pytest.raises(ValueError, match=r"judges.offline: 3 is not a setting; give the judge's options as a mapping"):
        JudgesConfig({"offline": 3})
    with pytest.raises(ValueError, match=r"ragas.timeout_s\n  Input should be greater than 0|greater than 0"):
        JudgesConfig({"ragas": {"llm": "x", "timeout_s": 0}})
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        JudgesConfig({"trace_llm": {"llm": "x", "model": "y"}})


@pytest.mark.parametrize(
    "path, run_id", [("configs/default.yaml", "obstetrics-default-8eb4bca9"), ("configs/smoke.yaml", "smoke-2cff3a61")]
)
def test_run_ids_are_the_ones_before_and_survive_the_saved_form(path, run_id):
    config = load_config(path)
    assert config.resolved_run_id() == run_id
    saved = ExperimentConfig(**config.model_dump(mode="json"))  # what a run folder's config.yaml reads back as
    assert saved.resolved_run_id() == run_id and saved.judges.root == config.judges.root
