"""Command line: `python -m helpers COMMAND ...` (also installed as `helpers`).

Commands:
  prepare-data   fill data/raw/ from ../shared/data or the public sources (checksums verified)
  summary        print a summary of every dataset (sizes, RAGBench row counts, chunk statistics)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="helpers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare-data", help="fill data/raw/ (checksums verified)")
    prep.add_argument("datasets", nargs="*", help="raw datasets to prepare (default: all)")
    prep.set_defaults(func=_prepare_data)
    summ = sub.add_parser("summary", help="summarise every dataset")
    summ.set_defaults(func=_summary)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
