"""Training the offline reranker (scorers.LTRScorer) on SciFact's train claims (English, MiniLM)
and the dev half of obstetrics-es (Spanish, e5); features from helpers.retrieval.learned.features (this
module never imports scorers).

Reproducible: the same artefact, byte for byte, whatever the thread count or worker processes.
Candidate lists are fixed (each source's hybrid top 50, exact dense search, its parts' scores
rounded before they rank, ties by doc_id), queries in sorted order, features rounded
(helpers.retrieval.learned.features: an embedding's last digits follow the CPU's kernels and the
batch it was computed in), the trees grown on one OpenMP thread (scikit-learn's parallel sums of
gradients add in an order that follows the thread count, and it stores that count) with a fixed
seed, and the file written in canonical form (helpers.artefacts.canonical). The artefact and its
card are cached in data/models/. Not reproducible across CPU models: a few rounded features still
land on the other side of a boundary there, so the package ships one trained artefact (pinned/,
install_pinned), which `make data` installs and every machine reranks with.

Nearly all of a first training is embedding the two corpora (cached afterwards, per text, for
every later run): it is spread over one-thread worker processes (prefill_embeddings), in the
batches the first stage would form itself, so the vectors are those of a single process.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from pathlib import Path

import numpy as np

from helpers import paths
from helpers.artefacts import card_path, read_artefact, read_card, verified_card, write_artefact, write_card
from helpers.local_models import e5_torch
from helpers.retrieval.architectures.composed import Hybrid
from helpers.retrieval.architectures.dense import Dense
from helpers.retrieval.architectures.retriever_base import Retriever, doc_text, top_k
from helpers.retrieval.architectures.sparse import BM25
from helpers.retrieval.embedders.models import E5TorchEmbedder
from helpers.retrieval.learned.features import DECIMALS, SIMILARITY_DECIMALS, FeatureExtractor

log = logging.getLogger(__name__)
DEFAULT_PATH = paths.MODELS_DIR / "reranker-ltr.skops"
# the artefact every machine uses unless told otherwise (install_pinned), trained by train_reranker
PINNED_PATH = Path(__file__).resolve().parent / "pinned" / "reranker-ltr.skops"
RETRAIN = "python -m helpers train-reranker"
CANDIDATES = 50


SOURCES = ("scifact", "obstetrics-es")
# each source: (loader arguments, language, embedder of its first stage and features); Spanish
# questions come from obstetrics-es's dev half only (its test half is what the reranker is reported on)
_SOURCES = {
    "scifact": ({"name": "scifact", "split": "train"}, "en", "minilm"),
    "obstetrics-es": ({"name": "obstetrics-es", "query_split": "dev"}, "es", None),
}


class _Rounded(Retriever):
    """A part of the training's first stage whose scores are rounded to `decimals` before they
    rank (ties by doc_id), over a list twice as deep so that the cut falls in the rounded order.
    Measured on the training rows with every embedding moved by 1e-7 (as another batch or CPU
    kernel moves it): unrounded, dense near-ties swapped and moved labels between rows; rounded,
    no label moved and one pair of candidates (in one list of 901) swapped."""

    def __init__(self, part: Retriever, decimals: int):
        super().__init__()
        self.part, self.decimals, self.language = part, decimals, getattr(part, "language", None)
        self.name = part.name

    def _index(self, corpus):
        if self.part.corpus is not corpus:
            self.part.index(corpus)

    def _retrieve(self, queries, k):
        run = self.part.retrieve(queries, 2 * k)
        return {qid: top_k({d: round(s, self.decimals) for d, s in scores.items()}, k) for qid, scores in run.items()}


def candidate_rows(corpus: dict, queries: dict, qrels: dict, dense: Dense, *, name: str = "", candidates=CANDIDATES):
    """(features, labels, groups) of the queries that have qrels, candidates from the hybrid top
    `candidates` (default CANDIDATES) of `dense` (a Dense retriever, its language that of the
    corpus) and BM25, their scores rounded (_Rounded). Groups are '<name>/<qid>'; a list without a
    relevant document is left out."""
    from tqdm import tqdm

    parts = (dense, BM25(dense.language))
    first_stage = Hybrid(*(_Rounded(part, SIMILARITY_DECIMALS) for part in parts)).index(corpus)
    queries = {qid: queries[qid] for qid in sorted(qrels)}  # one order, whatever the loader's
    run = first_stage.retrieve(queries, candidates)
    extractor = FeatureExtractor(corpus, dense.language, embedder=dense.embedder)
    X, y, groups = [], [], []
    for qid in tqdm(queries, desc=f"reranker features ({name})", unit="query", disable=len(queries) < 50):
        doc_ids = list(run[qid])  # best first, ties by doc_id (top_k)
        if not any(d in qrels[qid] for d in doc_ids):
            continue  # nothing to learn from a list without a relevant document
        X.append(extractor.features(queries[qid], run[qid]))
        y.append([int(d in qrels[qid]) for d in doc_ids])
        groups += [f"{name}/{qid}"] * len(doc_ids)
    if not X:
        raise ValueError(f"{name or 'reranker training'}: no query has a relevant document among its candidates")
    return np.vstack(X), np.concatenate(y), np.array(groups)


def _worker_start() -> None:
    """A pool worker embeds on one thread: torch's threads spin while they wait for each other, so
    two of them lose to one when anything else wants the cores (measured on 2 cores under load:
    10 texts/s on one thread, 7-8 on two), while one-thread workers never wait for each other."""
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    import torch

    torch.set_num_threads(1)


def _embed_documents(embedder: str | None, language: str, texts: list[str]) -> np.ndarray:
    from helpers.retrieval.embedders.models import build_embedder

    return build_embedder(embedder, language).embed_documents(texts)


def prefill_embeddings(jobs: list[tuple], *, workers: int) -> int:
    """Embed the documents the cache lacks in `workers` processes of one thread each; `jobs`:
    (CachedEmbedder, embedder name, language, texts). The batches are the ones the first stage
    would form itself (CachedEmbedder: distinct texts by length, `batch_size` at a time), so the
    vectors are the same as embedding in this process; returns how many texts were embedded."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from tqdm import tqdm

    tasks = []
    for cached, embedder, language, texts in jobs:
        missing = sorted(cached.missing_documents(texts), key=len)
        size = cached.batch_size
        tasks += [(cached, embedder, language, missing[i : i + size]) for i in range(0, len(missing), size)]
    if not tasks:
        return 0
    if any(isinstance(cached.embedder, E5TorchEmbedder) for cached, *_ in jobs):
        e5_torch.build_e5_model()  # here, once: two workers would write the same folder at once
    tasks.sort(key=lambda task: -sum(map(len, task[3])))  # longest first: the pool ends on short ones
    context = multiprocessing.get_context("spawn")  # no fork of a process that may hold torch's threads
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_start) as pool:
        futures = {pool.submit(_embed_documents, e, language, part): (c, part) for c, e, language, part in tasks}
        bar = tqdm(total=sum(len(task[3]) for task in tasks), desc=f"embedding ({workers} workers)", unit="text")
        for future in as_completed(futures):
            cached, part = futures[future]
            cached.add_documents(part, future.result())  # the cache is written here only
            bar.update(len(part))
        bar.close()
    return int(bar.n)


