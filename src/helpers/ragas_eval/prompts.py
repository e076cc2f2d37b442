"""The four ragas metrics, built with traced prompts and, for Spanish, adjusted instructions.

ragas 0.4.3's prompts are English (instruction + English few-shot examples + the input as JSON).
With Spanish inputs a judge tends to (a) write the extracted statements / generated questions in
English, which lowers answer relevancy (cross-language cosine similarity is lower even with a
multilingual embedder) and makes statement-vs-context matching a translation task, and (b) judge
wording instead of meaning. For `language="es"` each prompt therefore gets (the `ragas` field of
helpers.languages.es, where a new language writes its own):
  * one extra sentence in its instruction: keep statements/questions in the input's language,
    never translate, and judge meaning (paraphrases and synonyms count as support);
  * one hand-written Spanish few-shot example (general medicine, deliberately not taken from the
    obstetrics guideline or the seed document's worked examples, which are the measurement set).
The English examples and ragas's output schemas stay as they are, so parsing and the score
formulas are ragas's own. `ragas`'s `adapt_prompts()` (LLM-translated examples) is not used: it
needs a strong judge and its output would be unreviewed.

Traced prompts record every parsed judge output of the (sample, metric) being scored (a
contextvar set by the runner) so each score can be shown with the judge's reasons, and cap
ragas's output-repair attempts (`parse_retries`, default 1: one "fix the JSON" call).
"""

from __future__ import annotations

import contextvars

from ragas.metrics._answer_correctness import AnswerCorrectness, CorrectnessClassifier
from ragas.metrics._answer_relevance import ResponseRelevancePrompt, ResponseRelevancy
from ragas.metrics._context_precision import (
    ContextPrecisionPrompt,
    LLMContextPrecisionWithoutReference,
    LLMContextPrecisionWithReference,
)
from ragas.metrics._context_recall import ContextRecallClassificationPrompt, LLMContextRecall
from ragas.metrics._faithfulness import Faithfulness, NLIStatementPrompt, StatementGeneratorPrompt

from helpers.errors import UserError
from helpers.languages import Language, corpus_language
from helpers.llm.structured import RESPONSE_SCHEMA
from helpers.ragas_eval import RAGAS_CHOICES
from helpers.ragas_eval import RAGAS_METRICS as METRIC_NAMES

# Parsed judge outputs of the current (sample, metric): a list of (role, dict); None elsewhere.
PROMPT_OUTPUTS: contextvars.ContextVar[list | None] = contextvars.ContextVar("prompt_outputs", default=None)


# ragas's 0/1 fields, typed int in its output models
_BINARY_FIELDS = {"verdict", "attributed", "noncommittal"}


def judge_schema(
    schema: dict, *, counts: dict[str, int] | None = None, max_string: int = 160, max_items: int = 8
) -> dict:
    """ragas's output schema, bounded for a grammar: 0/1 fields can only be 0 or 1, lists hold 1 to
    `max_items` entries (exactly `counts[name]` where the input has a list of that name: one verdict
    per input statement) and strings 2 to `max_string` characters, so a small judge can neither
    answer with an empty list nor ramble past max_tokens and leave its JSON unfinished."""
    counts = counts or {}
    top = {name for name, node in schema.get("properties", {}).items() if node.get("type") == "array"}

    def bound(node, name=None):
        if isinstance(node, dict):
            node = {k: bound(v, k) for k, v in node.items()}
            if node.get("type") == "integer" and name in _BINARY_FIELDS:
                node["enum"] = [0, 1]
            elif node.get("type") == "string":
                node.setdefault("minLength", 2)
                node.setdefault("maxLength", max_string)
            elif node.get("type") == "array":
                exact = counts.get(name) if name in top else None
                node.setdefault("minItems", exact or 1)
                node.setdefault("maxItems", exact or max_items)
            return node
        if isinstance(node, list):
            return [bound(v, name) for v in node]
        return node

    return bound(schema)


