"""The six architectures and their parts: the retriever contract (`base`), BM25 (`sparse`), dense
retrieval over Chroma (`dense`), run fusion (`fusion`), the composed ones (`composed`: Hybrid, HyDE,
MultiQuery, Rerank), their typed options (`options`) and a LangChain adapter (`langchain`).
Names in configs map to builders in `helpers.retrieval.registry`."""
