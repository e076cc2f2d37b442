"""Answer generation: prompts per language, numbered contexts, the token budget, records, and
failures recorded without stopping the batch; end to end with the local model and its server."""

import importlib.util
import os
import threading

import pytest

from helpers.generation.answer_checks import check_answer, invents_question, loop_phrase, repeated_ngram_share
from helpers.generation.answering import (
    AnswerRecord,
    answer_stops,
    build_messages,
    estimate_tokens,
    generate_answers,
    records_frame,
    select_contexts,
)
from helpers.languages import corpus_language
from helpers.llm import LLM, LLMError, ResponseCache
from helpers.llm.backends import Completion
from helpers.llm.scripted import ScriptedBackend

CORPUS = {
    "d1": {"text": "Se recomienda un programa de diez citas para primigestantes."},
    "d2": {"text": "Para una mujer multípara se recomienda un programa de siete citas."},
    "d3": {"text": "El parto debe ocurrir en un centro médico adecuado. " * 30},
}
RUN = {"q1": {"d2": 0.7, "d1": 0.9, "d3": 0.1}}


def echo_backend(fail_on=None, error=None) -> ScriptedBackend:
    """Answers with the number of contexts it saw, then runs on into an invented exchange, as the
    local model does without stops (a backend that ignores `stop`, like some servers); fails on
    demand (raises `error` when the prompt has `fail_on`)."""

    def reply(call):
        if fail_on and fail_on in call.prompt:
            return error
        return Completion(
            f"Diez citas [1] ({call.prompt.count('] ')} contextos)\nPregunta: ¿Y luego?\nRespuesta: Nada.",
            len(call.prompt) // 3,
            7,
        )

    return ScriptedBackend(reply)


def test_prompt_per_language_with_numbered_contexts():
    es = build_messages("¿Cuántas citas?", ["uno", "dos"], "es")
    assert "Responde en español" in es[0]["content"] and "[1] uno\n\n[2] dos" in es[1]["content"]
    assert es[1]["content"].endswith("Pregunta: ¿Cuántas citas?\nRespuesta:")
    en = build_messages("How many?", ["one"], "fr")  # every non-Spanish language: English
    assert "Answer in English" in en[0]["content"] and "[1] one" in en[1]["content"]
    assert corpus_language("es-CO").prompt_code == "es" and corpus_language("en").prompt_code == "en"
    assert "no context" in build_messages("q", [], "en")[1]["content"]


def test_token_estimate_and_budget():
    assert estimate_tokens("a" * 27, "es") == 10 and estimate_tokens("a" * 40, "en") == 10
    contexts, dropped = select_contexts(RUN["q1"], CORPUS, k=3, max_context_tokens=60, language="es")
    assert [c["doc_id"] for c in contexts] == ["d1", "d2"] and dropped == ["d3"]  # ranking order; d3 over budget
    assert [c["rank"] for c in contexts] == [1, 2] and contexts[0]["score"] == 0.9
    contexts, dropped = select_contexts(RUN["q1"], CORPUS, k=3, max_context_tokens=200, language="es")
    assert contexts[2]["truncated"] and contexts[2]["text"].endswith("…") and not dropped
    assert sum(estimate_tokens(c["text"], "es") for c in contexts) <= 200
    assert select_contexts(RUN["q1"], CORPUS, k=1)[0][0]["doc_id"] == "d1"


def test_records_and_failures_never_stop_the_batch(tmp_path):
    backend = echo_backend(fail_on="¿Falla?", error=LLMError("rejected (400)"))
    llm = LLM(
        {"provider": "groq", "model": "llama-3.1-8b-instant", "max_retries": 0},
        cache=ResponseCache(tmp_path / "c.sqlite"),
        backend=backend,
    )
    queries = {"q1": "¿Cuántas citas?", "q2": "¿Falla?", "q3": "¿Sin contexto?"}
    run = {"q1": RUN["q1"], "q2": RUN["q1"]}
    records = generate_answers(llm, queries, run, CORPUS, language="es", k=2)
    assert [r.qid for r in records] == ["q1", "q2", "q3"]
    ok, failed, empty = records
    assert ok.answer.startswith("Diez citas") and ok.error is None and ok.model == "llama-3.1-8b-instant"
    assert [c["doc_id"] for c in ok.contexts] == ["d1", "d2"] and ok.contexts[0]["text"] == CORPUS["d1"]["text"]
    assert ok.input_tokens > 0 and ok.output_tokens == 7 and ok.cost_usd > 0 and ok.latency_s >= 0
    assert failed.answer is None and "rejected" in failed.error and failed.error_kind == "error"
    assert empty.contexts == [] and empty.answer  # no retrieved contexts: still asked, told so
    frame = records_frame(records)
    assert list(frame["doc_ids"][0]) == ["d1", "d2"] and frame["answer"].isna().sum() == 1


