"""Cheap lexical checks of a generated question and its reference answer (the test-set writer's
filters that need no LLM, helpers.testsets.writer), as helpers.generation.answer_checks is for generated answers:

    from helpers.testsets.question_checks import self_reference, grounding, copy_overlap
    self_reference("¿Qué recomienda el pasaje A?")        # 'pasaje': no retriever's user has it
    grounding("diez citas", ["Se recomiendan diez citas."])  # 1.0: every content word is there
    copy_overlap(question, passages)                       # word Jaccard with the closest sentence

Words are helpers.text.words (lower-cased `\\w+` runs, accents kept); content words are those
longer than 3 letters, and numbers.
"""

from __future__ import annotations

import re

from helpers.text import words

# a question that points at "the passage" (or "passage A", "the text", "the study mentioned") cannot
# be asked of a retriever, which is not shown any passage: 7 of the first 40 kept questions did
SELF_REFERENCE = re.compile(
    r"\b(pasajes?|passages?|textos?|texts?|fragmentos?|excerpts?|extractos?|"
    r"mencionad[oa]s? en el|mentioned in the|según el (documento|art[ií]culo)|"
    # ... or at "this section", "the two studies", "the review carried out": 6 of
    # the next 40 did (hand labels, benchmarks/labels/testsets/*-v2.csv)
    r"est[ae] (secci[oó]n|estudio|revisi[oó]n|gu[ií]a)|los dos estudios|"
    r"(evaluaci[oó]n|revisi[oó]n( sistem[aá]tica)?|estudio|intervenci[oó]n) realizad[ao]|"
    r"this (section|study|review)|the two studies)\b",
    re.I,
)
# chunks of a reference list (years, 'et al.', DOIs) yield questions about citations, not content
CITATION = re.compile(r"\b(19|20)\d{2}\b|et al\.|\bdoi\b|\bEpub\b|\bPMID\b", re.I)


def self_reference(question: str) -> str | None:
    """The words by which `question` points at its passage ('the passage', 'this study'), or None."""
    match = SELF_REFERENCE.search(question)
    return match[0] if match else None


def looks_like_references(text: str) -> bool:
    """A chunk of a bibliography: four or more years, 'et al.', DOIs or PubMed ids in it."""
    return len(CITATION.findall(text)) >= 4


def content_words(text: str) -> set[str]:
    """Words longer than 3 letters, and numbers: what two statements of one fact share."""
    return {w for w in words(text) if len(w) > 3 or w.isdigit()}


def agreement(answer: str, reference: str) -> float:
    """Token F1 of two answers' content words (SQuAD's F1 over content words)."""
    a, b = content_words(answer), content_words(reference)
    shared = len(a & b)
    return 0.0 if not shared else 2 * shared / (len(a) + len(b))


def grounding(answer: str, passages: list[str]) -> float:
    """Share of the answer's content words (longer than 3 letters, or digits) found in the passages."""
    content = content_words(answer)
    if not content:
        return 0.0
    source = set(words(" ".join(passages)))
    return len(content & source) / len(content)


def copy_overlap(question: str, passages: list[str]) -> float:
    """The largest word Jaccard between the question and one sentence of its passages."""
    from helpers.data.chunking import sentence_spans  # pandas (helpers.data loads it): only when this runs

    q = set(words(question))
    best = 0.0
    for text in passages:
        for span in sentence_spans(text):
            s = set(words(text[span.start : span.end]))
            if q and s:
                best = max(best, len(q & s) / len(q | s))
    return best
