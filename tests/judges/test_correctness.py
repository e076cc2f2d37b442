"""The reference-based judges (correctness, context recall by attribution) and `helpers judge FILE`:
numbers read right, scores on known answers, agreement with the shipped hand labels, bad files."""

from __future__ import annotations

import glob
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers.__main__ import main
from helpers.errors import UserError
from helpers.inference.classical import auroc, cohen_kappa
from helpers.judges.context_recall import statements
from helpers.judges.correctness import THRESHOLD
from helpers.judges.evaluate import score_answers, usable_judges
from helpers.judges.external import read_answers
from helpers.judges.models.reference_match import number_match, numbers

LABELS = sorted(glob.glob(str(Path(__file__).resolve().parents[2] / "benchmarks" / "labels" / "obstetrics-*.csv")))
Q3_REFERENCE = "después de la semana 16 – 18"


def test_numbers_are_read_as_values():
    assert numbers(Q3_REFERENCE) == {16.0, 18.0}
    assert numbers("IMC entre 20 y 24,9 kg/m2; 1.000 g; 74%") == {20.0, 24.9, 1000.0, 74.0}
    assert numbers("un programa de diez citas [2]") == {10.0}  # the citation is not a number
    assert numbers("una valoración") == set()  # an article, not a count
    assert number_match("la semana 26", Q3_REFERENCE) == 0.0
    assert number_match("entre la semana 16 y la 18", Q3_REFERENCE) == 1.0
    assert math.isnan(number_match("la semana 26", "la escala de Herrera & Hurtado"))
    # written out or in digits, the same value (issue 60)
    assert number_match("fourteen characters or more", "at least 14 characters") == 1.0
    assert numbers("dieciséis semanas y noventa días") == {16.0, 90.0}


def test_reference_statements_cut_lists_apart():
    parts = statements("Se recomienda esto: • IMC < 20 kg/m2 = ganancia entre 12 a 18 Kg • IMC > 30 kg/m2 = 6 a 7 Kg")
    assert parts == ["Se recomienda esto:", "IMC < 20 kg/m2 = ganancia entre 12 a 18 Kg", "IMC > 30 kg/m2 = 6 a 7 Kg"]


def _answers(rows):
    return [
        {"qid": qid, "question": question, "answer": answer, "contexts": contexts, "reference": reference}
        for qid, question, answer, contexts, reference in rows
    ]


GUIDELINE_Q2 = "Se recomienda realizar el primer control prenatal en el primer trimestre, idealmente antes de la semana 10 de gestación."
OTHER = "Se recomienda que la gestante sea valorada por el ginecobstetra en la semana 28 a 30 y 34 a 36."


def test_correctness_and_context_recall_on_known_answers():
    question = "¿Cuál es la semana ideal para iniciar los controles prenatales?"
    answers = _answers(
        [
            ("right", question, GUIDELINE_Q2 + " [1]", [GUIDELINE_Q2, OTHER], GUIDELINE_Q2),
            ("wrong passage", question, OTHER + " [2]", [OTHER, "Texto sin relación con la pregunta."], GUIDELINE_Q2),
            (
                "wrong week",
                "¿Cuándo se considera inicio tardío de controles prenatales?",
                "Se considera inicio tardío después de la semana 26 de gestación.",
                [OTHER],
                Q3_REFERENCE,
            ),
            ("no reference", question, GUIDELINE_Q2, [GUIDELINE_Q2], None),
        ]
    )
    scores = score_answers(answers, ["correctness", "context_recall"], language="es")
    value = scores.set_index(["id", "judge", "metric"])["value"]
    assert value["right", "correctness", "correctness"] >= THRESHOLD
    assert value["wrong passage", "correctness", "correctness"] < THRESHOLD
    assert value["wrong week", "correctness", "correctness"] < THRESHOLD
    assert value["wrong week", "correctness", "number_match"] == 0.0
    assert value["right", "context_recall", "context_recall"] > 0.9
    assert value["wrong passage", "context_recall", "context_recall"] < 0.5
    reason = scores.set_index(["id", "judge", "metric"])["reason"]
    assert "in context [1]" in reason["right", "context_recall", "context_recall"]
    no_reference = scores[scores["id"] == "no reference"]
    assert (
        no_reference["value"].isna().all() and (no_reference["reason"] == "the question has no reference answer").all()
    )


@pytest.mark.skipif(not LABELS, reason="no hand labels")
def test_correctness_agrees_with_the_hand_labels(raw_ready):
    """The shipped hand labels (120 answers, 16 correct) were never used to fit the judge: AUROC for
    `correct: yes` and kappa at its threshold as issue 34 asks (measured: 0.945 and 0.70)."""
    from helpers.data import load_dataset
    from helpers.experiment.label_sheets import load_labels

    labels = pd.concat([load_labels(p) for p in LABELS], ignore_index=True)
    references = load_dataset("obstetrics").answers
    answers = _answers(
        (f"{r.model}/{r.architecture}/{r.qid}", "?", r.answer, [], references[r.qid]) for r in labels.itertuples()
    )
    scores = score_answers(answers, ["correctness"], language="es")
    p = scores[scores["metric"] == "correctness"]["value"].to_numpy(float)
    correct = (labels["correct"] == "yes").to_numpy(float)
    assert auroc(correct, p) >= 0.90
    assert cohen_kappa((p >= THRESHOLD).astype(float), correct) >= 0.6
    qwen = (labels["model"] == "qwen2.5-coder-1.5b").to_numpy()
    assert auroc(correct[qwen], p[qwen]) >= 0.85


