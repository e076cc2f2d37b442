"""The search with answers against the full grid, on a real grid (issue 62).

First `helpers.experiment.search.search` on the sweep (retrieval, then answers with the local
model, scored by correctness); then every cell answers every question (the full grid), reusing the
search's runs (the same run ids: what the search answered is not asked again). The full grid's best
mean is the truth: regret = its mean - the chosen cell's, both on every question; LLM calls: the
search's against the full grid's.

    python benchmarks/search_answers.py [configs/sweeps/search-answers.yaml] [--epsilon 0.05]
    python benchmarks/search_answers.py --resample 306 [--seeds 20]

`--resample POOL`: a projection, not a measurement: pools of POOL questions drawn with replacement
from the questions every cell answered (each draw keeps a question's answers from all cells
together, so differences stay paired), and the answer stage's elimination run on each, no LLM call;
the share of the pool's full grid of answers it used. It takes the measured questions' differences
as the truth, so it says how the share falls as the pool grows, not what a new pool would give.

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
from helpers.inference.sequential import eliminate


def resampled_share(values: dict, pool: int, seed: int, *, epsilon: float, delta: float, batch: int) -> float:
    """The answer stage's share of a resampled pool's full grid (the module docstring's projection);
    delta is the answer stage's: half the search's (the other half is the retrieval stage's)."""
    names = list(values)
    shared = sorted(set.intersection(*(set(v) for v in values.values())))
    drawn = np.random.default_rng(seed).choice(shared, size=pool)
    alive, seen, calls = list(names), {n: {} for n in names}, 0
    for start in range(0, pool, batch):
        for name in alive:
            for i in range(start, min(start + batch, pool)):
                seen[name][f"draw{i}"] = values[name][drawn[i]]
                calls += 1
        statuses, done = eliminate(seen, alive, delta=delta, epsilon=epsilon)
        alive = [a.name for a in statuses if a.status != "eliminated"]
        if done or len(alive) == 1:
            break
    return calls / (pool * len(names))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", nargs="?", default="configs/sweeps/search-answers.yaml")
    parser.add_argument("--epsilon", type=float, default=0.05)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--resample", type=int, metavar="POOL", help="project the share on pools of POOL questions")
    parser.add_argument("--answer-metric", default="correctness/correctness", help="with --resample: the search's")
    parser.add_argument("--seeds", type=int, default=20, help="resampled pools (with --resample)")
    args = parser.parse_args()
    if args.resample:
        sweep, path = load_sweep(args.sweep)
        arms = arms_of(expand(sweep, path))
        grid = AnswerArms(arms, {a["name"]: same_work(a) for a in arms}, args.answer_metric)
        values = {name: grid.evaluate(name, grid.questions(name)) for name in grid.arms}
        shares = [
            resampled_share(values, args.resample, seed, epsilon=args.epsilon, delta=args.delta / 2, batch=args.batch)
            for seed in range(args.seeds)
        ]
        print(
            f"pools of {args.resample} resampled from the answered questions, {args.seeds} seeds, epsilon "
            f"{args.epsilon}: LLM calls {np.mean(shares):.3f} of the full grid's (median {np.median(shares):.3f})"
        )
        return
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
