"""RAGAS (Es et al. 2023) faithfulness, answer relevancy, context precision and recall, with an
LLM as judge (helpers.ragas_eval.ragas_scoring); answer correctness against the reference when
`judges.ragas.metrics` names it."""

from __future__ import annotations

import queue

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from helpers.judges.judge_base import Judge, Metric, register
from helpers.ragas_eval import RAGAS_CHOICES, RAGAS_METRICS

# the hand labels each metric is checked against (helpers.judges.validity): is the reference's answer
# in the contexts; does the answer say what the reference says
_VALIDATED_BY = {"context_recall": "context", "answer_correctness": "correct"}
# answer relevancy is a mean cosine similarity, which can fall below 0
METRICS = tuple(
    Metric(
        m,
        low=-1.0 if m == "answer_relevancy" else 0.0,
        grounding=(m == "faithfulness"),
        validated_by=_VALIDATED_BY.get(m),
    )
    for m in RAGAS_CHOICES
)


class RagasOptions(BaseModel):
    """`judges: {ragas: {llm: local, metrics: [...], questions: null, architectures: null, timeout_s: 180}}`."""

    model_config = ConfigDict(extra="forbid")
    llm: str = Field("local", description="name of the LLM (in llms) that judges RAGAS")
    metrics: list[str] = Field(
        default_factory=lambda: list(RAGAS_METRICS),
        description=f"RAGAS metrics to score; the four by default, any of {list(RAGAS_CHOICES)}",
    )
    questions: list[str] | None = Field(
        None, description="qids scored with RAGAS, for every architecture (RAGAS is slow on the local model); None: all"
    )
    architectures: list[str] | None = Field(None, description="architectures scored with RAGAS; None: all")
    timeout_s: float = Field(
        180.0,
        gt=0,
        description=(
            "seconds one RAGAS metric of one sample may take before it is NaN ('timeout'); a slow local "
            "judge needs more: context precision makes one call per context, and the 1.5B model on 2 "
            "cores took over 180 s for 5 contexts"
        ),
    )

    @field_validator("metrics")
    @classmethod
    def _known_metrics(cls, names: list[str]) -> list[str]:
        unknown = [n for n in names if n not in RAGAS_CHOICES]
        if unknown:
            raise ValueError(f"unknown RAGAS metric(s) {unknown}; valid: {list(RAGAS_CHOICES)}")
        return names


@register
class Ragas(Judge[RagasOptions]):
    name, label = "ragas", "RAGAS judge"
    order = 20  # where reports, summaries and panels list it
    uses_llm = True
    metrics = METRICS
    Options = RagasOptions

    @classmethod
    def metrics_for(cls, config=None):
        chosen = cls.options_of(config).metrics if config is not None else RAGAS_METRICS
        return tuple(m for m in METRICS if m.name in chosen)

    @classmethod
    def llm_name(cls, config) -> str | None:
        return cls.options_of(config).llm if cls.enabled(config) else None

    @classmethod
    def switch(cls, judges, on, llm=None):
        judges["ragas"] = {**(judges.get("ragas") or {}), "llm": llm} if on else False

    def wants(self, sample):
        options = self.options
        return (options.questions is None or sample.qid in options.questions) and (
            options.architectures is None or sample.architecture in options.architectures
        )

    def prepare(self) -> None:
        from helpers.ragas_eval.ragas_scoring import RagasJudge  # imports ragas (seconds)

        options = self.options
        llm = self.context.llm(options.llm)
        # as many answers at once as the judge takes calls at once (the local model: one per
        # model of its pool), so fewer models wait while a sample's metrics finish one by one
        # (default run, 3 samples on 2 models: 252 s one by one, 203 s two at a time, 239 s all
        # three at once); each in flight has its own judge and client, whose calls are its own
        self.workers = llm.workers
        self.judges: queue.Queue[RagasJudge] = queue.Queue()
        for i in range(self.workers):
            self.judges.put(
                RagasJudge(
                    llm if i == 0 else self.context.llm(options.llm, copy=True),
                    language=self.language,
                    metrics=options.metrics,
                    timeout_s=options.timeout_s,
                )
            )

    def score_one(self, sample):
        # ragas calls the judge from worker threads, which llm.track() (per thread) does not
        # see: the judge's own accounting of this sample's calls is used instead
        judge = self.judges.get()
        try:
            scored = judge.score([sample])
        finally:
            self.judges.put(judge)
        return (
            [
                (r["metric"], None if pd.isna(r["value"]) else float(r["value"]), r["reason"])
                for r in scored.rows.to_dict("records")
            ],
            scored.totals,
        )
