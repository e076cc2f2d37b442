"""How the two reference documents read a score: bands per metric family, each metric's own reading,
and the diagnostic patterns that read several scores together. Data, with its source; the cards,
reports and figures all read it from here.

- TRACe (trace-evaluation-guide.md, "8. Interpreting Scores"): one scale for the four metrics,
  Excellent >= 0.80, Good >= 0.60, Fair >= 0.40, Poor below.
- RAGAS (ragas-evaluation-framework.md, "Interpreting RAGAS Scores"): a scale per metric,
  Excellent >= 0.90 / 0.85 / 0.85 / 0.80 (faithfulness / answer relevancy / context precision /
  context recall), Good >= 0.80 / 0.75 / 0.75 / 0.70, Poor < 0.5, and Needs improvement between.
  The seed writes Needs improvement as "< 0.7 / 0.65 / 0.65 / 0.6", which leaves [0.7, 0.8) of
  faithfulness (and the like for the others) in no band; here it falls in Needs improvement: it is
  not Good, and not Poor.

Patterns are named for an architecture only when its interval supports every condition (a "> t"
condition needs the interval's low end above t, a "< t" condition its high end below t); when the
means meet the conditions but an interval straddles a threshold the pattern is "possible", shown
as such and not claimed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from helpers.inference.classical import MIN_INTERVAL_N, mean_text

# cited to the repository's page that copies the reference documents' scales (docs/glossary.md), and
# through it to the documents themselves (../shared/seeds/, which a user of the repository lacks)
TRACE_SOURCE = "docs/glossary.md#bands, from the TRACe guide's 8. Interpreting Scores"
RAGAS_SOURCE = "docs/glossary.md#bands, from the RAGAS framework's Interpreting RAGAS Scores"
RAGAS_PATTERNS = "docs/glossary.md#patterns, from the RAGAS framework's Diagnostic Patterns"
TRACE_PATTERNS = "docs/glossary.md#patterns, from the TRACe guide's reading of each metric"

COLOURS = {
    "Excellent": "#2d6a4f",
    "Good": "#52b788",
    "Fair": "#e9c46a",
    "Needs improvement": "#e9c46a",
    "Poor": "#e76f51",
    "n/a": "#adb5bd",
}


@dataclass(frozen=True)
class Band:
    name: str
    floor: float  # the band holds scores >= floor (and below the next band's floor)

    @property
    def colour(self) -> str:
        return COLOURS[self.name]


NO_BAND = Band("n/a", -math.inf)


@dataclass(frozen=True)
class BandTable:
    """One metric family's bands: {metric: bands, best first}, and where they come from."""

    family: str
    source: str
    bands: dict[str, tuple[Band, ...]]


def _scale(excellent: float, good: float, third: str, third_floor: float) -> tuple[Band, ...]:
    return (Band("Excellent", excellent), Band("Good", good), Band(third, third_floor), Band("Poor", 0.0))


TRACE_METRICS = ("relevance", "utilization", "completeness", "adherence")
RAGAS_METRICS = ("faithfulness", "answer_relevancy", "context_precision", "context_recall")

TRACE_BANDS = BandTable(
    "TRACe", TRACE_SOURCE, {m: _scale(0.80, 0.60, "Fair", 0.40) for m in TRACE_METRICS + ("average",)}
)
RAGAS_BANDS = BandTable(
    "RAGAS",
    RAGAS_SOURCE,
    {
        "faithfulness": _scale(0.90, 0.80, "Needs improvement", 0.50),
        "answer_relevancy": _scale(0.85, 0.75, "Needs improvement", 0.50),
        "context_precision": _scale(0.85, 0.75, "Needs improvement", 0.50),
        "context_recall": _scale(0.80, 0.70, "Needs improvement", 0.50),
    },
)
TABLES = (TRACE_BANDS, RAGAS_BANDS)

# Each RAGAS metric's own "Score Interpretation" (ragas-evaluation-framework.md, one per metric):
# (floor, reading), best first; the top reading of faithfulness and context recall is 1.0 exactly
READINGS: dict[str, tuple[tuple[float, str], ...]] = {
    "faithfulness": (
        (1.0, "all claims are supported by the context"),
        (0.8, "mostly faithful, minor unsupported details"),
        (0.6, "some hallucination present"),
        (0.0, "significant hallucination"),
    ),
    "answer_relevancy": (
        (0.9, "highly relevant, answers the question directly"),
        (0.7, "relevant, may include tangential information"),
        (0.5, "partially relevant, misses key aspects"),
        (0.0, "off-topic or irrelevant"),
    ),
    "context_precision": (
        (0.9, "nearly all retrieved contexts are relevant"),
        (0.7, "good precision, some noise"),
        (0.5, "significant irrelevant context"),
        (0.0, "poor retrieval, mostly irrelevant contexts"),
    ),
    "context_recall": (
        (1.0, "all the information needed was retrieved"),
        (0.8, "most information retrieved, minor gaps"),
        (0.6, "significant information missing"),
        (0.0, "incomplete retrieval, major gaps"),
    ),
}


