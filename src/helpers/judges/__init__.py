"""Judges, one module each, in one registry (`JUDGES`, config name -> class), as `BUILDERS` is
for architectures: offline TRACe, TRACe with an LLM, RAGAS, RAGAS with the evidence model, the
evidence model on its own (`evidence`), and retrieval metrics against qrels. A new judge is one
module in this package with a `@register`ed class (helpers.judges.judge_base): the registry's first
read imports every module of the package (`discover`), so no list names it, and importing this
package imports no judge; a judge's `order` says where reports list it. The runner, analysis,
figures and panels read judges and metrics from here.
"""

from helpers.judges.judge_base import (
    JUDGES,
    SCORE_COLUMNS,
    Judge,
    Metric,
    active_judges,
    discover,
    grounding_metrics,
    is_quality,
    judge_class,
    judge_modules,
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
    "discover",
    "grounding_metrics",
    "is_quality",
    "judge_class",
    "judge_modules",
    "metric_names",
    "register",
    "score_row",
]
