"""The offline reranker is a reproducible artefact: trained twice from nothing (fresh embedding
caches and indexes, so every embedding is computed again), once with one torch thread and once
with two, a small version gives the same file, byte for byte, and so the same sha256.

And embedding in worker processes (train_reranker's default) trains the same file as in one.

What it guards, each of which makes two trainings differ without its fix: skops's archive names
entries after memory addresses and dates them (helpers.artefacts.canonical), and scikit-learn's
gradient boosting stores its OpenMP thread count and sums gradients in an order that follows it
(fit on one thread). The rounding of features (helpers.retrieval.learned.features) is for
embeddings whose last digits follow the CPU's kernels and the batch a text was embedded in; on
the 2-core machine this was written on, torch's thread count left MiniLM's and e5's embeddings
bit for bit the same, so this test does not fail without the rounding there."""

import numpy as np
import pytest

from helpers.artefacts import read_artefact, write_artefact
from helpers.retrieval.architectures.dense import Dense
from helpers.retrieval.architectures.retriever_base import doc_text
from helpers.retrieval.embedders.models import EmbeddingCache
from helpers.retrieval.learned.features import DECIMALS
from helpers.retrieval.learned.ltr_training import candidate_rows, fit_reranker, prefill_embeddings


@pytest.fixture(scope="module")
def tiny_scifact(raw_ready):
    """30 SciFact train claims over 150 abstracts cut to 400 characters: their relevant ones and
    the first others by doc_id (seconds to embed, yet hundreds of rows with both labels)."""
    from helpers.data import load_dataset

    data = load_dataset("scifact", split="train")
    qrels = {qid: data.qrels[qid] for qid in sorted(data.qrels)[:30]}
    relevant = sorted({doc_id for docs in qrels.values() for doc_id in docs if doc_id in data.corpus})
    others = [doc_id for doc_id in sorted(data.corpus) if doc_id not in relevant][: 150 - len(relevant)]
    corpus = {
        d: {"title": data.corpus[d].get("title", ""), "text": data.corpus[d]["text"][:400]} for d in relevant + others
    }
    qrels = {qid: {d: g for d, g in docs.items() if d in corpus} for qid, docs in qrels.items()}
    return corpus, {qid: data.queries[qid] for qid in qrels}, qrels


def _train(tiny, folder, threads: int, workers: int = 1):
    """(features, labels, the artefact's card, the model) of a training from nothing with
    `threads` torch threads and at most `threads` OpenMP and BLAS threads; `workers` > 1: the
    corpus embedded first by that many one-thread processes, as train_reranker does."""
    import torch
    from threadpoolctl import threadpool_limits

    corpus, queries, qrels = tiny
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(threads):
            # its own cache and index folder: nothing embedded by the other training is reused
            cache = EmbeddingCache(folder / "embeddings.sqlite")
            dense = Dense("minilm", language="en", directory=folder / "index", cache=cache)
            if workers > 1:
                texts = [doc_text(doc) for doc in corpus.values()]
                assert prefill_embeddings([(dense.embedder, "minilm", "en", texts)], workers=workers) == len(corpus)
            X, y, _ = candidate_rows(corpus, queries, qrels, dense, name="tiny", candidates=20)
            # every query and document really embedded in this training, none read from another's cache
            assert dense.embedder.computed == len(queries) + (0 if workers > 1 else len(corpus))
            model = fit_reranker(X, y, max_iter=40)
    finally:
        torch.set_num_threads(before)
    return X, y, write_artefact(model, folder / "reranker.skops", card={"what": "test"}), model


@pytest.mark.slow
def test_the_reranker_trained_with_one_or_two_threads_is_the_same_file(tiny_scifact, tmp_path):
    X1, y1, card1, model1 = _train(tiny_scifact, tmp_path / "one", threads=1)
    X2, y2, card2, _ = _train(tiny_scifact, tmp_path / "two", threads=2)
    assert len(y1) >= 300 and 0 < y1.sum() < len(y1)  # a real training set, both labels
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    assert np.array_equal(X1, np.round(X1, DECIMALS))  # what the trees saw is rounded
    assert card1["sha256"] == card2["sha256"]
    assert (tmp_path / "one" / "reranker.skops").read_bytes() == (tmp_path / "two" / "reranker.skops").read_bytes()
    # the canonical file is still an ordinary skops artefact: it loads and predicts as trained
    loaded = read_artefact(tmp_path / "two" / "reranker.skops")
    assert np.array_equal(loaded.predict_proba(X1), model1.predict_proba(X1))


@pytest.mark.slow
def test_embedding_in_worker_processes_trains_the_same_reranker(tiny_scifact, tmp_path):
    """train_reranker embeds the corpora in one-thread worker processes first: the same batches
    as the first stage's own, so the same vectors, features and file as in one process."""
    X1, _, card1, _ = _train(tiny_scifact, tmp_path / "alone", threads=2)
    X2, _, card2, _ = _train(tiny_scifact, tmp_path / "pool", threads=2, workers=2)
    assert np.array_equal(X1, X2)
    assert card1["sha256"] == card2["sha256"]
