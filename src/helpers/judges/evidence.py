"""The evidence model on its own as a judge: P(supported) for each sentence of an answer, read by a
cross-encoder fine-tuned on NLI and RAGBench support labels (helpers.judges.models.evidence_model) against
the few context sentences that share the most rare words with it. No LLM.

Two numbers per answer: `support`, the lowest sentence's P(supported) (an answer holds only if every
sentence does, as RAGBench's adherence and HHEM read it), and `supported_share`, the share of its
claim-bearing sentences at P >= `threshold` (how much of the answer holds). Sentences with fewer
than two content words ("Yes.") make no claim and count as supported.

    judges: {evidence: {}}            # or {evidence: {threshold: 0.7}}; needs `make evidence-model`
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from helpers.judges.judge_base import Judge, Metric, register
from helpers.judges.models.evidence_model import EvidenceModel


class EvidenceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float = Field(0.5, ge=0.0, le=1.0, description="P(supported) at which a sentence counts as supported")


@register
class EvidenceSupport(Judge[EvidenceOptions]):
    name, label = "evidence", "evidence model"
    order = 40  # where reports, summaries and panels list it
    metrics = (
        Metric("support", grounding=True, description="lowest sentence P(supported)"),
        Metric("supported_share", quality=False, description="share of sentences at P >= threshold"),
    )
    Options = EvidenceOptions

    def prepare(self) -> None:
        self.model = EvidenceModel.load()  # a UserError naming `make evidence-model` when none is trained
        self.artefact = f"evidence model {self.model.path} (trained {self.model.card.get('trained_at', '?')})"

    def score_one(self, sample):
        p = self.model.response_support(list(sample.contexts), sample.answer, sample.question)
        if len(p) == 0:
            reason = "the answer has no sentence"
            return [("support", None, reason), ("supported_share", None, reason)], None
        share = float((p >= self.options.threshold).mean())
        weakest = int(p.argmin())
        reason = f"{len(p)} sentence(s); weakest #{weakest + 1} at {p[weakest]:.2f}"
        return [("support", float(p.min()), reason), ("supported_share", share, reason)], None
