"""RAGAS (ragas 0.4.3) with the workbench's judge and embeddings.

    from helpers.ragas_eval import RagasJudge, samples_from_records
    result = RagasJudge(LLM({...}), language="es").score(samples_from_records(records, ds.answers))
    result.rows          # qid, metric, value, reason (+ error_kind, judge_calls, seconds, detail)

Faithfulness, answer relevancy, context precision (with reference) and context recall; every
judge call goes through `helpers.llm` (cached, rate-limited, retried, accounted); answer
relevancy's n questions are n separate samples (n=1-only providers work); Spanish inputs get
adjusted prompts (`helpers.ragas_eval.prompts`); a metric that cannot be computed is NaN with its
reason, and the run goes on.
"""
from helpers.ragas_eval.adapters import (WorkbenchEmbeddings, WorkbenchRagasLLM, default_embedder,
                                         make_ragas_embeddings, make_ragas_llm)
from helpers.ragas_eval.prompts import METRIC_NAMES, build_metrics
from helpers.ragas_eval.runner import RagasJudge, RagasResult, RagasSample, classify_failure, samples_from_records

__all__ = ["RagasJudge", "RagasResult", "RagasSample", "samples_from_records", "classify_failure",
           "build_metrics", "METRIC_NAMES", "WorkbenchRagasLLM", "WorkbenchEmbeddings", "make_ragas_llm",
           "make_ragas_embeddings", "default_embedder"]
