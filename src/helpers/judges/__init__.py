"""Judges, one module each, in one registry (`JUDGES`, config name -> class), as `BUILDERS` is
for architectures: offline TRACe, TRACe with an LLM, RAGAS, RAGAS with the evidence model, the
evidence model on its own (`evidence`), and retrieval metrics against qrels. A new judge is one module with a `@register`ed class
(helpers.judges.base); the runner, analysis, figures and panels read judges and metrics from here.
"""

# registers them, in the order a run scores with them  # isort: skip
from helpers.judges import offline_trace, ragas, ragas_evidence, evidence_support, correctness, context_recall, citations, refusal, retrieval, trace_llm  # noqa: F401,E402,I001  # fmt: skip
from helpers.judges.base import (
    JUDGES,
    SCORE_COLUMNS,
    Judge,
    Metric,
    active_judges,
    grounding_metrics,
    is_quality,
    judge_class,
    metric_names,
    register,
    score_row,
)

__all__ = [
    "JUDGES",
    "SCORE_COLUMNS",
    "Judge",
    "Metric",
    "active_judges",
    "grounding_metrics",
    "is_quality",
    "judge_class",
    "metric_names",
    "register",
    "score_row",
]