def test_unexpected_backend_exception_is_recorded():
    llm = LLM(
        {"provider": "local", "cache": "off", "max_retries": 0},
        backend=echo_backend(fail_on="Pregunta", error=ValueError("context window exceeded")),
    )
    record = generate_answers(llm, {"q1": "x"}, RUN, CORPUS, language="es")[0]
    assert isinstance(record, AnswerRecord) and record.answer is None
    assert record.error_kind == "exception" and "context window" in record.error


def test_an_answer_cut_by_max_tokens_is_flagged_and_listed(tmp_path):
    """The model still writing when max_tokens ran out (its output as long as allowed) is flagged
    on the record, and the run's summary lists it as architecture/qid; an answer that ended on its
    own is not."""
    from helpers.experiment.run_accounting import at_max_tokens

    def reply(call):  # "largo" runs to the limit, as the 1.5B model's copy of a table did
        return Completion(
            "IMC < 20 = 12 a 18 kg; IMC 20-24,9 = 10 a 13", 50, call.max_tokens if "largo" in call.prompt else 9
        )

    llm = LLM(
        {"provider": "groq", "max_tokens": 40},
        cache=ResponseCache(tmp_path / "c.sqlite"),
        backend=ScriptedBackend(reply),
    )
    records = generate_answers(llm, {"q1": "¿Cuánto?", "q9": "¿Cuánto? (largo)"}, RUN, CORPUS, language="es")
    assert [r.at_max_tokens for r in records] == [False, True] and records[1].output_tokens == 40
    answers = [dict(r.to_dict(), architecture="dense") for r in records] + [{"architecture": "bm25", "qid": "q2"}]
    assert at_max_tokens(answers) == ["dense/q9"]


def _backend():
    return "llama-cpp" if importlib.util.find_spec("llama_cpp") else "transformers"


@pytest.mark.slow
def test_local_model_and_server_answer_in_spanish(tmp_path):
    from helpers.llm.serving import local_server

    cache = ResponseCache(tmp_path / "c.sqlite")
    llm = LLM({"provider": "local", "local_backend": _backend(), "max_tokens": 48}, cache=cache)
    record = generate_answers(
        llm, {"q1": "¿Cuántas citas prenatales se recomiendan para primigestantes?"}, RUN, CORPUS, language="es", k=2
    )[0]
    assert record.error is None and record.answer and record.output_tokens > 0
    with local_server(local_backend=_backend(), startup_timeout=300) as base_url:
        remote = LLM(
            {
                "provider": "openai-compatible",
                "model": "smollm2",
                "base_url": base_url,
                "max_tokens": 48,
                "timeout_s": 120,
            },
            cache=cache,
        )
        served = generate_answers(
            remote, {"q1": "¿Cuántas citas prenatales se recomiendan?"}, RUN, CORPUS, language="es", k=2
        )[0]
    assert served.error is None and served.answer and served.provider == "openai-compatible"


LOOP = "Durante la primera cita se debe: " + "que se debe realizar durante la primera cita de control prenatal, " * 5


