"""Answer generation: retrieved contexts in, one cited answer (and its record) out.

    from helpers.generation.answering import generate_answers
    records = generate_answers(llm, ds.queries, run, ds.corpus, language=ds.language, k=5)

The prompt is a setting (helpers.generation.answer_prompts: cite-sentences by default), with one text per
language (helpers.languages): Spanish corpora get Spanish instructions (and so Spanish answers),
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

from helpers.generation.answer_prompts import AnswerPrompt, get_prompt
from helpers.languages import corpus_language, prompt_languages
from helpers.llm import LLM, LLMError

MIN_TRUNCATED_TOKENS = 40  # a context cut shorter than this is dropped instead

# The prompts live in helpers.generation.answer_prompts (a registry: `generation.prompt` in a config);
# PROMPTS keeps the default's texts by language for code that reads them.
PROMPTS = {lang: get_prompt().texts(lang) for lang in prompt_languages()}


def estimate_tokens(text: str, language: str = "en") -> int:
    """Tokens in `text`, estimated as ceil(characters / chars-per-token), the language's measured
    ratio (helpers.languages: Spanish 2.7, English 4; a language without texts of its own, English's).
    An estimate, not a tokenizer: cheap, provider-independent, and conservative for Spanish."""
    return math.ceil(len(text) / corpus_language(language).chars_per_token)


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
    quote: str | None = None  # what a prompt asked for before the answer (quote-then-answer's quote)
    # the model was still writing when max_tokens ran out: the answer may end mid-sentence (the
    # 1.5B model's copy of q9's weight-gain table lost its last band at 160 tokens)
    at_max_tokens: bool = False

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
    ratio = corpus_language(language).chars_per_token
    contexts: list = []
    dropped: list = []
    used = 0
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


def answer_stops(language: str = "en", prompt: str | dict | AnswerPrompt | None = None) -> list[str]:
    """The answer prompt's stop sequences for `language` (helpers.generation.answer_prompts defines them);
    `llm.config.stop`, when set, replaces them."""
    return get_prompt(prompt).texts(language)["stop"]


def build_messages(
    question: str, contexts: list[str], language: str = "en", prompt: str | dict | AnswerPrompt | None = None
) -> list[dict]:
    """The chat messages of the answer prompt (default cite-sentences): contexts numbered [1]..[k]
    in the given order."""
    prompt = get_prompt(prompt).texts(language)
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
    prompt: str | dict | AnswerPrompt | None = None,
) -> AnswerRecord:
    """One answer with `prompt` (helpers.generation.answer_prompts; default cite-sentences); never raises for
    a failed call: the record carries the error instead."""
    prompt = get_prompt(prompt)
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
            build_messages(question, [c["text"] for c in contexts], language, prompt),
            max_tokens=max_tokens,
            stop=answer_stops(language, prompt),
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
        record.answer, record.quote = prompt.extract(result.text or "", language)
        record.input_tokens, record.output_tokens = call.input_tokens, call.output_tokens
        record.at_max_tokens = bool(call.max_tokens) and call.output_tokens >= call.max_tokens
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
    prompt: str | dict | AnswerPrompt | None = None,
) -> list[AnswerRecord]:
    """Answer every query from its retrieved documents (`run` = {qid: {doc_id: score}}), in
    parallel up to the provider's concurrency (the local model: one at a time). Failed items are
    recorded, never raised. Records come back in the order of `queries`."""

    def one(qid: str) -> AnswerRecord:
        contexts, dropped = select_contexts(
            run.get(qid, {}), corpus, k=k, max_context_tokens=max_context_tokens, language=language
        )
        return generate_answer(
            llm, qid, queries[qid], contexts, language=language, dropped=dropped, max_tokens=max_tokens, prompt=prompt
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
