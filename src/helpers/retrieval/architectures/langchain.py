"""Any workbench retriever as a LangChain retriever, to drop into chains."""

from __future__ import annotations

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict


class WorkbenchRetriever(BaseRetriever):
    """`WorkbenchRetriever(retriever=Hybrid(...).index(corpus), k=5)`; each Document carries
    doc_id, score and the corpus metadata (page, section, ...)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    retriever: object
    k: int = 5

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun):
        run = self.retriever.retrieve({"q": query}, self.k)["q"]
        corpus = self.retriever.corpus
        return [
            Document(
                page_content=corpus[doc_id]["text"],
                metadata={**{k: v for k, v in corpus[doc_id].items() if k != "text"}, "doc_id": doc_id, "score": score},
            )
            for doc_id, score in run.items()
        ]
