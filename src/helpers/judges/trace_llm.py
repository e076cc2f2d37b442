"""TRACe with an LLM as the annotator, RAGBench's prompt (helpers.judges.models.trace_annotator)."""

from __future__ import annotations

from helpers.judges.base import Judge, register
from helpers.judges.models.trace_annotator import llm_judge
from helpers.judges.offline_trace import TRACE
from helpers.trace.scoring import METRICS as TRACE_METRICS


@register
class LLMTrace(Judge):
    name, label = "trace_llm", "TRACe LLM judge"
    uses_llm = True
    metrics = TRACE

    @classmethod
    def enabled(cls, config) -> bool:
        return bool(config.judges.trace_llm)

    @classmethod
    def llm_name(cls, config) -> str | None:
        return config.judges.trace_llm

    @classmethod
    def switch(cls, judges, on, llm=None):
        judges["trace_llm"] = llm if on else None

    def prepare(self) -> None:
        self.llm = self.context.llm(self.config.judges.trace_llm)
        # one answer per model of the judge's pool at once (llm.track() is per thread, so each
        # answer still accounts its own calls)
        self.workers = self.llm.workers

    def score_one(self, sample):
        with self.llm.track() as calls:
            judgement = llm_judge(self.llm, sample.question, list(sample.contexts), sample.answer)
        return (
            [(m, getattr(judgement.scores, m), judgement.error or "") for m in TRACE_METRICS],
            self.llm.usage(calls),
        )
