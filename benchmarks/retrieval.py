"""Retrieval speed and quality, side by side in one run, against the seed benchmark's way of
doing the same job: LangChain's BM25Retriever (rank_bm25), LangChain's Chroma wrapper and
LangChain's EnsembleRetriever, on the same corpus and queries.

  python benchmarks/retrieval.py [--dataset scifact] [--rebuild-docs 300] [--out results/benchmarks/retrieval.json]

Both sides embed queries with the same MiniLM model object, warmed up first and uncached, so the
hybrid ratio measures the retrieval machinery; our query-embedding cache is reported separately. The warm/cold rebuild
ratio re-indexes a subset of the corpus into Chroma with an empty vs a filled embedding cache.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_dataset
from helpers.retrieval import BM25, Dense, Hybrid
from helpers.retrieval.architectures.retriever_base import doc_text
from helpers.retrieval.embedders.models import CachedEmbedder, EmbeddingCache, build_embedder
from helpers.retrieval.evaluation.metrics import evaluate_run


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


class _UncachedMiniLM:
    """Our Dense with query embedding done live by the shared model (no cache), like LangChain."""

    def __init__(self, raw):
        self.raw, self.name = raw, raw.name

    def embed_queries(self, texts):
        return self.raw.embed_queries(texts)

    def embed_documents(self, texts):
        return self.raw.embed_documents(texts)


def langchain_side(data, queries, raw_embedder, k=10):
    from langchain_chroma import Chroma
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    class LCEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return CachedEmbedder(raw_embedder).embed_documents(texts).tolist()  # index from cache: fair

        def embed_query(self, text):
            return raw_embedder.embed_queries([text])[0].tolist()

    docs = [Document(page_content=doc_text(doc), metadata={"doc_id": d}) for d, doc in data.corpus.items()]
    bm25 = BM25Retriever.from_documents(docs, k=k)
    chroma = Chroma.from_documents(
        docs, LCEmbeddings(), persist_directory=tempfile.mkdtemp(), collection_metadata={"hnsw:space": "cosine"}
    )
    dense = chroma.as_retriever(search_kwargs={"k": k})
    ensemble = EnsembleRetriever(retrievers=[bm25, dense], weights=[0.5, 0.5])
    report = {}
    for name, retriever in {"bm25": bm25, "hybrid": ensemble}.items():
        run, seconds = _timed(
            lambda: {
                qid: {doc.metadata["doc_id"]: 1.0 / (i + 1) for i, doc in enumerate(retriever.invoke(text)[:k])}
                for qid, text in queries.items()
            }
        )
        report[name] = {
            "queries_per_s": round(len(queries) / seconds, 2),
            "ndcg@10": round(evaluate_run({q: data.qrels[q] for q in queries}, run)["ndcg@10"], 4),
        }
    return report


def our_side(data, queries, raw_embedder, k=10):
    bm25 = BM25(data.language).index(data.corpus)
    dense = Dense("minilm", language=data.language).index(data.corpus)  # documents from the cache
    dense.embedder = _UncachedMiniLM(raw_embedder)  # queries embedded live, as LangChain does
    hybrid = Hybrid(dense, bm25).index(data.corpus)
    report = {}
    for name, retriever in {"bm25": bm25, "hybrid": hybrid}.items():
        run, seconds = _timed(lambda: retriever.retrieve(queries, k))
        report[name] = {
            "queries_per_s": round(len(queries) / seconds, 2),
            "ndcg@10": round(evaluate_run({q: data.qrels[q] for q in queries}, run)["ndcg@10"], 4),
        }
    dense.embedder = CachedEmbedder(raw_embedder)
    dense.embedder.embed_queries(list(queries.values()))  # fill the query cache
    run, seconds = _timed(lambda: hybrid.retrieve(queries, k))
    report["hybrid_query_cache_warm"] = {"queries_per_s": round(len(queries) / seconds, 2)}
    return report


def rebuild(data, n_docs: int) -> dict:
    subset = dict(list(data.corpus.items())[:n_docs])
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "emb.sqlite")
        cold = Dense("minilm", directory=Path(tmp) / "a")
        cold.embedder = CachedEmbedder(build_embedder("minilm"), cache)
        _, cold_s = _timed(lambda: cold.index(subset))
        warm = Dense("minilm", directory=Path(tmp) / "b")
        warm.embedder = CachedEmbedder(build_embedder("minilm"), cache)
        _, warm_s = _timed(lambda: warm.index(subset))
    return {
        "documents": n_docs,
        "cold_s": round(cold_s, 2),
        "warm_s": round(warm_s, 2),
        "speedup": round(cold_s / warm_s, 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--rebuild-docs", type=int, default=300)
    parser.add_argument("--out", default=str(paths.benchmark_output("retrieval")))
    args = parser.parse_args(argv)
    data = load_dataset(args.dataset)
    queries = {q: data.queries[q] for q in data.qrels}
    raw = build_embedder("minilm")
    # the model's first passes pay one-time start-up costs (about 10 s here); pay them before
    # either side is timed, since both sides then embed queries live with this same model
    raw.embed_queries(list(queries.values()))
    ours, theirs = our_side(data, queries, raw), langchain_side(data, queries, raw)
    report = {
        "dataset": args.dataset,
        "documents": len(data.corpus),
        "queries": len(queries),
        "ours": ours,
        "langchain": theirs,
        "ratios": {
            "bm25_queries_per_s": round(ours["bm25"]["queries_per_s"] / theirs["bm25"]["queries_per_s"], 1),
            "hybrid_queries_per_s": round(ours["hybrid"]["queries_per_s"] / theirs["hybrid"]["queries_per_s"], 1),
        },
        "rebuild": rebuild(data, args.rebuild_docs),
    }
    paths.write_json(args.out, report, echo=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
