"""`python -m helpers judge FILE`: score answers that came from elsewhere (helpers.judges.external)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from helpers import paths


def _judge(args: argparse.Namespace) -> int:
    import pandas as pd

    from helpers.judges.evaluate import VALIDITY_MEANING, score_answers, summarize_scores
    from helpers.judges.external import read_answers

    answers = read_answers(args.file)
    judges = [j.strip() for j in args.judges.split(",") if j.strip()] if args.judges else None
    llm = json.loads(args.llm) if args.llm else None
    scores = score_answers(answers, judges, llm=llm, language=args.language)
    out = Path(args.out) if args.out else paths.RESULTS_DIR / "judged" / f"{Path(args.file).stem}.scores.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    scores.to_csv(out, index=False)
    table = summarize_scores(scores)
    pd.set_option("display.width", 200)
    print(f"{len(answers)} answers of {args.file} judged by {', '.join(table['judge'].unique())}:")
    print(table.round(3).to_string(index=False))
    print(VALIDITY_MEANING)
    print(f"\nscores (id, judge, metric, value, reason): {out}")
    return 0


def add_cli(subparsers) -> None:
    judge = subparsers.add_parser(
        "judge", help="score answers from elsewhere (CSV/XLSX/JSONL: question, answer, contexts [, reference, id])"
    )
    judge.add_argument(
        "file",
        help="CSV (any encoding, , or ;), XLSX or JSONL: question, answer, contexts (a JSON list of strings) "
        "[, reference, id]; ragas's column names work too",
    )
    judge.add_argument(
        "--judges", default=None, help="comma-separated judge names (default: every judge that needs no LLM)"
    )
    judge.add_argument("--out", default=None, help="long scores CSV (default results/judged/FILE.scores.csv)")
    judge.add_argument("--language", default=None, choices=["es", "en"], help="default: guessed from the questions")
    judge.add_argument(
        "--llm",
        default=None,
        help='the LLM the LLM judges call, as JSON: \'{"provider": "local"}\' (ragas, trace_llm, ...)',
    )
    judge.set_defaults(func=_judge)
