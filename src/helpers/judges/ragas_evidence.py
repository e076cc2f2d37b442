"""RAGAS faithfulness with the evidence model (a cross-encoder fine-tuned on NLI and RAGBench
support labels) as its verdict step (helpers.judges.models.evidence_faithfulness)."""

from __future__ import annotations

import contextlib
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from helpers.judges.judge_base import Judge, Metric, register
from helpers.judges.models.evidence_faithfulness import EvidenceFaithfulness
from helpers.judges.models.evidence_model import EvidenceModel
from helpers.judges.ragas import Ragas  # the statements come from the RAGAS judge's LLM


class RagasEvidenceOptions(BaseModel):
    """`judges: {ragas_evidence: {enabled: null, statements: llm}}`."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool | None = Field(
        None, description="None: on when an evidence model is trained (make evidence-model); true: always"
    )
    statements: Literal["llm", "sentences"] = Field(
        "llm",
        description=(
            "the answer's statements: from the `ragas` judge's LLM (one schema-constrained call per answer; "
            "the answer's sentences where it fails), or the answer's sentences (no LLM call)"
        ),
    )


@register
class RagasEvidence(Judge[RagasEvidenceOptions]):
    name, label = "ragas_evidence", "RAGAS faithfulness (evidence model)"
    order = 30  # where reports, summaries and panels list it
    uses_llm = True
    metrics = (Metric("faithfulness", grounding=True),)
    Options = RagasEvidenceOptions

    @classmethod
    def enabled(cls, config) -> bool:
        if not config.judges.on(cls.name):
            return False
        setting = cls.options_of(config).enabled
        return EvidenceModel.exists() if setting is None else setting  # None: on when one is trained

    @classmethod
    def llm_name(cls, config) -> str | None:
        llm = Ragas.llm_name(config)
        return llm if llm and cls.options_of(config).statements == "llm" else None

    @classmethod
    def switch(cls, judges, on, llm=None):
        judges["ragas_evidence"] = {"enabled": True} if on else False

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
