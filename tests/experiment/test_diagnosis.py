"""`python -m helpers diagnose` (helpers.experiment.diagnosis): each verdict on known scores, the
cuts from labels worked out by hand, Clopper-Pearson intervals, the JSON and the agreement with a
person's labels, and each bad input's error."""

import json

import pandas as pd
import pytest

from helpers.__main__ import main
from helpers.errors import UserError
from helpers.experiment.diagnosis import SHIPPED, Band, verdict, verdict_table, verdicts
from helpers.experiment.diagnosis_cuts import band_from_labels

BANDS = {"correct": Band(0.3, 0.7, "test"), "holds": Band(0.4, 0.6, "test")}
FOUND = "statement 1: in context [2] (0.91); statement 2: not found (0.12)"


def test_cuts_from_labels_worked_by_hand():
    # high: from 0.7 up every answer is labelled yes (from 0.6 up, 3 of 4: 0.75 < 0.9);
    # low: up to 0.2 every answer is labelled no (up to 0.3, 2 of 3)
    band = band_from_labels([0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9], [0, 0, 1, 0, 1, 1, 1], precision=0.9)
    assert (band.low, band.high) == (0.2, 0.7)
    assert band.read(0.7) is True and band.read(0.2) is False and band.read(0.5) is None and band.read(None) is None
    # at precision 0.5 high would be 0.1 (all answers) and low 0.9 (all answers): crossing cuts meet halfway
    crossing = band_from_labels([0.1, 0.9], [0, 1], precision=0.5)
    assert (crossing.low, crossing.high) == (0.5, 0.5)
    with pytest.raises(UserError, match="need labelled answers of both kinds"):
        band_from_labels([0.1, 0.2], [1, 1])


@pytest.mark.parametrize(
    "scores, refused, expected",
    [
        ((0.9, 0.1), False, ("correct", "correctness 0.90")),
        (
            (0.1, 0.2),
            False,
            ("retrieval", "wrong (correctness 0.10); not in the contexts: statement 2 (context recall 0.20)"),
        ),
        (
            (0.1, 0.8),
            False,
            ("generation", "wrong (correctness 0.10) although statement 1 in context [2] (context recall 0.80)"),
        ),
        ((0.5, 0.8), False, ("cannot tell", "correctness 0.50: between the cuts")),
        ((0.1, 0.5), False, ("cannot tell", "wrong (correctness 0.10); context recall 0.50: between the cuts")),
        ((0.1, 0.8), True, ("refused", "refused although statement 1 in context [2] (context recall 0.80)")),
        ((0.1, 0.2), True, ("refused, not found", "refused, and the contexts lack statement 2 (context recall 0.20)")),
    ],
)
def test_each_verdict_and_its_evidence(scores, refused, expected):
    assert verdict(*scores, FOUND, refused, BANDS) == expected


def test_the_table_counts_with_exact_intervals_and_the_sentence():
    wide = pd.DataFrame(
        {
            "id": ["q1", "q2", "q3", "q4", "q5"],
            "architecture": ["a"] * 4 + ["b"],
            "correctness": [0.9, 0.1, 0.1, 0.1, float("nan")],  # q5: no reference, left out
            "context_recall": [0.9, 0.8, 0.8, 0.1, 0.9],
            "recall_reason": [FOUND] * 5,
            "refused": [False] * 5,
        }
    )
    answers = verdicts(wide, BANDS)
    assert answers["verdict"].tolist() == ["correct", "generation", "generation", "retrieval"]
    table = verdict_table(answers).set_index("verdict")
    assert table.loc["generation", "count"] == 2 and table.loc["generation", "n"] == 4
    # Clopper-Pearson 95 % for 2 of 4: the beta quantiles B(0.025; 2, 3) and B(0.975; 3, 2)
    assert table.loc["generation", ["low", "high"]].tolist() == pytest.approx([0.0676, 0.9324], abs=1e-4)
    assert table.loc["cannot tell", ["count", "low"]].tolist() == [0, 0.0]
    from helpers.experiment.diagnosis import advice

    assert advice(verdict_table(answers)) == [
        "a: 2 of 3 wrong answers had the fact in their contexts: change the prompt or the generator, not the retriever"
    ]


def _scores_csv(tmp_path, rows):
    pd.DataFrame(rows).to_csv(tmp_path / "scores.csv", index=False)
    return tmp_path / "scores.csv"


