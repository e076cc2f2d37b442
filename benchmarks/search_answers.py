"""The search with answers against the full grid, on a real grid (issue 62).

First `helpers.experiment.search.search` on the sweep (retrieval, then answers with the local
model, scored by correctness); then every cell answers every question (the full grid), reusing the
search's runs (the same run ids: what the search answered is not asked again). The full grid's best
mean is the truth: regret = its mean - the chosen cell's, both on every question; LLM calls: the
search's against the full grid's.

    python benchmarks/search_answers.py [configs/sweeps/search-answers.yaml] [--epsilon 0.05]

Results: docs/measurements/search.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from helpers.experiment.search import arms_of, search
from helpers.experiment.search_answers import AnswerArms
from helpers.experiment.search_retrieval import same_work
from helpers.experiment.sweep import expand, load_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", nargs="?", default="configs/sweeps/search-answers.yaml")
    parser.add_argument("--epsilon", type=float, default=0.05)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--batch", type=int, default=4)
    args = parser.parse_args()
    started = time.perf_counter()
    summary = search(args.sweep, epsilon=args.epsilon, delta=args.delta, batch=args.batch, log=print)
    searched = time.perf_counter() - started
    sweep, path = load_sweep(args.sweep)
    arms = arms_of(expand(sweep, path))
    grid = AnswerArms(arms, {a["name"]: same_work(a) for a in arms}, summary["metric"])
    means, calls = {}, 0
    for name in grid.arms:
        qids = grid.questions(name)
        values = grid.evaluate(name, qids)
        means[name] = float(np.mean(list(values.values())))
        calls += sum(grid.calls[name].values())
    chosen = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in summary["chosen"]["axes"].items())
    best = max(means, key=means.get)
    print(f"\n{args.sweep}: epsilon {args.epsilon}, delta {args.delta}, batch {args.batch}")
    print(
        f"search: {summary['stopped']}; {summary['llm_calls']} LLM calls of the full grid's {calls}; {searched:.0f} s"
    )
    for name, mean in sorted(means.items(), key=lambda item: -item[1]):
        print(f"  {name:<40} {mean:.3f}{'  <- chosen' if name == chosen else ''}{'  <- best' if name == best else ''}")
    print(f"regret {means[best] - means[chosen]:.4f}; LLM calls {summary['llm_calls'] / calls:.2f} of the full grid's")


if __name__ == "__main__":
    main()
