"""Training the offline reranker (scorers.LTRScorer) on SciFact's train claims (English, MiniLM)
and the dev half of obstetrics-es (Spanish, e5); features from helpers.retrieval.learned.features (this
module never imports scorers).

Deterministic: fixed candidate lists (each source's hybrid top 50), fixed seeds, single-threaded
trees. The artefact (a skops file, helpers.artefacts) and its card are cached in data/models/.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from helpers import paths
from helpers.artefacts import read_artefact, write_artefact
from helpers.retrieval.architectures.composed import Hybrid
from helpers.retrieval.architectures.dense import Dense
from helpers.retrieval.architectures.sparse import BM25
from helpers.retrieval.learned.features import FeatureExtractor

log = logging.getLogger(__name__)
DEFAULT_PATH = paths.MODELS_DIR / "reranker-ltr.skops"
RETRAIN = "python -m helpers train-reranker"
CANDIDATES = 50


SOURCES = ("scifact", "obstetrics-es")
# each source: (loader arguments, language, embedder of its first stage and features); Spanish
# questions come from obstetrics-es's dev half only (its test half is what the reranker is reported on)
_SOURCES = {
    "scifact": ({"name": "scifact", "split": "train"}, "en", "minilm"),
    "obstetrics-es": ({"name": "obstetrics-es", "query_split": "dev"}, "es", None),
}


def source_rows(source: str):
    """(features, labels, groups) of one source, candidates from its hybrid top 50."""
    from tqdm import tqdm

    from helpers.data import load_dataset  # pandas: loaded only when this runs

    if source not in _SOURCES:
        raise ValueError(f"unknown reranker training source {source!r}; valid: {sorted(_SOURCES)}")
    arguments, language, embedder = _SOURCES[source]
    data = load_dataset(**arguments)
    dense = Dense(embedder, language=language)
    first_stage = Hybrid(dense, BM25(language)).index(data.corpus)
    queries = {qid: data.queries[qid] for qid in data.qrels}
    run = first_stage.retrieve(queries, CANDIDATES)
    extractor = FeatureExtractor(data.corpus, language, embedder=dense.embedder)
    X, y, groups = [], [], []
    for qid in tqdm(sorted(queries), desc=f"reranker features ({source})", unit="query"):
        doc_ids = list(run[qid])
        if not any(d in data.qrels[qid] for d in doc_ids):
            continue  # nothing to learn from a list without a relevant document
        X.append(extractor.features(queries[qid], run[qid]))
        y.append([int(d in data.qrels[qid]) for d in doc_ids])
        groups += [f"{source}/{qid}"] * len(doc_ids)
    return np.vstack(X), np.concatenate(y), np.array(groups)


def training_rows(sources=SOURCES):
    """(features, labels, groups) over `sources` (default: SciFact train claims and the dev half
    of obstetrics-es), candidates from each one's hybrid top 50."""
    parts = [source_rows(source) for source in sources]
    return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))


def train_reranker(out_path: str | Path | None = None, seed: int = 0, sources=SOURCES) -> dict:
    """Train and save the offline reranker; returns its card (time, size, data, sha256)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    out_path = Path(out_path or DEFAULT_PATH)
    start = time.perf_counter()
    X, y, groups = training_rows(tuple(sources))
    features_s = time.perf_counter() - start
    model = HistGradientBoostingClassifier(
        max_iter=300,
        learning_rate=0.05,
        max_leaf_nodes=15,
        min_samples_leaf=40,
        l2_regularization=1.0,
        random_state=seed,
        early_stopping=False,
    )
    model.fit(X, y)
    per_source = {s: int(sum(g.startswith(s + "/") for g in set(groups))) for s in sources}
    info = {
        "training_data": {
            "scifact": "SciFact train claims (claims_train.csv)",
            "obstetrics-es": "obstetrics-es dev half (helpers.data.splits)",
        },
        "sources": list(sources),
        "queries_per_source": per_source,
        "candidates": f"hybrid top {CANDIDATES}",
        "rows": int(len(y)),
        "positives": int(y.sum()),
        "queries": int(len(set(groups))),
        "features_s": round(features_s, 1),
        "total_s": round(time.perf_counter() - start, 1),
        "seed": seed,
    }
    info["training_data"] = {s: info["training_data"][s] for s in sources}
    return write_artefact(model, out_path, card={"what": "offline LTR reranker (HistGradientBoosting)", **info})


def load_reranker(path: str | Path | None = None):
    """The trained model (its card's sha256 checked, helpers.artefacts); the default artefact is
    trained first (and cached) when missing. A path from a config is read, never trained."""
    default = path is None or Path(path) == DEFAULT_PATH
    path = Path(path or DEFAULT_PATH)
    if default and not path.exists():
        log.warning("offline reranker not found at %s: training it now (a few minutes, once)", path)
        train_reranker(path)
    return read_artefact(path, what="offline reranker", retrain=RETRAIN)
