"""Architectures composed from others: Hybrid(dense, bm25), HyDE(dense, llm),
MultiQuery(base, llm), Rerank(base, scorer). Each is run in, run out. The LLM's prompts are the
corpus language's (helpers.languages: `hyde`, `multi_query`)."""

from __future__ import annotations

import re

import numpy as np

from helpers.languages import corpus_language
from helpers.retrieval.architectures.fusion import fuse, rrf
from helpers.retrieval.architectures.retriever_base import RetrievalError, Retriever, top_k


class Hybrid(Retriever):
    """Dense + BM25 over their top `candidates`: reciprocal rank fusion (k=60) by default, or
    normalised score combination (`method="score"`); weight on dense `alpha`, on BM25 1 - alpha
    (0.5: plain RRF). `python -m helpers tune-fusion` chooses them on held-out queries.
    Exactly k out."""

    name = "hybrid"

    def __init__(
        self,
        dense: Retriever,
        sparse: Retriever,
        *,
        method: str = "rrf",
        candidates: int = 100,
        rrf_k: int = 60,
        alpha: float = 0.5,
    ):
        super().__init__()
        if method not in {"rrf", "score"}:
            raise RetrievalError(f"hybrid method must be 'rrf' or 'score', got {method!r}")
        self.dense, self.sparse, self.method = dense, sparse, method
        self.candidates, self.rrf_k, self.alpha = candidates, rrf_k, alpha

    def _index(self, corpus):
        for part in (self.dense, self.sparse):
            if part.corpus is not corpus:
                part.index(corpus)

    def _retrieve(self, queries, k):
        depth = max(k, self.candidates)
        runs = [self.dense.retrieve(queries, depth), self.sparse.retrieve(queries, depth)]
        fused = fuse(runs, method=self.method, rrf_k=self.rrf_k, alpha=self.alpha, top=k)
        return {qid: fused.get(qid, {}) for qid in queries}

    def describe(self):
        return {"method": self.method, "candidates": self.candidates, "rrf_k": self.rrf_k, "alpha": self.alpha}


class HyDE(Retriever):
    """Hypothetical Document Embeddings, Gao et al. 2022: the LLM writes a passage answering the
    query in the corpus's language; retrieval embeds it, averaged with the query embedding when
    `include_query` (the paper averages generated documents and the query)."""

    name = "hyde"

    def __init__(self, dense, llm, *, language: str = "en", include_query: bool = True, max_tokens: int = 160):
        super().__init__()
        self.dense, self.llm, self.language = dense, llm, language
        self.include_query, self.max_tokens = include_query, max_tokens
        self.generated: dict[str, str] = {}
        self.fallbacks: dict[str, str] = {}

    def _index(self, corpus):
        if self.dense.corpus is not corpus:
            self.dense.index(corpus)

    def _passage(self, qid: str, query: str) -> str | None:
        prompt = corpus_language(self.language).hyde.format(query=query)
        try:
            text = self.llm.complete([{"role": "user", "content": prompt}], max_tokens=self.max_tokens).text
        except Exception as exc:  # any LLM failure: fall back to the query alone, recorded
            self.fallbacks[qid] = f"llm failed: {exc}"
            return None
        if len(text.split()) < 3:
            self.fallbacks[qid] = f"unusable passage: {text[:80]!r}"
            return None
        self.generated[qid] = text.strip()
        return self.generated[qid]

    def _retrieve(self, queries, k):
        embedder = self.dense.embedder
        vectors = {}
        for qid, query in queries.items():
            passage = self._passage(qid, query)
            query_vec = embedder.embed_queries([query])[0]
            if passage is None:
                vectors[qid] = query_vec
                continue
            passage_vec = embedder.embed_documents([passage])[0]
            vec = (passage_vec + query_vec) / 2 if self.include_query else passage_vec
            vectors[qid] = vec / (np.linalg.norm(vec) or 1.0)
        return self.dense.search_vectors(vectors, k)

    def describe(self):
        return {"include_query": self.include_query, "language": self.language, "llm": self.llm.name}


_NUMBERING = re.compile(r"^\s*(?:[-*•]|\d+[.)]|[a-z][.)])\s*")


def parse_rewrites(text: str, query: str, n: int) -> list[str]:
    """Up to n distinct rewrites, one per line, numbering and bullets stripped; lines that are
    empty, too short, or the query itself are dropped."""
    seen, rewrites = {query.strip().lower()}, []
    for line in text.splitlines():
        line = _NUMBERING.sub("", line).strip().strip('"')
        if len(line.split()) < 3 or line.lower() in seen:
            continue
        seen.add(line.lower())
        rewrites.append(line)
    return rewrites[:n]


