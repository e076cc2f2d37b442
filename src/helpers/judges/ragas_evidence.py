"""RAGAS faithfulness with the evidence model (a cross-encoder fine-tuned on NLI and RAGBench
support labels) as its verdict step (helpers.judges.models.evidence_faithfulness)."""

from __future__ import annotations

import contextlib
import math

from helpers.judges.base import Judge, Metric, register
from helpers.judges.models.evidence import EvidenceModel
from helpers.judges.models.evidence_faithfulness import EvidenceFaithfulness


@register
class RagasEvidence(Judge):
    name, label = "ragas_evidence", "RAGAS faithfulness (evidence model)"
    uses_llm = True
    metrics = (Metric("faithfulness", grounding=True),)

    @classmethod
    def enabled(cls, config) -> bool:
        setting = config.judges.ragas_evidence
        return EvidenceModel.exists() if setting is None else setting  # None: on when one is trained

    @classmethod
    def llm_name(cls, config) -> str | None:
        cfg = config.judges
        return cfg.ragas if cfg.ragas and cfg.ragas_evidence_statements == "llm" else None

    @classmethod
    def switch(cls, judges, on, llm=None):
        judges["ragas_evidence"] = on

    def prepare(self) -> None:
        evidence = EvidenceModel.load()
        name = self.llm_name(self.config)
        self.llm = self.context.llm(name) if name else None
        self.judge = EvidenceFaithfulness(evidence, self.llm)
        self.artefact = f"evidence model {evidence.path} (trained {evidence.card.get('trained_at', '?')})"

    def score_one(self, sample):
        with self.llm.track() if self.llm else contextlib.nullcontext([]) as calls:
            out = self.judge.score(sample.question, sample.answer, list(sample.contexts))
        value = None if math.isnan(out["value"]) else out["value"]
        return [("faithfulness", value, out["reason"])], (self.llm.usage(calls) if self.llm else None)