def test_answer_checks_on_known_strings():
    clean = "Se recomienda un programa de diez citas para primigestantes [1]."
    assert check_answer(clean) == {"repeated_4gram_share": 0.0, "loop": None, "invents_question": False}
    # seq-rep-4: 1 - unique/total; "a b c d a b c d" has 5 4-grams, 4 unique
    assert repeated_ngram_share("a b c d a b c d") == pytest.approx(1 - 4 / 5)
    assert repeated_ngram_share("tres palabras solas") == 0.0
    assert repeated_ngram_share(LOOP) > 0.7
    assert loop_phrase(LOOP) == "que se debe realizar durante la primera cita de control"  # 10 words, 5 times
    assert loop_phrase("Diez citas. Siete citas para multíparas. Diez citas.") is None  # short sentence, once
    assert loop_phrase("El control es mensual hasta la semana 36. El control es mensual hasta la semana 36.")
    assert loop_phrase("el cual debe " * 4) == "el cual debe el cual"  # a 5-word phrase, 3 times
    # list numbers do not hide a loop; other numbers keep different items apart
    assert loop_phrase("".join(f"{i}. IMC pre-gestacional\n" for i in range(1, 8))) is not None
    assert loop_phrase("1. IMC entre 20 y 24,9 kg/m2\n2. IMC entre 25 y 29,9 kg/m2\n3. IMC > 30 kg/m2") is None
    assert invents_question("Diez citas [1]. Pregunta: ¿Y para multíparas? Respuesta: siete [2].")
    assert invents_question("Ten visits [1].\nQuestion 2: and then?") and invents_question("Diez.\nRespuesta: otra")
    assert not invents_question("Respuesta: diez citas [1].")  # echoing the prompt's label
    assert not invents_question("La pregunta: no está en los documentos.")  # not a label


def test_answer_stops_reach_the_llm_and_cut_the_invented_exchange(tmp_path):
    backend = echo_backend()
    cache = ResponseCache(tmp_path / "c.sqlite")
    llm = LLM({"provider": "groq", "model": "llama-3.1-8b-instant", "max_retries": 0}, cache=cache, backend=backend)
    record = generate_answers(llm, {"q1": "¿Cuántas citas?"}, RUN, CORPUS, language="es", k=2)[0]
    assert backend.calls[-1].stop == answer_stops("es") == ["\nPregunta:", "\nContextos:"]
    assert record.answer == "Diez citas [1] (2 contextos)" and not invents_question(record.answer)
    assert answer_stops("en")[0] == "\nQuestion:"
    # `stop: []` in the config turns the prompt's stops off, and is another cache entry
    raw = LLM(
        {"provider": "groq", "model": "llama-3.1-8b-instant", "max_retries": 0, "stop": []},
        cache=cache,
        backend=backend,
    )
    unstopped = generate_answers(raw, {"q1": "¿Cuántas citas?"}, RUN, CORPUS, language="es", k=2)[0]
    assert backend.calls[-1].stop == [] and not unstopped.cached and invents_question(unstopped.answer)
    assert len(cache) == 2


def barrier_backend(parties) -> ScriptedBackend:
    """Answers only once `parties` calls are in flight together (or times out): proves how many
    run at once. Its calls record the threads that made them."""
    barrier = threading.Barrier(parties, timeout=5)

    def reply(call):
        barrier.wait()
        return "ok"

    return ScriptedBackend(reply, tokens=(1, 1))


def test_one_worker_rule_local_serial_hosted_parallel(tmp_path):
    queries = {f"q{i}": f"¿Pregunta {i}?" for i in range(3)}
    # its own key variable: its own rate limiter (limiters are shared per provider and key)
    hosted = LLM(
        {
            "provider": "groq",
            "model": "llama-3.1-8b-instant",
            "concurrency": 3,
            "max_retries": 0,
            "api_key_env": "TEST_WORKERS_API_KEY",
        },
        cache=ResponseCache(tmp_path / "c.sqlite"),
        backend=barrier_backend(3),
    )
    assert hosted.workers == 3
    assert all(r.answer == "ok" for r in generate_answers(hosted, queries, {}, CORPUS, language="es"))
    backend = barrier_backend(1)
    local = LLM(
        {"provider": "local", "concurrency": 3, "cache": "off", "max_retries": 0, "local_workers": 1}, backend=backend
    )
    assert local.workers == 1
    assert all(r.answer == "ok" for r in generate_answers(local, queries, {}, CORPUS, language="es"))
    assert len({c.thread for c in backend.calls}) == 1  # one at a time, whatever `concurrency` says
    # the bundled model: one model per core (at most 4); any other file, and transformers: one
    cores = min(os.cpu_count() or 1, 4)
    assert LLM({"provider": "local"}).workers == cores
    assert LLM({"provider": "local", "local_backend": "transformers"}).workers == 1
    assert LLM({"provider": "local", "model": str(tmp_path / "other.gguf")}).workers == 1
