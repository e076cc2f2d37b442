"""RAGChecker's diagnostic metrics without an LLM: claims checked against claims and contexts by the
statement attribution `context_recall` fits (issue 49).

RAGChecker (Ru et al., "RAGChecker: A Fine-grained Framework for Diagnosing Retrieval-Augmented
Generation", NeurIPS 2024 Datasets and Benchmarks, Table 1 and section 3.3) splits the answer and
the reference (its "ground truth") into claims and checks each for entailment by the other text and
by each retrieved chunk. Here a claim is a sentence or list item (`context_recall.statements`; the
answer's citation markers stripped first) and "entailed" is P(attributed) >= `threshold`
(`context_recall.attribution`: e5 cosine, content-word and number recall; fitted on MaternaQA-es,
checked against hand labels). With a = the answer's claims, g = the reference's, a chunk
"relevant" when it entails some claim of g, a claim of a "correct" when the reference entails it:

    precision          |a correct| / |a|                    recall    |g entailed by the answer| / |g|
    f1                 their harmonic mean
    claim_recall       |g entailed by some chunk| / |g|    (the retriever)
    context_precision  |relevant chunks| / |chunks|         (the retriever)
    context_utilization |g entailed by a chunk and by the answer| / |g entailed by a chunk|
    noise_sensitivity_relevant    |a incorrect, entailed by a relevant chunk| / |a|
    noise_sensitivity_irrelevant  |a incorrect, entailed by an irrelevant chunk and by no relevant one| / |a|
    hallucination      |a incorrect, entailed by no chunk| / |a|
    self_knowledge     |a correct, entailed by no chunk| / |a|
    faithfulness       |a entailed by some chunk| / |a|

The package itself (`ragchecker` 0.1.9) needs an LLM for claim extraction and checking
(docs/measurements/ragchecker-package.md). Each metric's agreement with people's labels is in
helpers/judges/validity.csv; one that does not agree is kept out of the headline, as for every judge.

    judges: {ragchecker: {}}            # in a run; or `helpers judge FILE --judges ragchecker`
"""

from __future__ import annotations

from typing import cast

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from helpers.generation.answer_checks import strip_markers
from helpers.judges.context_recall import THRESHOLD, attribution, attribution_features, statements
from helpers.judges.judge_base import Judge, Metric, register
from helpers.judges.models.reference_match import ReferenceMatcher


class ClaimOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float = Field(
        THRESHOLD, ge=0, le=1, description="P(attributed) at which a text entails a claim (context_recall's)"
    )


def _share(mask: np.ndarray, of: np.ndarray | None = None) -> float | None:
    """|mask & of| / |of| (of: every element), None for an empty denominator."""
    of = np.ones_like(mask, bool) if of is None else of
    return float((mask & of).sum() / of.sum()) if of.sum() else None


def _any(table: np.ndarray, axis: int) -> np.ndarray:
    """`table.any(axis)` of a 2-D table: 1-D (numpy's stubs also allow a scalar, for a 1-D input)."""
    return cast(np.ndarray, table.any(axis=axis))


def claim_metrics(answer_in_reference, reference_in_answer, reference_in_chunks, answer_in_chunks) -> dict:
    """RAGChecker's metrics from the four entailment tables (boolean arrays): answer claims the
    reference entails [a], reference claims the answer entails [g], [g, chunk], [a, chunk]."""
    correct, recalled = np.asarray(answer_in_reference, bool), np.asarray(reference_in_answer, bool)
    g_chunks, a_chunks = np.asarray(reference_in_chunks, bool), np.asarray(answer_in_chunks, bool)
    relevant = _any(g_chunks, 0)  # a chunk that entails some reference claim
    retrieved = _any(g_chunks, 1)  # a reference claim some chunk entails
    by_relevant = _any(a_chunks[:, relevant], 1)
    by_irrelevant = _any(a_chunks[:, ~relevant], 1) & ~by_relevant
    by_any = _any(a_chunks, 1)
    precision, recall = _share(correct), _share(recalled)
    return {
        "precision": precision,
        "recall": recall,
        "f1": None if precision is None or recall is None else 2 * precision * recall / (precision + recall or 1),
        "claim_recall": _share(retrieved),
        "context_precision": _share(relevant),
        "context_utilization": _share(recalled, retrieved),
        "noise_sensitivity_relevant": _share(~correct & by_relevant),
        "noise_sensitivity_irrelevant": _share(~correct & by_irrelevant),
        "hallucination": _share(~correct & ~by_any),
        "self_knowledge": _share(correct & ~by_any),
        "faithfulness": _share(by_any),
    }


