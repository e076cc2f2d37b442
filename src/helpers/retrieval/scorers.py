"""Second-stage scorers for `Rerank`.

- CrossEncoderScorer: sentence-transformers' CrossEncoder by hub id or path (online default: a
  multilingual MS MARCO reranker).
- LTRScorer: the offline reranker. No cross-encoder weights ship in any package, so it is a
  learning-to-rank model (gradient-boosted trees, pointwise) over signals the workbench has
  offline and already computed: the first stage's rank, BM25, the dense model's similarity (the
  embeddings are cached by the first stage, so reranking embeds nothing new), query term,
  bigram (proximity) and title coverage, and length. Every feature is normalised within the
  candidate list, so a model trained in English on MiniLM transfers to Spanish on e5. Trained by
  `python -m helpers train-reranker` on SciFact's *train* claims (BEIR evaluates on its
  validation claims). Deterministic; artefact in data/models/.
"""
from __future__ import annotations

import numpy as np

from helpers.offline import resolve_model_path
from helpers.retrieval.base import doc_text
from helpers.retrieval.embeddings import CachedEmbedder, make_embedder

ONLINE_CROSS_ENCODER = "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1"
FEATURES = ["first_stage_norm", "first_stage_rrank", "bm25_norm", "bm25_z", "dense_z", "dense_rrank",
            "coverage", "bigram_coverage", "title_coverage", "log_len"]


class CrossEncoderScorer:
    def __init__(self, model: str = ONLINE_CROSS_ENCODER, batch_size: int = 32):
        from sentence_transformers import CrossEncoder

        self.name = f"cross-encoder:{model}"
        self.model = CrossEncoder(resolve_model_path(model, role="cross-encoder"), device="cpu")
        self.batch_size = batch_size

    def prepare(self, corpus, language):
        self.corpus = corpus

    def score(self, query, doc_ids, first_scores, retriever):
        pairs = [(query, doc_text(self.corpus[d])) for d in doc_ids]
        return self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)


def _z(values: np.ndarray) -> np.ndarray:
    std = values.std()
    return (values - values.mean()) / std if std > 0 else np.zeros_like(values)


def _rrank(values: np.ndarray) -> np.ndarray:
    """1 / rank of each value (1 = highest), ties broken by position."""
    order = np.argsort(-values, kind="stable")
    out = np.empty(len(values))
    out[order] = 1.0 / np.arange(1, len(values) + 1)
    return out


class FeatureExtractor:
    """Per-candidate features for a query (see FEATURES)."""

    def __init__(self, corpus: dict, language: str, embedder: str | None = None):
        from helpers.retrieval.sparse import BM25

        self.corpus, self.language = corpus, language
        self.bm25 = BM25("es" if language == "es" else "en").index(corpus)
        self.dense = CachedEmbedder(make_embedder(embedder, language))
        self._index = {doc_id: i for i, doc_id in enumerate(self.bm25._doc_ids)}
        self._doc_terms: dict[str, tuple[list[str], set[str]]] = {}

    def _terms(self, text: str) -> list[str]:
        return self.bm25.tokenizer([text])[0]

    def _doc(self, doc_id: str) -> tuple[list[str], set[str]]:
        """Stemmed terms of a document's text and title, memoised (candidates recur across queries)."""
        if doc_id not in self._doc_terms:
            doc = self.corpus[doc_id]
            self._doc_terms[doc_id] = (self._terms(doc["text"]), set(self._terms(doc.get("title") or "")))
        return self._doc_terms[doc_id]

    def features(self, query: str, doc_ids: list[str], first_scores: dict[str, float]) -> np.ndarray:
        n = len(doc_ids)
        first = np.array([first_scores[d] for d in doc_ids], dtype=float)
        terms = self._terms(query)
        known = [t for t in terms if t in self.bm25._model.vocab_dict]
        all_bm25 = self.bm25._model.get_scores(known) if known else np.zeros(len(self._index))
        bm25 = np.array([all_bm25[self._index[d]] for d in doc_ids], dtype=float)
        q = self.dense.embed_queries([query])[0]
        dense = self.dense.embed_documents([doc_text(self.corpus[d]) for d in doc_ids]) @ q
        query_terms, query_bigrams = set(terms), set(zip(terms, terms[1:]))
        coverage, bigrams, titles, lengths = [], [], [], []
        for doc_id in doc_ids:
            doc_terms, title_terms = self._doc(doc_id)
            coverage.append(len(query_terms & set(doc_terms)) / (len(query_terms) or 1))
            bigrams.append(len(query_bigrams & set(zip(doc_terms, doc_terms[1:]))) / (len(query_bigrams) or 1))
            titles.append(len(query_terms & title_terms) / (len(query_terms) or 1))
            lengths.append(len(self.corpus[doc_id]["text"]))
        return np.column_stack([
            first / (first.max() or 1.0), _rrank(first), bm25 / (bm25.max() or 1.0), _z(bm25),
            _z(dense), _rrank(dense), coverage, bigrams, titles, np.log1p(lengths),
        ])


def _find_dense(retriever):
    """The dense part of a composed first stage, whose cached embeddings the features reuse."""
    from helpers.retrieval.dense import Dense

    stack = [retriever]
    while stack:
        node = stack.pop()
        if isinstance(node, Dense):
            return node
        stack += [getattr(node, a) for a in ("base", "dense") if hasattr(node, a)]
    return None


class LTRScorer:
    """Offline learning-to-rank reranker; `LTRScorer.load()` reads the trained artefact."""

    name = "ltr-offline"

    def __init__(self, model):
        self.model = model
        self.extractor: FeatureExtractor | None = None

    def prepare(self, corpus, language, embedder=None):
        self.extractor = FeatureExtractor(corpus, language, embedder)

    def score(self, query, doc_ids, first_scores, retriever):
        if self.extractor is None or self.extractor.corpus is not retriever.corpus:
            dense = _find_dense(retriever)
            self.prepare(retriever.corpus, dense.language if dense else "en",
                         dense.embedder_name if dense else None)
        from threadpoolctl import threadpool_limits

        features = self.extractor.features(query, doc_ids, first_scores)
        with threadpool_limits(1, user_api="openmp"):  # 50 rows: OpenMP start-up would dominate
            return self.model.predict_proba(features)[:, 1]

    @classmethod
    def load(cls, path=None):
        from helpers.retrieval.training import load_reranker

        return cls(load_reranker(path))
