"""Retrieval architectures: dense, bm25, hybrid, hyde, multi_query, rerank (see registry)."""

from helpers.retrieval.base import RetrievalError, Retriever
from helpers.retrieval.composed import Hybrid, HyDE, MultiQuery, Rerank
from helpers.retrieval.dense import Dense
from helpers.retrieval.options import RetrievalOptions
from helpers.retrieval.registry import BUILDERS, build_retriever
from helpers.retrieval.sparse import BM25

__all__ = [
    "BM25",
    "BUILDERS",
    "Dense",
    "HyDE",
    "Hybrid",
    "MultiQuery",
    "Rerank",
    "RetrievalError",
    "RetrievalOptions",
    "Retriever",
    "build_retriever",
]
