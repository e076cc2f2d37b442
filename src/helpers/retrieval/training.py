"""Training the offline reranker (scorers.LTRScorer) on SciFact's train claims; features from
helpers.retrieval.features (this module never imports scorers).

Deterministic: fixed candidate lists (hybrid MiniLM + BM25, top 50), fixed seeds, single-threaded
trees. The artefact (a few hundred KB) and its description are cached in data/models/.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import numpy as np

from helpers import paths

log = logging.getLogger(__name__)
DEFAULT_PATH = paths.MODELS_DIR / "reranker-ltr.joblib"
CANDIDATES = 50


def training_rows(seed: int = 0):
    """(features, labels, groups) on SciFact train claims, candidates from hybrid's top 50."""
    from tqdm import tqdm

    from helpers.data.benchmarks import load_scifact
    from helpers.retrieval.composed import Hybrid
    from helpers.retrieval.dense import Dense
    from helpers.retrieval.features import FeatureExtractor
    from helpers.retrieval.sparse import BM25

    data = load_scifact(split="train")
    first_stage = Hybrid(Dense("minilm", language="en"), BM25("en")).index(data.corpus)
    run = first_stage.retrieve(data.queries, CANDIDATES)
    extractor = FeatureExtractor(data.corpus, "en", embedder="minilm")
    X, y, groups = [], [], []
    for qid in tqdm(sorted(data.queries), desc="reranker features", unit="query"):
        doc_ids = list(run[qid])
        if not any(d in data.qrels[qid] for d in doc_ids):
            continue  # nothing to learn from a list without a relevant document
        X.append(extractor.features(data.queries[qid], run[qid]))
        y.append([int(d in data.qrels[qid]) for d in doc_ids])
        groups += [qid] * len(doc_ids)
    return np.vstack(X), np.concatenate(y), np.array(groups)


def train_reranker(out_path: str | Path | None = None, seed: int = 0) -> dict:
    """Train and save the offline reranker; returns its description (time, size, data)."""
    import joblib
    from sklearn.ensemble import HistGradientBoostingClassifier

    out_path = Path(out_path or DEFAULT_PATH)
    start = time.perf_counter()
    X, y, groups = training_rows(seed)
    features_s = time.perf_counter() - start
    model = HistGradientBoostingClassifier(max_iter=300, learning_rate=0.05, max_leaf_nodes=15,
                                           min_samples_leaf=40, l2_regularization=1.0,
                                           random_state=seed, early_stopping=False)
    model.fit(X, y)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_suffix(".tmp")
    joblib.dump(model, tmp)
    tmp.replace(out_path)
    info = {"artefact": str(out_path), "bytes": out_path.stat().st_size,
            "training_data": "SciFact train claims (claims_train.csv), candidates = hybrid top 50",
            "rows": int(len(y)), "positives": int(y.sum()), "queries": int(len(set(groups)) ),
            "features_s": round(features_s, 1), "total_s": round(time.perf_counter() - start, 1), "seed": seed}
    out_path.with_suffix(".json").write_text(json.dumps(info, indent=2))
    return info


def load_reranker(path: str | Path | None = None):
    """The trained model; trained first (and cached) when missing."""
    import joblib

    path = Path(path or DEFAULT_PATH)
    if not path.exists():
        log.warning("offline reranker not found at %s: training it now (a few minutes, once)", path)
        train_reranker(path)
    return joblib.load(path)
