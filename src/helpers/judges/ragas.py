"""RAGAS (Es et al. 2023) faithfulness, answer relevancy, context precision and recall, with an
LLM as judge (helpers.ragas_eval.runner); answer correctness against the reference when
`judges.ragas_metrics` names it."""

from __future__ import annotations

import queue

import pandas as pd

from helpers.judges.base import Judge, Metric, register
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


@register
class Ragas(Judge):
    name, label = "ragas", "RAGAS judge"
    uses_llm = True
    metrics = METRICS

    @classmethod
    def enabled(cls, config) -> bool:
        return bool(config.judges.ragas)

    @classmethod
    def metrics_for(cls, config=None):
        chosen = config.judges.ragas_metrics if config is not None else RAGAS_METRICS
        return tuple(m for m in METRICS if m.name in chosen)

    @classmethod
    def llm_name(cls, config) -> str | None:
        return config.judges.ragas

    @classmethod
    def switch(cls, judges, on, llm=None):
        judges["ragas"] = llm if on else None

    def wants(self, sample):
        cfg = self.config.judges
        return (cfg.ragas_questions is None or sample.qid in cfg.ragas_questions) and (
            cfg.ragas_architectures is None or sample.architecture in cfg.ragas_architectures
        )

    def prepare(self) -> None:
        from helpers.ragas_eval.runner import RagasJudge  # imports ragas (seconds)

        cfg = self.config.judges
        llm = self.context.llm(cfg.ragas)
        # as many answers at once as the judge takes calls at once (the local model: one per
        # model of its pool), so fewer models wait while a sample's metrics finish one by one
        # (default run, 3 samples on 2 models: 252 s one by one, 203 s two at a time, 239 s all
        # three at once); each in flight has its own judge and client, whose calls are its own
        self.workers = llm.workers
        self.judges = queue.Queue()
        for i in range(self.workers):
            self.judges.put(
                RagasJudge(
                    llm if i == 0 else self.context.llm(cfg.ragas, copy=True),
                    language=self.language,
                    metrics=cfg.ragas_metrics,
                    timeout_s=cfg.ragas_timeout_s,
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
