"""Commands of experiments, registered on the package CLI by `add_cli` (helpers.__main__):

    python -m helpers run configs/default.yaml [--until-decided --budget 30m] [--dry-run]
    python -m helpers run --documents DIR [--questions FILE] [--config FILE]
    python -m helpers report RUN_ID [--figures] [--format md|csv|html|json --out FILE] | --sweep NAME
    python -m helpers sweep configs/sweeps/chunking.yaml [--executor ray --address HOST:PORT]

`estimate SCORES [--labels FILE]`: the three estimates (labels only, judge only, prediction-powered)
per architecture and per paired difference (helpers.experiment.estimates).

    python -m helpers estimate obstetrics-default-8eb4bca9                 # the run's own labels.csv
    python -m helpers estimate scores.csv --labels my_labels.csv --label correct --json
    python -m helpers estimate RUN_ID --metric correctness/correctness --figure figures/estimates.png

Everything is computed before anything is written: a bad input writes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from helpers import paths
from helpers.errors import UserError
from helpers.experiment.config import load_config, with_overrides
from helpers.experiment.sweep import run_sweep
from helpers.llm.keys import add_key_host_option
from helpers.offline_defaults import quiet_noisy_loggers


def _run(args: argparse.Namespace) -> int:
    """`run`: prose on stdout; with --json, the prose goes to stderr and stdout holds one JSON
    object (the run's summary), for a script or `jq` to read."""
    if not args.json:
        return _run_and_report(args)[0]
    if args.dry_run:
        raise UserError("--json prints a finished run's summary: leave out --dry-run, or --json")
    with contextlib.redirect_stdout(sys.stderr):
        code, summary = _run_and_report(args)
    print(json.dumps(summary, ensure_ascii=False))
    return code


def _run_and_report(args: argparse.Namespace) -> tuple[int, dict | None]:
    import logging

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
    if args.architectures or args.name:
        config = with_overrides(config, architectures=args.architectures, name=args.name)
    if args.dry_run:
        from helpers.experiment.dry_run import estimate  # pandas, scipy: loaded only when this runs

        print(estimate(config, sample=args.dry_run_sample).format())
        return 0, None
    if args.budget and not args.until_decided:
        raise UserError(f"--budget {args.budget} limits a run --until-decided; add --until-decided")
    from helpers.experiment.dry_run import missing_keys  # the LLM layer: loaded only when this runs

    missing = missing_keys(config)
    if missing:  # stop before the first call, not after every call failed one by one
        raise UserError("; ".join(missing) + f" ({args.config or 'the config'}): nothing was called")
    print(f"run {config.resolved_run_id()} started {_now()} ({args.config or args.documents})", flush=True)
    if args.until_decided:
        # pandas, scipy: loaded only when this runs
        from helpers.experiment.until_decided import Budget, run_until_decided

        budget = Budget.parse(args.budget) if args.budget else None
        summary = run_until_decided(Experiment(config), budget=budget)
    else:
        summary = Experiment(config).run()
    # the whole summary is a file (and stdout's only content with --json), not 100 lines among the tables
    print(
        f"{summary['answers']} answers, {summary['failed_samples']} failed; "
        f"the run's summary: {Path(summary['directory']) / 'summary.json'}"
    )
    report_path = Path(summary["directory"]) / "ingest_report.json"
    if report_path.exists():
        from helpers.data.documents import format_report  # pandas: loaded only when this runs

        print(format_report(json.loads(report_path.read_text(encoding="utf-8"))))
    if not summary["ok"]:
        print(format_failures(summary), file=sys.stderr)
        return 1, summary
    if config.figures:
        from helpers.experiment.figures_run import build_figures  # matplotlib, seaborn: only when asked for

        figures = build_figures(summary["run_id"])
        if figures:
            print(f"{len(figures)} figures: {Path(next(iter(figures.values()))).parent}/{summary['run_id']}-*.png")
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
    # pandas, scipy: loaded only when this runs
    from helpers.experiment.diagnosis import run_diagnosis
    from helpers.experiment.run_summary import as_text, run_sections

    diagnosed = run_diagnosis(summary["run_id"], confidence=config.statistics.confidence)
    # the same sections as every report format and the results panel (helpers.experiment.run_summary)
    print("\n" + as_text(run_sections(summary["run_id"], diagnosis=diagnosed or False)))
    if (
        diagnosed is not None and config.diagnosis.intervene
    ):  # a second opinion on each wrong answer (one LLM call each)
        from helpers.experiment import intervention
        from helpers.experiment.diagnosis import read_run

        wide = read_run(summary["run_id"])
        frame = intervention.second_opinion(diagnosed.answers, wide, diagnosed.bands, run_id=summary["run_id"])
        print("\n" + intervention.summary(frame))
    if summary.get("prompt_fallback"):  # the corpus's language has no prompts of its own
        print(summary["prompt_fallback"])
    print(
        f"run {summary['run_id']} finished {_now()}: took {time.perf_counter() - start:.1f} s; results in "
        f"{summary['directory']}; every score, the paired tests and each answer: "
        f"python -m helpers report {summary['run_id']} --format html"
    )
    return 0, summary


def _now() -> str:
    """The local time with its offset, to the second: when a run started and finished."""
    from datetime import datetime

    return datetime.now().astimezone().isoformat(timespec="seconds")


def _documents_config(args: argparse.Namespace):
    # pandas: loaded only when this runs
    from helpers.experiment.own_documents import TESTSET_CONFIG, documents_config, write_testset

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
    from helpers.experiment.run_summary import report  # pandas, scipy: loaded only when this runs

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


def _estimate(args: argparse.Namespace) -> int:
    from helpers.experiment.estimates import (  # pandas, ppi_py: loaded only when this runs
        estimate_table,
        estimates_json,
        format_table,
        read_labels,
        read_scores,
    )

    scores = read_scores(args.scores)
    labels_path = Path(args.labels) if args.labels else scores.labels_path
    if labels_path is None:
        raise UserError(f"{args.scores}: a scores file needs --labels FILE (a CSV with an id and a label column)")
    labels, column = read_labels(labels_path, column=args.label)
    confidence = args.confidence or scores.confidence
    metric, table = estimate_table(
        scores, labels, metric=args.metric, baseline=args.baseline, confidence=confidence, labels_name=str(labels_path)
    )
    figure = None
    if args.figure:
        from helpers.experiment.estimates_figure import estimates_figure  # matplotlib: only when asked for

        figure = estimates_figure(metric, table, confidence=confidence)
    if args.json:
        print(
            json.dumps({"metric": metric, "label": column, "confidence": confidence, **estimates_json(table)}, indent=2)
        )
    else:
        print(f"{scores.source}, labels {labels_path} (column {column!r}):")
        print(format_table(metric, table, confidence))
    if figure is not None:
        out = Path(args.figure)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.stem}.{os.getpid()}{out.suffix}")  # written whole, then moved into place
        figure.savefig(tmp, dpi=150, bbox_inches="tight")
        tmp.replace(out)
        if not args.json:
            print(f"figure: {out}")
    return 0