def base_metric(metric: str) -> str:
    """'ragas/faithfulness' -> 'faithfulness' (cards and summaries name metrics judge/metric)."""
    return metric.rsplit("/", 1)[-1]


def band_table(metric: str) -> BandTable | None:
    """The family whose bands read `metric` (None: no reference document bands it)."""
    name = base_metric(metric)
    return next((table for table in TABLES if name in table.bands), None)


def band(metric: str, value: float | None) -> Band:
    """The band of `value` for `metric` (NO_BAND for a missing value or a metric no document bands)."""
    table = band_table(metric)
    if table is None or value is None or (isinstance(value, float) and math.isnan(value)):
        return NO_BAND
    bands = table.bands[base_metric(metric)]
    return next((b for b in bands if value >= b.floor), bands[-1])


def reading(metric: str, value: float | None) -> str:
    """The seed's own sentence for this value of a RAGAS metric ('' for other metrics)."""
    ranges = READINGS.get(base_metric(metric))
    if not ranges or value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return next((text for floor, text in ranges if value >= floor), ranges[-1][1])


def scale_text(bands: tuple[Band, ...]) -> str:
    """'Excellent >= 0.9, Good >= 0.8, Needs improvement >= 0.5, Poor below'."""
    return ", ".join(f"{b.name} >= {b.floor:g}" for b in bands[:-1]) + f", {bands[-1].name} below"


def bands_legend(metrics) -> str:
    """Which bands read these metrics, and where they come from (one line per family present)."""
    names = {base_metric(m) for m in metrics}
    lines = []
    for table in TABLES:
        present = [m for m in table.bands if m in names]
        if not present:
            continue
        scales = {scale_text(table.bands[m]) for m in present}
        if len(scales) == 1:
            lines.append(f"{table.family} bands ({table.source}): {scales.pop()}.")
        else:
            each = "; ".join(f"{m}: {scale_text(table.bands[m])}" for m in present)
            lines.append(f"{table.family} bands ({table.source}): {each}.")
    return "\n".join(lines) or "No reference document bands these metrics."


# How far people agree with a metric's judge (helpers.judges.validity writes these statuses): a
# band and a pattern are given only where people's labels back the metric
AGREES, BY_CONSTRUCTION = "agrees", "against people's labels"
TRUSTED = (AGREES, BY_CONSTRUCTION)


def mean_with_band(metric: str, mean, low, high, n, validity: str | None = None) -> str:
    """'0.850 [0.800, 0.900] Good', or '0.740 (n = 1) Needs improvement'; no band word for a metric
    no reference document bands, nor for one whose `validity` (helpers.judges.validity.status)
    people's labels do not back: a report table's cell."""
    if validity is not None and validity not in TRUSTED:
        return mean_text(mean, low, high, n)
    scale = band(metric, mean)
    return mean_text(mean, low, high, n) + ("" if scale is NO_BAND else f" {scale.name}")


# ---- patterns


@dataclass(frozen=True)
class Condition:
    metric: str
    op: str  # ">", ">=", "<"
    threshold: float

    def by_value(self, value: float) -> bool:
        return {">": value > self.threshold, ">=": value >= self.threshold, "<": value < self.threshold}[self.op]

    def by_interval(self, low: float, high: float) -> bool:
        """Every value in [low, high] meets the condition."""
        return self.by_value(low) if self.op in (">", ">=") else self.by_value(high)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.threshold:g}"


@dataclass(frozen=True)
class Pattern:
    family: str
    name: str
    conditions: tuple[Condition, ...]
    problem: str
    fix: str
    source: str


def _c(text: str) -> Condition:
    metric, op, threshold = text.split()
    return Condition(metric, op, float(threshold))


