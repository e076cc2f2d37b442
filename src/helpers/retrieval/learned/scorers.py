"""Second-stage scorers for `Rerank`, and the one protocol they share (`Scorer`).

- CrossEncoderScorer: any sentence-transformers CrossEncoder by path or hub id (a hub id needs
  the hub on, or the model in the local Hugging Face cache).
- LTRScorer: the offline reranker. No cross-encoder weights ship in any package, so it is a
  learning-to-rank model (gradient-boosted trees, pointwise) over signals the workbench has
  offline and already computed (helpers.retrieval.learned.features): the first stage's rank, BM25, the
  dense model's similarity (the embeddings are cached by the first stage, so reranking embeds
  nothing new), query term, bigram (proximity) and title coverage, and length. Trained by
  `python -m helpers train-reranker` on SciFact's *train* claims (BEIR evaluates on its
  validation claims). Reproducible (the same sha256 whatever the threads); artefact in data/models/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from helpers.artefacts import read_card
from helpers.offline_defaults import resolve_model_path
from helpers.retrieval.architectures.dense import Dense
from helpers.retrieval.architectures.retriever_base import Retriever, doc_text
from helpers.retrieval.learned.features import FeatureExtractor
from helpers.retrieval.learned.ltr_training import DEFAULT_PATH, load_reranker

ONLINE_CROSS_ENCODER = "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1"


class Scorer(Protocol):
    """What `Rerank` asks of a second stage.

    `name`: shown in Rerank.describe().
    `score(query, first_stage, retriever) -> np.ndarray`:
        query: the query text;
        first_stage: the first stage's candidates for this query, {doc_id: score}, best first;
        retriever: the first stage itself (Rerank's `base`, indexed): `retriever.corpus` holds
            the documents, and its parts (a Dense with cached embeddings, a BM25) may be reused;
        returns one score per candidate, aligned with `list(first_stage)`; higher is better.
    """

    name: str

    def score(self, query: str, first_stage: dict[str, float], retriever: Retriever) -> np.ndarray: ...


class CrossEncoderScorer:
    """Scores (query, title + text) pairs with a CrossEncoder (`model`: path or hub id;
    default ONLINE_CROSS_ENCODER, a multilingual MS MARCO reranker; `batch_size` 32)."""

    def __init__(self, model: str = ONLINE_CROSS_ENCODER, *, batch_size: int = 32):
        from sentence_transformers import CrossEncoder

        self.name = f"cross-encoder:{model}"
        # on the CPU, as everything here: the same scores on every machine
        # safetensors only, no remote code: a shared folder's pytorch_model.bin (a pickle) or
        # custom modelling code is refused rather than run (SECURITY.md)
        self.model = CrossEncoder(
            resolve_model_path(model, role="cross-encoder"),
            device="cpu",
            trust_remote_code=False,
            model_kwargs={"use_safetensors": True},
        )
        self.batch_size = batch_size

    def score(self, query: str, first_stage: dict[str, float], retriever: Retriever) -> np.ndarray:
        corpus = retriever.corpus
        assert corpus is not None  # the first stage retrieved `first_stage`: it is indexed
        pairs = [(query, doc_text(corpus[doc_id])) for doc_id in first_stage]
        return np.asarray(
            self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True),
            dtype=float,
        )


def _first_stage_parts(retriever: Retriever) -> tuple[str, object | None]:
    """(language, dense embedder or None) of a possibly composed first stage: the features reuse
    its dense part's cached embedder and follow its language."""
    language, embedder, stack = None, None, [retriever]
    while stack:
        node = stack.pop()
        if isinstance(node, Dense) and embedder is None:
            embedder, language = node.embedder, node.language
        language = language or getattr(node, "language", None)
        stack += [getattr(node, part) for part in ("base", "dense", "sparse") if hasattr(node, part)]
    return language or "en", embedder


class LTRScorer:
    """Offline learning-to-rank reranker; `LTRScorer.load(path)` reads the trained artefact."""

    name = "ltr-offline"

    def __init__(self, model, *, artefact: str | None = None):
        """`artefact`: which trained file scores (default None: a model given in memory), shown in
        Rerank.describe() and so in a run's set-up."""
        self.model, self.artefact = model, artefact
        self.extractor: FeatureExtractor | None = None

    def score(self, query: str, first_stage: dict[str, float], retriever: Retriever) -> np.ndarray:
        from threadpoolctl import threadpool_limits

        corpus = retriever.corpus
        assert corpus is not None  # the first stage retrieved `first_stage`: it is indexed
        if self.extractor is None or self.extractor.corpus is not corpus:
            language, embedder = _first_stage_parts(retriever)
            self.extractor = FeatureExtractor(corpus, language, embedder=embedder)
        features = self.extractor.features(query, first_stage)
        with threadpool_limits(1, user_api="openmp"):  # 50 rows: OpenMP start-up would dominate
            return self.model.predict_proba(features)[:, 1]

    @classmethod
    def load(cls, path=None) -> "LTRScorer":
        """The artefact at `path` (default data/models/reranker-ltr.skops, trained when missing),
        named by its file and the first 12 hex digits of its sha256 (from its card, just checked):
        training is reproducible, so the digits tell whether two runs reranked with the same model."""
        model = load_reranker(path)
        path = Path(path or DEFAULT_PATH)
        return cls(model, artefact=f"{path.name} sha256:{read_card(path)['sha256'][:12]}")


def build_scorer(scorer: str = "ltr", *, scorer_path: str | None = None, batch_size: int = 32) -> Scorer:
    """'ltr' -> LTRScorer (artefact `scorer_path`); anything else -> a CrossEncoder by path or hub id."""
    if scorer == "ltr":
        return LTRScorer.load(scorer_path)
    return CrossEncoderScorer(scorer, batch_size=batch_size)
