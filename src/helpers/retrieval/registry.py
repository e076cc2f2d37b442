"""One registry maps architecture names in configs to builders.

    retriever = build_retriever("rerank", language="es", llm=llm, options={"candidates": 50})
    retriever.index(corpus).retrieve(queries, k=10)

Architectures built together through one `shared` dict reuse their parts (one dense index,
one BM25 index per corpus).
"""
from __future__ import annotations

from typing import Callable

from helpers.retrieval.base import Retriever


def _dense(language, llm, options, shared):
    from helpers.retrieval.dense import Dense

    key = ("dense", options.get("embedder"))
    if key not in shared:
        shared[key] = Dense(options.get("embedder"), language=language)
    return shared[key]


def _bm25(language, llm, options, shared):
    from helpers.retrieval.sparse import BM25

    key = ("bm25", options.get("k1", 1.5), options.get("b", 0.75))
    if key not in shared:
        shared[key] = BM25(language, k1=options.get("k1", 1.5), b=options.get("b", 0.75))
    return shared[key]


def _hybrid(language, llm, options, shared):
    from helpers.retrieval.composed import Hybrid

    key = ("hybrid", options.get("method", "rrf"), options.get("alpha", 0.5), options.get("embedder"))
    if key not in shared:
        shared[key] = Hybrid(_dense(language, llm, options, shared), _bm25(language, llm, options, shared),
                             method=options.get("method", "rrf"), candidates=options.get("candidates", 100),
                             alpha=options.get("alpha", 0.5))
    return shared[key]


def _needs_llm(name, llm):
    if llm is None:
        raise ValueError(f"architecture '{name}' needs an LLM: pass llm=LLM(...)")


def _hyde(language, llm, options, shared):
    from helpers.retrieval.composed import HyDE

    _needs_llm("hyde", llm)
    return HyDE(_dense(language, llm, options, shared), llm, language=language,
                include_query=options.get("include_query", True))


def _multi_query(language, llm, options, shared):
    from helpers.retrieval.composed import MultiQuery

    _needs_llm("multi_query", llm)
    base = BUILDERS[options.get("base", "hybrid")](language, llm, options, shared)
    return MultiQuery(base, llm, n=options.get("n", 3), language=language)


def _rerank(language, llm, options, shared):
    from helpers.retrieval.composed import Rerank
    from helpers.retrieval.scorers import CrossEncoderScorer, LTRScorer

    scorer_name = options.get("scorer", "ltr")
    scorer = LTRScorer.load(options.get("scorer_path")) if scorer_name == "ltr" else CrossEncoderScorer(scorer_name)
    base = BUILDERS[options.get("base", "hybrid")](language, llm, options, shared)
    return Rerank(base, scorer, candidates=options.get("candidates", 50))


BUILDERS: dict[str, Callable[..., Retriever]] = {
    "dense": _dense, "bm25": _bm25, "hybrid": _hybrid, "hyde": _hyde,
    "multi_query": _multi_query, "rerank": _rerank,
}


def build_retriever(name: str, *, language: str = "en", llm=None, options: dict | None = None,
                    shared: dict | None = None) -> Retriever:
    """Build the architecture `name`; its error lists the valid names."""
    if name not in BUILDERS:
        raise ValueError(f"unknown architecture {name!r}; valid names: {sorted(BUILDERS)}")
    return BUILDERS[name](language, llm, dict(options or {}), shared if shared is not None else {})
