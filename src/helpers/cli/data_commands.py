"""Commands of data, registered on the package CLI by `add_cli` (helpers.__main__): the datasets
(`prepare-data`, `summary`) and a user's own documents (`ingest`, `testset`, and `run --documents`'s options).

python -m helpers prepare-data [DATASET ...]       fill data/raw/ (checksums verified)
python -m helpers summary                          every dataset's sizes and chunk statistics
python -m helpers ingest DIR                       the ingest report and corpus statistics
python -m helpers testset DIR --n 50               a reviewed-to-be test set written by the LLM
python -m helpers run --documents DIR [--questions FILE] [--config FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from helpers import paths
from helpers.data import load_dataset, prepare_data, summarize_all
from helpers.data.corpus_stats import chunk_statistics
from helpers.data.documents import ingest
from helpers.experiment.own_documents import TESTSET_CONFIG, write_testset


def _prepare_data(args: argparse.Namespace) -> int:
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


def _chunking_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--chunk-size", type=int, default=500, help="characters per chunk (default 500, the seed's)")
    parser.add_argument("--chunk-overlap", type=int, default=100, help="characters shared by neighbours (default 100)")
    parser.add_argument(
        "--splitter",
        default="workbench",
        choices=["workbench", "langchain"],
        help="workbench: sentence-packed spans; langchain: RecursiveCharacterTextSplitter (the seed's)",
    )
    parser.add_argument("--language", default="auto", help="ISO code, or auto (detected; default)")


def _chunking(args) -> dict:
    return {
        "chunk_size": args.chunk_size,
        "chunk_overlap": args.chunk_overlap,
        "splitter": args.splitter,
        "language": args.language,
    }


def _ingest(args: argparse.Namespace) -> int:
    ingested = ingest(args.path, **_chunking(args))
    print(ingested.format_report())
    print("\nChunks (characters):")
    print(json.dumps(chunk_statistics(ingested.corpus), indent=2))
    if args.report:
        paths.write_json(args.report, ingested.report())
        print(f"report: {args.report}")
    return 0


def _testset(args: argparse.Namespace) -> int:
    testset, out = write_testset(
        args.path, n=args.n, config=args.config, out=args.out, seed=args.seed, chunking=_chunking(args)
    )
    print(testset.format_report())
    print(
        f"test set: {out} ({len(testset.kept)} questions; every candidate with its status in "
        f"{out.with_suffix('.candidates.jsonl').name}). Review it (notebook 09's review panel) before "
        f"trusting a ranking, then: python -m helpers run --documents {args.path} --questions {out}"
    )
    return 0


def add_run_options(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--documents",
        help="a folder (or glob) of your own documents: run the config's architectures over them (no YAML to write)",
    )
    run.add_argument(
        "--questions",
        help="with --documents: a CSV, JSONL or XLSX file with a 'question' column "
        "(optional: id, reference, relevant); without it a test set is written first (testset)",
    )
    run.add_argument(
        "--config",
        dest="base_config",
        default=str(paths.CONFIGS_DIR / "default.yaml"),
        help="with --documents: the settings to use (default configs/default.yaml); a config of your own "
        "(not one of configs/) names the run too",
    )


def add_cli(sub) -> None:
    prep = sub.add_parser("prepare-data", help="fill data/raw/ (checksums verified)")
    prep.add_argument("datasets", nargs="*", help="raw datasets to prepare (default: all)")
    prep.set_defaults(func=_prepare_data)
    summ = sub.add_parser("summary", help="summarise every dataset")
    summ.set_defaults(func=_summary)
    ing = sub.add_parser("ingest", help="read a folder of documents: the ingest report and chunk statistics")
    ing.add_argument("path", help="a folder, a file or a glob ('docs/**/*.pdf')")
    _chunking_args(ing)
    ing.add_argument("--report", help="also write the report as JSON to this file")
    ing.set_defaults(func=_ingest)
    tst = sub.add_parser("testset", help="write a test set from a folder of documents with the LLM")
    tst.add_argument("path", help="a folder, a file or a glob")
    tst.add_argument("--n", type=int, default=50, help="questions to keep (default 50)")
    tst.add_argument(
        "--config",
        default=str(paths.PROJECT_ROOT / TESTSET_CONFIG),
        help=f"whose generation LLM writes the questions (default {TESTSET_CONFIG})",
    )
    tst.add_argument(
        "--out", help="questions file to write (.jsonl or .csv; default data/testsets/<folder>-<hash>.jsonl)"
    )
    tst.add_argument("--seed", type=int, default=0)
    _chunking_args(tst)
    tst.set_defaults(func=_testset)
