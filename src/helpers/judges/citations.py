"""Citation accuracy, without an LLM: does each answer sentence's citation [n] point at a context
that holds what the sentence says?

The answer is cut into sentences; each sentence's citations ("[2]", "[1, 3]", "[1][3]") are read and
removed, and the sentence is checked against each cited context with context recall's attribution
check (helpers.judges.context_recall: the best e5 cosine with one of the context's sentences, the
share of the sentence's content words and numbers in the context; a logistic model fitted on
MaternaQA-es statement-passage pairs; supported at P >= its THRESHOLD). Two metrics (the names of
ALCE's citation precision and recall, Gao et al. 2023, with this offline check in place of its NLI
model):

    citation_precision  the cited (sentence, context) pairs whose context holds the sentence / all
                        cited pairs; NaN when the answer cites nothing
    citation_coverage   the sentences with at least one citation that holds them / all sentences

The reason names, per sentence, what it cites and, when a context it does not cite holds it better,
that one ("cites [2]; [4] holds it"): the wrong citation numbers the hand labels' notes record.

    judges: {citations: {}}
"""

from __future__ import annotations

import re

from helpers.judges.context_recall import THRESHOLD, attribution, attribution_features
from helpers.judges.judge_base import Judge, Metric, register
from helpers.judges.models.reference_match import ReferenceMatcher
from helpers.trace.sentence_keys import split_sentences

_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def cited_sentences(answer: str) -> list[tuple[str, list[int]]]:
    """(the sentence without its citation marks, the context numbers it cites, in order)."""
    out = []
    for sentence in split_sentences(answer or ""):
        numbers = [int(n) for group in _CITATION.findall(sentence) for n in group.split(",")]
        text = " ".join(_CITATION.sub(" ", sentence).split())
        if len(text.split()) >= 2 or numbers:
            out.append((text, list(dict.fromkeys(numbers))))
    return out


@register
class Citations(Judge):
    name, label = "citations", "citation accuracy"
    order = 90  # where reports, summaries and panels list it
    metrics = (
        Metric(
            "citation_precision",
            threshold=0.5,
            validated_by="citation",
            description="share of cited contexts that hold the sentence citing them",
        ),
        Metric(
            "citation_coverage",
            threshold=0.5,
            validated_by="citation",
            description="share of the answer's sentences with a citation that holds them",
        ),
    )

    requires = ("answer", "contexts")

    def prepare(self) -> None:
        self.matcher = ReferenceMatcher(self.language)
        self.artefact = "context recall's attribution check (multilingual e5, weights fitted on MaternaQA-es)"

    def score_one(self, sample):
        contexts = list(sample.contexts)
        sentences = cited_sentences(sample.answer)
        if not sentences:
            reason = "the answer has no sentence"
            return [("citation_precision", None, reason), ("citation_coverage", None, reason)], None
        p = attribution(attribution_features(self.matcher, [text for text, _ in sentences], contexts))
        pairs, held, covered, notes = 0, 0, 0, []
        for i, (_, cited) in enumerate(sentences):
            valid = [n for n in cited if 1 <= n <= len(contexts)]
            holds = [n for n in valid if p[i, n - 1] >= THRESHOLD]
            pairs += len(cited)  # a number with no such context counts as a wrong citation
            held += len(holds)
            covered += bool(holds)
            best = int(p[i].argmax()) + 1
            if not cited:
                note = "no citation"
            else:
                note = "cites " + ", ".join(f"[{n}]" + (" ✓" if n in holds else " ✗") for n in cited)
            if best not in holds and p[i, best - 1] >= THRESHOLD:
                note += f"; [{best}] holds it ({p[i, best - 1]:.2f})"
            notes.append(f"sentence {i + 1}: {note}")
        reason = "; ".join(notes)
        precision = held / pairs if pairs else None
        return [
            ("citation_precision", precision, reason if pairs else "the answer cites no context"),
            ("citation_coverage", covered / len(sentences), reason),
        ], None
