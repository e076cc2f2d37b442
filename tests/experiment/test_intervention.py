"""`diagnose --intervene` (helpers.experiment.intervention): each wrong answer answered again, by a
scripted LLM, with the passage that holds the reference first; the second opinion it gives, the
prompt it sent, and each bad input's one-line error."""

import json

import pandas as pd
import pytest

from helpers.__main__ import main
from helpers.experiment import intervention
from helpers.experiment.diagnosis import Band, verdicts
from helpers.experiment.frame_diagnosis import judged_wide
from helpers.judges.evaluate import answers_from_frame
from helpers.llm import LLM
from helpers.llm.scripted import ScriptedBackend

BANDS = {"correct": Band(0.5, 0.5, "test"), "holds": Band(0.6, 0.6, "test")}
QUESTION = "How many prenatal visits are recommended for a first pregnancy?"
REFERENCE = "Ten prenatal visits are recommended for a first pregnancy."
OTHER = "Blood pressure is measured at every visit."
WEIGHT = "Weight is recorded at enrolment."
WRONG = "Three prenatal visits are enough for any pregnancy."


def _frame():
    # ranked: the passage at rank 2 (the model misses it there); stuck: at rank 1 (the model ignores
    # it); lost: not in the contexts at all (a gold passage is given for it)
    return pd.DataFrame(
        {
            "id": ["ranked", "stuck", "lost"],
            "question": [QUESTION] * 3,
            "answer": [WRONG] * 3,
            "contexts": [[OTHER, REFERENCE], [REFERENCE, OTHER], [OTHER, WEIGHT]],
            "reference": [REFERENCE] * 3,
        }
    )


def test_a_wrong_answer_right_with_the_passage_first_is_retrieval_and_one_still_wrong_is_generation():
    wide = judged_wide(answers_from_frame(_frame()), "en")
    answers = verdicts(wide, BANDS)
    assert answers["verdict"].tolist() == ["generation", "generation", "retrieval"]
    rows = intervention.wrong(answers, wide, BANDS)
    assert intervention.plan(rows) == "--intervene would answer 3 wrong answer(s) again, one LLM call each (answers 3)"
    prompts = []
    stuck_reply = {"n": 0}

    def reply(call):
        prompts.append(call.prompt)
        first = call.prompt.split("[1] ", 1)[1].split("\n", 1)[0]
        # the second prompt is the 'stuck' answer's (rows in order): its model stays wrong
        stuck_reply["n"] += 1
        return WRONG if stuck_reply["n"] == 2 or first != REFERENCE else REFERENCE

    llm = LLM({"provider": "groq", "cache": "off"}, backend=ScriptedBackend(reply))
    frame = intervention.intervene(rows, llm=llm, bands=BANDS, language="en", gold={"lost": [REFERENCE]})
    result = frame.set_index("id")
    assert result["second_opinion"].to_dict() == {"ranked": "retrieval", "stuck": "generation", "lost": "retrieval"}
    assert result["passage_from"].to_dict() == {
        "ranked": "context [2] (1.00)",
        "stuck": "context [1] (1.00)",
        "lost": "gold passage",
    }
    assert result["agree"].to_dict() == {"ranked": False, "stuck": True, "lost": True}
    # the passage went first, the other contexts after it in their order, k (2) in all
    assert f"[1] {REFERENCE}\n\n[2] {OTHER}" in prompts[0] and f"[1] {REFERENCE}\n\n[2] {OTHER}" in prompts[2]
    assert result.loc["ranked", "new_answer"] == REFERENCE and result.loc["ranked", "new_correctness"] > 0.5
    text = intervention.summary(frame)
    assert "the opinions agree on 2 of 3 answers both decide" in text
    assert frame.attrs["usage"]["calls"] == 3 and "cost: 3 LLM calls (0 from the cache)" in text
    assert "ranked (answers): first generation, second retrieval: right with the passage first (context [2]" in text


def test_no_passage_to_put_first_and_a_failed_call_are_recorded():
    wide = judged_wide(answers_from_frame(_frame()), "en")
    rows = intervention.wrong(verdicts(wide, BANDS), wide, BANDS)
    llm = LLM({"provider": "groq", "cache": "off", "max_retries": 0}, backend=ScriptedBackend(RuntimeError("down")))
    result = intervention.intervene(rows, llm=llm, bands=BANDS, language="en", log=lambda *_: None).set_index("id")
    assert result.loc["lost", "second_opinion"] == "cannot tell"
    assert result.loc["lost", "reason"] == (
        "not answered again: no passage that holds the reference (no gold passage, no corpus to search)"
    )
    assert result.loc["ranked", "second_opinion"] == "failed"
    assert result.loc["ranked", "reason"].startswith("the LLM call failed: ")


