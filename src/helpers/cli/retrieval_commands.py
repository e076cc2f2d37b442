"""Sub-commands `retrieval-eval`, `tune-fusion`, `train-reranker` and `prefill-embeddings`,
registered on the package CLI by `add_cli`:

    python -m helpers retrieval-eval --dataset NAME [--query-split test --tune-fusion dev] --out FILE.json
    python -m helpers tune-fusion --dataset obstetrics-es [--query-split dev] [--out FILE.json]
    python -m helpers train-reranker [--out PATH] [--if-missing] [--shipped]
    python -m helpers prefill-embeddings [--sources scifact,obstetrics-es]
    python -m helpers train-cross-encoder [--out DIR] [--epochs 1] [--if-missing]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from helpers.retrieval.evaluation.fusion_tuning import format_fusion, tune_fusion
from helpers.retrieval.evaluation.retrieval_eval import format_report, retrieval_eval, save_report
from helpers.retrieval.learned.ltr_training import DEFAULT_PATH, install_pinned, train_reranker


def _show(text: str, report: dict, out: str | None) -> int:
    """Print a report, and save it as JSON where --out asks."""
    print(text)
    if out:
        print(f"saved {save_report(report, out)}")
    return 0


def _json(text: str | None):
    return json.loads(text) if text else None


def _retrieval_eval(args: argparse.Namespace) -> int:
    report = retrieval_eval(
        args.dataset,
        args.architectures.split(","),
        qa_file=args.qa_file,
        llm_config=_json(args.llm),
        limit=args.limit,
        llm_limit=args.llm_limit,
        query_split=args.query_split,
        tune_fusion=args.tune_fusion,
        options=_json(args.options),
    )
    return _show(format_report(report), report, args.out)


def _tune_fusion(args: argparse.Namespace) -> int:
    scifact = args.dataset == "scifact"  # tuned on its train claims, the BEIR test claims kept for reporting
    report = tune_fusion(
        args.dataset,
        query_split="all" if scifact else args.query_split,
        dataset_options={"split": "train"} if scifact else {},
        options=_json(args.options),
    )
    return _show(format_fusion(report), report, args.out)


def _train_reranker(args: argparse.Namespace) -> int:
    path = Path(args.out or DEFAULT_PATH)
    if args.if_missing and path.exists():
        print(f"offline reranker present: {path}")
        return 0
    if args.shipped:  # the set-up's step: every machine reranks with the same file (install_pinned)
        card = install_pinned(path)
        print(f"offline reranker installed: {path} (the shipped artefact, sha256 {card['sha256'][:12]})")
        return 0
    print(json.dumps(train_reranker(path, seed=args.seed, sources=args.sources.split(",")), indent=2))
    return 0


def _prefill_embeddings(args: argparse.Namespace) -> int:
    from helpers.retrieval.learned.ltr_training import prefill_corpora

    print(f"embedded {prefill_corpora(args.sources.split(','), workers=args.workers):,} texts not yet in the cache")
    return 0


def _train_cross_encoder(args: argparse.Namespace) -> int:
    import torch

    # pandas, scipy: loaded only when this runs
    from helpers.retrieval.learned.cross_encoder_training import (
        DEFAULT_DIR,
        RetrievalTrainSettings,
        train_retrieval_cross_encoder,
    )

    out = Path(args.out or DEFAULT_DIR)
    if args.if_missing and (out / "card.json").exists():
        print(f"retrieval cross-encoder present: {out}")
        return 0
    torch.set_num_threads(args.threads)
    card = train_retrieval_cross_encoder(
        out, RetrievalTrainSettings.from_options(epochs=args.epochs, seed=args.seed), ragbench_dir=args.ragbench_dir
    )
    assert card is not None  # no stop_after: trained to the end, the card returned
    print(json.dumps({k: card[k] for k in ("seconds", "held_out", "artefact_bytes") if k in card}, indent=2))
    return 0


def add_cli(sub) -> None:
    ev = sub.add_parser("retrieval-eval", help="nDCG@10, Recall@10/100, MRR@10 and latency per architecture")
    ev.add_argument("--dataset", required=True, help="scifact, xquad-es, xquad-en, obstetrics-es")
    ev.add_argument("--qa-file", help="a MaternaQA-format JSONL whose questions and gold passages are used")
    ev.add_argument("--architectures", default="bm25,dense,hybrid,rerank")
    ev.add_argument("--limit", type=int, help="evaluate on a seeded sample of this many queries")
    ev.add_argument("--llm-limit", type=int, default=50, help="queries for hyde/multi_query (LLM per query)")
    ev.add_argument("--llm", help='LLM config as JSON, e.g. \'{"provider": "groq", "model": "llama-3.1-8b-instant"}\'')
    ev.add_argument(
        "--query-split",
        default="all",
        choices=["all", "dev", "test"],
        help="evaluate on the dev or test half of the queries (helpers.data.splits)",
    )
    ev.add_argument(
        "--tune-fusion",
        choices=["dev", "test", "all"],
        help="choose hybrid's fusion on this query split first (use dev with --query-split test)",
    )
    ev.add_argument("--options", help='retrieval sections as JSON, e.g. \'{"hybrid": {"alpha": 0.3}}\'')
    ev.add_argument("--out", help="write the report as JSON")
    ev.set_defaults(func=_retrieval_eval)
    tf = sub.add_parser("tune-fusion", help="choose hybrid's fusion (method, rrf_k, alpha) on held-out queries")
    tf.add_argument(
        "--dataset",
        required=True,
        help="obstetrics-es, xquad-es, xquad-en, maternaqa; scifact tunes on its train claims",
    )
    tf.add_argument("--query-split", default="dev", choices=["all", "dev", "test"])
    tf.add_argument("--options", help="retrieval sections as JSON (the dense embedder, BM25, candidates)")
    tf.add_argument("--out", help="write the grid and the choice as JSON")
    tf.set_defaults(func=_tune_fusion)
    tr = sub.add_parser("train-reranker", help="train the offline reranker on SciFact train claims")
    tr.add_argument("--out", help="artefact path (default data/models/reranker-ltr.skops)")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument(
        "--sources",
        default="scifact,obstetrics-es",
        help="training queries: scifact (train claims), obstetrics-es (its dev half)",
    )
    tr.add_argument("--if-missing", action="store_true", help="do nothing when the artefact exists")
    tr.add_argument(
        "--shipped",
        action="store_true",
        help="install the artefact shipped with the package instead of training (what `make data` does: "
        "the same file, so the same rerank answers, on every machine)",
    )
    tr.set_defaults(func=_train_reranker)
    pf = sub.add_parser(
        "prefill-embeddings",
        help="embed the reranker's training corpora (SciFact, obstetrics-es) into the shared cache (`make test` does)",
    )
    pf.add_argument("--sources", default="scifact,obstetrics-es")
    pf.add_argument("--workers", type=int, help="one-thread embedding processes (default: one per core, at most 8)")
    pf.set_defaults(func=_prefill_embeddings)
    ce = sub.add_parser(
        "train-cross-encoder",
        help="fine-tune a retrieval cross-encoder (query, passage) on CPU; use it with rerank: {scorer: PATH}",
    )
    ce.add_argument("--out", help="folder (default data/models/cross-encoder-retrieval)")
    ce.add_argument("--epochs", type=float, default=1.0)
    ce.add_argument("--seed", type=int, default=0)
    ce.add_argument("--threads", type=int, default=1, help="torch threads (1: leaves a core to the machine)")
    ce.add_argument("--ragbench-dir", help="RAGBench parquet folder (default data/raw/ragbench)")
    ce.add_argument("--if-missing", action="store_true", help="do nothing when the model exists")
    ce.set_defaults(func=_train_cross_encoder)
