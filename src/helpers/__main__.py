"""Command line: `python -m helpers COMMAND ...` (also installed as `helpers`).

Commands:
  run            run an experiment from a YAML config (resumes where it stopped)
  report         the tables (and with --figures, the figures) of a finished run
  prepare-data   fill data/raw/ from ../shared/data or the public sources (checksums verified)
  summary        print a summary of every dataset (sizes, RAGBench row counts, chunk statistics)
  retrieval-eval retrieval quality and latency per architecture on a labelled dataset
  train-reranker train the offline reranker (learning to rank over offline scorers)
  train-judge    train the offline TRACe judge (non-test RAGBench splits)
  judge-eval     the TRACe judges vs RAGBench's shipped baselines, per subset
  serve-llm      serve the bundled local model over the OpenAI chat-completions protocol

A user's mistake (a missing config, an unknown dataset or architecture, a missing directory) is
answered on one line with exit status 2; `--debug` shows the traceback. A run that fails as a
whole (see `max_failure_rate`) lists its failures and exits with status 1.
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def _prepare_data(args: argparse.Namespace) -> int:
    from helpers.data import prepare_data

    report = prepare_data(args.datasets or None, strict=False)
    missing = 0
    for dataset, files in report.items():
        statuses = sorted(set(s.split(":")[0] for s in files.values()))
        print(f"{dataset:14s} {len(files):3d} file(s): {', '.join(statuses)}")
        for relpath, status in files.items():
            if status.startswith("missing"):
                missing += 1
                print(f"  {status}", file=sys.stderr)
    return 1 if missing else 0


def _summary(args: argparse.Namespace) -> int:
    import pandas as pd

    from helpers.data import load_dataset, summarize_all
    from helpers.data.stats import chunk_statistics

    start = time.perf_counter()
    rows, ragbench_rows = summarize_all()
    print("Datasets (BEIR contracts):")
    print(pd.DataFrame(rows).to_string(index=False))
    print("\nRAGBench subsets and splits:")
    print(pd.DataFrame(ragbench_rows).to_string(index=False))
    print("\nObstetrics guideline chunks (characters):")
    print(json.dumps(chunk_statistics(load_dataset("obstetrics").corpus), indent=2))
    print(f"\nsummary took {time.perf_counter() - start:.1f} s")
    return 0


def _serve_llm(args: argparse.Namespace) -> int:
    from helpers.llm.server import serve

    serve(args.host, args.port, args.local_backend, args.model)
    return 0


def _retrieval_eval(args: argparse.Namespace) -> int:
    from helpers.retrieval.evaluate import format_report, retrieval_eval, save_report

    llm_config = json.loads(args.llm) if args.llm else None
    report = retrieval_eval(args.dataset, args.architectures.split(","), qa_file=args.qa_file,
                            llm_config=llm_config, limit=args.limit, llm_limit=args.llm_limit)
    print(format_report(report))
    if args.out:
        print(f"saved {save_report(report, args.out)}")
    return 0


def _train_reranker(args: argparse.Namespace) -> int:
    from pathlib import Path

    from helpers.retrieval.training import DEFAULT_PATH, train_reranker

    path = Path(args.out or DEFAULT_PATH)
    if args.if_missing and path.exists():
        print(f"offline reranker present: {path}")
        return 0
    print(json.dumps(train_reranker(path, seed=args.seed), indent=2))
    return 0


def _run(args: argparse.Namespace) -> int:
    import logging

    from helpers.experiment.analysis import make_figures, report
    from helpers.experiment.config import load_config
    from helpers.experiment.runner import Experiment

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "chromadb", "sentence_transformers", "ragas", "bm25s"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    config = load_config(args.config)
    start = time.perf_counter()
    summary = Experiment(config).run()
    print(json.dumps(summary, indent=2))
    if not summary["ok"]:
        print(format_failures(summary), file=sys.stderr)
        return 1
    if config.figures:
        for name, path in make_figures(summary["run_id"]).items():
            print(f"figure {name}: {path}")
    print(report(summary["run_id"]))
    print(f"\nrun took {time.perf_counter() - start:.1f} s; results in {summary['directory']}")
    return 0


def format_failures(summary: dict) -> str:
    """What went wrong in a failed run: the rule it broke, then each kind with one example."""
    why = (f"every sample failed for {', '.join(summary['all_failed'])}" if summary["all_failed"] else
           f"failure rate {summary['failure_rate']:.0%} > max_failure_rate {summary['max_failure_rate']:.0%}")
    lines = [f"run FAILED: {summary['failed_samples']} of {summary['answers']} samples failed ({why})"]
    for kind, entry in sorted(summary["failures"].items(), key=lambda item: -item[1]["count"]):
        lines.append(f"  {kind} x{entry['count']}: {entry['example']}")
    lines.append(f"records kept in {summary['directory']}; fix the cause and rerun the same command: "
                 "only the failed samples are redone")
    return "\n".join(lines)


def _report(args: argparse.Namespace) -> int:
    from helpers.experiment.analysis import make_figures, report

    if args.figures:
        for name, path in make_figures(args.run_id).items():
            print(f"figure {name}: {path}")
    print(report(args.run_id))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="helpers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show the traceback of a user error")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an experiment from a YAML config (resumable)")
    run.add_argument("config", help="e.g. configs/default.yaml")
    run.set_defaults(func=_run)
    rep = sub.add_parser("report", help="tables (and figures) of a finished run, from its saved results")
    rep.add_argument("run_id")
    rep.add_argument("--figures", action="store_true", help="also regenerate its figures")
    rep.set_defaults(func=_report)
    prep = sub.add_parser("prepare-data", help="fill data/raw/ (checksums verified)")
    prep.add_argument("datasets", nargs="*", help="raw datasets to prepare (default: all)")
    prep.set_defaults(func=_prepare_data)
    summ = sub.add_parser("summary", help="summarise every dataset")
    summ.set_defaults(func=_summary)
    ev = sub.add_parser("retrieval-eval", help="nDCG@10, Recall@10/100, MRR@10 and latency per architecture")
    ev.add_argument("--dataset", required=True, help="scifact, xquad-es, xquad-en, obstetrics-es")
    ev.add_argument("--qa-file", help="a MaternaQA-format JSONL whose questions and gold passages are used")
    ev.add_argument("--architectures", default="bm25,dense,hybrid,rerank")
    ev.add_argument("--limit", type=int, help="evaluate on a seeded sample of this many queries")
    ev.add_argument("--llm-limit", type=int, default=50, help="queries for hyde/multi_query (LLM per query)")
    ev.add_argument("--llm", help='LLM config as JSON, e.g. \'{"provider": "groq", "model": "llama-3.1-8b-instant"}\'')
    ev.add_argument("--out", help="write the report as JSON")
    ev.set_defaults(func=_retrieval_eval)
    tr = sub.add_parser("train-reranker", help="train the offline reranker on SciFact train claims")
    tr.add_argument("--out", help="artefact path (default data/models/reranker-ltr.joblib)")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--if-missing", action="store_true", help="do nothing when the artefact exists")
    tr.set_defaults(func=_train_reranker)
    from helpers.trace.cli import add_cli

    add_cli(sub)  # train-judge, judge-eval
    srv = sub.add_parser("serve-llm", help="serve the local model over the OpenAI chat protocol")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8011)
    srv.add_argument("--local-backend", default="llama-cpp", choices=["llama-cpp", "transformers"])
    srv.add_argument("--model", default="smollm2", help="'smollm2' or a .gguf path")
    srv.set_defaults(func=_serve_llm)
    return parser


def main(argv: list[str] | None = None) -> int:
    from helpers.errors import UserError

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        if args.debug:
            raise
        message = " ".join(str(exc).split())  # one line, however the message was built
        print(f"error: {message} (--debug for the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
