"""The judges' registry: a judge defined and registered here, in the test module, runs end to end
(config, runner, store, resume, analysis, report, panels) without any other file changing."""

import json

import pytest
from pydantic import BaseModel, ConfigDict

from helpers.errors import UserError
from helpers.experiment.analysis import quality_scores
from helpers.experiment.config import ExperimentConfig
from helpers.experiment.run_summary import report
from helpers.experiment.runner import Experiment
from helpers.judges import JUDGES, Judge, Metric, active_judges, judge_class, register
from runs import TINY


class LengthOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_words: int = 60


class Length(Judge):
    """Answer length, and whether it stays under `max_words`: a judge with options, no LLM."""

    name, label = "length", "answer length"
    metrics = (Metric("short_enough"), Metric("words", low=0, high=None, higher_is_better=False, quality=False))
    Options = LengthOptions
    calls = 0

    def score_one(self, sample):
        Length.calls += 1
        words = len(sample.answer.split())
        return [("short_enough", float(words <= self.options.max_words), ""), ("words", words, "")], None


class OutOfRange(Judge):
    name, label = "out_of_range", "a judge that breaks its own range"
    metrics = (Metric("share"),)

    def score_one(self, sample):
        return [("share", 1.5, "")], None


@pytest.fixture
def registered():
    for judge in (Length, OutOfRange):
        register(judge)
    yield
    for judge in (Length, OutOfRange):
        JUDGES.pop(judge.name, None)


def _config(**judges):
    return ExperimentConfig(
        **dict(
            TINY,
            name="toy-judge",
            architectures=["bm25"],
            statistics={"n_resamples": 200},
            dataset=dict(TINY["dataset"], questions=["q2", "q4"]),
            judges={"offline": False, "ragas": None, "ragas_evidence": False, **judges},
        )
    )


@pytest.mark.timeout(600)
def test_a_judge_registered_here_runs_end_to_end(registered, tmp_path):
    config = _config(length={"max_words": 5}, out_of_range=True)
    assert [j.name for j in active_judges(config)] == ["retrieval", "length", "out_of_range"]
    assert config.judges.options("length") == {"max_words": 5} and config.judges.on("out_of_range")
    summary = Experiment(config, results_dir=tmp_path).run()
    scores = quality_scores(__import__("pandas").read_parquet(tmp_path / summary["run_id"] / "scores.parquet"))
    toy = scores[scores.metric == "length/short_enough"]
    records = __import__("pandas").read_parquet(tmp_path / summary["run_id"] / "records.parquet")
    expected = {qid: float(len(text.split()) <= 5) for qid, text in zip(records.qid, records.answer)}
    assert dict(zip(toy.qid, toy.value)) == expected and len(toy) == 2  # one per answer, max_words applied
    # the records feed helpers.evaluate as they are (issue 60): contexts a JSON list of texts
    import helpers

    again = helpers.evaluate(records, judges=["length"], options={"length": {"max_words": 5}}).scores
    assert again[again.metric == "short_enough"].set_index("id")["value"].tolist() == list(expected.values())
    assert json.loads(records.contexts[0]) and all(isinstance(c, str) for c in json.loads(records.contexts[0]))
    assert [c["rank"] for c in json.loads(records.context_details[0])] == [1, 2, 3]
    assert "length/words" not in set(scores.metric)  # a diagnostic, not a quality score
    broken = summary["failures"]["judge:ValueError"]  # out of its declared range: NaN + reason
    assert broken["count"] == 2 and "share = 1.5 outside [0.0, 1.0]" in broken["example"]
    calls = Length.calls
    Experiment(config, results_dir=tmp_path).run()  # resumed: nothing scored twice
    assert Length.calls == calls
    text = report(summary["run_id"], results_dir=tmp_path)
    assert "length/short_enough" in text
    from helpers.explore.runs import panel_config
    from helpers.judges.judge_base import JUDGES as registry

    panel = panel_config("smoke", judge="length")
    assert "length" in registry and [name for name in registry if panel.judges.on(name)] == ["length"]


def test_unknown_judges_and_bad_options_are_named(registered):
    with pytest.raises(ValueError, match=r"unknown key 'judges.lenght'.*valid names: \[.*'length'"):
        _config(lenght={})
    with pytest.raises(ValueError, match="max_words"):
        _config(length={"max_words": "many"})
    with pytest.raises(UserError, match="unknown judge 'nope'; valid names"):
        judge_class("nope")


def test_a_string_names_the_llm_of_every_judge_that_takes_one():
    """Issue 63: `judges: {NAME: local}` worked only for the judges a list in judges_config named; it
    is read from the judge's own Options (an `llm` field), so a new LLM judge edits no list."""
    from helpers.experiment.judges_config import JudgesConfig
    from helpers.judges import JUDGES

    takes = sorted(n for n, cls in JUDGES.items() if "llm" in cls.Options.model_fields)
    assert takes == ["ragas", "ragchecker_llm", "trace_llm"]
    config = JudgesConfig({name: "judge" for name in takes})
    assert all(config.options(name)["llm"] == "judge" for name in takes)
    with pytest.raises(ValueError, match="judges.offline: 'judge' is not a setting"):
        JudgesConfig({"offline": "judge"})


def test_importing_the_judges_imports_no_judge_until_the_registry_is_read():
    """Issue 63: `import helpers.judges` imported every judge module (and their models' libraries);
    now the registry's first read does (checked in a fresh interpreter), and lists the judges by
    their `order`."""
    import subprocess
    import sys

    from helpers.judges import JUDGES

    code = "import sys, helpers.judges\nprint(sorted(m for m in sys.modules if m.startswith('helpers.judges.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "['helpers.judges.judge_base']"
    assert list(JUDGES)[:12] == [
        "offline", "ragas", "ragas_evidence", "evidence", "correctness", "context_recall",
        "ragchecker", "ragchecker_llm", "citations", "refusal", "retrieval", "trace_llm",
    ]  # fmt: skip
