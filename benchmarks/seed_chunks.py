"""The seed benchmark's own chunks (chunks_final.json) against ours, on the same questions, offline.

  python benchmarks/seed_chunks.py [--k 5] [--architectures bm25,dense,hybrid] [--no-maternaqa]
                                   [--answers q1] [--out results/benchmarks/seed_chunks.json]

1. The seed's 10 questions: ground-truth term recall in the top k contexts per architecture and
   chunking, with 95% bootstrap intervals and a paired permutation test (seed - ours).
2. obstetrics-es (306 MaternaQA-es questions) with either chunking as the distractor corpus.
3. --answers QIDS: also the seed's RAGAS table from a tiny experiment run per chunking (hybrid,
   the bundled 135M model answering and judging: about 2 min per question and chunking).
The dense parts embed the seed's 2,364 chunks with the multilingual e5 once (~6 min on one
thread; cached in data/cache). See helpers.reproduce.seed_chunks for what each number means.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # the machine is shared: one thread
import torch  # noqa: E402

import _offline  # noqa: E402,F401  (the offline defaults, before any hub library)
from helpers import paths  # noqa: E402
from helpers.reproduce.seed_chunks import ARCHITECTURES, answer_runs, compare, format_result  # noqa: E402
from helpers.trace.scoring import to_json  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=5, help="contexts per question (the default config's k)")
    parser.add_argument("--architectures", default=",".join(ARCHITECTURES))
    parser.add_argument("--no-maternaqa", action="store_true", help="skip the obstetrics-es part")
    parser.add_argument("--answers", default="", help="qids for the tiny RAGAS run, e.g. q1 (default: none)")
    parser.add_argument("--out", default=str(paths.benchmark_output("seed_chunks")))
    args = parser.parse_args()
    torch.set_num_threads(1)
    result = compare(k=args.k, architectures=args.architectures.split(","), maternaqa=not args.no_maternaqa)
    print(format_result(result))
    if args.answers:
        table = answer_runs(questions=args.answers.split(","))
        result["seed_table"] = json.loads(table.to_json(orient="index"))
        print("\nThe seed's RAGAS table layout (135M local judge; offline TRACe beside it):")
        print(table.round(3).to_string())
    out = Path(args.out)
    to_json(result, out)
    print(f"saved {out}")


if __name__ == "__main__":
    main()
