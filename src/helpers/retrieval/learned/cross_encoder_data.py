"""The retrieval cross-encoder's settings and training data: (query, passage) pairs with their
first stage's ranks, from three sources, none of them an evaluation set:

- SciFact *train* claims over the SciFact corpus (BEIR evaluates on the other claims);
- obstetrics-es *dev* questions over the guideline corpus (Spanish; the test half is never read);
- RAGBench non-test splits: each question with its documents; a document with a
  relevance-labelled sentence (`all_relevant_sentence_keys`, "0a" -> document 0) is relevant.

Negatives are a few documents drawn (seeded) from the first stage's top `negative_depth`
non-relevant documents of the same corpus (hard) and one or so from the whole corpus (random):
hybrid (dense + BM25, as `Rerank` sees them at run time) on SciFact, BM25 on obstetrics-es
(hybrid there is a setting: it first embeds the corpus with the e5, minutes on one thread) and
over the pooled documents of the subset on RAGBench. `held_out` of the queries of each source (by
a hash of source and query id; on obstetrics-es by gold passage, as its dev/test split) are kept
out of training, for the card's held-out metrics (`cross_encoder_training`).

    settings = RetrievalTrainSettings.from_options(epochs=1.0, seed=0)   # flat, as the CLI gives them
    data = training_data(settings)      # {"train": pairs, "held": held-out queries, ...}
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from helpers.data import load_dataset, training_frame
from helpers.data.splits import query_group
from helpers.finetune import LOOP_FIELDS, LoopSettings, Pair, flat_record, with_loop
from helpers.retrieval.architectures.retriever_base import doc_text
from helpers.retrieval.architectures.sparse import BM25
from helpers.retrieval.registry import build_retriever

SOURCES = ("scifact", "obstetrics-es", "ragbench")
FIRST_STAGES = ("hybrid", "bm25")
# the card's and the checkpoint's flat record, in the order cards have always listed it
RECORD_ORDER = (
    "base",
    "sources",
    "max_queries",
    "first_stage",
    "negatives",
    "random_negatives",
    "negative_depth",
    "max_positives",
    "epochs",
    "lr",
    "head_lr",
    "batch_size",
    "warmup",
    "max_length",
    "max_query_chars",
    "held_out",
    "seed",
    "checkpoint_every",
    "freeze_embeddings",
    "limit_pairs",
)


def default_loop() -> LoopSettings:
    """The training loop's settings for the retrieval cross-encoder."""
    return LoopSettings(
        base="minilm",  # or a path (e.g. the trained evidence model's folder)
        batch_size=16,
        warmup=0.1,
        max_length=192,
        # pooler + classifier at their own rate: at the encoder's 5e-5 alone they barely moved in 300 steps
        head_lr=5e-4,
    )


@dataclass
class RetrievalTrainSettings:
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
    max_query_chars: int = 300  # long RAGBench questions are cut before tokenising
    held_out: float = 0.1
    limit_pairs: int | None = None  # tests: at most this many training pairs (a seeded sample)
    loop: LoopSettings = field(default_factory=default_loop)

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
            value = getattr(self.loop if name in LOOP_FIELDS else self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.loop.max_length, int) and self.loop.max_length < 32:
            problems.append(f"max_length {self.loop.max_length} leaves no room for the passage (at least 32)")
        if (
            isinstance(self.negatives, int)
            and isinstance(self.negative_depth, int)
            and self.negatives > self.negative_depth
        ):
            problems.append(
                f"negatives ({self.negatives}) are drawn from the top negative_depth "
                f"({self.negative_depth}): make negative_depth >= negatives"
            )
        head_lr = self.loop.head_lr
        if head_lr is not None and not (isinstance(head_lr, (int, float)) and 0 < head_lr < 1):
            problems.append(f"head_lr must be in (0, 1) or None, got {head_lr!r}")
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

    @classmethod
    def from_options(cls, **options) -> RetrievalTrainSettings:
        """From flat options, the loop's among them (`seed=1, batch_size=8`), as the command line
        and the card's "settings" spell them."""
        return with_loop(cls, default_loop(), options, "retrieval cross-encoder settings")

    def record(self) -> dict:
        """Flat, as the card shows the settings and the checkpoint is stamped (`flat_record`)."""
        return flat_record(self, RECORD_ORDER)


@dataclass
class Query:
    """One training query: its texts, and its candidates with the first stage's rank (None: not
    in the first stage's list)."""

    source: str
    key: str  # hashed for the hold-out
    text: str
    positives: list[tuple[str, int | None]]
    negatives: list[tuple[str, int | None]]


def key_share(key: str) -> float:
    """Where a query falls in [0, 1] by a hash of its key: below `held_out`, it is held out."""
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
        picked = pick_negatives(ranked, set(relevant), all_ids, settings, f"{settings.loop.seed}/{source}/{qid}")
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
    taken = relevant | set(hard)
    easy: list = []
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
    qids = _sample_qids(data.qrels, settings.max_queries.get(source), settings.loop.seed, source)
    first_stage = settings.first_stage
    assert isinstance(first_stage, dict)  # __post_init__ made one string a dict
    kind = first_stage.get(source, "hybrid" if source == "scifact" else "bm25")
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
    chosen = set(_sample_qids(usable, settings.max_queries.get("ragbench"), settings.loop.seed, "ragbench"))
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
            gold = {doc_id for i in relevant_documents(rel) if i < len(docs) and (doc_id := doc_ids[i])}
            ranked = list(run[key])
            rank = {d: r for r, d in enumerate(ranked)}
            positives = sorted(gold, key=lambda d: (rank.get(d, len(ranked)), d))[: settings.max_positives]
            picked = pick_negatives(ranked, gold, all_ids, settings, f"{settings.loop.seed}/{key}")
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


def query_pairs(queries: list[Query]) -> list[Pair]:
    """Each query's (query, passage) pairs: its positives labelled 1, then its negatives 0."""
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
    train_queries = [q for s in settings.sources for q in queries[s] if key_share(q.key) >= settings.held_out]
    held = [q for s in settings.sources for q in queries[s] if key_share(q.key) < settings.held_out]
    train = query_pairs(train_queries)
    if settings.limit_pairs and settings.limit_pairs < len(train):
        keep = sorted(random.Random(settings.loop.seed).sample(range(len(train)), settings.limit_pairs))
        train = [train[i] for i in keep]
    if not train:
        raise ValueError("no training pairs: every query was held out or had no candidates")
    return {"train": train, "held": held, "queries": queries, "ragbench_splits": splits}
