"""BM25 with bm25s, with language-aware tokenisation: lower-case, accents folded, stop words
removed and Snowball-stemmed (PyStemmer), for every language both libraries cover (a user's own
documents may be in any of them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from helpers.retrieval.architectures.retriever_base import RetrievalError, Retriever, doc_text
from helpers.text import Tokenizer

if TYPE_CHECKING:
    import bm25s


class BM25(Retriever):
    """Okapi BM25 (Lucene variant, k1=1.5, b=0.75: bm25s defaults) over title + text."""

    name = "bm25"

    def __init__(self, language: str = "en", *, k1: float = 1.5, b: float = 0.75):
        super().__init__()
        self.language, self.k1, self.b = language, k1, b
        self.tokenizer = Tokenizer(language)
        self._model: bm25s.BM25 | None = None  # set with the corpus, by _index or load
        self._doc_ids: list[str] = []
        self._position: dict[str, int] = {}

    def _index(self, corpus):
        import bm25s

        self._doc_ids = list(corpus)
        self._position = {doc_id: i for i, doc_id in enumerate(self._doc_ids)}
        self._model = bm25s.BM25(k1=self.k1, b=self.b)
        self._model.index(self.tokenizer([doc_text(corpus[d]) for d in self._doc_ids]), show_progress=False)

    def tokenize(self, text: str) -> list[str]:
        """The terms BM25 sees: lower-cased, accents folded, stop words dropped, stemmed."""
        return self.tokenizer([text])[0]

    def score_documents(self, query: str, doc_ids: list[str]) -> np.ndarray:
        """BM25 score of `query` for each of `doc_ids` (indexed documents), in that order; query
        terms absent from the corpus contribute nothing, so an all-unknown query scores 0."""
        if self.corpus is None or self._model is None:
            raise RetrievalError(f"{self.name}: call index(corpus) (or load) before score_documents")
        missing = [d for d in doc_ids if d not in self._position]
        if missing:
            raise RetrievalError(f"{self.name}: document {missing[0]!r} is not in the index")
        known = [t for t in self.tokenize(query) if t in self._model.vocab_dict]
        if not known:
            return np.zeros(len(doc_ids))
        scores = self._model.get_scores(known)  # over the whole corpus: bm25s has no subset scoring
        return np.array([scores[self._position[d]] for d in doc_ids], dtype=float)

    def _retrieve(self, queries, k):
        qids = list(queries)
        tokens = self.tokenizer([queries[q] for q in qids])
        vocab = self._model.vocab_dict
        # drop query tokens unseen in the corpus (bm25s cannot score them); keep the query alive
        tokens = [[t for t in toks if t in vocab] or [next(iter(vocab))] for toks in tokens]
        k_eff = min(k, len(self._doc_ids))
        docs, scores = self._model.retrieve(tokens, k=k_eff, show_progress=False, n_threads=1)
        run = {}
        for row, qid in enumerate(qids):
            run[qid] = {self._doc_ids[int(i)]: float(s) for i, s in zip(docs[row], scores[row]) if s > 0}
        return run

    def describe(self):
        return {"language": self.language, "k1": self.k1, "b": self.b}

    def save(self, directory):
        directory = super().save(directory)
        self._model.save(str(directory / "bm25s"), show_progress=False)
        (directory / "doc_ids.json").write_text(json.dumps(self._doc_ids))
        return directory

    @classmethod
    def load(cls, directory):
        import bm25s

        directory = Path(directory)
        meta = json.loads((directory / "retriever.json").read_text())
        retriever = cls(meta["language"], k1=meta["k1"], b=meta["b"])
        retriever.corpus = cls._load_corpus(directory)
        retriever._model = bm25s.BM25.load(str(directory / "bm25s"), show_progress=False)
        retriever._doc_ids = json.loads((directory / "doc_ids.json").read_text())
        retriever._position = {doc_id: i for i, doc_id in enumerate(retriever._doc_ids)}
        return retriever
