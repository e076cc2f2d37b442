"""Sub-commands `train-judge` and `judge-eval`, registered on the package CLI by `add_cli`:

python -m helpers train-judge [--out PATH] [--seed 0] [--ragbench-dir DIR]
python -m helpers judge-eval --ragbench-dir DIR --split test --judges offline[,lexical,evidence,llm] --out FILE.json
python -m helpers judge-eval --labels RUN_ID        (the run's judges against a person's labels)
python -m helpers train-evidence [--out DIR] [--nli-epochs 1] [--support-epochs 2] [--if-missing]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from helpers.data import DataError
from helpers.experiment.label_sheets import AGREEMENT_COLUMNS
from helpers.experiment.run_labels import judge_agreement, labels_frame
from helpers.inputs import load_yaml
from helpers.judges.judge_eval import format_table, judge_eval, save_result
from helpers.judges.models.evidence_model import DEFAULT_DIR, EvidenceModel
from helpers.judges.models.evidence_training import TrainSettings, fit_stack_weight, train_evidence_model


def _train_judge(args: argparse.Namespace) -> int:
    from helpers.judges.models.trace_trees import DEFAULT_PATH, train_judge  # sklearn: loaded only when this runs

    _check_dir(args.ragbench_dir, "--ragbench-dir")
    if args.if_missing and Path(args.out or DEFAULT_PATH).exists():
        print(f"offline judge present: {args.out or DEFAULT_PATH}")
        return 0
    info = train_judge(out_path=args.out, seed=args.seed, ragbench_dir=args.ragbench_dir)
    print(json.dumps(info, indent=2))
    return 0


def _train_evidence(args: argparse.Namespace) -> int:
    _check_dir(args.ragbench_dir, "--ragbench-dir")
    if args.stack_only:
        print(json.dumps(fit_stack_weight(args.out, args.ragbench_dir, args.seed), indent=2))
        return 0
    if args.if_missing and EvidenceModel.exists(args.out):
        print(f"evidence model present: {args.out or DEFAULT_DIR}")
        return 0
    settings = TrainSettings.from_options(
        nli_epochs=args.nli_epochs,
        support_epochs=args.support_epochs,
        seed=args.seed,
        limit_nli=args.limit_nli,
        limit_support=args.limit_support,
    )
    card = train_evidence_model(args.out, settings, ragbench_dir=args.ragbench_dir)
    assert card is not None  # no stop_after: trained to the end, the card returned
    print(json.dumps({k: card[k] for k in ("train_s", "steps", "final_loss", "held_out", "artefact_bytes")}, indent=2))
    return 0


def _load_llm_config(text: str | None) -> dict | None:
    """--llm-config: inline JSON or a path to a JSON/YAML file."""
    if not text:
        return None
    if text.lstrip().startswith("{"):
        return json.loads(text)
    path = Path(text)
    if path.suffix in (".yaml", ".yml"):
        return load_yaml(path, "settings")
    return json.loads(path.read_text(encoding="utf-8"))


def _check_dir(path: str | None, option: str) -> None:
    """A directory named on the command line exists (checked before any slow work)."""
    if path is not None and not Path(path).is_dir():
        raise DataError(path, "directory not found", fix=f"pass {option} a folder of <subset>/<split>-*.parquet files")


def _validity(args: argparse.Namespace) -> int:
    """judge-eval --labels FOLDER: every judge against the shipped sheets; writes the validity table."""
    from helpers.experiment.label_sheets import validity_from_sheets
    from helpers.judges.validity import SHIPPED_CSV, written_csv

    runs = dict(pair.partition("=")[::2] for pair in args.run or [])
    table = validity_from_sheets(args.labels, runs=runs)
    out = Path(args.out) if args.out else written_csv()
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False, float_format="%.4f")
    columns = ["judge", "metric", "label", "n", "positives", "auroc", "auroc_low", "auroc_high", "kappa", "status"]
    print(
        f"every judge against the hand labels of {args.labels} ({table['labels'].iloc[0] if len(table) else 'none'}):"
    )
    print(table[columns].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"\nwritten: {out}")
    if out.resolve() == written_csv().resolve():
        print(f"reports read it in place of the shipped table ({SHIPPED_CSV}); delete it to go back to that one")
    return 0


def _judge_eval(args: argparse.Namespace) -> int:
    if args.labels and Path(args.labels).is_dir():
        return _validity(args)
    if args.labels:  # the judges of a run against a person's labels of its answers
        table = judge_agreement(args.labels, annotator=args.annotator)
        labels = labels_frame(args.labels)
        print(
            f"run {args.labels}: {labels[['architecture', 'model', 'qid']].drop_duplicates().shape[0]} answers "
            f"labelled by {labels['annotator'].nunique()} annotator(s)"
        )
        columns = AGREEMENT_COLUMNS
        print(
            table[columns].to_string(index=False, float_format=lambda v: f"{v:.3f}")
            if len(table)
            else "no judge of this run scored a labelled answer"
        )
        if args.out:
            table.to_csv(args.out, index=False)
            print(f"\nwritten: {args.out}")
        return 0

    _check_dir(args.ragbench_dir, "--ragbench-dir")
    result = judge_eval(
        args.ragbench_dir,
        split=args.split,
        judges=args.judges,
        llm_config=_load_llm_config(args.llm_config),
        limit=args.limit,
        judge_path=args.judge_path,
        evidence_path=args.evidence_path,
    )
    print(format_table(result))
    if args.out:
        save_result(result, args.out)
        print(f"\nwritten: {args.out}")
    return 0


def add_cli(subparsers) -> None:
    """Register `train-judge` and `judge-eval` on an argparse sub-parsers object."""
    train = subparsers.add_parser("train-judge", help="train the offline TRACe judge (non-test RAGBench)")
    train.add_argument("--out", default=None, help="artefact path (default data/models/offline_judge.skops)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--if-missing", action="store_true", help="do nothing when the artefact exists")
    train.add_argument("--ragbench-dir", default=None, help="<subset>/<split>-*.parquet (default data/raw/ragbench)")
    train.set_defaults(func=_train_judge)

    evidence = subparsers.add_parser(
        "train-evidence", help="fine-tune the evidence cross-encoder (NLI, then RAGBench support)"
    )
    evidence.add_argument("--out", default=None, help="model folder (default data/models/evidence)")
    evidence.add_argument("--nli-epochs", type=float, default=1.0)
    evidence.add_argument("--support-epochs", type=float, default=2.0)
    evidence.add_argument("--seed", type=int, default=0)
    evidence.add_argument("--limit-nli", type=int, default=None, help="train on N NLI pairs (a tiny model)")
    evidence.add_argument("--limit-support", type=int, default=None, help="train on N RAGBench examples")
    evidence.add_argument("--if-missing", action="store_true", help="do nothing when the model exists")
    evidence.add_argument(
        "--stack-only",
        action="store_true",
        help="only (re)choose the stacking weight of a trained model, on its held-out examples",
    )
    evidence.add_argument("--ragbench-dir", default=None, help="<subset>/<split>-*.parquet (default data/raw/ragbench)")
    evidence.set_defaults(func=_train_evidence)

    evaluate = subparsers.add_parser("judge-eval", help="TRACe judges vs RAGBench baselines, per subset")
    evaluate.add_argument("--ragbench-dir", default=None, help="<subset>/<split>-*.parquet (default data/raw/ragbench)")
    evaluate.add_argument("--split", default="test")
    evaluate.add_argument(
        "--judges",
        default="offline",
        help="comma-separated: offline (stacked when an evidence model is trained, else "
        "lexical), lexical, evidence, stacked, llm",
    )
    evaluate.add_argument("--evidence-path", default=None, help="evidence model folder (default data/models/evidence)")
    evaluate.add_argument("--llm-config", default=None, help="LLM judge config: inline JSON or a JSON/YAML file")
    evaluate.add_argument("--limit", type=int, default=None, help="first N rows per subset")
    evaluate.add_argument("--judge-path", default=None, help="offline judge artefact")
    evaluate.add_argument("--out", default=None, help="write the full result as JSON (with --labels: CSV)")
    evaluate.add_argument(
        "--labels",
        default=None,
        metavar="RUN_ID|FOLDER",
        help="instead: every judge of run RUN_ID against the person's labels in its labels.csv "
        "(AUROC for supported vs not, Cohen's kappa, bootstrap intervals, n); or, given a folder of "
        "hand-labelled sheets (benchmarks/labels), every judge against them: the validity table "
        "(results/validity.csv, which reports then read in place of the shipped table; or --out)",
    )
    evaluate.add_argument(
        "--run",
        action="append",
        metavar="MODEL=RUN_ID",
        help="with --labels FOLDER: read LLM judges' scores of MODEL's labelled answers from RUN_ID",
    )
    evaluate.add_argument("--annotator", default=None, help="with --labels: only this annotator's labels")
    evaluate.set_defaults(func=_judge_eval)
