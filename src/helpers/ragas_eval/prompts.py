"""The ragas metrics (`ragas.metrics.collections`), built with traced prompts and, for Spanish,
adjusted instructions.

ragas 0.4's prompts are English (instruction + English few-shot examples + the input as JSON).
With Spanish inputs a judge tends to (a) write the extracted statements / generated questions in
English, which lowers answer relevancy (cross-language cosine similarity is lower even with a
multilingual embedder) and makes statement-vs-context matching a translation task, and (b) judge
wording instead of meaning. For `language="es"` each prompt therefore gets (the `ragas` field of
helpers.languages.es, where a new language writes its own):
  * one extra sentence in its instruction: keep statements/questions in the input's language,
    never translate, and judge meaning (paraphrases and synonyms count as support);
  * one hand-written Spanish few-shot example (general medicine, deliberately not taken from the
    obstetrics guideline or the seed document's worked examples, which are the measurement set).
The English examples and ragas's output models stay as they are, so parsing and the score
formulas are ragas's own. ragas's `BasePrompt.adapt()` (LLM-translated examples) is not used: it
needs a strong judge and its output would be unreviewed.

A traced prompt registers each prompt text it writes, with its role and input, in the trace of the
(sample, metric) being scored (`adapters.TRACE`), so the judge adapter knows the call's schema
bounds and how many samples to draw, and each parsed output is kept for the score's reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragas.metrics.collections import (
    AnswerCorrectness,
    AnswerRelevancy,
    ContextPrecisionWithoutReference,
    ContextPrecisionWithReference,
    ContextRecall,
    Faithfulness,
)

from helpers.errors import UserError
from helpers.languages import Language, corpus_language
from helpers.ragas_eval import RAGAS_CHOICES
from helpers.ragas_eval import RAGAS_METRICS as METRIC_NAMES
from helpers.ragas_eval.adapters import TRACE

if TYPE_CHECKING:
    from ragas.metrics.collections.base import BaseMetric
    from ragas.prompt.metrics.base_prompt import BasePrompt

    _Prompt = BasePrompt[Any, Any]  # what _Traced is mixed into (_traced): a ragas prompt
else:
    _Prompt = object


class _Traced(_Prompt):
    role = "output"
    samples = 1  # completions wanted of one prompt text (answer relevancy: its strictness)

    def to_string(self, data) -> str:
        text = super().to_string(data)
        trace = TRACE.get()
        if trace is not None:
            trace.prompts[text] = (self, data)
        return text


def _traced(base, role: str, language: Language, samples: int = 1):
    """`base` (a ragas prompt) as a traced prompt of the same class name, with the language's
    adjustments (helpers.languages: Spanish's) after ragas's instruction and examples."""
    cls = type(type(base).__name__, (_Traced, type(base)), {})
    prompt = cls()
    prompt.role, prompt.samples = role, samples
    if language.ragas:
        extra_instruction, example_input, example_output = language.ragas[role]
        prompt.instruction = base.instruction + " " + extra_instruction
        prompt.examples = list(base.examples) + [
            (base.input_model(**example_input), base.output_model(**example_output))
        ]
        prompt.language = language.name
    return prompt


def build_metrics(names=METRIC_NAMES, *, llm, embeddings=None, language: str = "en", strictness: int = 3) -> dict:
    """{name: ragas metric} for the names in RAGAS_CHOICES, with traced prompts; `llm` a ragas
    InstructorBaseRagasLLM (`adapters.WorkbenchRagasLLM`), `embeddings` a ragas BaseRagasEmbedding
    (for answer relevancy and correctness); `language="es"` adds the Spanish adjustments
    (helpers.languages.es `RAGAS`; a language without adjustments: ragas's prompts unchanged).

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
        metric: BaseMetric  # each branch's own class
        if name == "faithfulness":
            metric = Faithfulness(llm=llm)
            metric.statement_generator_prompt = _traced(metric.statement_generator_prompt, "statements", lang)
            metric.nli_statement_prompt = _traced(metric.nli_statement_prompt, "verdicts", lang)
        elif name == "answer_relevancy":
            metric = AnswerRelevancy(llm=llm, embeddings=embeddings, strictness=strictness)
            metric.prompt = _traced(metric.prompt, "question", lang, samples=strictness)
        elif name == "answer_correctness":
            metric = AnswerCorrectness(llm=llm, embeddings=embeddings)
            metric.statement_generator_prompt = _traced(metric.statement_generator_prompt, "statements", lang)
            metric.correctness_classifier_prompt = _traced(metric.correctness_classifier_prompt, "correctness", lang)
        elif name == "context_precision":
            metric = ContextPrecisionWithReference(llm=llm)
            metric.prompt = _traced(metric.prompt, "context_verdict", lang)
            # a question without a reference: RAGAS's reference-free variant, each context judged
            # useful (or not) for the answer that was given instead (the runner picks it)
            without = ContextPrecisionWithoutReference(llm=llm)
            without.prompt = _traced(without.prompt, "context_verdict", lang)
            # an attribute of our own on ragas's metric (read by ragas_scoring), which ragas does not declare
            metric.without_reference = without  # type: ignore[attr-defined]
        else:
            metric = ContextRecall(llm=llm)
            metric.prompt = _traced(metric.prompt, "classifications", lang)
        metrics[name] = metric
    return metrics