def _prepared(sources) -> list[tuple]:
    """(source, dataset, its first stage's Dense, embedder name) per training source."""
    from helpers.data import load_dataset  # pandas: loaded only when this runs

    unknown = [source for source in sources if source not in _SOURCES]
    if unknown:
        raise ValueError(f"unknown reranker training source {unknown[0]!r}; valid: {sorted(_SOURCES)}")
    prepared = []
    for source in sources:
        arguments, language, embedder = _SOURCES[source]
        prepared.append((source, load_dataset(**arguments), Dense(embedder, language=language), embedder))
    return prepared


def _prefill(prepared: list[tuple], workers: int) -> int:
    jobs = [
        (dense.embedder, embedder, dense.language, [doc_text(doc) for doc in data.corpus.values()])
        for _, data, dense, embedder in prepared
    ]
    return prefill_embeddings(jobs, workers=workers)


def prefill_corpora(sources=SOURCES, *, workers: int | None = None) -> int:
    """Embed the training sources' corpora (SciFact with MiniLM, obstetrics-es with e5) into the
    shared cache, as a training does first, without training: the tests' reference measurements
    (SciFact's and obstetrics-es's nDCG with dense, hybrid and rerank) read them from there. Since
    the set-up installs the shipped reranker, `make test` runs this; returns the texts embedded."""
    return _prefill(_prepared(tuple(sources)), default_workers() if workers is None else workers)


def training_rows(sources=SOURCES, *, workers: int = 1):
    """(features, labels, groups) over `sources` (default: SciFact train claims and the dev half
    of obstetrics-es), candidates from each one's hybrid top 50. `workers` (default 1: embed in
    this process): processes that embed the corpora's uncached documents first (prefill_embeddings)."""
    prepared = _prepared(sources)
    if workers > 1:
        _prefill(prepared, workers)
    parts = [
        candidate_rows(data.corpus, data.queries, data.qrels, dense, name=source) for source, data, dense, _ in prepared
    ]
    return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))