PATTERNS = (
    # ragas-evaluation-framework.md, "Diagnostic Patterns" 1-4
    Pattern(
        "RAGAS",
        "High precision, low recall",
        (_c("context_precision > 0.8"), _c("context_recall < 0.6")),
        "retrieval finds relevant documents but misses information the answer needs",
        "increase k (retrieve more documents); try hybrid search",
        RAGAS_PATTERNS,
    ),
    Pattern(
        "RAGAS",
        "High recall, low precision",
        (_c("context_recall > 0.8"), _c("context_precision < 0.6")),
        "retrieval finds everything but with too much noise",
        "improve query processing; add reranking; use HyDE",
        RAGAS_PATTERNS,
    ),
    Pattern(
        "RAGAS",
        "High faithfulness, low relevancy",
        (_c("faithfulness > 0.9"), _c("answer_relevancy < 0.6")),
        "the LLM uses the context correctly but does not answer the question",
        "improve the answer prompt; tune the LLM's temperature",
        RAGAS_PATTERNS,
    ),
    Pattern(
        "RAGAS",
        "Low faithfulness, high relevancy",
        (_c("faithfulness < 0.7"), _c("answer_relevancy > 0.8")),
        "the LLM answers the right question but states facts the context does not support",
        "strengthen the prompt's grounding instructions; a more reliable LLM",
        RAGAS_PATTERNS,
    ),
    # trace-evaluation-guide.md, the interpretations under each TRACe metric (high >= 0.6, low < 0.4:
    # its Good and Fair floors)
    Pattern(
        "TRACe",
        "Low utilization, low relevance",
        (_c("utilization < 0.4"), _c("relevance < 0.4")),
        "a greedy retriever returning irrelevant documents",
        "improve the embedding model or the retrieval strategy (hybrid, rerank)",
        TRACE_PATTERNS,
    ),
    Pattern(
        "TRACe",
        "Low utilization alone",
        (_c("utilization < 0.4"), _c("relevance >= 0.4")),
        "a weak generator fails to use good context",
        "prompt the generator to use the context; a stronger generator",
        TRACE_PATTERNS,
    ),
    Pattern(
        "TRACe",
        "High relevance, low utilization",
        (_c("relevance >= 0.6"), _c("utilization < 0.4")),
        "good documents are retrieved but the generator does not use them",
        "prompt the generator to use the context; fewer, better contexts",
        TRACE_PATTERNS,
    ),
    Pattern(
        "TRACe",
        "Low completeness, high utilization",
        (_c("completeness < 0.4"), _c("utilization >= 0.6")),
        "the generator uses the context but misses key relevant facts in it",
        "allow longer answers or improve generation",
        TRACE_PATTERNS,
    ),
    Pattern(
        "TRACe",
        "Low adherence",
        (_c("adherence < 0.4"),),
        "the answers hold claims the context does not support (hallucination)",
        "add guardrails against hallucination; a stronger generator",
        TRACE_PATTERNS,
    ),
    Pattern(
        "TRACe",
        "High relevance, utilization and completeness",
        (_c("relevance >= 0.6"), _c("utilization >= 0.6"), _c("completeness >= 0.6")),
        "none: the ideal RAG system",
        "",
        TRACE_PATTERNS,
    ),
)


def _interval(part: pd.DataFrame, metric: str) -> tuple[float, float, float, int] | None:
    """(mean, low, high, n) of the summary row whose metric is `metric` (judge/metric or bare)."""
    rows = part[part["metric"].map(base_metric) == metric]
    if rows.empty:
        return None
    row = rows.iloc[0]
    return float(row["mean"]), float(row["ci_low"]), float(row["ci_high"]), int(row.get("n", 0) or 0)


def detect(table: pd.DataFrame) -> pd.DataFrame:
    """The patterns of each architecture in a summary table (architecture, metric, mean, ci_low,
    ci_high, n: helpers.experiment.analysis.summary): one row per (architecture, pattern) whose
    means meet every condition; `status` 'named' when the intervals support every condition,
    'possible' when one straddles its threshold. Patterns over metrics the run lacks are skipped, and
    so are those over a mean of fewer than MIN_INTERVAL_N samples (no interval to read) or over a
    metric whose `validity` column (when the table has one) is not TRUSTED: a pattern's thresholds
    mean something only where people's labels back its metrics."""
    rows = []
    columns = ["architecture", "family", "pattern", "status", "evidence", "problem", "fix", "source"]
    if table is None or table.empty:
        return pd.DataFrame(columns=columns)
    if "validity" in table:
        table = table[table["validity"].isin(TRUSTED)]
    for architecture, part in table.groupby("architecture", sort=False):
        for pattern in PATTERNS:
            found = [_interval(part, c.metric) for c in pattern.conditions]
            values = [v for v in found if v is not None]
            if len(values) < len(found) or any(math.isnan(v[0]) or v[3] < MIN_INTERVAL_N for v in values):
                continue
            if not all(c.by_value(v[0]) for c, v in zip(pattern.conditions, values)):
                continue
            supported = all(
                math.isfinite(v[1]) and math.isfinite(v[2]) and c.by_interval(v[1], v[2])
                for c, v in zip(pattern.conditions, values)
            )
            evidence = "; ".join(
                f"{c}: {mean_text(v[0], v[1], v[2], digits=2)}, n = {v[3]}" for c, v in zip(pattern.conditions, values)
            )
            rows.append(
                dict(
                    architecture=architecture,
                    family=pattern.family,
                    pattern=pattern.name,
                    status="named" if supported else "possible",
                    evidence=evidence,
                    problem=pattern.problem,
                    fix=pattern.fix,
                    source=pattern.source,
                )
            )
    return pd.DataFrame(rows, columns=columns)


def patterns_of(scores: dict[str, float]) -> list[Pattern]:
    """The patterns that hold for one answer's scores ({metric: value}, no interval)."""
    found = []
    for pattern in PATTERNS:
        given = [scores.get(c.metric) for c in pattern.conditions]
        values = [v for v in given if v is not None]
        if len(values) < len(given) or any(isinstance(v, float) and math.isnan(v) for v in values):
            continue
        if all(c.by_value(v) for c, v in zip(pattern.conditions, values)):
            found.append(pattern)
    return found
