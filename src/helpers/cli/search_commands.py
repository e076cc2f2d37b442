"""`python -m helpers search SWEEP.yaml`: the best cell of a sweep's grid with a guarantee, for a
fraction of the grid's evaluations (helpers.experiment.search); `python -m helpers compare BASELINE
CANDIDATE`: better, not worse, worse or undecided, with an exit status for a CI gate
(helpers.experiment.compare)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from helpers.errors import UserError


def _search(args: argparse.Namespace) -> int:
    # the retrievers and the runner: loaded only when this runs
    from helpers.experiment.search import search
    from helpers.experiment.search_labels import LabelsNeeded
    from helpers.experiment.search_report import format_table, search_figure
    from helpers.experiment.until_decided import Budget

    if bool(args.documents) != bool(args.questions):
        raise UserError("search: --documents DIR and --questions FILE go together (the grid's axes over your folder)")
    documents = {"name": "documents", "options": {"path": args.documents, "questions": args.questions}}
    log = (lambda line: print(line, file=sys.stderr)) if args.json else print
    try:
        summary = search(
            args.sweep,
            metric=args.metric,
            at=args.at,
            answer_metric=args.answer_metric,
            epsilon=args.epsilon,
            delta=args.delta,
            batch=args.batch,
            seed=args.seed,
            budget=Budget.parse(args.budget) if args.budget else None,
            label_rate=args.label_rate,
            label_floor=args.label_floor,
            executor=args.executor,
            address=args.address,
            documents=documents if args.documents else None,
            log=log,
        )
    except LabelsNeeded as needed:  # people's labels first: the same command goes on once they are in
        print(str(needed), file=sys.stderr)
        return 3
    trace = Path(summary["chosen_config"]).with_name("search.json")
    figure = search_figure(json.loads(trace.read_text()))
    figure.savefig(trace.with_name("search.png"), dpi=120, bbox_inches="tight")
    print(json.dumps(summary, default=float) if args.json else format_table(summary))
    if not args.json:
        print(f"figure: {trace.with_name('search.png')} (every arm's interval against the questions it used)")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from helpers.experiment.compare import EXIT, compare, format_result  # pandas: loaded only when this runs

    result = compare(
        args.baseline,
        args.candidate,
        metric=args.metric,
        margin=args.margin,
        alpha=args.alpha,
        batch=args.batch,
        seed=args.seed,
    )
    print(json.dumps(result) if args.json else format_result(result))
    return EXIT[result["status"]]


def add_cli(subparsers) -> None:
    search = subparsers.add_parser(
        "search", help="the best cell of a sweep's grid with a guarantee, arms eliminated as questions come"
    )
    search.add_argument(
        "sweep", help="a sweep file (configs/sweeps/search-retrieval.yaml): its grid's cells are the arms"
    )
    search.add_argument(
        "--documents", help="a folder of your own documents: the grid's axes over it (with --questions)"
    )
    search.add_argument("--questions", help="with --documents: your questions file (reference and relevant columns)")
    search.add_argument(
        "--metric", default="ndcg", help="the retrieval stage's metric: ndcg, recall or mrr (default ndcg)"
    )
    search.add_argument(
        "--answer-metric",
        default="correctness/correctness",
        help="the answer stage's metric, JUDGE/METRIC in [0, 1] (default correctness/correctness)",
    )
    search.add_argument("--budget", help="the answer stage stops when spent: 30m, 50k tokens or $2")
    search.add_argument(
        "--label-rate",
        type=float,
        help="the answer stage's judge corrected by people's labels of questions drawn at this rate "
        "(0.2: one in five); the search stops (exit 3) when a look needs labels, and resumes when rerun",
    )
    search.add_argument(
        "--label-floor",
        type=float,
        help="active labelling: each answer labelled at --label-rate where the judge is least sure (0.5), "
        "down to this rate where it is sure (0 or 1); measured not to save evaluations against uniform "
        "labels at the same share (docs/measurements/search.md)",
    )
    search.add_argument(
        "--executor",
        choices=["local", "ray"],
        default="local",
        help="where the answer stage's answers are written: here, or Ray tasks side by side (as `sweep`)",
    )
    search.add_argument(
        "--address", help="with --executor ray: a cluster's HOST:PORT (else RAY_ADDRESS or a local one)"
    )
    search.add_argument("--at", type=int, default=10, help="the metric's depth, the same for every cell (default 10)")
    search.add_argument(
        "--epsilon",
        type=float,
        default=0.02,
        help="a tie: the chosen cell is within epsilon of the best (default 0.02)",
    )
    search.add_argument(
        "--delta", type=float, default=0.05, help="the chance the guarantee fails, over all pairs (default 0.05)"
    )
    search.add_argument("--batch", type=int, default=10, help="questions between two looks (default 10)")
    search.add_argument("--seed", type=int, default=0, help="the question order's seed")
    search.add_argument("--json", action="store_true", help="one JSON object on stdout (the log on stderr)")
    search.set_defaults(func=_search)

    compare = subparsers.add_parser(
        "compare",
        help="a candidate against a baseline (run ids or configs): better, not worse, worse or undecided; "
        "exit 0, 0, 1, 3",
    )
    compare.add_argument(
        "baseline", help="RUN_ID[:ARCHITECTURE] or CONFIG[:ARCHITECTURE] (a config answers only the questions needed)"
    )
    compare.add_argument("candidate", help="RUN_ID[:ARCHITECTURE] or CONFIG[:ARCHITECTURE], as the baseline")
    compare.add_argument("--metric", help="JUDGE/METRIC in [0, 1] (default: the candidate's decision metric)")
    compare.add_argument("--margin", type=float, default=0.05, help="'not worse': within this (default 0.05)")
    compare.add_argument("--alpha", type=float, default=0.05, help="the error of any verdict (default 0.05)")
    compare.add_argument("--batch", type=int, default=10, help="a config's questions between two looks (default 10)")
    compare.add_argument("--seed", type=int, default=0, help="the question order's seed")
    compare.add_argument("--json", action="store_true", help="one JSON object")
    compare.set_defaults(func=_compare)
