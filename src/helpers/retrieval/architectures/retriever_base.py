"""The retriever contract (BEIR's): index a corpus {doc_id: {"title", "text"}}, then
`retrieve(queries {qid: text}, k) -> run {qid: {doc_id: score}}` (higher is better), save/load."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Self

from helpers.errors import UserError
from helpers.inputs import MAX_QUESTION_CHARS


class RetrievalError(UserError):
    """Bad input to a retriever (empty corpus, empty query, k <= 0, not indexed)."""


def check_corpus(corpus: dict) -> None:
    if not isinstance(corpus, dict) or not corpus:
        raise RetrievalError("the corpus is empty: index at least one document {doc_id: {'title', 'text'}}")
    for doc_id, doc in corpus.items():
        if not isinstance(doc, dict) or not str(doc.get("text", "")).strip():
            raise RetrievalError(f"document {doc_id!r} has no 'text'")


def check_queries(queries: dict, k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
        raise RetrievalError(f"k must be a positive integer, got {k!r}")
    if not isinstance(queries, dict) or not queries:
        raise RetrievalError("no queries: pass {qid: text}")
    for qid, text in queries.items():
        if not isinstance(text, str) or not text.strip():
            raise RetrievalError(f"query {qid!r} is empty")
        if len(text) > MAX_QUESTION_CHARS:  # tokenised whole before truncation: a megabyte costs a CPU-minute
            raise RetrievalError(f"query {qid!r} has {len(text):,} characters; at most {MAX_QUESTION_CHARS:,}")


def doc_text(doc: dict) -> str:
    """Title and text, as BEIR indexes them."""
    title = (doc.get("title") or "").strip()
    return f"{title}. {doc['text']}" if title else doc["text"]


def _fingerprint(corpus: dict[str, dict]) -> int:
    # Python's str hash is cached on each string: milliseconds for thousands of documents
    return hash(tuple((doc_id, doc.get("title") or "", doc["text"]) for doc_id, doc in corpus.items()))


def top_k(scores: dict[str, float], k: int) -> dict[str, float]:
    return dict(sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k])


class Retriever(ABC):
    """Base of every architecture. Subclasses implement `_index` and `_retrieve`."""

    name = "retriever"

    def __init__(self):
        self.corpus: dict[str, dict] | None = None
        self._indexed: int | None = None  # the fingerprint of the corpus the index was built from

    def index(self, corpus: dict[str, dict]) -> Self:
        """Build the index; a second call with the same texts reuses it (a run's architectures
        share one BM25 and one dense retriever, and the retrieval table indexes them first)."""
        check_corpus(corpus)
        fingerprint = _fingerprint(corpus)
        if self.corpus is not None and fingerprint == self._indexed:
            return self
        self.corpus = corpus
        self._index(corpus)
        self._indexed = fingerprint
        return self

    def retrieve(self, queries: dict[str, str], k: int = 10) -> dict[str, dict[str, float]]:
        check_queries(queries, k)
        if self.corpus is None:
            raise RetrievalError(f"{self.name}: call index(corpus) (or load) before retrieve")
        return self._retrieve(queries, k)

    @abstractmethod
    def _index(self, corpus: dict[str, dict]) -> None: ...

    @abstractmethod
    def _retrieve(self, queries: dict[str, str], k: int) -> dict[str, dict[str, float]]: ...

    def save(self, directory: str | Path) -> Path:
        """Write the corpus and a description; subclasses add their index files."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "corpus.json").write_text(json.dumps(self.corpus, ensure_ascii=False), encoding="utf-8")
        (directory / "retriever.json").write_text(json.dumps({"name": self.name, **self.describe()}, indent=2))
        return directory

    def describe(self) -> dict:
        return {}

    @staticmethod
    def _load_corpus(directory: str | Path) -> dict:
        return json.loads((Path(directory) / "corpus.json").read_text(encoding="utf-8"))
