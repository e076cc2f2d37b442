"""Score cards: each score with its band (its family's: TRACe's or RAGAS's), what it means, what
to change when it is low, and the RAGAS metric's own reading; and the diagnostic patterns that read
several scores together. Bands, readings and patterns are data in helpers.interpretation, with
their sources (../shared/seeds/trace-evaluation-guide.md, ragas-evaluation-framework.md)."""

from __future__ import annotations

import html
import math

from helpers.experiment.diagnosis import VERDICT_COLOURS
from helpers.interpretation import NO_BAND, TRACE_METRICS, TRUSTED, band, band_table, detect, patterns_of, reading
from helpers.judges import validity as judge_validity

LOW_BANDS = ("Fair", "Needs improvement", "Poor")

MEANINGS = {
    "average": (
        "Overall TRACe score, as the seed capstone reports it: the mean of the four.",
        "Read the four cards: the lowest one says what to change.",
    ),
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


def diagnose(scores: dict) -> list[str]:
    """The reference documents' patterns that hold for one answer's scores ({metric: value})."""
    return [f"{p.name}: {p.problem}." for p in patterns_of(scores)]


def card_html(
    metric: str,
    value: float | None,
    interval: tuple[float, float] | None = None,
    n: int | None = None,
    validity: str | None = None,
) -> str:
    """One card: the metric, its value (and interval, or its n where too few samples give none),
    its band and where the band comes from, what it means, its reading, what to change when low;
    with `validity` (helpers.judges.validity.status), how far people agree with its judge, and no
    band where their labels do not back it."""
    trusted = validity is None or validity in TRUSTED
    scale = band(metric, value) if trusted else NO_BAND
    name, colour = scale.name, scale.colour
    meaning, action = MEANINGS.get(metric.split("/")[-1], ("", ""))
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    shown = "n/a" if missing else f"{value:.3f}"
    if interval and all(map(math.isfinite, interval)):
        extra = f"<div style='font-size:11px'>[{interval[0]:.2f}, {interval[1]:.2f}]" + (f", n = {n}" if n else "")
        extra += "</div>"
    elif n and not missing:
        extra = f"<div style='font-size:11px'>n = {n}, too few for an interval</div>"
    else:
        extra = ""
    said = reading(metric, value)
    said = f"<div style='font-size:11px;font-style:italic'>{html.escape(said)}</div>" if said else ""
    low = (
        f"<div style='font-size:11px;margin-top:4px'><b>If low:</b> {html.escape(action)}</div>"
        if action and name in LOW_BANDS
        else ""
    )
    if scale is not NO_BAND:
        shown_band = name
    elif trusted or validity is None:  # validity is None: trusted
        shown_band = "no band"
    else:  # what people's labels say of the judge, cut short
        shown_band = validity.split(" on ")[0].split(" against ")[0]
    family = band_table(metric)
    source = f" title='{html.escape(family.family)} bands: {html.escape(family.source)}'" if family else ""
    caveat = (
        "<div style='font-size:10px;color:#555'>A share of all context sentences: 0.1-0.4 is "
        "common for good systems.</div>"
        if metric.split("/")[-1] in FRACTION_OF_CONTEXT
        else ""
    )
    agreement = (
        f"<div class='hx-validity' style='font-size:10px;color:#555'>People vs this judge: "
        f"{html.escape(judge_validity.note(metric))}</div>"
        if validity is not None
        else ""
    )
    return (
        f"<div class='hx-card' data-metric='{html.escape(metric)}' style='display:inline-block;vertical-align:top;"
        f"width:190px;margin:4px;padding:8px;border-radius:6px;border:2px solid {colour};font-family:sans-serif;line-height:1.3'>"
        f"<div style='font-size:12px;color:#333'>{html.escape(metric)}</div>"
        f"<div style='font-size:22px;font-weight:bold'>{shown}</div>{extra}"
        f"<div class='hx-band'{source} style='display:inline-block;padding:0 6px;border-radius:4px;"
        f"background:{colour};color:white;font-size:11px'>{shown_band}</div>{said}"
        f"<div style='font-size:11px;margin-top:4px'>{html.escape(meaning)}</div>{low}{caveat}{agreement}</div>"
    )


def average_validity(judge: str) -> str:
    """How far people agree with the Average of a judge's four TRACe scores: as with the least
    backed of the four (no band for the average of scores people do not back)."""
    statuses = [judge_validity.status(judge, m) for m in TRACE_METRICS]
    return next((s for s in statuses if s not in TRUSTED), statuses[0])


def trace_cards_html(scores: dict, judge: str = "offline") -> str:
    """The four TRACe cards of `judge` (the answer panel's: the offline judge), the capstone's
    Average of the four (trace-evaluation-guide.md), and the patterns that apply; a metric people
    do not back (helpers.judges.validity) gets no band and names no pattern, as in every report."""
    values = [scores.get(m) for m in TRACE_METRICS]
    known = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    average = sum(known) / len(known) if len(known) == len(TRACE_METRICS) else None
    statuses = {m: judge_validity.status(judge, m) for m in TRACE_METRICS}
    cards = "".join(card_html(f"{judge}/{m}", scores.get(m), validity=statuses[m]) for m in TRACE_METRICS)
    cards += card_html(f"{judge}/average", average, validity=average_validity(judge))
    patterns = diagnose({m: v for m, v in scores.items() if statuses.get(m) in TRUSTED})
    notes = "".join(f"<li>{html.escape(p)}</li>" for p in patterns)
    return f"<div class='hx-cards'>{cards}</div>" + (f"<ul class='hx-diagnosis'>{notes}</ul>" if notes else "")


def ragas_cards_html(scores: dict, reasons: dict | None = None) -> str:
    """RAGAS's cards for one answer ({metric: value}), each with how far people agree with RAGAS
    (helpers.judges.validity: no band where their labels do not back it) and, for a NaN, why."""
    reasons = reasons or {}
    cards = []
    for metric, value in scores.items():
        card = card_html(f"ragas/{metric}", value, validity=judge_validity.status("ragas", metric))
        missing = value is None or (isinstance(value, float) and math.isnan(value))
        if missing and reasons.get(metric):
            why = f"<div class='hx-nan-reason' style='font-size:10px'>{html.escape(reasons[metric][:200])}</div>"
            card = card[: -len("</div>")] + why + "</div>"
        cards.append(card)
    return f"<div class='hx-cards hx-ragas-cards'>{''.join(cards)}</div>"


def summary_cards_html(table) -> str:
    """Cards of a run's summary (helpers.experiment.analysis.summary): one per architecture and
    metric, mean with its interval; the capstone's Average card for each judge that gives all four
    TRACe scores (the mean of their means); and the patterns whose intervals support them (those
    the means alone suggest are listed as possible)."""
    rows = []
    found = detect(table)
    for architecture, part in table.groupby("architecture", sort=False):
        cards = "".join(
            card_html(r["metric"], r["mean"], (r["ci_low"], r["ci_high"]), int(r.get("n", 0) or 0), r.get("validity"))
            for r in part.to_dict("records")
        )
        judges = part["metric"].str.rsplit("/", n=1).str[0]
        for judge in dict.fromkeys(judges):
            means = {m.rsplit("/", 1)[-1]: v for m, v in zip(part["metric"], part["mean"]) if m.startswith(f"{judge}/")}
            if all(m in means and means[m] == means[m] for m in TRACE_METRICS):
                average = sum(means[m] for m in TRACE_METRICS) / len(TRACE_METRICS)
                cards += card_html(f"{judge}/average", average, validity=average_validity(judge))
        notes = "".join(
            f"<li class='hx-pattern hx-{r['status']}'><b>{html.escape(r['pattern'])}</b> ({r['status']}): "
            f"{html.escape(r['problem'])}"
            + (f"; try {html.escape(r['fix'])}" if r["fix"] else "")
            + f" <span style='color:#666;font-size:10px'>{html.escape(r['evidence'])}</span></li>"
            for r in found[found.architecture == architecture].to_dict("records")
        )
        rows.append(
            f"<div><b>{html.escape(str(architecture))}</b><br>{cards}"
            + (f"<ul class='hx-diagnosis'>{notes}</ul>" if notes else "")
            + "</div>"
        )
    return "".join(rows)


VERDICT_MEANINGS = {
    "correct": "agrees with the reference answer.",
    "retrieval": "wrong, and the contexts do not hold the reference's fact: change the retriever, not the prompt.",
    "generation": "wrong although the contexts hold the reference's fact: change the prompt or the generator.",
    "refused": "said it is not in the documents, although the contexts hold it: change the prompt or the generator.",
    "refused, not found": "refused an answerable question, and the contexts do not hold its answer: change the retriever.",
    "cannot tell": "a judge's score falls between its cuts: no forced guess.",
}


def verdict_card_html(verdict: str, evidence: str) -> str:
    """The answer's verdict against its reference (helpers.experiment.diagnosis), with its
    evidence and what it means."""
    colour = VERDICT_COLOURS.get(verdict, "#c9c9c9")
    return (
        f"<div class='hx-card hx-verdict' data-verdict='{html.escape(verdict)}' style='display:inline-block;"
        f"vertical-align:top;width:390px;margin:4px;padding:8px;border-radius:6px;border:2px solid {colour};"
        "font-family:sans-serif;line-height:1.3'><div style='font-size:12px;color:#333'>verdict (against the reference)</div>"
        f"<div style='font-size:20px;font-weight:bold;color:{colour}'>{html.escape(verdict)}</div>"
        f"<div style='font-size:11px'>{html.escape(VERDICT_MEANINGS.get(verdict, ''))}</div>"
        f"<div style='font-size:10px;color:#555;margin-top:4px'>{html.escape(evidence)}</div></div>"
    )
