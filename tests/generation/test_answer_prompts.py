"""Answer prompts as a setting: the registry, a config's own prompt, the run id, the sweep axis, what
a prompt's output is split into, and refusals recognised per language and per prompt."""

import pytest

from helpers.errors import UserError
from helpers.experiment.config import ConfigError, ExperimentConfig, load_config
from helpers.generation.answer_prompts import ANSWER_PROMPTS, get_prompt, is_refusal
from helpers.generation.answering import answer_stops, build_messages, generate_answer
from helpers.llm import LLM, ResponseCache


def test_the_registry_and_its_error():
    assert {"cite-sentences", "quote-then-answer", "question-first", "say-no-se"} <= set(ANSWER_PROMPTS)
    with pytest.raises(UserError, match=r"unknown answer prompt 'cite'; valid names: \['cite-sentences'"):
        get_prompt("cite")
    with pytest.raises(UserError, match=r"generation.prompt.user: it must contain \{question\}"):
        get_prompt({"system": "Answer.", "user": "Contexts: {contexts}"})


def test_the_default_prompt_is_the_one_the_labelled_answers_were_written_with():
    system, user = build_messages("¿Cuántas citas?", ["uno", "dos"], "es")
    assert system["content"].startswith("Eres un asistente clínico que responde preguntas usando solo")
    assert user["content"] == "Contextos:\n[1] uno\n\n[2] dos\n\nPregunta: ¿Cuántas citas?\nRespuesta:"
    first = build_messages("How many?", ["one"], "en", "question-first")[1]["content"]
    assert first.index("How many?") < first.index("[1] one") < first.rindex("How many?")
    assert answer_stops("es", "quote-then-answer") == ["\nPregunta:", "\nContextos:"]


def test_run_ids_keep_the_default_and_follow_the_prompt(tmp_path):
    # configs written before prompts were a setting keep their ids (results folders stay valid)
    # (the default's id changed once on purpose: max_tokens 160 -> 256, so q9's copied table is not cut)
    assert load_config("configs/default.yaml").resolved_run_id() == "obstetrics-default-8eb4bca9"
    assert load_config("configs/smoke.yaml").resolved_run_id() == "smoke-2cff3a61"
    base = load_config("configs/smoke.yaml").model_dump(exclude={"run_id"})
    ids = {
        ExperimentConfig(**dict(base, generation={"prompt": p})).resolved_run_id()
        for p in ("cite-sentences", "quote-then-answer", "say-no-se")
    }
    assert len(ids) == 3 and "smoke-2cff3a61" in ids
    # what never changes an answer (the prompt store's size) never changes the id; the answers' length does
    llms = [dict(entry, prompt_store_mb=0) for entry in base["llms"]]
    assert ExperimentConfig(**dict(base, llms=llms)).resolved_run_id() == "smoke-2cff3a61"
    llms = [dict(entry, max_tokens=entry["max_tokens"] + 1) for entry in base["llms"]]
    assert ExperimentConfig(**dict(base, llms=llms)).resolved_run_id() != "smoke-2cff3a61"
    own = ExperimentConfig(**dict(base, generation={"prompt": {"system": "S.", "user": "{contexts}\n{question}"}}))
    saved = own.model_dump(mode="json")["generation"]["prompt_text"]
    assert saved["system"]["es"] == "S." and saved["user"]["en"] == "{contexts}\n{question}"  # in config.yaml
    assert ExperimentConfig(**own.model_dump(mode="json")).resolved_run_id() == own.resolved_run_id()  # reloads
    with pytest.raises(Exception, match="unknown answer prompt 'nope'"):
        ExperimentConfig(**dict(base, generation={"prompt": "nope"}))
    (tmp_path / "c.yaml").write_text("generation: {prompt: {system: S}}\n")
    with pytest.raises(ConfigError, match="generation"):
        load_config(tmp_path / "c.yaml")


def test_the_prompts_sweep_expands_one_run_per_prompt():
    from helpers.experiment.sweep import expand, load_sweep

    runs = expand(*load_sweep("configs/sweeps/prompts.yaml"))
    assert [r["config"].generation.prompt for r in runs] == [
        "cite-sentences",
        "quote-then-answer",
        "question-first",
        "say-no-se",
    ]
    assert len({r["run_id"] for r in runs}) == 4


def test_quote_then_answer_keeps_the_quote_apart():
    prompt = get_prompt("quote-then-answer")
    answer, quote = prompt.extract(' "Se recomienda un programa de diez citas." [2]\nRespuesta: Diez citas [2].', "es")
    assert answer == "Diez citas [2]." and quote.startswith('"Se recomienda')
    assert prompt.extract("Diez citas [2].", "es") == ("Diez citas [2].", None)  # no label: all of it


