"""Answer generation: retrieved contexts in, one cited answer (and its record) out.

    from helpers.generation import generate_answers
    records = generate_answers(llm, ds.queries, run, ds.corpus, language=ds.language, k=5)

One prompt per language: Spanish corpora get Spanish instructions (and so Spanish answers),
every other language gets English ones. Contexts are numbered [1]..[k] in ranking order so the
answer can cite them. A token budget caps how much context goes into the prompt (see
`estimate_tokens`). Every answer gets an `AnswerRecord`; a failed generation is recorded with its
error and `answer=None`, and the batch goes on. Works with every provider of `helpers.llm`.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from helpers.llm import LLM, LLMError

# Characters per token, measured with SmolLM2's tokenizer (the bundled model; 49k-token BPE) on
# 175 guideline chunks (Spanish: 2.73) and 200 covidqa documents (English: 4.72). Larger-vocabulary
# tokenizers (Llama 3, GPT-4o) split Spanish into fewer tokens, so these ratios over-estimate
# for them: the budget errs on the safe side. English uses the usual rule of thumb, 4.
CHARS_PER_TOKEN = {"es": 2.7, "en": 4.0}
DEFAULT_CHARS_PER_TOKEN = 3.0  # other languages: between the two
MIN_TRUNCATED_TOKENS = 40  # a context cut shorter than this is dropped instead

PROMPTS = {
    "es": {
        "system": (
            "Eres un asistente clínico que responde preguntas usando solo los contextos "
            "numerados que se te dan. Responde en español con una o dos frases completas que den "
            "el dato pedido, y cita al final de cada frase el número del contexto que la respalda "
            "entre corchetes, por ejemplo: «Se recomienda ... [2].» Si los contextos no contienen "
            'la respuesta, responde: "No encuentro la respuesta en los documentos '
            'proporcionados." No inventes datos.'
        ),
        "user": "Contextos:\n{contexts}\n\nPregunta: {question}\nRespuesta:",
        "no_context": "(no se recuperó ningún contexto)",
        "stop": ["\nPregunta:", "\nContextos:"],
    },
    "en": {
        "system": (
            "You are an assistant that answers questions using only the numbered contexts "
            "given to you. Answer in English with one or two complete sentences that give what "
            "is asked, and end each sentence with the number of the context that supports it in "
            'square brackets, e.g.: "It is recommended ... [2]." If the contexts do not contain '
            'the answer, reply: "I cannot find the answer in the provided documents." Do not '
            "make anything up."
        ),
        "user": "Contexts:\n{contexts}\n\nQuestion: {question}\nAnswer:",
        "no_context": "(no context was retrieved)",
        "stop": ["\nQuestion:", "\nContexts:"],
    },
}
# "system": full sentences, each ending with its citation. The earlier wording ("breve y precisa;
# cita los contextos con su número") made Qwen2.5-Coder-1.5B answer "[1]" alone (q3) or a bare
# "30 minutos" (q4); with this one, none of 6 BM25 answers tried was a bare citation or figure (the
# README's "Answers that mean something").
# "stop": where an answer is over. A small model that has answered goes on with the prompt's
# own pattern (a new "Pregunta: ... Respuesta:" exchange or another context block); the answer
# ends before the prompt's labels reappear. At most 4 per prompt (OpenAI's and Groq's limit).


def prompt_language(language: str | None) -> str:
    """'es' for Spanish corpora, 'en' for every other language."""
    return "es" if (language or "").lower().startswith("es") else "en"


def estimate_tokens(text: str, language: str = "en") -> int:
    """Tokens in `text`, estimated as ceil(characters / chars-per-token) with the ratios above.
    An estimate, not a tokenizer: cheap, provider-independent, and conservative for Spanish."""
    ratio = CHARS_PER_TOKEN.get(prompt_language(language) if language else "en", DEFAULT_CHARS_PER_TOKEN)
    return math.ceil(len(text) / ratio)


@dataclass
class AnswerRecord:
    qid: str
    question: str
    language: str
    contexts: list[dict] = field(default_factory=list)  # rank, doc_id, score, text (as prompted), truncated
    dropped: list[str] = field(default_factory=list)  # retrieved doc ids left out by the token budget
    answer: str | None = None
    context_tokens_est: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cached: bool = False
    provider: str = ""
    model: str = ""
    error: str | None = None
    error_kind: str | None = None

    @property
    def ok(self) -> bool:
        return self.answer is not None

    @property
    def context_texts(self) -> list[str]:
        return [c["text"] for c in self.contexts]

    def to_dict(self) -> dict:
        return asdict(self)


def select_contexts(
    ranking: dict[str, float],
    corpus: dict[str, dict],
    *,
    k: int = 5,
    max_context_tokens: int = 1500,
    language: str = "en",
) -> tuple[list[dict], list[str]]:
    """The top-k retrieved documents, in ranking order, that fit `max_context_tokens` (estimated).
    The first one that does not fit is cut at a word boundary if at least MIN_TRUNCATED_TOKENS
    remain; later ones are dropped. Returns (contexts, dropped doc ids)."""
    ranked = sorted(ranking.items(), key=lambda item: -item[1])[:k]
    ratio = CHARS_PER_TOKEN.get(prompt_language(language), DEFAULT_CHARS_PER_TOKEN)
    contexts, dropped, used = [], [], 0
    for doc_id, score in ranked:
        text = " ".join(str(corpus[doc_id]["text"]).split())
        tokens = estimate_tokens(text, language)
        left = max_context_tokens - used
        truncated = False
        if tokens > left:
            if left < MIN_TRUNCATED_TOKENS:
                dropped.append(doc_id)
                continue
            text = text[: int((left - 1) * ratio)].rsplit(" ", 1)[0] + " …"
            tokens, truncated = estimate_tokens(text, language), True
        contexts.append(
            {"rank": len(contexts) + 1, "doc_id": doc_id, "score": float(score), "text": text, "truncated": truncated}
        )
        used += tokens
    return contexts, dropped


def answer_stops(language: str = "en") -> list[str]:
    """The answer prompt's stop sequences for `language` (PROMPTS is the one place defining them);
    `llm.config.stop`, when set, replaces them."""
    return list(PROMPTS[prompt_language(language)]["stop"])


def build_messages(question: str, contexts: list[str], language: str = "en") -> list[dict]:
    """The chat messages of the answer prompt: contexts numbered [1]..[k] in the given order."""
    prompt = PROMPTS[prompt_language(language)]
    block = "\n\n".join(f"[{i}] {text}" for i, text in enumerate(contexts, start=1)) or prompt["no_context"]
    return [
        {"role": "system", "content": prompt["system"]},
        {"role": "user", "content": prompt["user"].format(contexts=block, question=question.strip())},
    ]


def generate_answer(
    llm: LLM,
    qid: str,
    question: str,
    contexts: list[dict],
    *,
    language: str = "en",
    dropped: list[str] | None = None,
    max_tokens: int | None = None,
) -> AnswerRecord:
    """One answer; never raises for a failed call: the record carries the error instead."""
    record = AnswerRecord(
        qid,
        question,
        language,
        contexts=contexts,
        dropped=list(dropped or []),
        provider=llm.config.provider,
        model=llm.config.model,
        context_tokens_est=sum(estimate_tokens(c["text"], language) for c in contexts),
    )
    start = time.perf_counter()
    try:
        result = llm.complete(
            build_messages(question, [c["text"] for c in contexts], language),
            max_tokens=max_tokens,
            stop=answer_stops(language),
        )
    except LLMError as exc:
        call = getattr(exc, "record", None)
        record.error, record.error_kind = str(exc), getattr(exc, "kind", "error")
        if call is not None:
            record.latency_s, record.cost_usd = call.latency_s, call.cost_usd
    except Exception as exc:  # a backend failure the layer does not map (e.g. context overflow)
        record.error, record.error_kind = f"{type(exc).__name__}: {exc}", "exception"
    else:
        call = result.record
        record.answer = (result.text or "").strip()
        record.input_tokens, record.output_tokens = call.input_tokens, call.output_tokens
        record.latency_s, record.cost_usd, record.cached = call.latency_s, call.cost_usd, call.cached
    if record.latency_s == 0.0:
        record.latency_s = time.perf_counter() - start
    return record


def generate_answers(
    llm: LLM,
    queries: dict[str, str],
    run: dict[str, dict[str, float]],
    corpus: dict[str, dict],
    *,
    language: str = "en",
    k: int = 5,
    max_context_tokens: int = 1500,
    max_tokens: int | None = None,
) -> list[AnswerRecord]:
    """Answer every query from its retrieved documents (`run` = {qid: {doc_id: score}}), in
    parallel up to the provider's concurrency (the local model: one at a time). Failed items are
    recorded, never raised. Records come back in the order of `queries`."""

    def one(qid: str) -> AnswerRecord:
        contexts, dropped = select_contexts(
            run.get(qid, {}), corpus, k=k, max_context_tokens=max_context_tokens, language=language
        )
        return generate_answer(
            llm, qid, queries[qid], contexts, language=language, dropped=dropped, max_tokens=max_tokens
        )

    with ThreadPoolExecutor(max_workers=llm.workers) as pool:
        return list(pool.map(one, list(queries)))


def records_frame(records: list[AnswerRecord]):
    """One row per answer (contexts as a list of doc ids) for display and saving."""
    import pandas as pd

    rows = []
    for r in records:
        row = r.to_dict()
        row["doc_ids"] = [c["doc_id"] for c in r.contexts]
        row.pop("contexts")
        rows.append(row)
    return pd.DataFrame(rows)
