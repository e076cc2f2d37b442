"""Refusals: does the answer say the documents do not hold the answer, and was that right?

No LLM. An answer is a refusal when one of its sentences is the "not in the documents" phrase its
prompt asked for, or any registered prompt's, in the corpus's language (helpers.generation.answer_prompts:
words matched case- and accent-insensitively; a short phrase such as "No sé" only as a whole
sentence, so "No se recomienda ..." is an answer). Two metrics, each on its own questions:

    refusal        on questions marked unanswerable (a questions file's `answerable: false`, or a
                   generated test set's kind `unanswerable`): 1 when the model refused. Its mean per
                   architecture is the refusal rate (higher is better).
    false_refusal  on every other question: 1 when the model refused although the question is
                   answerable (lower is better). With references, a refusal there is also wrong.

    judges: {refusal: {}}     # on by itself where some question is unanswerable (`needed_by`)

A question is unanswerable when the questions file says `answerable: false` or its reference says
the documents do not answer it (helpers.data.contracts.Dataset.mark_unanswerable); the correctness
judge then scores a refusal there as the right answer.
"""

from __future__ import annotations

from helpers.generation.answer_prompts import refusal_reader
from helpers.judges.judge_base import Judge, Metric, register


@register
class Refusal(Judge):
    name, label = "refusal", "refusals"
    order = 100  # where reports, summaries and panels list it
    metrics = (
        Metric("refusal", description="on unanswerable questions: 1 if the answer says the documents do not answer it"),
        Metric(
            "false_refusal",
            higher_is_better=False,
            description="on answerable questions: 1 if the answer refuses although the documents answer it",
        ),
    )

    @classmethod
    def needed_by(cls, data) -> bool:
        return bool(getattr(data, "unanswerable", None))

    def prepare(self) -> None:
        self.refuses = refusal_reader(getattr(self.config, "generation", None), self.language)

    def score_one(self, sample):
        refused = float(self.refuses(sample.answer))
        said = "refused" if refused else "answered"
        if sample.unanswerable:
            return [
                ("refusal", refused, f"unanswerable question: {said}"),
                ("false_refusal", None, "the question is marked unanswerable"),
            ], None
        return [
            ("refusal", None, "the question is answerable"),
            ("false_refusal", refused, f"answerable question: {said}"),
        ], None
