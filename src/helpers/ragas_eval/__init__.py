"""RAGAS (ragas 0.4.3's `ragas.metrics.collections`) with the workbench's judge and embeddings.

    from helpers.ragas_eval import RagasJudge, samples_from_records
    result = RagasJudge(LLM({...}), language="es").score(samples_from_records(records, ds.answers))
    result.rows          # qid, metric, value, reason (+ error_kind, judge_calls, seconds, detail)

Faithfulness, answer relevancy, context precision (with reference) and context recall; every
judge call goes through `helpers.llm` (cached, rate-limited, retried, accounted); answer
relevancy's n questions are n separate samples (n=1-only providers work); Spanish inputs get
adjusted prompts (`helpers.ragas_eval.prompts`); a metric that cannot be computed is NaN with its
reason, and the run goes on.

RAGAS_METRICS is the one definition of the four metric names (RAGAS_CHOICES adds answer correctness). It is defined here, and the rest of
the package is imported on first use (PEP 562 module __getattr__), so that
`from helpers.ragas_eval import RAGAS_METRICS` does not import ragas (several seconds).
"""

from __future__ import annotations

import importlib

# The RAGAS metric names as ragas 0.4.3 names its columns, in the seed benchmark's order: the default.
RAGAS_METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")
# Asked for by name in `judges.ragas.metrics`: answer correctness against the reference (the LLM's
# take on what the offline `correctness` judge measures; two statement calls and one verdict call).
RAGAS_OPTIONAL = ("answer_correctness",)
RAGAS_CHOICES = RAGAS_METRICS + RAGAS_OPTIONAL

# public name -> submodule that defines it (imported lazily)
_LAZY = {
    "RagasJudge": "ragas_scoring",
    "RagasResult": "ragas_scoring",
    "classify_failure": "ragas_scoring",
    "samples_from_records": "ragas_scoring",
    "build_metrics": "prompts",
    "METRIC_NAMES": "prompts",
    "WorkbenchRagasLLM": "adapters",
    "WorkbenchEmbeddings": "adapters",
    "default_embedder": "adapters",
}

__all__ = ["RAGAS_METRICS", "RAGAS_OPTIONAL", "RAGAS_CHOICES", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"helpers.ragas_eval.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'helpers.ragas_eval' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