@pytest.mark.parametrize(
    "answer, prompt, language, refused",
    [
        ("No sé.", "say-no-se", "es", True),
        ("No se recomienda el uso rutinario de la ecografía [1].", "say-no-se", "es", False),
        ("No encuentro la respuesta en los documentos proporcionados.", "cite-sentences", "es", True),
        ("no encuentro la respuesta en los documentos proporcionados para esta pregunta", "cite-sentences", "es", True),
        ("I don't know.", "say-no-se", "en", True),
        ("I cannot find the answer in the provided documents.", "cite-sentences", "en", True),
        ("The first visit is before week 10 [1].", "cite-sentences", "en", False),
        ("", "cite-sentences", "en", False),
    ],
)
def test_refusals_are_recognised_per_language_and_prompt(answer, prompt, language, refused):
    assert is_refusal(answer, get_prompt(prompt), language) is refused


def test_a_prompt_reaches_the_local_model(tmp_path):
    """The bundled model (real, offline) answers with quote-then-answer: the record keeps the answer
    apart from the label, and another prompt is another request (not served from the cache)."""
    llm = LLM({"provider": "local", "max_tokens": 48}, cache=ResponseCache(tmp_path / "c.sqlite"))
    contexts = [{"rank": 1, "doc_id": "d", "score": 1.0, "text": "Se recomienda un programa de diez citas."}]
    question = "¿Cuántas citas se recomiendan?"
    first = generate_answer(llm, "q", question, contexts, language="es", prompt="quote-then-answer")
    assert first.ok and first.error is None and not first.cached
    assert "Respuesta:" not in first.answer
    again = generate_answer(llm, "q", question, contexts, language="es", prompt="quote-then-answer")
    assert again.cached and (again.answer, again.quote) == (first.answer, first.quote)
    other = generate_answer(llm, "q", question, contexts, language="es", prompt="question-first")
    assert other.ok and not other.cached
    cut = generate_answer(llm, "q", question, contexts, language="es", max_tokens=3)  # the real count, flagged
    assert cut.output_tokens == 3 and cut.at_max_tokens


def test_questions_marked_unanswerable_and_the_refusal_judge(tmp_path):
    from helpers.data.contracts import DataError, Sample
    from helpers.data.questions import read_questions
    from helpers.judges import JUDGES
    from helpers.judges.judge_base import JudgeContext

    path = tmp_path / "q.csv"
    path.write_text(
        "id,question,answerable,kind\n"
        "a,¿Cuántas citas?,true,single\n"
        "b,¿Quién ganó el mundial?,false,\n"
        "c,¿Cuál es la dosis pediátrica?,,unanswerable\n",
        encoding="utf-8",
    )
    assert read_questions(path).unanswerable == ["b", "c"]
    path.write_text("question,answerable\n¿Algo?,quizás\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"row 2.*answerable.*'quizás'.*true or false"):
        read_questions(path)

    judge = JUDGES["refusal"](context=JudgeContext(language="es"))
    judge.prepare()

    def scores(qid, text):
        sample = Sample(qid, "?", text, unanswerable=qid in ("b", "c"))
        return {metric: value for metric, value, _ in judge.score_sample(sample)[0]}

    no_answer = "No encuentro la respuesta en los documentos proporcionados."
    assert scores("b", no_answer) == {"refusal": 1.0, "false_refusal": None}  # a right refusal
    assert scores("c", "La dosis es 10 mg [1].") == {"refusal": 0.0, "false_refusal": None}  # a guess
    assert scores("a", "No sé.") == {"refusal": None, "false_refusal": 1.0}  # a wrong refusal
    assert scores("a", "No se recomiendan menos de diez citas [2].") == {"refusal": None, "false_refusal": 0.0}
    assert scores("a", "") == {"refusal": None, "false_refusal": None}


@pytest.mark.slow
def test_a_run_answers_with_its_prompt_and_scores_refusals(tmp_path):
    """A tiny run (bundled model) with quote-then-answer and the refusal judge: the prompt's text
    is in the run's config.yaml, and every answer gets its false_refusal score (the obstetrics
    questions are all answerable)."""
    import pandas as pd
    import yaml

    from helpers.experiment.runner import Experiment
    from runs import TINY

    raw = dict(TINY, name="prompted", architectures=["bm25"], generation={"prompt": "quote-then-answer"})
    raw["judges"] = {**TINY["judges"], "offline": False, "refusal": {}}
    summary = Experiment(ExperimentConfig(**raw), results_dir=tmp_path).run()
    assert summary["ok"], summary
    run_dir = tmp_path / summary["run_id"]
    saved = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))["generation"]
    assert saved["prompt"] == "quote-then-answer" and "Cita:" in saved["prompt_text"]["user"]["es"]
    scores = pd.read_parquet(run_dir / "scores.parquet")
    refusals = scores[scores.judge == "refusal"]
    assert set(refusals.dropna(subset=["value"]).metric) == {"false_refusal"}
    assert len(refusals[refusals.metric == "false_refusal"].dropna(subset=["value"])) == 3


def test_a_language_without_prompts_is_a_recorded_fallback():
    from helpers.languages import corpus_language, prompt_languages

    assert prompt_languages() == ("es", "en")
    assert corpus_language("fr").prompt_code == "en"
    assert corpus_language("fr").fallback == "prompts in English for fr: the prompts exist in es, en"
    assert all(corpus_language(code).fallback is None for code in ("es", "en", None))
