"""The query panel's latency on the whole obstetrics guideline: loading, the first search (indexes
built; the dense one from the embedding cache when it is warm), then warm searches of new
questions through the four architectures without an LLM, and HyDE / multi-query with the local
model (its answer cache off, so every passage and rewrite is generated).

  python benchmarks/explore.py [--dataset obstetrics] [--questions 10] [--llm-questions 3]
                               [--out results/benchmarks/explore.json]

Target (issue 14): warm, the four architectures without an LLM answer in under a second.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from helpers import paths
from helpers.explore import Workbench

FOUR = ["dense", "bm25", "hybrid", "rerank"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="obstetrics")
    parser.add_argument("--questions", type=int, default=10, help="warm searches (distinct questions)")
    parser.add_argument("--llm-questions", type=int, default=3, help="searches with HyDE and multi-query")
    parser.add_argument("--out", type=Path, default=str(paths.benchmark_output("explore")))
    args = parser.parse_args()

    uncached = {"provider": "local", "model": "smollm2", "cache": "off"}
    bench = Workbench(args.dataset, llm="local-uncached", llms={"local-uncached": uncached})
    start = time.perf_counter()
    bench.load()
    load_s = time.perf_counter() - start
    questions = list(bench.data.queries.values())
    first = bench.search(questions[0], FOUR, k=5)
    first_s = {a: round(c.seconds, 3) for a, c in first.columns.items()}
    warm, per_architecture = [], {a: [] for a in FOUR}
    # new questions each time (a question asked before would hit the query-embedding cache)
    for i in range(args.questions):
        question = f"{questions[(i + 1) % len(questions)]} (variante {i})"
        start = time.perf_counter()
        comparison = bench.search(question, FOUR, k=5)
        warm.append(time.perf_counter() - start)
        for architecture, column in comparison.columns.items():
            per_architecture[architecture].append(column.seconds)
    llm_rows = []
    for question in questions[: args.llm_questions]:
        comparison = bench.search(question, ["hyde", "multi_query"], k=5)
        llm_rows.append({a: round(c.seconds, 2) for a, c in comparison.columns.items()})
    result = {
        "dataset": args.dataset,
        "documents": len(bench.data.corpus),
        "load_s": round(load_s, 2),
        "first_search_s": first_s,
        "warm_four_architectures_s": {
            "median": round(statistics.median(warm), 3),
            "max": round(max(warm), 3),
            "n": len(warm),
        },
        "warm_per_architecture_median_s": {a: round(statistics.median(v), 4) for a, v in per_architecture.items()},
        "llm_architectures_s": llm_rows,
        "target_met": max(warm) < 1.0,
    }
    paths.write_json(args.out, result, echo=True)


if __name__ == "__main__":
    main()
