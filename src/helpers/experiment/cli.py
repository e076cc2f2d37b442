"""`python -m helpers estimate SCORES [--labels FILE]`: the three estimates (labels only, judge only,
prediction-powered) per architecture and per paired difference (helpers.experiment.estimates).

    python -m helpers estimate obstetrics-default-8eb4bca9                 # the run's own labels.csv
    python -m helpers estimate scores.csv --labels my_labels.csv --label correct --json
    python -m helpers estimate RUN_ID --metric correctness/correctness --figure figures/estimates.png

Everything is computed before anything is written: a bad input writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from helpers.errors import UserError


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
    est = subparsers.add_parser(
        "estimate",
        help="labels only, judge only and prediction-powered estimates per architecture and paired difference",
    )
    est.add_argument("scores", help="a run id (its folder under results/), or the CSV `helpers judge --out` writes")
    est.add_argument(
        "--labels", help="the labelling panel's labels.csv, or a CSV with `id` and a label column (default: the run's)"
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