class MultiQuery(Retriever):
    """The LLM writes n rewrites of the query; the original and each rewrite are retrieved by
    `base` and the lists fused with RRF (k=60). Unusable output: the original query alone, and
    the fallback is recorded in `fallbacks`."""

    name = "multi_query"

    def __init__(self, base, llm, *, n: int = 3, language: str = "en", candidates: int = 50, max_tokens: int = 120):
        super().__init__()
        self.base, self.llm, self.n, self.language = base, llm, n, language
        self.candidates, self.max_tokens = candidates, max_tokens
        self.rewrites: dict[str, list[str]] = {}
        self.fallbacks: dict[str, str] = {}

    def _index(self, corpus):
        if self.base.corpus is not corpus:
            self.base.index(corpus)

    def _rewrite(self, qid, query) -> list[str]:
        prompt = corpus_language(self.language).multi_query.format(n=self.n, query=query)
        try:
            text = self.llm.complete([{"role": "user", "content": prompt}], max_tokens=self.max_tokens).text
        except Exception as exc:  # any LLM failure: original query only, recorded
            self.fallbacks[qid] = f"llm failed: {exc}"
            return []
        rewrites = parse_rewrites(text, query, self.n)
        if not rewrites:
            self.fallbacks[qid] = f"no usable rewrite in: {text[:80]!r}"
        self.rewrites[qid] = rewrites
        return rewrites

    def _retrieve(self, queries, k):
        expanded, owner = {}, {}
        for qid, query in queries.items():
            for i, text in enumerate([query, *self._rewrite(qid, query)]):
                expanded[f"{qid}\x1f{i}"] = text
                owner[f"{qid}\x1f{i}"] = qid
        base_run = self.base.retrieve(expanded, max(k, self.candidates))
        per_query: dict[str, list] = {}
        for sub_qid, scores in base_run.items():
            per_query.setdefault(owner[sub_qid], []).append({owner[sub_qid]: scores})
        return {qid: rrf(per_query.get(qid, [{qid: {}}]), top=k).get(qid, {}) for qid in queries}

    def describe(self):
        return {"n": self.n, "language": self.language, "llm": self.llm.name, "candidates": self.candidates}


class Rerank(Retriever):
    """Second stage: the first stage (`base`) retrieves its top max(k, `candidates`), `scorer`
    re-scores them, and the top k by the new score come out (ties by doc_id).

    `scorer` follows helpers.retrieval.learned.scorers.Scorer, the one protocol of every scorer:
    `scorer.score(query, first_stage, retriever) -> np.ndarray`, with `first_stage` the query's
    candidates {doc_id: score} best first, `retriever` the first stage itself (`base`, whose
    `.corpus` holds the documents), and one score per candidate, aligned with list(first_stage).
    """

    name = "rerank"

    def __init__(self, base: Retriever, scorer, *, candidates: int = 50):
        super().__init__()
        self.base, self.scorer, self.candidates = base, scorer, candidates
        self.first_stage: dict[str, list[str]] = {}  # qid -> the first stage's ranking, for rank changes

    def _index(self, corpus):
        if self.base.corpus is not corpus:
            self.base.index(corpus)

    def _retrieve(self, queries, k):
        first = self.base.retrieve(queries, max(k, self.candidates))
        run = {}
        for qid, query in queries.items():
            ranked = top_k(first.get(qid, {}), len(first.get(qid, {})))  # best first, as promised
            self.first_stage[qid] = list(ranked)
            if not ranked:
                run[qid] = {}
                continue
            scores = np.asarray(self.scorer.score(query, ranked, self.base), dtype=float).reshape(-1)
            if len(scores) != len(ranked):  # a scorer bug, not a user's mistake
                raise RuntimeError(
                    f"{self.describe()['scorer']} returned {len(scores)} scores for {len(ranked)} candidates"
                )
            run[qid] = top_k(dict(zip(ranked, scores.tolist())), k)
        return run

    def describe(self):
        scorer = getattr(self.scorer, "name", type(self.scorer).__name__)
        artefact = getattr(self.scorer, "artefact", None)  # a trained scorer's file and sha256
        return {"candidates": self.candidates, "scorer": scorer, **({"artefact": artefact} if artefact else {})}