def _write(path: Path, rows: list[dict]) -> Path:
    if path.suffix == ".csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


ROW = {"id": "a1", "question": "¿Cuándo?", "answer": "Antes de la semana 10.", "contexts": json.dumps(["semana 10"])}


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{k: v for k, v in ROW.items() if k != "contexts"}], "missing column(s) ['contexts']"),
        ([ROW, dict(ROW, id="a2", contexts="semana 10")], "row 3, column 'contexts': not a JSON list of strings"),
        (
            [ROW, dict(ROW, id="a2", contexts=json.dumps([1, 2]))],
            "row 3, column 'contexts': a JSON list of strings is needed",
        ),
        ([ROW, ROW], "row 3, column 'id': 'a1' is also the id of row 2"),
        ([dict(ROW, question=" ")], "row 2, column 'question': empty"),
    ],
)
def test_a_malformed_row_names_row_and_column(tmp_path, rows, message):
    with pytest.raises(UserError) as error:
        read_answers(_write(tmp_path / "answers.csv", rows))
    assert message in str(error.value)
    assert str(tmp_path / "answers.csv") in str(error.value)


def test_judge_command_scores_a_jsonl_file(tmp_path, capsys):
    rows = [
        {
            "id": "q2",
            "question": "¿Semana ideal del primer control?",
            "answer": GUIDELINE_Q2,
            "contexts": [GUIDELINE_Q2],
            "reference": GUIDELINE_Q2,
        },
        {
            "id": "q9",
            "question": "¿Metas de peso?",
            "answer": "",
            "contexts": [OTHER],
            "reference": "IMC < 20: 12 a 18 Kg",
        },
    ]
    out = tmp_path / "scores.csv"
    code = main(
        [
            "judge",
            str(_write(tmp_path / "mine.jsonl", rows)),
            "--judges",
            "correctness,context_recall",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    scores = pd.read_csv(out)
    assert list(scores.columns) == ["id", "judge", "metric", "value", "reason"]
    assert set(scores["judge"]) == {"correctness", "context_recall"}
    empty = scores[(scores["id"] == "q9") & (scores["metric"] == "correctness")]
    assert empty["value"].isna().all() and empty["reason"].iloc[0] == "no answer to judge"
    printed = capsys.readouterr().out
    assert "2 answers" in printed and "correctness" in printed


def test_judge_command_refuses_a_judge_that_needs_an_llm(tmp_path, capsys):
    path = _write(tmp_path / "a.csv", [ROW])
    assert main(["judge", str(path), "--judges", "ragas"]) == 2
    error = capsys.readouterr().err
    assert "judge(s) ['ragas'] call an LLM: pass llm=LLM(...) or its config (helpers judge: --llm" in error
    assert "judges that need none: ['offline', 'evidence', 'correctness'" in error
    assert "ragas" not in usable_judges(with_llm=False) and "correctness" in usable_judges(with_llm=False)


def test_one_failing_answer_is_recorded_and_the_rest_scored(monkeypatch):
    from helpers.judges import correctness

    calls = {"n": 0}
    original = correctness.Correctness.score_one

    def flaky(self, sample):
        calls["n"] += 1
        if sample.qid == "bad":
            raise RuntimeError("embedding failed")
        return original(self, sample)

    monkeypatch.setattr(correctness.Correctness, "score_one", flaky)
    answers = _answers([("bad", "?", "x", ["y"], "z"), ("good", "?", GUIDELINE_Q2, [GUIDELINE_Q2], GUIDELINE_Q2)])
    scores = score_answers(answers, ["correctness"], language="es")
    bad = scores[scores["id"] == "bad"]
    assert bad["value"].isna().all() and bad["reason"].str.contains("RuntimeError: embedding failed").all()
    assert np.isfinite(scores[(scores["id"] == "good") & (scores["metric"] == "correctness")]["value"]).all()


def test_validity_table_separates_judges_people_agree_with(monkeypatch):
    """agreement(): a metric that ranks the 'yes' answers first agrees; one that does not cannot
    tell; kappa is read at the metric's own threshold; retrieval is valid by construction."""
    from helpers.judges import validity

    rng = np.random.default_rng(0)
    labels = pd.DataFrame(
        {"model": "m", "architecture": "a", "qid": [f"q{i}" for i in range(40)], "correct": ["yes"] * 12 + ["no"] * 28}
    )
    truth = (labels["correct"] == "yes").to_numpy(float)
    good = 0.55 + 0.3 * truth + rng.uniform(-0.1, 0.1, 40)  # every 'yes' above 0.68, every 'no' below
    noise = rng.uniform(0, 1, 40)
    scores = pd.concat(
        [
            labels[["model", "architecture", "qid"]].assign(judge="correctness", metric="correctness", value=good),
            labels[["model", "architecture", "qid"]].assign(judge="correctness", metric="similarity", value=noise),
            # RAGAS's answer correctness is not among RAGAS's default metrics, and is still checked
            labels[["model", "architecture", "qid"]].assign(judge="ragas", metric="answer_correctness", value=good),
        ]
    )
    table = validity.agreement(labels, scores).set_index("metric")
    assert table.at["answer_correctness", "auroc"] == 1.0 and table.at["answer_correctness", "label"] == "correct"
    assert table.at["correctness", "auroc"] == 1.0 and table.at["correctness", "status"] == validity.AGREES
    assert table.at["correctness", "threshold"] == THRESHOLD and table.at["correctness", "kappa"] == 1.0
    assert table.at["similarity", "auroc_low"] < 0.5 < table.at["similarity", "auroc_high"]
    assert table.at["similarity", "status"] == validity.CANNOT_TELL
    assert validity.status("retrieval/ndcg@5") == validity.BY_CONSTRUCTION
    assert validity.status("offline", "relevance") in (validity.NOT_CHECKED, validity.CANNOT_TELL)


def test_the_shipped_validity_table_is_what_the_sheets_give():
    """helpers/judges/validity.csv is written by `judge-eval --labels benchmarks/labels --out ...`;
    its correctness row must match the hand labels (the judge's weights and the sheets are committed)."""
    from helpers.judges import validity

    shipped = validity.validity_table(validity.SHIPPED_CSV).set_index(["judge", "metric"])
    row = shipped.loc[("correctness", "correctness")]
    # 21 since max_tokens 256 let q9's copied table end (dense, bm25, hyde, multi_query: partly -> yes)
    assert row["n"] == 120 and row["positives"] == 21
    assert row["auroc"] >= 0.90 and row["status"] == validity.AGREES


def test_a_table_judge_eval_wrote_is_read_before_the_shipped_one(tmp_path, monkeypatch):
    """judge-eval --labels writes results/validity.csv (never into src/); reports read it first."""
    from helpers import paths
    from helpers.judges import validity

    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path)
    assert validity.validity_csv() == validity.SHIPPED_CSV and "shipped" in validity.source()
    assert validity.trusted("correctness/correctness")
    table = validity.validity_table(validity.SHIPPED_CSV)
    table.loc[table.metric == "correctness", "status"] = validity.CANNOT_TELL  # a user's labels disagree
    table.to_csv(tmp_path / "validity.csv", index=False)
    assert validity.validity_csv() == tmp_path / "validity.csv"
    assert validity.source() == f"{tmp_path / 'validity.csv'}, written by judge-eval --labels"
    assert not validity.trusted("correctness/correctness")


def test_answers_of_several_architectures_are_judged_then_diagnosed(tmp_path, capsys):
    """`helpers judge` keeps an `architecture` column (ids unique per architecture), and `helpers
    diagnose` reads its CSV: the right answer is correct, the wrong one with the reference's fact in
    its contexts is generation's, the one whose contexts lack it is retrieval's."""
    wrong = "El primer control prenatal se hace en la semana 30 de gestación."
    rows = [
        {"id": "q2", "architecture": "a", "question": "¿Semana ideal del primer control?", "answer": GUIDELINE_Q2}
        | {"contexts": [GUIDELINE_Q2], "reference": GUIDELINE_Q2},
        {"id": "q2", "architecture": "b", "question": "¿Semana ideal del primer control?", "answer": wrong}
        | {"contexts": [GUIDELINE_Q2], "reference": GUIDELINE_Q2},
        {"id": "q2", "architecture": "c", "question": "¿Semana ideal del primer control?", "answer": wrong}
        | {"contexts": [OTHER], "reference": GUIDELINE_Q2},
    ]
    out = tmp_path / "scores.csv"
    answers = _write(tmp_path / "mine.jsonl", rows)
    assert main(["judge", str(answers), "--judges", "correctness,context_recall", "--out", str(out)]) == 0
    assert list(pd.read_csv(out).columns) == ["id", "architecture", "judge", "metric", "value", "reason"]
    capsys.readouterr()
    assert main(["diagnose", str(out), "--json"]) == 0
    verdicts = {a["architecture"]: a["verdict"] for a in json.loads(capsys.readouterr().out)["answers"]}
    assert verdicts == {"a": "correct", "b": "generation", "c": "retrieval"}
    rows[1]["architecture"] = "a"
    with pytest.raises(UserError, match="'q2' is also the id of architecture 'a' of line 1; ids must be unique"):
        read_answers(_write(tmp_path / "twice.jsonl", rows))
