"""TRACe with an LLM as the annotator, RAGBench's prompt (helpers.judges.models.trace_annotator)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from helpers.judges.judge_base import Judge, register
from helpers.judges.models.trace_annotator import llm_judge
from helpers.judges.offline import TRACE
from helpers.trace.scoring import METRICS as TRACE_METRICS


class TraceLLMOptions(BaseModel):
    """`judges: {trace_llm: {llm: NAME}}` (or `trace_llm: NAME`)."""

    model_config = ConfigDict(extra="forbid")
    llm: str = Field(description="name of the LLM (in llms) that annotates TRACe")


@register
class LLMTrace(Judge[TraceLLMOptions]):
    name, label = "trace_llm", "TRACe LLM judge"
    order = 120  # where reports, summaries and panels list it
    uses_llm = True
    metrics = TRACE
    Options = TraceLLMOptions

    @classmethod
    def llm_name(cls, config) -> str | None:
        return cls.options_of(config).llm if cls.enabled(config) else None

    @classmethod
    def switch(cls, judges, on, llm=None):
        judges["trace_llm"] = {"llm": llm} if on else False

    def prepare(self) -> None:
        self.llm = self.context.llm(self.options.llm)
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
