"""Score cards: each score with its band, what it means, and what to change when it is low; and
the diagnostic patterns that read several TRACe scores together. Bands, meanings, actions and
patterns are the seed guide's (../shared/seeds/trace-evaluation-guide.md, sections 2 and 8;
the RAGAS meanings from ragas-evaluation-framework.md)."""

from __future__ import annotations

import html
import math

# score range -> band (trace-evaluation-guide.md, "8. Interpreting Scores")
BANDS = (
    (0.80, "Excellent", "#2d6a4f"),
    (0.60, "Good", "#52b788"),
    (0.40, "Fair", "#e9c46a"),
    (0.00, "Poor", "#e76f51"),
)

MEANINGS = {
    "relevance": (
        "Are the retrieved documents relevant? The share of the context that is relevant to the question.",
        "Improve the embedding model or the retrieval strategy (hybrid, rerank).",
    ),
    "utilization": (
        "Are the documents used? The share of the context that the answer uses.",
        "Add more relevant documents; improve retrieval.",
    ),
    "completeness": (
        "Is the answer complete? The share of the relevant context that the answer uses.",
        "Allow longer answers or improve generation.",
    ),
    "adherence": (
        "Is the answer grounded? 1 when every sentence is supported by the context.",
        "Add guardrails against hallucination; a stronger generator.",
    ),
    "faithfulness": (
        "Share of the answer's claims that the contexts support.",
        "Ground the generator: fewer, better contexts; a stronger model.",
    ),
    "answer_relevancy": (
        "Does the answer address the question? (questions regenerated from it, compared with the original)",
        "Prompt for direct answers; check the question is answerable.",
    ),
    "context_precision": ("Are the useful contexts ranked first?", "Rerank; fewer candidates."),
    "context_recall": (
        "Does the context hold what the reference answer needs?",
        "Retrieve more (k), improve chunking or the retriever.",
    ),
}
# On RAGBench, relevance and utilization count sentences of every document, so typical values
# are 0.1-0.4 even for good systems: the seed's bands read them as Poor; the card says so.
FRACTION_OF_CONTEXT = {"relevance", "utilization"}


def band(value: float | None) -> tuple[str, str]:
    """(band name, colour) of a score in [0, 1]; ('n/a', grey) for a missing score."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a", "#adb5bd"
    for floor, name, colour in BANDS:
        if value >= floor:
            return name, colour
    return BANDS[-1][1], BANDS[-1][2]


def diagnose(scores: dict) -> list[str]:
    """The seed guide's patterns that hold for these TRACe scores (high >= 0.6, low < 0.4)."""

    def level(name):
        value = scores.get(name)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return "high" if value >= 0.6 else "low" if value < 0.4 else "mid"

    r, u, c, a = (level(m) for m in ("relevance", "utilization", "completeness", "adherence"))
    found = []
    if u == "low" and r == "low":
        found.append("Low utilization with low relevance: the retriever returns irrelevant documents.")
    elif u == "low":
        found.append("Low utilization alone: the generator does not use the context it was given.")
    if r == "high" and u == "low":
        found.append("High relevance, low utilization: good documents retrieved, but the generator ignores them.")
    if c == "low" and u == "high":
        found.append(
            "Low completeness with high utilization: the answer uses the context but misses relevant facts in it."
        )
    if a == "low":
        found.append("Adherence 0: the answer holds claims the context does not support (hallucination).")
    if r == u == c == "high" and a != "low":
        found.append("High relevance, utilization and completeness: the RAG system works as intended.")
    return found


def card_html(
    metric: str, value: float | None, interval: tuple[float, float] | None = None, n: int | None = None
) -> str:
    """One card: the metric, its value (and interval), its band, what it means, what to change."""
    name, colour = band(value)
    meaning, action = MEANINGS.get(metric.split("/")[-1], ("", ""))
    shown = "n/a" if name == "n/a" else f"{value:.3f}"
    extra = (
        f"<div style='font-size:11px'>[{interval[0]:.2f}, {interval[1]:.2f}]" + (f", n = {n}" if n else "") + "</div>"
        if interval and all(map(math.isfinite, interval))
        else ""
    )
    low = (
        f"<div style='font-size:11px;margin-top:4px'><b>If low:</b> {html.escape(action)}</div>"
        if action and name in ("Fair", "Poor")
        else ""
    )
    caveat = (
        "<div style='font-size:10px;color:#555'>A share of all context sentences: 0.1-0.4 is "
        "common for good systems.</div>"
        if metric.split("/")[-1] in FRACTION_OF_CONTEXT
        else ""
    )
    return (
        f"<div class='hx-card' data-metric='{html.escape(metric)}' style='display:inline-block;vertical-align:top;"
        f"width:190px;margin:4px;padding:8px;border-radius:6px;border:2px solid {colour};font-family:sans-serif;line-height:1.3'>"
        f"<div style='font-size:12px;color:#333'>{html.escape(metric)}</div>"
        f"<div style='font-size:22px;font-weight:bold'>{shown}</div>{extra}"
        f"<div style='display:inline-block;padding:0 6px;border-radius:4px;background:{colour};color:white;"
        f"font-size:11px'>{name}</div>"
        f"<div style='font-size:11px;margin-top:4px'>{html.escape(meaning)}</div>{low}{caveat}</div>"
    )


def trace_cards_html(scores: dict) -> str:
    """The four TRACe cards and the patterns that apply."""
    cards = "".join(card_html(m, scores.get(m)) for m in ("relevance", "utilization", "completeness", "adherence"))
    patterns = diagnose(scores)
    notes = "".join(f"<li>{html.escape(p)}</li>" for p in patterns)
    return f"<div class='hx-cards'>{cards}</div>" + (f"<ul class='hx-diagnosis'>{notes}</ul>" if notes else "")


def summary_cards_html(table) -> str:
    """Cards of a run's summary (helpers.experiment.analysis.summary): one per architecture and
    metric, mean with its interval."""
    rows = []
    for architecture, part in table.groupby("architecture", sort=False):
        cards = "".join(
            card_html(r["metric"], r["mean"], (r["ci_low"], r["ci_high"]), int(r.get("n", 0) or 0))
            for r in part.to_dict("records")
        )
        rows.append(f"<div><b>{html.escape(str(architecture))}</b><br>{cards}</div>")
    return "".join(rows)