class _Traced:
    role = "output"
    parse_retries = 1

    async def generate_multiple(self, llm, data, n=1, temperature=None, stop=None, callbacks=None, retries_left=3):
        # the prompt's output model as the call's JSON schema: a llama.cpp judge is then
        # constrained by a grammar and never fails to parse (LLMConfig.structured_output)
        counts = {k: len(v) for k, v in data.model_dump().items() if isinstance(v, list)}
        token = RESPONSE_SCHEMA.set(judge_schema(self.output_model.model_json_schema(), counts=counts))
        try:
            return await super().generate_multiple(
                llm=llm,
                data=data,
                n=n,
                temperature=temperature,
                stop=stop,
                callbacks=callbacks,
                retries_left=min(retries_left, self.parse_retries),
            )
        finally:
            RESPONSE_SCHEMA.reset(token)

    def process_output(self, output, input):
        output = super().process_output(output, input)
        outputs = PROMPT_OUTPUTS.get()
        if outputs is not None:
            outputs.append((self.role, output.model_dump()))
        return output


def _traced(base, role: str, parse_retries: int, language: Language):
    cls = type(base.__name__, (_Traced, base), {})  # same class name: same ragas prompt name
    prompt = cls()
    prompt.role, prompt.parse_retries = role, parse_retries
    if language.ragas:  # the language's adjustments (helpers.languages: Spanish's), its example after ragas's
        extra_instruction, example_input, example_output = language.ragas[role]
        prompt.instruction = base.instruction + " " + extra_instruction
        prompt.examples = list(base.examples) + [
            (base.input_model(**example_input), base.output_model(**example_output))
        ]
        prompt.language = language.name
    return prompt


def build_metrics(
    names=METRIC_NAMES, *, llm=None, embeddings=None, language: str = "en", strictness: int = 3, parse_retries: int = 1
) -> dict:
    """{name: ragas metric} for the names in METRIC_NAMES, with traced prompts; `language="es"`
    adds the Spanish adjustments (helpers.languages.es `RAGAS`; a language without adjustments:
    ragas's prompts unchanged).

    Scores follow ragas 0.4.3 (Es et al. 2023, arXiv:2309.15217; ragas docs "Available metrics"):
      faithfulness      = supported statements / statements extracted from the answer
      answer_relevancy  = mean cosine(question, q_i) over `strictness` questions q_i generated from
                          the answer; 0 if every generation marks the answer noncommittal
      context_precision = sum_k (precision@k * v_k) / (sum_k v_k + 1e-10), v_k the 0/1 verdict
                          "context k was useful for the reference", k in ranking order
      context_recall    = reference sentences attributed to the contexts / reference sentences
      answer_correctness = 0.75 * F1(TP, FP, FN) + 0.25 * cosine(answer, reference), TP/FP/FN the
                          judge's classes of the answer's and the reference's statements (opt-in)
    """
    unknown = set(names) - set(RAGAS_CHOICES)
    if unknown:
        raise UserError(f"unknown RAGAS metrics {sorted(unknown)}; valid: {list(RAGAS_CHOICES)}")
    lang = corpus_language(language)
    metrics = {}
    for name in names:
        if name == "faithfulness":
            metric = Faithfulness(llm=llm)
            metric.statement_generator_prompt = _traced(StatementGeneratorPrompt, "statements", parse_retries, lang)
            metric.nli_statements_prompt = _traced(NLIStatementPrompt, "verdicts", parse_retries, lang)
        elif name == "answer_relevancy":
            metric = ResponseRelevancy(llm=llm, embeddings=embeddings, strictness=strictness)
            metric.question_generation = _traced(ResponseRelevancePrompt, "question", parse_retries, lang)
        elif name == "answer_correctness":
            metric = AnswerCorrectness(llm=llm, embeddings=embeddings)
            metric.statement_generator_prompt = _traced(StatementGeneratorPrompt, "statements", parse_retries, lang)
            metric.correctness_prompt = _traced(CorrectnessClassifier, "correctness", parse_retries, lang)
        elif name == "context_precision":
            metric = LLMContextPrecisionWithReference(llm=llm)
            metric.context_precision_prompt = _traced(ContextPrecisionPrompt, "context_verdict", parse_retries, lang)
            # a question without a reference: RAGAS's reference-free variant, each context judged
            # useful (or not) for the answer that was given instead (the runner picks it)
            metric.without_reference = LLMContextPrecisionWithoutReference(llm=llm)
            metric.without_reference.context_precision_prompt = _traced(
                ContextPrecisionPrompt, "context_verdict", parse_retries, lang
            )
        else:
            metric = LLMContextRecall(llm=llm)
            metric.context_recall_prompt = _traced(
                ContextRecallClassificationPrompt, "classifications", parse_retries, lang
            )
        metrics[name] = metric
    return metrics
