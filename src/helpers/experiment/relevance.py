"""Relevance at the grain retrieval is scored at (issue 60): a questions file's `relevant` that names
a whole file (or page) makes every chunk of it relevant, so an architecture that returns the file's
sibling sections scores as well as one that returns the passage with the answer (on a handbook of
short sections, bm25 "won" nDCG@10 0.90 to rerank's 0.70 that way, while by hand the answer passage
ranked first in 17 of 18 answers for every architecture).

Where the question has a reference, its relevant chunks become those of the file that hold one of
the reference's statements: the context-recall judge's attribution (helpers.judges.context_recall:
P(the chunk holds the statement) >= its THRESHOLD), the check people's labels back for it. A question
without a reference (or none of whose chunks holds it) keeps the whole file, and the run says so:
its nDCG and recall count sibling chunks as hits.

    report = passage_qrels(data)   # data.qrels narrowed in place; what was done, for summary.json
"""

from __future__ import annotations

from helpers.judges.context_recall import THRESHOLD, attribution, attribution_features, statements


def passage_qrels(data) -> dict:
    """Narrow `data.qrels` of the questions whose `relevant` named a file or page
    (data.notes["qrels_by_file"]) to the chunks that hold the reference. Returns {"narrowed":
    {qid: [kept, of]}, "per_file": [qids kept whole: no reference], "none_held": [qids kept whole:
    no chunk holds the reference]}; empty lists and dict when no question named a file."""
    report: dict = {"narrowed": {}, "per_file": [], "none_held": []}
    todo = [q for q in data.notes.get("qrels_by_file", []) if data.qrels.get(q)]
    if not todo:
        return report
    unanswerable = set(data.unanswerable)
    matcher = None
    for qid in todo:
        reference = data.answers.get(qid)
        claims = statements(reference) if reference and qid not in unanswerable else []
        if not claims:
            report["per_file"].append(qid)
            continue
        if matcher is None:  # multilingual e5: loaded only when some question needs it
            from helpers.judges.models.reference_match import ReferenceMatcher

            matcher = ReferenceMatcher(data.language)
        chunks = list(data.qrels[qid])
        held = attribution(attribution_features(matcher, claims, [data.corpus[c]["text"] for c in chunks]))
        kept = [c for c, p in zip(chunks, held.max(axis=0)) if p >= THRESHOLD]
        if not kept:
            report["none_held"].append(qid)
            continue
        data.qrels[qid] = {c: data.qrels[qid][c] for c in kept}
        report["narrowed"][qid] = [len(kept), len(chunks)]
    return report


def relevance_line(report: dict | None) -> str | None:
    """One line for the run's output and summary: what the relevance labels are, where it matters."""
    if not report or not (report.get("narrowed") or report.get("per_file") or report.get("none_held")):
        return None
    parts = []
    if report["narrowed"]:
        kept = sum(k for k, _ in report["narrowed"].values())
        of = sum(n for _, n in report["narrowed"].values())
        parts.append(
            f"{len(report['narrowed'])} questions' `relevant` file narrowed to the chunks that hold the reference "
            f"({kept} of {of} chunks; context-recall attribution)"
        )
    whole = report["per_file"] + report["none_held"]
    if whole:
        parts.append(
            f"{len(whole)} ({', '.join(whole[:6])}{' ...' if len(whole) > 6 else ''}) keep every chunk of the file "
            "(no reference, or no chunk holds it): their nDCG and recall count the file's other sections as hits"
        )
    return "relevance: " + "; ".join(parts)
