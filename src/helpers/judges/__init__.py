"""Judges, one module each, in one registry (`JUDGES`, config name -> class), as `BUILDERS` is
for architectures: offline TRACe, TRACe with an LLM, RAGAS, RAGAS with the evidence model, the
evidence model on its own (`evidence`), and retrieval metrics against qrels. A new judge is one
module in this package with a `@register`ed class (helpers.judges.judge_base): `discover` imports every
module of the package, so no list names it; the runner, analysis, figures and panels read judges
and metrics from here.
"""

import importlib
import pkgutil

# the built-in judges, in the order a run scores with them: JUDGES keeps it, and reports, summaries
# and panels list judges in JUDGES's order. Named here for that order alone (and so that the
# import graph, tools/import_graph.py, sees them): any other module of the package is a judge too,
# imported by `discover` below, after these, by name.
from helpers.judges import offline, ragas, ragas_evidence, evidence, correctness, context_recall, ragchecker, ragchecker_llm, citations, refusal, retrieval, trace_llm  # noqa: F401,E402,I001  # fmt: skip  # isort: skip
from helpers.judges.judge_base import (
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

# the modules of this package that hold no judge: the contract, the front end, and tools that read
# the registry (importing them here would load the data layer for every user of a judge)
NOT_JUDGES = frozenset({"judge_base", "evaluate", "judge_eval", "external", "validity"})


def judge_modules() -> list[str]:
    """The judge modules on the package's path (a folder added to `helpers.judges.__path__` is
    searched too), by name; subpackages (judges.models) and NOT_JUDGES are left out."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.ispkg and m.name not in NOT_JUDGES)


def discover() -> list[str]:
    """Import every judge module not imported yet (each registers its judges as it is imported):
    a new judge is a module in this package, named in no list. The names of the judges this call
    registered, in registry order."""
    before = set(JUDGES)
    for name in judge_modules():
        importlib.import_module(f"{__name__}.{name}")
    return [name for name in JUDGES if name not in before]


discover()

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
