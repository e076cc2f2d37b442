"""Retrieval architectures: dense, bm25, hybrid, hyde, multi_query, rerank (see registry)."""

from helpers.retrieval.architectures.composed import Hybrid, HyDE, MultiQuery, Rerank
from helpers.retrieval.architectures.dense import Dense
from helpers.retrieval.architectures.retriever_base import RetrievalError, Retriever
from helpers.retrieval.architectures.sparse import BM25
from helpers.retrieval.registry import BUILDERS, RetrievalOptions, build_retriever

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
