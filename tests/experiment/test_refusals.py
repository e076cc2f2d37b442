"""Refusals end to end (issue 60): on a hand-made folder, a question the documents do not answer
(marked `answerable: false`, or its reference saying so) is right when refused and wrong when
answered; a refusal of an answerable question is a failure in the headline, the verdict table and
the advice. The answers are scripted (a real LLM client over ScriptedBackend); the judges are real."""

import csv

import pytest

from helpers.data.contracts import Dataset
from helpers.experiment.config import ExperimentConfig
from helpers.experiment.runner import Experiment
from helpers.languages import get_language
from helpers.llm import LLM
from helpers.llm.scripted import ScriptedBackend

DOCS = {
    "leave.md": "# Leave\n\nEvery full-time employee receives 25 days of paid annual leave per calendar year.\n",
    "security.md": "# Security\n\nA lost laptop must be reported to the service desk within 24 hours.\n",
    "office.md": "# Office\n\nThe office is open from 7 a.m. to 8 p.m. on weekdays.\n",
}
QUESTIONS = [  # id, question, reference, answerable
    ("leave", "How many days of paid annual leave does a full-time employee get?", "25 days of paid leave a year.", ""),
    ("laptop", "When must a lost laptop be reported?", "Within 24 hours, to the service desk.", ""),
    ("pension", "Does the company offer a pension plan?", "", "false"),
    ("gym", "Is there a gym in the office?", "The documents do not say.", ""),
]
REFUSE = get_language("en").no_answer
ANSWERS = {  # what the scripted model says to each question
    "leave": "Every full-time employee receives 25 days of paid annual leave per calendar year. [1]",
    "laptop": REFUSE,  # the answer is in the documents: a false refusal
    "pension": REFUSE,  # right
    "gym": "Yes, the office has a gym on the ground floor. [1]",  # wrong: the documents do not say
}


