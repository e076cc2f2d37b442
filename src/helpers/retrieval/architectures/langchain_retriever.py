"""LangChain, both ways.

`WorkbenchRetriever`: any workbench retriever as a LangChain retriever, to drop into chains.

`LangChain`: the retriever of your LangChain app, benchmarked beside the six:

    architectures: [dense, bm25, "langchain:myapp.retrieval:build_retriever"]

A config that names one runs code, so the module is imported only when you allow it:
`python -m helpers --trust-code myapp.retrieval run CONFIG` (or HELPERS_TRUST_CODE=myapp.retrieval).
`MODULE:FACTORY` names a function (importable: your package installed, or on PYTHONPATH) that takes
the corpus as a list of LangChain `Document`s (page_content = title and text, metadata = the chunk's
metadata plus `doc_id`) and returns any `BaseRetriever` (a vector store's `.as_retriever()`,
BM25Retriever, an ensemble, a self-query retriever ...). The workbench calls `invoke(question)` and
keeps the first k documents, in their order; LangChain retrievers return no scores, so a document's
score is 1 / rank (what fusion and reranking read as an order). A returned document is matched to
the corpus by its `doc_id` metadata, else by its exact text.
"""

from __future__ import annotations

import importlib

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, SkipValidation

from helpers.inputs import require_trusted_code
from helpers.retrieval.architectures.retriever_base import RetrievalError, Retriever, doc_text

PREFIX = "langchain:"


class WorkbenchRetriever(BaseRetriever):
    """`WorkbenchRetriever(retriever=Hybrid(...).index(corpus), k=5)`; each Document carries
    doc_id, score and the corpus metadata (page, section, ...)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    retriever: SkipValidation[Retriever]  # typed for the checker; pydantic takes any object, as it always did
    k: int = 5

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        run = self.retriever.retrieve({"q": query}, self.k)["q"]
        corpus = self.retriever.corpus
        assert corpus is not None  # retrieve raised otherwise
        return [
            Document(
                page_content=corpus[doc_id]["text"],
                metadata={**{k: v for k, v in corpus[doc_id].items() if k != "text"}, "doc_id": doc_id, "score": score},
            )
            for doc_id, score in run.items()
        ]


def resolve_factory(target: str):
    """The function `MODULE:FACTORY` names; a clear error when it cannot be found. The module is
    imported only if the user trusts it (helpers.inputs.require_trusted_code: a config that names it
    runs nothing otherwise, a dry run included)."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise RetrievalError(
            f"architecture {PREFIX}{target!r}: write it as {PREFIX}MODULE:FACTORY, e.g. {PREFIX}myapp.rag:retriever"
        )
    require_trusted_code(module_name, f"architecture {PREFIX}{target}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RetrievalError(
            f"architecture {PREFIX}{target}: cannot import {module_name!r} ({exc}); install your package or add it to PYTHONPATH"
        ) from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise RetrievalError(f"architecture {PREFIX}{target}: {module_name} has no function {attribute!r}")
    return factory


class LangChain(Retriever):
    """A LangChain `BaseRetriever` built by a factory over the corpus (see the module docstring)."""

    name = "langchain"

    def __init__(self, target: str):
        super().__init__()
        self.target, self.factory = target, resolve_factory(target)
        self.retriever = None

    def _index(self, corpus):
        documents = [
            Document(page_content=doc_text(doc), metadata={**_plain(doc), "doc_id": doc_id})
            for doc_id, doc in corpus.items()
        ]
        try:
            retriever = self.factory(documents)
        except Exception as exc:  # the user's code: one line naming it and what it must do (--debug: the traceback)
            raise RetrievalError(
                f"architecture {PREFIX}{self.target}: the factory failed ({type(exc).__name__}: {exc}); "
                f"{self.target} must take the corpus (a list of LangChain Documents) and return a BaseRetriever"
            ) from exc
        if not isinstance(retriever, BaseRetriever):
            raise RetrievalError(
                f"architecture {PREFIX}{self.target}: the factory returned {type(retriever).__name__}, not a LangChain BaseRetriever"
            )
        self.retriever = retriever
        self._by_text = {doc_text(doc): doc_id for doc_id, doc in corpus.items()}

    def _retrieve(self, queries, k):
        run = {}
        for qid, query in queries.items():
            scores: dict[str, float] = {}
            for document in self.retriever.invoke(query):
                doc_id = document.metadata.get("doc_id") or self._by_text.get(document.page_content)
                if doc_id in self.corpus and doc_id not in scores:
                    scores[doc_id] = 1.0 / (len(scores) + 1)
                if len(scores) == k:
                    break
            run[qid] = scores
        return run

    def describe(self):
        return {"factory": self.target, "retriever": type(self.retriever).__name__ if self.retriever else None}


def _plain(doc: dict) -> dict:
    """The chunk's metadata a vector store can keep (strings, numbers, booleans)."""
    return {k: v for k, v in doc.items() if k not in ("text", "title") and isinstance(v, (str, int, float, bool))}