def fit_reranker(X: np.ndarray, y: np.ndarray, *, seed: int = 0, max_iter: int = 300):
    """The reranker's trees (`max_iter` of them, default 300) fitted on (X, y) with `seed`
    (default 0), on one OpenMP thread whatever the machine: the same model from the same rows."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    model = HistGradientBoostingClassifier(
        max_iter=max_iter,
        learning_rate=0.05,
        max_leaf_nodes=15,
        min_samples_leaf=40,
        l2_regularization=1.0,
        random_state=seed,
        early_stopping=False,
    )
    with threadpool_limits(1, user_api="openmp"):  # seconds on ~45k rows of 10 features
        return model.fit(X, y)


def default_workers() -> int:
    """Embedding processes for train_reranker: one per core, at most 8 (each holds its models,
    about 1 GB)."""
    return max(1, min(os.cpu_count() or 1, 8))


def train_reranker(
    out_path: str | Path | None = None, seed: int = 0, sources=SOURCES, *, workers: int | None = None
) -> dict:
    """Train and save the offline reranker; returns its card (time, size, data, sha256).
    `workers`: embedding processes (default None: default_workers(); 1: in this process); the
    artefact is the same whatever their number."""
    out_path = Path(out_path or DEFAULT_PATH)
    start = time.perf_counter()
    workers = default_workers() if workers is None else workers
    X, y, groups = training_rows(tuple(sources), workers=workers)
    features_s = time.perf_counter() - start
    model = fit_reranker(X, y, seed=seed)
    per_source = {s: int(sum(g.startswith(s + "/") for g in set(groups))) for s in sources}
    training_data = {
        "scifact": "SciFact train claims (claims_train.csv)",
        "obstetrics-es": "obstetrics-es dev half (helpers.data.splits)",
    }
    info = {
        "training_data": {s: training_data[s] for s in sources},
        "sources": list(sources),
        "queries_per_source": per_source,
        "candidates": f"hybrid top {CANDIDATES}",
        "features_rounded": {"similarity": SIMILARITY_DECIMALS, "features": DECIMALS},
        # of two trainings whose artefacts differ, equal digits here blame the fit, different
        # ones the rows (embeddings whose last digits crossed a rounding boundary elsewhere)
        "rows_sha256": hashlib.sha256(X.tobytes() + y.tobytes() + "\n".join(groups).encode()).hexdigest(),
        "rows": int(len(y)),
        "positives": int(y.sum()),
        "queries": int(len(set(groups))),
        "features_s": round(features_s, 1),
        "total_s": round(time.perf_counter() - start, 1),
        "seed": seed,
        "embedding_workers": workers,
    }
    # the shipped artefact is what every machine reranks with; say whether this training made it
    pinned_sha256 = read_card(PINNED_PATH).get("sha256") if PINNED_PATH.exists() else None
    card = write_artefact(model, out_path, card={"what": "offline LTR reranker (HistGradientBoosting)", **info})
    return write_card(out_path, {**card, "same_as_shipped": card["sha256"] == pinned_sha256})


def install_pinned(path: str | Path | None = None) -> dict:
    """Copy the shipped artefact (PINNED_PATH) and its card to `path` (default DEFAULT_PATH), its
    sha256 checked against the card; returns the card. Why it ships: a training gives the same
    file whatever the thread count, but not on every CPU model (an embedding's last digits follow
    the CPU's kernels, and a few rounded features cross a boundary), and rerank's contexts, so its
    answers, follow the artefact: measured, this AMD machine's training changed 3 to 6 of rerank's
    10 answers against the earlier machines' (docs/measurements/answers-labelled-by-hand.md). One file for
    every machine gives every machine the same answers. `train_reranker` still trains one from
    the data; its card says whether it is the shipped one."""
    path = Path(path or DEFAULT_PATH)
    path.parent.mkdir(parents=True, exist_ok=True)
    card = verified_card(
        PINNED_PATH, what="shipped offline reranker", retrain="git checkout the package's pinned/ folder"
    )
    for source, target in ((PINNED_PATH, path), (card_path(PINNED_PATH), card_path(path))):
        tmp = target.with_name(target.name + ".tmp")
        shutil.copyfile(source, tmp)
        tmp.replace(target)
    return card


def load_reranker(path: str | Path | None = None):
    """The trained model (its card's sha256 checked, helpers.artefacts); the default artefact is
    the shipped one (install_pinned), copied into place when missing. A path from a config is
    read as it is."""
    default = path is None or Path(path) == DEFAULT_PATH
    path = Path(path or DEFAULT_PATH)
    if default and not path.exists():
        log.info("offline reranker not found at %s: installing the shipped one (%s)", path, PINNED_PATH)
        install_pinned(path)
    return read_artefact(path, what="offline reranker", retrain=RETRAIN)
