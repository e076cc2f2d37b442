"""Does the search keep its guarantee? (issue 62; helpers.sequential.eliminate, the engine of
`python -m helpers search`.)

Synthetic grids of 12-48 arms with known means: per question each arm scores 0/1 with its own
probability (a retrieval hit, a correct answer), the best arm's mean 0.5-0.8 and the others spread
below it, a few within epsilon. Questions come in batches; arms are eliminated as the search goes.
Measured: the share of grids whose chosen arm is within epsilon of the best (the guarantee: at least
1 - delta), and the evaluations used against the full grid's (every arm on every question).

    python benchmarks/search_guarantee.py [--grids 1000] [--questions 300] [--epsilon 0.05] [--delta 0.05]

Results: docs/measurements/search.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from helpers.sequential import eliminate


def one_grid(rng, *, questions: int, epsilon: float, delta: float, batch: int) -> tuple[bool, int, int]:
    """(chosen within epsilon of the best, evaluations used, full grid's evaluations)."""
    k = int(rng.integers(12, 49))
    best = rng.uniform(0.5, 0.8)
    means = best - np.concatenate([[0.0], rng.uniform(0.0, 0.4, k - 1)])
    means[1 : 1 + max(1, k // 12)] = best - rng.uniform(0, epsilon, max(1, k // 12))  # a few near the best
    scores = (rng.random((k, questions)) < means[:, None]).astype(float)
    names = [f"a{i}" for i in range(k)]
    values = {n: {} for n in names}
    alive, used = list(names), 0
    for start in range(0, questions, batch):
        for n in alive:
            i = names.index(n)
            values[n].update({f"q{t}": scores[i, t] for t in range(start, min(questions, start + batch))})
            used += min(questions, start + batch) - start
        arms, done = eliminate(values, alive, delta=delta, epsilon=epsilon)
        alive = [a.name for a in arms if a.status != "eliminated"]
        if done:
            break
    chosen = names.index(arms[0].name)
    return bool(means.max() - means[chosen] <= epsilon), used, k * questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grids", type=int, default=1000)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--epsilon", type=float, default=0.05)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started, good, used, full = time.perf_counter(), 0, 0, 0
    for _ in range(args.grids):
        ok, u, f = one_grid(rng, questions=args.questions, epsilon=args.epsilon, delta=args.delta, batch=args.batch)
        good, used, full = good + ok, used + u, full + f
    print(
        f"{args.grids} grids of 12-48 arms, {args.questions} questions, epsilon {args.epsilon}, delta {args.delta}: "
        f"chosen within epsilon of the best in {good / args.grids:.3f} (guarantee >= {1 - args.delta}); "
        f"evaluations {used / full:.3f} of the full grid's; {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