@pytest.fixture(scope="module")
def handbook_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("handbook")
    (root / "docs").mkdir()
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    with open(root / "questions.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "question", "reference", "answerable"])
        writer.writerows(QUESTIONS)

    def reply(call):
        asked = call.messages[-1]["content"]
        return next(ANSWERS[qid] for qid, question, *_ in QUESTIONS if question in asked)

    config = ExperimentConfig(
        name="handbook",
        dataset={
            "name": "documents",
            "options": {"path": str(root / "docs"), "questions": str(root / "questions.csv")},
        },
        architectures=["bm25"],
        retrieval={"k": 2},
        llms=[{"name": "scripted", "provider": "groq", "cache": "off"}],
        judges={"offline": False, "ragas": False, "ragas_evidence": False, "correctness": {}, "context_recall": {}},
        statistics={"baseline": "bm25", "n_resamples": 200},
        figures=False,
    )
    experiment = Experiment(config, results_dir=root / "results")
    experiment.make_llm = lambda settings: LLM(settings, backend=ScriptedBackend(reply))
    summary = experiment.run()
    return summary, root / "results"


def test_a_reference_that_says_the_documents_do_not_answer_marks_the_question():
    data = Dataset(
        "d", "en", {"a": {"text": "x"}}, {"q1": "?", "q2": "?", "q3": "?"}, answers={"q1": "Not in the documents."}
    )
    data_es = Dataset("d", "es", {"a": {"text": "x"}}, {"q1": "?"}, answers={"q1": "Los documentos no lo dicen."})
    marked = Dataset("d", "en", {"a": {"text": "x"}}, {"q1": "?", "q2": "?"}, unanswerable=["q2"])
    assert data.unanswerable == ["q1"] and data_es.unanswerable == ["q1"]
    # a question marked unanswerable without a reference gets the language's, so correctness scores it
    assert marked.unanswerable == ["q2"] and marked.answers == {"q2": "The documents do not contain this information."}
    assert not get_language("en").says_unanswered("Not in the first trimester.")
    assert not get_language("es").says_unanswered("No se recomienda.")


def test_a_right_refusal_is_correct_and_a_false_one_a_failure_everywhere(handbook_run):
    from helpers.experiment.analysis import load_scores
    from helpers.experiment.diagnosis import advice, run_diagnosis
    from helpers.experiment.run_summary import run_sections

    summary, results = handbook_run
    scores = load_scores(summary["run_id"], results)
    correctness = scores[scores["metric"] == "correctness"].set_index("qid")
    assert correctness.loc["pension", "value"] == 1.0 and correctness.loc["gym", "value"] == 0.0
    assert correctness.loc["pension", "reason"] == "unanswerable question: refused, rightly"
    assert (
        correctness.loc["gym", "reason"] == "unanswerable question: answered, although the documents do not answer it"
    )
    assert correctness.loc["laptop", "value"] < 0.52  # the shipped cut: a refusal of an answerable question
    # the refusal judge ran although the config leaves it off: the questions need it
    refusals = scores[scores["judge"] == "refusal"].set_index(["qid", "metric"])["value"]
    assert refusals[("pension", "refusal")] == 1.0 and refusals[("laptop", "false_refusal")] == 1.0
    # the headline: the mean over the four answers counts the right refusal as 1 and the false as ~0
    expected = correctness["value"].mean()
    headline = run_sections(summary["run_id"], results)[0]
    assert headline.key == "headline" and headline.table.loc["bm25", "correctness/correctness"].startswith(
        f"{expected:.3f}"
    )
    table, answers, _ = run_diagnosis(summary["run_id"], results)
    verdicts = answers.set_index("id")["verdict"].to_dict()
    assert verdicts == {"leave": "correct", "laptop": "refused", "pension": "correct", "gym": "generation"}
    assert advice(table) == [
        "bm25: 2 of 2 wrong answers (1 of them refusals) had the fact in their contexts: "
        "change the prompt or the generator, not the retriever"
    ]


def test_answers_judged_outside_a_run_read_refusals_the_same_way():
    import pandas as pd

    import helpers

    frame = pd.DataFrame(
        {
            "id": ["pension", "gym", "laptop"],
            "question": [
                "Does the company offer a pension plan?",
                "Is there a gym?",
                "When is a lost laptop reported?",
            ],
            "answer": [REFUSE, "Yes, on the ground floor.", REFUSE],
            "contexts": ['["The office is open from 7 a.m."]'] * 3,
            "reference": ["", "The documents do not say.", "Within 24 hours."],
            "answerable": ["false", "", ""],
        }
    )
    scores = helpers.evaluate(frame, judges=["correctness", "refusal"]).scores
    value = scores.set_index(["id", "judge", "metric"])["value"]
    assert value[("pension", "correctness", "correctness")] == 1.0
    assert value[("gym", "correctness", "correctness")] == 0.0
    assert value[("laptop", "refusal", "false_refusal")] == 1.0 and value[("pension", "refusal", "refusal")] == 1.0


def test_a_relevant_file_is_narrowed_to_the_chunks_that_hold_the_reference():
    """Issue 60 (2): `relevant: leave.md` makes relevant only the chunk with the answer where the
    question has a reference; without one the file stays whole, and the run says so."""
    from helpers.experiment.relevance import passage_qrels, relevance_line

    corpus = {
        "leave.md#c1": {"text": "Every full-time employee receives 25 days of paid annual leave per calendar year."},
        "leave.md#c2": {"text": "Up to 5 unused days may be carried into the next year before the end of March."},
        "leave.md#c3": {"text": "A doctor's note is needed after 3 consecutive days of sick leave."},
    }
    whole = {doc: 1 for doc in corpus}
    data = Dataset(
        "documents",
        "en",
        corpus,
        {"days": "How many days of annual leave?", "carry": "Can days be carried over?"},
        qrels={"days": dict(whole), "carry": dict(whole)},
        answers={"days": "25 days of paid annual leave a year."},
        notes={"qrels_by_file": ["days", "carry"]},
    )
    report = passage_qrels(data)
    assert data.qrels == {"days": {"leave.md#c1": 1}, "carry": whole}
    assert report == {"narrowed": {"days": [1, 3]}, "per_file": ["carry"], "none_held": []}
    assert relevance_line(report) == (
        "relevance: 1 questions' `relevant` file narrowed to the chunks that hold the reference (1 of 3 chunks; "
        "context-recall attribution); 1 (carry) keep every chunk of the file (no reference, or no chunk holds it): "
        "their nDCG and recall count the file's other sections as hits"
    )
