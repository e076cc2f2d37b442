"""The plain data contracts every part of the workbench speaks (BEIR's):

corpus:  {doc_id: {"title": str, "text": str, ...metadata}}
queries: {qid: text}
qrels:   {qid: {doc_id: grade}}
answers: {qid: reference answer}          (where the dataset has them)

and the one a judge scores: `Sample` (question, answer, contexts, reference, ...), whichever of a
run, a user's file (`helpers judge FILE`), a panel or RAGAS's own tests it comes from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from helpers.errors import UserError
from helpers.languages import corpus_language


class DataError(UserError):
    """Bad input data. The message names the file, the record and the field, and how to fix it."""

    def __init__(
        self,
        source: str,
        problem: str,
        *,
        record: str | None = None,
        field_name: str | None = None,
        fix: str | None = None,
    ):
        where = source
        if record is not None:
            where += f", record {record}"
        if field_name is not None:
            where += f", field '{field_name}'"
        message = f"{where}: {problem}"
        if fix:
            message += f". {fix}"
        super().__init__(message)
        self.source, self.record, self.field_name = source, record, field_name


def read_jsonl(path: str | Path) -> list[tuple[int, dict]]:
    """(line number, object) of each non-blank line of a JSONL file; DataError naming the line of
    invalid JSON or of a value that is not an object."""
    records = []
    with open(path, encoding="utf-8-sig") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(str(path), f"invalid JSON ({exc.msg})", record=f"line {line_no}") from exc
            if not isinstance(record, dict):
                raise DataError(str(path), "each line must be a JSON object", record=f"line {line_no}")
            records.append((line_no, record))
    return records


@dataclass(frozen=True)
class Sample:
    """One answer to judge, with what it was written from: ragas's `SingleTurnSample` in our names
    (user_input = question, response = answer, retrieved_contexts = contexts, reference).
    `answer` None: no answer was produced (`error` says why); `reference` None: no person's answer
    for the question. The rest says where the answer comes from (a run's architecture and LLM;
    "external" for a file) and what the retrieval judge and the refusal judge need."""

    qid: str
    question: str
    answer: str | None = None
    contexts: tuple[str, ...] = ()  # the passages, in the order the answer's prompt gave them
    reference: str | None = None
    error: str | None = None  # why writing the answer failed
    architecture: str = "external"
    llm: str = "external"
    context_ids: tuple[str, ...] = ()  # each context's doc_id, where known
    retrieved: tuple[str, ...] | None = None  # the ranking's doc_ids, best first (None: the contexts')
    unanswerable: bool = False  # the documents do not answer it (a refusal is right)

    def __post_init__(self) -> None:
        object.__setattr__(self, "contexts", tuple(self.contexts))
        object.__setattr__(self, "context_ids", tuple(self.context_ids))

    def lacks(self, name: str) -> bool:
        """Whether the field `name` is missing or empty (blank text, no contexts)."""
        value = getattr(self, name)
        return not value or (isinstance(value, str) and not value.strip())

    @classmethod
    def from_record(cls, record: dict, *, reference: str | None = None, unanswerable: bool = False) -> "Sample":
        """The sample of a run's answer record (helpers.experiment.runner): contexts as prompted."""
        contexts = record.get("contexts") or []
        retrieved = record.get("retrieved")
        if retrieved is None:  # older records: the contexts given, in rank order
            retrieved = [c["doc_id"] for c in sorted(contexts, key=lambda c: c.get("rank", 0))]
        return cls(
            qid=record["qid"],
            question=record.get("question") or "",
            answer=record.get("answer"),
            contexts=tuple(c["text"] for c in contexts),
            reference=reference,
            error=record.get("error"),
            architecture=record["architecture"],
            llm=record["llm"],
            context_ids=tuple(c.get("doc_id", "") for c in contexts),
            retrieved=tuple(retrieved),
            unanswerable=unanswerable,
        )


@dataclass
class Dataset:
    """A labelled retrieval / QA dataset in BEIR's contracts."""

    name: str
    language: str  # ISO 639-1 code of corpus and queries: "es", "en"
    corpus: dict[str, dict]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    source: str = ""
    notes: dict = field(default_factory=dict)  # what the loader wants kept with a run (e.g. an ingest report)
    unanswerable: list[str] = field(default_factory=list)  # qids the documents do not answer (refusals)

    def __post_init__(self) -> None:
        self.validate()
        self.mark_unanswerable()

    def mark_unanswerable(self) -> None:
        """One list of the questions the documents do not answer, whatever said so: a questions
        file's `answerable: false`, or a reference that says the documents do not answer it ("The
        documents do not say.", helpers.languages's `says_unanswered`). Each gets the language's
        "not in the documents" reference where it has none, so the correctness judge scores it: a
        refusal is its right answer (issue 60)."""
        language, marked = corpus_language(self.language), set(self.unanswerable)
        said = [q for q, ref in self.answers.items() if q not in marked and language.unanswered(ref)[0]]
        self.unanswerable = [*self.unanswerable, *said]
        for qid in self.unanswerable:
            reference = language.unanswered(self.answers.get(qid), marked=True)[1]
            assert reference is not None  # marked: the reference or not_in_documents, never None
            self.answers[qid] = reference

    def validate(self) -> None:
        src = self.source or self.name
        if not self.corpus:
            raise DataError(src, "the corpus is empty", fix="Check the input file and its filters")
        for doc_id, doc in self.corpus.items():
            if not isinstance(doc, dict) or not isinstance(doc.get("text"), str) or not doc["text"].strip():
                raise DataError(src, "document has no text", record=str(doc_id), field_name="text")
            doc.setdefault("title", "")
        for qid, text in self.queries.items():
            if not isinstance(text, str) or not text.strip():
                raise DataError(src, "query is empty", record=str(qid), field_name="text")
        for qid, rels in self.qrels.items():
            if qid not in self.queries:
                raise DataError(src, "qrels name a query that does not exist", record=str(qid))
            missing = [doc_id for doc_id in rels if doc_id not in self.corpus]
            if missing:
                raise DataError(src, f"qrels name documents not in the corpus: {missing[:3]}", record=str(qid))

    def summary(self) -> dict:
        lengths = sorted(len(doc["text"]) for doc in self.corpus.values())
        return {
            "dataset": self.name,
            "language": self.language,
            "documents": len(self.corpus),
            "queries": len(self.queries),
            "qrels": sum(len(r) for r in self.qrels.values()),
            "answers": len(self.answers),
            "median_doc_chars": lengths[len(lengths) // 2],
        }