@register
class ClaimChecks(Judge[ClaimOptions]):
    name, label = "ragchecker", "RAGChecker's metrics by statement attribution (offline)"
    order = 70  # where reports, summaries and panels list it
    Options = ClaimOptions
    metrics = (
        Metric("precision", validated_by="correct", description="share of the answer's claims the reference entails"),
        Metric("recall", validated_by="correct", description="share of the reference's claims the answer entails"),
        Metric("f1", validated_by="correct", description="harmonic mean of claim precision and recall"),
        Metric("claim_recall", validated_by="context", description="share of the reference's claims some chunk holds"),
        Metric("context_precision", validated_by="context", description="share of chunks holding some reference claim"),
        Metric(
            "context_utilization",
            quality=False,
            description="of the reference's claims the chunks hold, the share the answer says too",
        ),
        Metric(
            "noise_sensitivity_relevant",
            higher_is_better=False,
            quality=False,
            description="share of the answer's claims that are wrong and come from a relevant chunk",
        ),
        Metric(
            "noise_sensitivity_irrelevant",
            higher_is_better=False,
            quality=False,
            description="share of the answer's claims that are wrong and come from an irrelevant chunk only",
        ),
        Metric(
            "hallucination",
            higher_is_better=False,
            validated_by="supported",
            description="share of the answer's claims that are wrong and in no chunk",
        ),
        Metric(
            "self_knowledge",
            quality=False,
            description="share of the answer's claims that are right although in no chunk",
        ),
        Metric("faithfulness", grounding=True, description="share of the answer's claims some chunk holds"),
    )
    requires = ("answer", "reference", "contexts")

    def prepare(self) -> None:
        self.matcher = ReferenceMatcher(self.language)
        self.artefact = "context_recall's statement attribution (multilingual e5, weights fitted on MaternaQA-es)"

    def entails(self, claims: list[str], texts: list[str]) -> np.ndarray:
        """[claim, text]: does the text hold the claim (P(attributed) >= threshold)?"""
        if not claims or not texts:
            return np.zeros((len(claims), len(texts)), bool)
        return attribution(attribution_features(self.matcher, claims, texts)) >= self.options.threshold

    def score_one(self, sample):
        answer = strip_markers(sample.answer)
        answer_claims, reference_claims = statements(answer), statements(sample.reference)
        if not answer_claims or not reference_claims:
            reason = "the answer has no statement" if not answer_claims else "the reference has no statement"
            return [(m.name, None, reason) for m in self.metrics], None
        contexts = list(sample.contexts)
        a_chunks, g_chunks = self.entails(answer_claims, contexts), self.entails(reference_claims, contexts)
        correct = self.entails(answer_claims, [sample.reference])[:, 0]
        recalled = self.entails(reference_claims, [answer])[:, 0]
        values = claim_metrics(correct, recalled, g_chunks, a_chunks)
        reason = (
            f"{len(answer_claims)} answer claims ({int(correct.sum())} in the reference, "
            f"{int(a_chunks.any(axis=1).sum())} in a chunk); {len(reference_claims)} reference claims "
            f"({int(g_chunks.any(axis=1).sum())} in a chunk, {int(recalled.sum())} in the answer); "
            f"relevant chunks {[int(j) + 1 for j in np.flatnonzero(g_chunks.any(axis=0))]}"
        )
        return [(name, value, reason) for name, value in values.items()], None
