"""An LLM judge that annotates like RAGBench's GPT-4 annotator (arXiv:2407.11005, Appendix: the
annotation prompt): given keyed document and response sentences it returns the relevant keys, the
utilized keys and, per response sentence, whether it is supported. TRACe scores then follow from
the keys exactly as for the gold labels (`scoring.trace_scores`, unique convention).

A failed call or an unparsable answer gives NaN scores and the recorded reason, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from pydantic import BaseModel, Field

from helpers.llm import LLM, complete_json
from helpers.trace.scoring import TraceScores, trace_scores
from helpers.trace.sentence_keys import all_keys, as_documents_sentences, as_response_sentences, parse_keys

SYSTEM_PROMPT = (
    "You are an expert annotator of retrieval-augmented generation. You receive a question, "
    "documents split into sentences with keys (e.g. '0a', '0b', '1a') and a response split into "
    "sentences with keys ('a', 'b'). Answer with JSON only."
)

INSTRUCTIONS = """Annotate:
1. all_relevant_sentence_keys: the document sentence keys that are relevant to answering the question.
2. all_utilized_sentence_keys: the document sentence keys that the response actually used.
3. sentence_support_information: for every response sentence key, whether it is fully supported
   by the documents (fully_supported) and the document keys that support it.
Reply with JSON of this form:
{"relevance_explanation": "...", "all_relevant_sentence_keys": ["0a"],
 "sentence_support_information": [{"response_sentence_key": "a", "explanation": "...",
   "supporting_sentence_keys": ["0a"], "fully_supported": true}],
 "all_utilized_sentence_keys": ["0a"]}"""


class SentenceSupport(BaseModel):
    response_sentence_key: str
    explanation: str = ""
    supporting_sentence_keys: list[str] = Field(default_factory=list)
    fully_supported: bool = True


class Annotation(BaseModel):
    """RAGBench's annotation fields (the names of its dataset columns)."""

    relevance_explanation: str = ""
    all_relevant_sentence_keys: list[str] = Field(default_factory=list)
    sentence_support_information: list[SentenceSupport] = Field(default_factory=list)
    all_utilized_sentence_keys: list[str] | None = None


@dataclass
class LLMJudgement:
    scores: TraceScores
    relevant_keys: list[str] = field(default_factory=list)
    utilized_keys: list[str] = field(default_factory=list)
    unsupported_keys: list[str] = field(default_factory=list)
    raw: dict | None = None
    error: str | None = None
    cost_usd: float = 0.0


def build_messages(question: str, documents_sentences, response_sentences) -> list[dict]:
    doc_lines = []
    for i, doc in enumerate(documents_sentences):
        doc_lines.append(f"Document {i}:")
        doc_lines.extend(f"{k}. {s}" for k, s in doc)
    resp_lines = [f"{k}. {s}" for k, s in response_sentences]
    user = (
        f"Question: {question}\n\nDocuments:\n"
        + "\n".join(doc_lines)
        + "\n\nResponse:\n"
        + "\n".join(resp_lines)
        + "\n\n"
        + INSTRUCTIONS
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def annotation_to_judgement(annotation: Annotation, documents_sentences, response_sentences) -> LLMJudgement:
    """Keys from an annotation, normalised and checked; TRACe scores from them."""
    valid_docs = all_keys(documents_sentences)
    valid_resp = [k for k, _ in response_sentences]
    relevant = parse_keys(annotation.all_relevant_sentence_keys, valid_docs)
    utilized_raw = annotation.all_utilized_sentence_keys
    if utilized_raw is None:  # RAGBench: utilized = union of the supporting keys
        utilized_raw = [k for s in annotation.sentence_support_information for k in s.supporting_sentence_keys]
    utilized = parse_keys([k for k in utilized_raw if str(k).lower() != "general"], valid_docs)
    unsupported = parse_keys(
        [s.response_sentence_key for s in annotation.sentence_support_information if not s.fully_supported], valid_resp
    )
    scores = trace_scores(documents_sentences, relevant.keys, utilized.keys, unsupported.keys)
    scores.invalid_keys = relevant.invalid + utilized.invalid + unsupported.invalid
    return LLMJudgement(scores, relevant.keys, utilized.keys, unsupported.keys, annotation.model_dump())


def llm_judge(llm: LLM, question: str, documents, response, **params) -> LLMJudgement:
    """Judge one example; `documents` are texts or RAGBench documents_sentences, `response` a text
    or response_sentences."""
    docs, resp = as_documents_sentences(documents), as_response_sentences(response)
    result = complete_json(llm, build_messages(question, docs, resp), Annotation, **params)
    cost = sum(getattr(r, "cost_usd", 0.0) or 0.0 for r in result.records if r is not None)
    if result.error is not None:  # not result.ok, which the checker cannot narrow through
        return LLMJudgement(TraceScores.failed(result.error), error=result.error, cost_usd=cost)
    # complete_json validated the reply with the Annotation schema
    judgement = annotation_to_judgement(cast(Annotation, result.value), docs, resp)
    judgement.cost_usd = cost
    return judgement


def llm_judge_frame(frame, llm_config: dict | None = None, llm: LLM | None = None) -> list[LLMJudgement]:
    """Judge every row of a RAGBench-style DataFrame (question, documents_sentences, response_sentences)."""
    llm = llm or LLM(llm_config or {"provider": "local", "max_tokens": 512})
    out = []
    for _, row in frame.iterrows():
        try:
            out.append(llm_judge(llm, row["question"], row["documents_sentences"], row["response_sentences"]))
        except Exception as exc:  # a backend that cannot even start: recorded, the run goes on
            reason = f"{type(exc).__name__}: {exc}"[:500]
            out.append(LLMJudgement(TraceScores.failed(reason), error=reason))
    return out
