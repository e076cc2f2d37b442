"""`python -m helpers diagnose SOURCE`: why answers fail (helpers.experiment.diagnosis), from a run,
a `helpers judge --out` scores CSV or an answers file, with a person's labels beside the verdicts and
a second opinion by intervention (helpers.experiment.intervention)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from helpers.errors import UserError


def _diagnose(args: argparse.Namespace) -> int:
    from helpers.experiment import diagnosis  # pandas, scipy: loaded only when this runs
    from helpers.experiment.analysis import run_dir

    is_run = not Path(args.source).is_file()
    if not is_run and diagnosis.is_answers_file(args.source):  # question, answer, contexts: judged here
        from helpers.experiment.frame_diagnosis import judged_wide
        from helpers.judges.external import read_answers

        wide = judged_wide(read_answers(args.source), args.language)
    else:
        wide = diagnosis.read_source(args.source)
    if args.intervene and not is_run and "contexts" not in wide.columns:
        raise UserError(
            f"{args.source}: --intervene answers the questions again and needs their texts: give the answers file "
            "(question, answer, contexts, reference) that `helpers judge` read, not its scores"
        )
    cuts_from = args.cuts_from
    if cuts_from is None and is_run:
        cuts_from = run_dir(args.source) / "labels.csv"  # the labelling panel's labels of the run, if any
    elif cuts_from is not None and not Path(cuts_from).is_file():
        raise UserError(f"--cuts-from {cuts_from}: labels file not found")
    bands = diagnosis.bands_for(wide, cuts_from)
    answers = diagnosis.verdicts(wide, bands)
    if answers.empty:
        raise UserError(f"{args.source}: no answer has a correctness score (no reference): nothing to diagnose")
    table = diagnosis.verdict_table(answers, confidence=args.confidence)
    agreement = diagnosis.agreement(answers, args.labels) if args.labels else None
    second = _second_opinion(args, wide, answers, bands, is_run) if args.intervene else None
    if args.json:
        out = diagnosis.to_json(table, answers) | {"cuts": diagnosis.bands_json(bands)}
        if agreement is not None:
            confusion, kappa, n = agreement
            out["agreement"] = {"kappa": kappa, "n": n, "confusion": confusion.to_dict()}
        if isinstance(second, str):
            out["intervention_plan"] = second
        elif second is not None:
            out["intervention"] = second.to_dict("records")
        print(json.dumps(out, indent=2, default=lambda value: value.item()))  # numpy numbers
        return 0
    print(diagnosis.format_table(table, bands))
    if agreement is not None:
        confusion, kappa, n = agreement
        print(f"\nAgainst the labels in {args.labels} (Cohen's kappa {kappa:.2f} on {n} answers both decide):")
        print(confusion.to_string())
    if second is not None:
        from helpers.experiment import intervention

        print("\n" + (second if isinstance(second, str) else intervention.summary(second)))
    return 0


def _second_opinion(args: argparse.Namespace, wide, answers, bands: dict, is_run: bool):
    """`diagnose --intervene`: the plan (--dry-run) or each wrong answer's second opinion
    (helpers.experiment.intervention.second_opinion, which says where it saved them)."""
    from helpers.experiment import intervention

    llm = json.loads(args.llm) if args.llm else None
    if not is_run:
        intervention.require_llm(llm, args.source)
    if args.dry_run:
        return intervention.plan(intervention.wrong(answers, wide, bands))
    run_id, answers_file = (args.source, None) if is_run else (None, args.source)
    return intervention.second_opinion(
        answers, wide, bands, run_id=run_id, answers_file=answers_file, llm=llm, language=args.language,
        log=lambda line: print(line, file=sys.stderr),  # stdout stays the table, or one JSON object
    )  # fmt: skip


def add_cli(subparsers) -> None:
    diag = subparsers.add_parser(
        "diagnose", help="why answers fail: each wrong answer blamed on retrieval or generation, per architecture"
    )
    diag.add_argument(
        "source",
        help="a run id (its folder under results/), the CSV `helpers judge --out` writes, or an answers file "
        "(question, answer, contexts, reference: judged here)",
    )
    diag.add_argument("--json", action="store_true", help='one JSON object: {"answers": [...], "architectures": [...]}')
    diag.add_argument(
        "--labels",
        help="a person's labels (id or qid, [architecture,] correct, reference_in_contexts: yes / partly / no; "
        "or a shipped sheet, its contexts sheet's `context` beside it): the verdicts' agreement with them",
    )
    diag.add_argument(
        "--cuts-from",
        help="a person's labels (the same columns) to fit the judges' cuts on, where they label at least 5 answers "
        "of each kind (default: a run's labels.csv from the labelling panel; else the shipped cuts)",
    )
    diag.add_argument("--confidence", type=float, default=0.95, help="of each share's interval (Clopper-Pearson)")
    diag.add_argument(
        "--intervene",
        action="store_true",
        help="a second opinion on each wrong answer: answered again with the passage that holds the reference "
        "first (gold passage, best-attributed context, or the corpus's); right then: retrieval, still wrong: "
        "generation. One LLM call per wrong answer (--dry-run counts them)",
    )
    diag.add_argument(
        "--llm",
        default=None,
        help='the LLM --intervene answers with, as JSON (\'{"provider": "local"}\'); a run id uses its own',
    )
    diag.add_argument("--dry-run", action="store_true", help="with --intervene: say how many calls it would make")
    diag.add_argument("--language", default=None, choices=["es", "en"], help="an answers file's (default: guessed)")
    diag.set_defaults(func=_diagnose)