def add_cli(subparsers) -> None:
    run = subparsers.add_parser("run", help="run an experiment from a YAML config (resumable)")
    run.add_argument("config", nargs="?", help="e.g. configs/default.yaml")
    from helpers.cli.data_commands import add_run_options  # pandas: loaded only when this runs

    add_run_options(run)  # --documents, --questions, --config
    run.add_argument(
        "--architectures", help="comma-separated architecture names, in place of the config's (e.g. bm25,dense)"
    )
    run.add_argument("--name", help="the run's name, in place of the config's (its id is NAME-<config hash>)")
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the calls, tokens and dollars (at most) the run will take, from its prompts for a few "
        "questions, and the time its rate limits need; call no provider",
    )
    run.add_argument("--dry-run-sample", type=int, default=3, help="questions whose prompts --dry-run builds")
    run.add_argument(
        "--json", action="store_true", help="stdout: one JSON object (the run's summary); the tables go to stderr"
    )
    run.add_argument(
        "--until-decided",
        action="store_true",
        help="questions in a seeded random order, every architecture answering each; stop as soon as every "
        "pair against the leader is settled by an anytime-valid confidence sequence (config: decisions)",
    )
    run.add_argument(
        "--budget", help="with --until-decided: stop when this is spent: minutes (30m), tokens (50k tokens) or $2"
    )
    add_key_host_option(run, default=argparse.SUPPRESS)
    run.set_defaults(func=_run)
    rep = subparsers.add_parser("report", help="tables (and figures) of a finished run, from its saved results")
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
    swp = subparsers.add_parser("sweep", help="run a grid of experiments (resumable; local or on Ray)")
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
    add_key_host_option(swp, default=argparse.SUPPRESS)
    swp.set_defaults(func=_sweep)
    est = subparsers.add_parser(
        "estimate",
        help="labels only, judge only and prediction-powered estimates per architecture and paired difference",
    )
    est.add_argument(
        "scores",
        help="a run id: the name of its folder under results/, NAME-HASH as `run` prints it "
        "(obstetrics-default-8eb4bca9); or the CSV `helpers judge --out` writes",
    )
    est.add_argument(
        "--labels",
        help="the labelling panel's labels.csv (architecture, qid, label columns), or a CSV with `id` and a label "
        "column, where an id is the scores' item: a run's question id (qid, e.g. q3) or the judged CSV's `id`; "
        "with an `architecture` column when several answered (default: the run's labels.csv)",
    )
    est.add_argument("--metric", help="JUDGE/METRIC (or a metric name) the judge produced (default: correctness)")
    est.add_argument("--label", help="the label column: yes = 1, partly = 0.5, no = 0 (default: correct, else label)")
    est.add_argument("--baseline", help="the architecture differences are taken against (default: the run's baseline)")
    est.add_argument(
        "--confidence", type=float, default=None, help="default: the run's statistics.confidence, else 0.95"
    )
    est.add_argument(
        "--json", action="store_true", help='one JSON object: {"estimates": [{architecture, method, ...}]}'
    )
    est.add_argument("--figure", help="also draw the three intervals as one figure (PNG or PDF) at this path")
    est.set_defaults(func=_estimate)
