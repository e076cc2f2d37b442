"""RAGAS faithfulness whose verdict step is the evidence model, as ragas's own
`FaithfulnesswithHHEM` does with Vectara's HHEM classifier: faithfulness = supported statements /
statements (Es et al. 2023, RAGAS §3), each statement judged by P(supported | statement, its best
evidence sentences in the contexts) >= `threshold` instead of by an LLM.

Statements come from the LLM (ragas's statement step, schema-constrained) when one is given and
writes usable ones; else, or when it fails, from the answer's sentences. Which was used, and why,
is in the result's `reason`.

    judge = EvidenceFaithfulness(EvidenceModel.load(), llm=LLM({...}))
    judge.score(question, answer, contexts)   # {"value", "reason", "statements_from", "statements", ...}
"""

from __future__ import annotations

import math
from typing import cast

from pydantic import BaseModel, Field

from helpers.judges.models.evidence_pairs import evidence_selector
from helpers.judges.models.trace_features import content, tokens
from helpers.llm.structured import complete_json
from helpers.trace.sentence_keys import key_documents, split_sentences

STATEMENT_PROMPT = (
    "Break the answer below into short standalone statements, one fact each, with every pronoun "
    "replaced by what it refers to. Write them in the language of the answer; do not add facts.\n\n"
    'Question: {question}\nAnswer: {answer}\n\nReply with JSON: {{"statements": ["...", ...]}}'
)


class Statements(BaseModel):
    statements: list[str] = Field(default_factory=list)


def usable_statements(statements: list[str], question: str, answer: str) -> list[str]:
    """The LLM's statements that restate the answer: not the question, and at least half of their
    content words found in the answer (a small model copies the question or invents)."""
    answer_words = set(content(tokens(answer)))
    question_words = set(content(tokens(question)))
    out = []
    for statement in statements:
        words = set(content(tokens(statement or "")))
        if not words or words <= question_words:
            continue
        if len(words & answer_words) >= 0.5 * len(words):
            out.append(statement.strip())
    return out


class EvidenceFaithfulness:
    name = "faithfulness"  # the metric, recorded under the judge "ragas_evidence"

    def __init__(self, evidence, llm=None, *, threshold: float = 0.5, max_tokens: int = 256):
        self.evidence, self.llm, self.threshold, self.max_tokens = evidence, llm, threshold, max_tokens

    def statements(self, question: str, answer: str) -> tuple[list[str], str, str]:
        """(statements, "llm" | "sentences", why)."""
        sentences = [s for s in split_sentences(answer) if content(tokens(s))]
        if self.llm is None:
            return sentences, "sentences", "statements: the answer's sentences (no statement LLM configured)"

        result = complete_json(
            self.llm,
            [{"role": "user", "content": STATEMENT_PROMPT.format(question=question, answer=answer)}],
            Statements,
            max_tokens=self.max_tokens,
        )
        if result.error is not None:  # not result.ok, which the checker cannot narrow through
            return (
                sentences,
                "sentences",
                f"statements: the answer's sentences (the LLM's failed: {result.error[:160]})",
            )
        stated = cast(Statements, result.value).statements  # complete_json validated it with Statements
        kept = usable_statements(stated, question, answer)
        if not kept:
            return (
                sentences,
                "sentences",
                (f"statements: the answer's sentences (none of the LLM's {len(stated)} restated the answer)"),
            )
        return kept, "llm", f"statements: {len(kept)} of the LLM's {len(stated)}"

    def score(self, question: str, answer: str | None, contexts: list[str]) -> dict:
        if not answer or not answer.strip():
            return {"value": math.nan, "reason": "not computed: no answer", "statements_from": None, "statements": []}
        if not contexts:
            return {
                "value": math.nan,
                "reason": "not computed: no retrieved contexts",
                "statements_from": None,
                "statements": [],
            }
        statements, source, why = self.statements(question, answer)
        if not statements:
            return {
                "value": math.nan,
                "reason": f"no statement to judge ({why})",
                "statements_from": source,
                "statements": [],
            }
        pick = evidence_selector(key_documents(contexts), question)
        evidences = [pick(s) for s in statements]
        p = self.evidence.support(statements, evidences)
        verdicts = [bool(x >= self.threshold) for x in p]
        detail = " ".join(f"{'✓' if v else '✗'} {s!r} (P={x:.2f})" for s, v, x in zip(statements, verdicts, p))
        return {
            "value": sum(verdicts) / len(verdicts),
            "reason": f"{sum(verdicts)}/{len(verdicts)} statements supported by the evidence model; {why}. {detail}",
            "statements_from": source,
            "statements": statements,
            "p_supported": [float(x) for x in p],
        }


def seed_example_agreement(evidence, threshold: float = 0.5) -> list[dict]:
    """The evidence model on the seed document's Spanish worked examples that have support
    verdicts: faithfulness (answer sentences against the contexts) and context recall (reference
    sentences against the contexts: attributed = supported). One row per example: expected and
    predicted verdicts, agreement (`spanish.verdict_agreement`), the P(supported) values."""
    # langchain_core, ragas: loaded only when this runs
    from helpers.ragas_eval.spanish import seed_examples, verdict_agreement

    rows = []
    for example in seed_examples():
        if example.metric not in ("faithfulness", "context_recall"):
            continue
        sample = example.sample
        text = sample.answer if example.metric == "faithfulness" else sample.reference
        assert text is not None  # the seed's faithfulness examples have an answer, its recall ones a reference
        claims = [s for s in split_sentences(text) if content(tokens(s))]
        pick = evidence_selector(key_documents(list(sample.contexts)), sample.question)
        p = evidence.support(claims, [pick(c) for c in claims])
        verdicts = [int(x >= threshold) for x in p]
        rows.append(
            {
                "example": example.name,
                "metric": example.metric,
                "expected_verdicts": example.expected_verdicts,
                "verdicts": verdicts,
                "agreement": verdict_agreement(example.expected_verdicts, verdicts),
                "p_supported": [round(float(x), 3) for x in p],
            }
        )
    return rows
