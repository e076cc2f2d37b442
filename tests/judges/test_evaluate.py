"""helpers.evaluate(df): a DataFrame with ragas's column names or ours, scored by any registered
judge (an LLM judge through the LLM it is given: here the bundled model behind the local
OpenAI-compatible server), the same scores as `helpers judge FILE`, a summary with validity."""

import importlib.util
import json

import pandas as pd
import pytest

import helpers
from helpers.errors import UserError
from helpers.judges.evaluate import score_answers, summarize_scores
from helpers.judges.external import read_answers
from helpers.llm import LLM, ResponseCache

GUIDELINE = (
    "Se recomienda realizar el primer control prenatal en el primer trimestre, idealmente antes de la semana 10."
)
RAGAS_FRAME = pd.DataFrame(
    {
        "user_input": [
            "¿Cuál es la semana ideal para iniciar los controles prenatales?",
            "¿Cuándo es el primer control?",
        ],
        "response": ["Antes de la semana 10 de gestación.", "En la semana 20."],
        "retrieved_contexts": [[GUIDELINE], [GUIDELINE]],
        "reference": ["Antes de la semana 10.", "En el primer trimestre, antes de la semana 10."],
    }
)


def test_ragas_column_names_score_as_a_file_does(tmp_path, monkeypatch):
    from helpers.judges import validity

    # the shipped validity table (another test may have written one of its own into the session's results)
    monkeypatch.setattr(validity, "written_csv", lambda: tmp_path / "none.csv")
    result = helpers.evaluate(RAGAS_FRAME, judges=["correctness"])
    scores = result.scores
    assert list(scores.columns) == ["id", "judge", "metric", "value", "reason"]
    assert sorted(scores["id"].unique()) == ["row1", "row2"]  # no id column: generated
    correctness = scores[scores["metric"] == "correctness"].set_index("id")["value"]
    assert correctness["row1"] > 0.5 > correctness["row2"]  # week 10 is right, week 20 is not
    # the same answers through the file reader (ours column names, ';' separated, an id column)
    frame = RAGAS_FRAME.rename(
        columns={"user_input": "question", "response": "answer", "retrieved_contexts": "contexts"}
    ).assign(id=["row1", "row2"], contexts=lambda f: f["contexts"].map(json.dumps))
    frame.to_csv(tmp_path / "answers.csv", sep=";", index=False)
    from_file = score_answers(read_answers(tmp_path / "answers.csv"), ["correctness"])
    pd.testing.assert_frame_equal(from_file, scores)
    summary = result.summary.set_index("metric")
    assert summary.loc["correctness", "n"] == 2 and summary.loc["correctness", "validity"] == "agrees"
    assert summary.loc["correctness", "mean"] == pytest.approx(correctness.mean())
    # a metric no answer was scored on claims no agreement (issue 60: "agrees" beside n = 0)
    none = summarize_scores(scores.assign(value=float("nan"))).set_index("metric")
    assert none.loc["correctness", "n"] == 0 and none.loc["correctness", "validity"] == "no data: no answer scored"


def test_bad_frames_are_named():
    with pytest.raises(UserError, match=r"the DataFrame: missing column\(s\) \['contexts'\]"):
        helpers.evaluate(RAGAS_FRAME.drop(columns="retrieved_contexts"))
    with pytest.raises(UserError, match=r"the DataFrame: row 2, column 'contexts': a JSON list of strings is needed"):
        helpers.evaluate(RAGAS_FRAME.assign(retrieved_contexts=[[GUIDELINE], [1, 2]]), judges=["refusal"])
    with pytest.raises(UserError, match=r"judge\(s\) \['ragas'\] call an LLM: pass llm="):
        helpers.evaluate(RAGAS_FRAME, judges=["ragas"])
    with pytest.raises(UserError, match=r"judge\(s\) \['retrieval'\] cannot score answers without a run"):
        helpers.evaluate(RAGAS_FRAME, judges=["retrieval"])


@pytest.mark.slow
def test_an_llm_judge_through_the_local_server(tmp_path):
    from helpers.llm.serving import local_server

    backend = "llama-cpp" if importlib.util.find_spec("llama_cpp") else "transformers"
    with local_server(local_backend=backend, startup_timeout=300) as base_url:
        llm = LLM(
            {"provider": "openai-compatible", "model": "smollm2", "base_url": base_url, "max_tokens": 200},
            cache=ResponseCache(tmp_path / "llm.sqlite"),
        )
        result = helpers.evaluate(RAGAS_FRAME, judges=["correctness", "ragchecker_llm"], llm=llm)
    totals = llm.totals()
    assert totals["requests"] > 0 and totals["errors"] == 0  # the judge's calls reached the server
    by_judge = result.scores.groupby("judge")["id"].nunique().to_dict()
    assert by_judge == {"correctness": 2, "ragchecker_llm": 2}
    claims = result.scores[result.scores["judge"] == "ragchecker_llm"]
    # the answer's and the reference's claims reached the judge from ragas's columns
    reasons = claims.groupby("id")["reason"].first()
    assert reasons["row1"].startswith("1 answer claims, 1 reference claims")
    assert reasons["row2"].startswith("2 answer claims, 3 reference claims")
    assert set(result.summary["judge"]) == {"correctness", "ragchecker_llm"}


def test_contexts_written_as_a_python_list_are_read_not_evaluated():
    """Issue 60: ['a', 'b'] (a Python list's str()) is accepted as contexts, read as a literal; an
    expression is never run."""
    from helpers.judges.evaluate import answers_from_frame

    frame = pd.DataFrame({"question": ["q?"], "answer": ["a"], "contexts": ["['first passage', \"it's second\"]"]})
    assert answers_from_frame(frame)[0]["contexts"] == ["first passage", "it's second"]
    bad = pd.DataFrame({"question": ["q?"], "answer": ["a"], "contexts": ["__import__('os').getcwd()"]})
    with pytest.raises(UserError, match=r"row 1, column 'contexts': not a JSON list of strings"):
        answers_from_frame(bad)


def test_a_french_frame_is_judged_with_french_stemming_and_stop_words():
    """Issue 63: helpers.evaluate guessed only es or en from two word lists; the package's one
    detector (py3langid) names French, and correctness's word recall then drops French stop words
    ("les", "sont") and stems "recommandées" as French does: all six content words of the reference
    are in the answer, where English's rules leave "les" or "sont" unmatched (5 of 6)."""
    from helpers.judges.evaluate import answers_from_frame, guess_language, score_answers

    frame = pd.DataFrame(
        [
            {
                "question": "Combien de visites prénatales sont recommandées pendant la grossesse ?",
                "answer": "Huit visites prénatales sont recommandées.",
                "contexts": ["Le guide recommande huit visites prénatales pendant la grossesse."],
                "reference": "Les visites prénatales recommandées sont huit.",
            }
        ]
    )
    assert guess_language(list(frame["question"]) + list(frame["answer"])) == "fr"
    recall = {}
    for language in (None, "en"):
        scores = score_answers(answers_from_frame(frame), ["correctness"], language=language, log=lambda *_: None)
        recall[language] = scores.set_index("metric")["value"]["word_recall"]
    assert recall == {None: 1.0, "en": pytest.approx(5 / 6)}