def test_the_command_on_an_answers_file(tmp_path, capsys):
    path = tmp_path / "answers.csv"
    frame = _frame()
    frame["contexts"] = frame["contexts"].map(json.dumps)
    frame.to_csv(path, index=False)
    assert main(["diagnose", str(path), "--intervene"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: --intervene answers each wrong answer again and needs an LLM: give --llm" in err
    assert main(["diagnose", str(path), "--intervene", "--llm", '{"provider": "local"}', "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "--intervene would answer 3 wrong answer(s) again, one LLM call each (answers 3)" in out
    scores = tmp_path / "scores.csv"
    pd.DataFrame([{"id": "q1", "judge": "correctness", "metric": "correctness", "value": 0.1, "reason": ""}]).to_csv(
        scores, index=False
    )
    assert main(["diagnose", str(scores), "--intervene", "--llm", '{"provider": "local"}']) == 2
    assert "--intervene answers the questions again and needs their texts: give the answers file" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_an_answers_file_is_diagnosed_as_a_dataframe_is(tmp_path, capsys, flag):
    path = tmp_path / "answers.csv"
    frame = _frame()
    frame["contexts"] = frame["contexts"].map(json.dumps)
    frame.to_csv(path, index=False)
    assert main(["diagnose", str(path), *flag]) == 0
    out = capsys.readouterr().out
    if flag:
        assert [a["id"] for a in json.loads(out)["answers"]] == ["ranked", "stuck", "lost"]
    else:
        assert "Why answers fail" in out


@pytest.mark.timeout(600)
def test_intervene_on_a_run_answers_again_with_the_runs_own_llm_and_gold_passages(raw_ready, capsys):
    """The smoke run (SmolLM2 135M, two obstetrics questions) for bm25 alone, with the two
    judges diagnose reads: --dry-run counts the wrong answers, --intervene answers each again with
    the question's hand-marked gold passage first and records both opinions beside the run."""
    import yaml

    from helpers import paths
    from helpers.experiment.config import ExperimentConfig
    from helpers.experiment.runner import Experiment

    raw = yaml.safe_load((paths.CONFIGS_DIR / "smoke.yaml").read_text())
    judges = {"offline": False, "ragas": False, "trace_llm": False, "correctness": {}, "context_recall": {}}
    raw |= {"run_id": "smoke-intervene", "judges": judges}
    raw |= {"figures": False, "architectures": ["bm25"]}
    Experiment(ExperimentConfig.model_validate(raw)).run()
    capsys.readouterr()
    assert main(["diagnose", "smoke-intervene", "--intervene", "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    plan = out["intervention_plan"]
    stage = ("retrieval", "generation", "refused", "refused, not found")
    wrong = [a for a in out["answers"] if a["verdict"] in stage or a["evidence"].startswith("wrong (")]
    assert plan.startswith(f"--intervene would answer {len(wrong)} wrong answer(s) again, one LLM call each")
    assert main(["diagnose", "smoke-intervene", "--intervene", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)["intervention"]
    assert sorted((r["id"], r["architecture"]) for r in second) == sorted((a["id"], a["architecture"]) for a in wrong)
    assert {r["passage_from"] for r in second} == {"gold passage"}  # q2 and q4 have hand-marked passages
    assert {r["second_opinion"] for r in second} <= {"retrieval", "generation", "cannot tell"}
    saved = pd.read_csv(paths.RESULTS_DIR / "smoke-intervene" / "intervention.csv")
    assert saved["new_answer"].notna().all() and len(saved) == len(second)


def test_an_answers_file_without_references_or_contexts_is_named(tmp_path, capsys):
    frame = _frame().drop(columns="reference")
    frame["contexts"] = frame["contexts"].map(json.dumps)
    frame.to_csv(tmp_path / "no-reference.csv", index=False)
    assert main(["diagnose", str(tmp_path / "no-reference.csv")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {tmp_path / 'no-reference.csv'}: no answer has a correctness score (no reference): nothing to "
        "diagnose (--debug for the traceback)"
    )
    frame.drop(columns="contexts").assign(reference=REFERENCE).to_csv(tmp_path / "no-contexts.csv", index=False)
    assert main(["diagnose", str(tmp_path / "no-contexts.csv")]) == 2
    assert "no-contexts.csv: missing column(s) ['contexts']" in capsys.readouterr().err


@pytest.mark.timeout(600)
def test_intervene_on_an_answers_file_with_a_local_llm(tmp_path, capsys):
    """The CLI on an answers file with `--llm` (the local SmolLM2, a real model): each wrong answer
    answered once more with its passage first, both opinions saved beside the file."""
    path = tmp_path / "answers.csv"
    frame = _frame()
    frame["contexts"] = frame["contexts"].map(json.dumps)
    frame.to_csv(path, index=False)
    llm = '{"provider": "local", "max_tokens": 24}'
    assert main(["diagnose", str(path), "--intervene", "--llm", llm]) == 0
    out = capsys.readouterr().out
    assert "Second opinion by intervention (3 wrong answers answered again with the passage first):" in out
    saved = pd.read_csv(tmp_path / "answers.intervention.csv").set_index("id")
    assert saved["passage_from"].to_dict() == {
        "ranked": "context [2] (1.00)",
        "stuck": "context [1] (1.00)",
        "lost": "no passage that holds the reference (no gold passage, no corpus to search)",
    }
    assert saved.loc[["ranked", "stuck"], "new_answer"].notna().all()
    assert saved.loc["lost", "second_opinion"] == "cannot tell"