def test_a_judge_csv_is_diagnosed_with_json_and_labels(tmp_path, capsys):
    rows = []
    for qid, arch, c, r in [
        ("q1", "x", 0.95, 0.9),
        ("q2", "x", 0.02, 0.99),
        ("q3", "x", 0.01, 0.05),
        ("q1", "y", 0.9, 0.9),
    ]:
        rows += [
            {
                "id": qid,
                "architecture": arch,
                "judge": "correctness",
                "metric": "correctness",
                "value": c,
                "reason": "",
            },
            {"id": qid, "architecture": arch, "judge": "context_recall", "metric": "context_recall", "value": r}
            | {"reason": FOUND},
        ]
    path = _scores_csv(tmp_path, rows)
    assert main(["diagnose", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(a["id"], a["architecture"], a["verdict"]) for a in out["answers"]] == [
        ("q1", "x", "correct"),
        ("q2", "x", "generation"),
        ("q3", "x", "retrieval"),
        ("q1", "y", "correct"),
    ]
    x = {r["verdict"]: r for r in out["architectures"] if r["architecture"] == "x"}
    assert (x["generation"]["count"], x["generation"]["n"], x["generation"]["share"]) == (1, 3, pytest.approx(1 / 3))
    assert out["cuts"]["correct"]["high"] == SHIPPED["correct"].high
    labels = pd.DataFrame(
        {"id": ["q1", "q2", "q3"], "architecture": ["x"] * 3, "correct": ["yes", "no", "no"]}
        | {"reference_in_contexts": ["yes", "yes", "yes"]}
    )
    labels.to_csv(tmp_path / "labels.csv", index=False)
    assert main(["diagnose", str(path), "--labels", str(tmp_path / "labels.csv"), "--json"]) == 0
    agreement = json.loads(capsys.readouterr().out)["agreement"]
    assert agreement["n"] == 3 and agreement["confusion"]["generation"] == {
        "correct": 0,
        "generation": 1,
        "retrieval": 1,
    }
    # ours: correct, generation, retrieval; the person's: correct, generation, generation -> po 2/3, pe 1/3
    assert agreement["kappa"] == pytest.approx(0.5)


def test_bad_inputs_are_named(tmp_path, capsys):
    no_reference = _scores_csv(tmp_path, [{"id": "q1", "judge": "offline", "metric": "adherence", "value": 1}])
    assert main(["diagnose", str(no_reference)]) == 2
    assert "no correctness scores: diagnosis needs references and the correctness judge" in capsys.readouterr().err
    assert main(["diagnose", "no-such-run"]) == 2
    assert "no-such-run: neither a run with scores under results/ nor a scores CSV" in capsys.readouterr().err
    rows = [{"id": "q1", "judge": "correctness", "metric": "correctness", "value": 0.9, "reason": ""}]
    path = _scores_csv(tmp_path, rows)
    pd.DataFrame({"id": ["z9"], "correct": ["yes"], "reference_in_contexts": ["no"]}).to_csv(tmp_path / "l.csv")
    assert main(["diagnose", str(path), "--labels", str(tmp_path / "l.csv")]) == 2
    assert "l.csv: no labelled answer matches an answer here (by id" in capsys.readouterr().err
    pd.DataFrame({"id": ["q1"], "correct": ["yes"]}).to_csv(tmp_path / "m.csv", index=False)
    assert main(["diagnose", str(path), "--labels", str(tmp_path / "m.csv")]) == 2
    assert "m.csv: missing column(s) ['reference_in_contexts']" in capsys.readouterr().err


def test_cuts_fitted_on_a_persons_labels_change_the_verdicts(tmp_path, capsys):
    """Ten answers labelled `correct` (five no up to 0.25, five yes from 0.3): the correctness cut
    is fitted at 0.25-0.30, so 0.3, 0.4 and 0.5 are correct (the shipped cut, 0.52, calls them
    wrong); no `reference_in_contexts` labels, so context recall keeps the shipped band."""
    scores = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7]
    rows = [
        {"id": f"q{i}", "judge": "correctness", "metric": "correctness", "value": c, "reason": ""}
        for i, c in enumerate(scores)
    ] + [
        {"id": f"q{i}", "judge": "context_recall", "metric": "context_recall", "value": 0.99, "reason": FOUND}
        for i in range(len(scores))
    ]
    path = _scores_csv(tmp_path, rows)
    labels = pd.DataFrame({"id": [f"q{i}" for i in range(10)], "correct": ["no"] * 5 + ["yes"] * 5})
    labels.to_csv(tmp_path / "cuts.csv", index=False)
    assert main(["diagnose", str(path), "--json"]) == 0
    shipped = json.loads(capsys.readouterr().out)
    assert [a["verdict"] for a in shipped["answers"]].count("correct") == 2  # 0.6 and 0.7
    assert main(["diagnose", str(path), "--cuts-from", str(tmp_path / "cuts.csv"), "--json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert [a["verdict"] for a in fitted["answers"]] == ["generation"] * 5 + ["correct"] * 5
    assert (fitted["cuts"]["correct"]["low"], fitted["cuts"]["correct"]["high"]) == (0.25, 0.3)
    assert (
        fitted["cuts"]["correct"]["source"] == f"your labels: 10 answers labelled 'correct' in {tmp_path / 'cuts.csv'}"
    )
    assert fitted["cuts"]["holds"] == shipped["cuts"]["holds"]
    assert main(["diagnose", str(path), "--cuts-from", str(tmp_path / "none.csv")]) == 2
    assert f"--cuts-from {tmp_path / 'none.csv'}: labels file not found" in capsys.readouterr().err


def test_several_annotators_are_pooled_yes_only_when_all_say_yes():
    from helpers.experiment.diagnosis_cuts import match_labels

    answers = pd.DataFrame({"id": ["q1", "q2", "q3"], "architecture": ["a"] * 3})
    labels = pd.DataFrame(
        {
            "id": ["q1", "q1", "q2", "q2", "q3"],
            "correct": ["yes", "yes", "yes", "no", ""],
            "reference_in_contexts": ["yes", "partly", "no", "no", ""],
        }
    )
    pooled = match_labels(answers, labels, "test").reset_index()
    assert pooled[["id", "correct", "reference_in_contexts"]].values.tolist() == [
        ["q1", "yes", "partly"],
        ["q2", "partly", "no"],
        ["q3", "", ""],
    ]


def test_a_generation_verdict_quotes_what_the_answer_said_instead():
    wide = pd.DataFrame(
        {
            "id": ["q1", "q2"],
            "architecture": ["a", "a"],
            "correctness": [0.1, 0.1],
            "context_recall": [0.8, 0.2],
            "recall_reason": [FOUND, FOUND],
            "refused": [False, False],
            "answer": ["At week   30.\nAlways.", "At week 30."],
        }
    )
    table = verdicts(wide, BANDS)
    assert table["evidence"].tolist() == [
        "wrong (correctness 0.10) although statement 1 in context [2] (context recall 0.80); the answer says: "
        "At week 30. Always.",
        "wrong (correctness 0.10); not in the contexts: statement 2 (context recall 0.20)",  # retrieval: no quote
    ]


def test_helpers_diagnose_a_dataframe_in_ragas_names():
    """`helpers.diagnose(df)`: answers judged here (correctness, context_recall, refusal), one
    verdict each; the same verdicts from `helpers.evaluate`'s result; a bad frame named."""
    import helpers

    ref = "Ten prenatal visits are recommended for a first pregnancy."
    other = "Blood pressure is measured at every visit."
    wrong = "Three prenatal visits are enough for any pregnancy."
    frame = pd.DataFrame(
        {
            "id": ["right", "gen", "ret"],
            "user_input": ["How many prenatal visits are recommended for a first pregnancy?"] * 3,
            "response": [ref, wrong, wrong],
            "retrieved_contexts": [[ref, other], [ref, other], [other, "Weight is recorded at enrolment."]],
            "reference": [ref] * 3,
        }
    )
    result = helpers.diagnose(frame)
    answers = result.answers.set_index("id")
    assert answers["verdict"].to_dict() == {"right": "correct", "gen": "generation", "ret": "retrieval"}
    assert answers.loc["gen", "evidence"].endswith(
        f"statement 1 in context [1] (context recall 1.00); the answer says: {wrong}"
    )
    assert "not in the contexts: statement 1" in answers.loc["ret", "evidence"]
    row = result.table.set_index("verdict").loc["generation"]
    assert (row["n"], row["count"]) == (3, 1) and row["low"] == pytest.approx(0.0084, abs=1e-4)  # Clopper-Pearson 1/3
    assert "1 of 2 wrong answers had the fact in their contexts" in str(result)
    evaluated = helpers.evaluate(frame, judges=["correctness", "context_recall", "refusal"])
    again = helpers.diagnose(evaluated).answers.set_index("id")["verdict"]
    assert again.to_dict() == answers["verdict"].to_dict()
    with pytest.raises(UserError, match=r"scores: missing column\(s\) \['id'\]; diagnose reads the scores"):
        helpers.diagnose(evaluated.scores.drop(columns="id"))


def test_answers_unlike_the_calibration_corpora_read_cannot_tell_in_the_zone():
    """A band's zone is where the calibration corpora put its cut differently. With 1 of 5 wrong
    answers' context recall in it (20 %, not over MAX_IN_ZONE) the cut decides; with 2 of 5 the
    run is unlike the calibration data: the zone reads cannot tell and no advice is given."""
    from helpers.experiment.diagnosis import format_table, unlike

    bands = {"correct": Band(0.5, 0.5, "test"), "holds": Band(0.6, 0.6, "test", (0.5, 0.7))}

    def wide(recalls):
        return pd.DataFrame(
            {
                "id": [f"q{i}" for i in range(5)],
                "architecture": ["a"] * 5,
                "correctness": [0.1] * 5,
                "context_recall": recalls,
                "recall_reason": [FOUND] * 5,
                "refused": [False] * 5,
            }
        )

    like = wide([0.9, 0.9, 0.1, 0.1, 0.65])
    assert unlike(like, bands)["holds"] == bands["holds"]
    assert verdicts(like, bands)["verdict"].tolist() == ["generation"] * 2 + ["retrieval"] * 2 + ["generation"]
    other = wide([0.9, 0.9, 0.1, 0.55, 0.65])
    assert (unlike(other, bands)["holds"].low, unlike(other, bands)["holds"].high) == (0.5, 0.7)
    answers = verdicts(other, bands)
    assert answers["verdict"].tolist() == ["generation", "generation", "retrieval", "cannot tell", "cannot tell"]
    text = format_table(verdict_table(answers), bands)
    assert "2 of 5 answers (40%) score between a judge's cuts" in text and "change the" not in text
