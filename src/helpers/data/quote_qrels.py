"""Qrels kept as quotes of the source text, resolved to whatever chunking a run uses.

A label file maps each qid to passages, each an exact quote of the source (40-120 characters,
whitespace-insensitive) with a grade:

    q1:
      - {page: 27, quote: "se recomienda la valoración del GO en la semana 28 - 30 ...", grade: 2, note: "..."}

A chunk is relevant to a qid when its text holds one of the qid's quotes, or the quote's first or
last EDGE_CHARS characters (a quote cut by a chunk boundary), or lies wholly inside the quote and
is at least EDGE_CHARS long (chunks shorter than the quote, cut twice); its grade is the highest
among the items it matches. Text is compared with whitespace collapsed, so line breaks and the
chunker's cuts do not matter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from helpers.data.contracts import DataError

EDGE_CHARS = 40  # a chunk holding this much of a quote's start or end holds the quoted passage (cut)
QUOTE_CHARS = (40, 120)  # the length a quote must have, whitespace collapsed
GRADES = (1, 2)


@dataclass(frozen=True)
class QuoteLabel:
    qid: str
    page: int  # where the quote starts in the source (1-based); a note for readers, not used to match
    quote: str  # whitespace collapsed
    grade: int
    note: str = ""


def normalise(text: str) -> str:
    return " ".join(text.split())


def read_quote_labels(path: str | Path) -> list[QuoteLabel]:
    """The labels of a quote-qrels YAML file, each checked; DataError naming the qid, item and field."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(str(path), f"not a readable YAML file ({exc})") from exc
    if not isinstance(data, dict) or not data:
        raise DataError(str(path), "expected a mapping of qid to a list of {page, quote, grade, note}")
    labels = []
    for qid, items in data.items():
        if not isinstance(items, list) or not items:
            raise DataError(str(path), "expected a non-empty list of passages", record=str(qid))
        for i, item in enumerate(items):
            record = f"{qid} #{i + 1}"
            if not isinstance(item, dict):
                raise DataError(str(path), "each passage is a mapping {page, quote, grade, note}", record=record)
            page, quote, grade = item.get("page"), item.get("quote"), item.get("grade")
            if not isinstance(page, int) or isinstance(page, bool) or page < 1:
                raise DataError(
                    str(path), f"page must be a positive integer, got {page!r}", record=record, field_name="page"
                )
            if grade not in GRADES or isinstance(grade, bool):
                raise DataError(
                    str(path), f"grade must be one of {list(GRADES)}, got {grade!r}", record=record, field_name="grade"
                )
            quote = normalise(quote) if isinstance(quote, str) else ""
            if not QUOTE_CHARS[0] <= len(quote) <= QUOTE_CHARS[1]:
                raise DataError(
                    str(path),
                    f"quote must be {QUOTE_CHARS[0]}-{QUOTE_CHARS[1]} characters, got {len(quote)}",
                    record=record,
                    field_name="quote",
                )
            labels.append(QuoteLabel(str(qid), page, quote, grade, str(item.get("note") or "")))
    return labels


def chunks_quoting(label: QuoteLabel, texts: dict[str, str]) -> list[str]:
    """doc_ids whose (normalised) text holds the label's quote, or its first or last EDGE_CHARS, or
    is a piece of the quote at least EDGE_CHARS long."""
    quote, head, tail = label.quote, label.quote[:EDGE_CHARS], label.quote[-EDGE_CHARS:]
    return [
        doc_id
        for doc_id, text in texts.items()
        if quote in text or head in text or tail in text or (len(text) >= EDGE_CHARS and text in quote)
    ]


def resolve_quote_qrels(
    labels: list[QuoteLabel], corpus: dict[str, dict], *, source: str, strict: bool
) -> dict[str, dict[str, int]]:
    """{qid: {doc_id: grade}} of `corpus` for `labels`. `strict`: a quote that matches no chunk is a
    DataError naming `source`, the qid and the quote (use it on the full text the labels were made
    on); otherwise such a label is skipped (a page subset, another extraction of the text)."""
    texts = {doc_id: normalise(doc["text"]) for doc_id, doc in corpus.items()}
    qrels: dict[str, dict[str, int]] = {}
    for label in labels:
        matched = chunks_quoting(label, texts)
        if not matched:
            if strict:
                raise DataError(
                    source,
                    f"quote matches no chunk of the text: {label.quote!r} (page {label.page})",
                    record=label.qid,
                    field_name="quote",
                    fix="Copy the quote exactly from the extracted text, or update it if the text changed",
                )
            continue
        rels = qrels.setdefault(label.qid, {})
        for doc_id in matched:
            rels[doc_id] = max(rels.get(doc_id, 0), label.grade)
    return qrels
