"""Does the search keep its guarantee? (issue 62; helpers.sequential.eliminate, the engine of
`python -m helpers search`.)

Synthetic grids of 12-48 arms with known means: per question each arm scores 0/1 with its own
probability (a retrieval hit, a correct answer), the best arm's mean 0.5-0.8 and the others spread
below it, a few within epsilon. Questions come in batches; arms are eliminated as the search goes.
Measured: the share of grids whose chosen arm is within epsilon of the best (the guarantee: at least
1 - delta), and the evaluations used against the full grid's (every arm on every question).

With `--judge-bias B` the search sees a judge's scores, not the truth: each arm's judge is right
except for flips that move its mean by its own bias, drawn uniformly in [-B, B] (a judge biased per
cell); `--label-rate R` adds a person's label on each question with probability R, and the search
races the audited values (helpers.sequential.audited: the judge corrected by the labels, inverse
probability weighted), whose mean is the truth's whatever the bias.

    python benchmarks/search_guarantee.py [--grids 1000] [--questions 300] [--epsilon 0.05] [--delta 0.05]
    python benchmarks/search_guarantee.py --judge-bias 0.1 [--label-rate 0.3]

Results: docs/measurements/search.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from helpers.sequential import audit_scale, audited, eliminate


def judged(rng, truth: np.ndarray, means: np.ndarray, bias: float) -> np.ndarray:
    """What the judge says, question by question: the truth, with flips that move the mean by the
    arm's bias (false positives for a positive bias, false negatives for a negative one)."""
    if bias >= 0:
        flip = (truth == 0) & (rng.random(truth.shape) < bias / max(1e-9, 1 - means[:, None]))
        return np.where(flip, 1.0, truth)
    flip = (truth == 1) & (rng.random(truth.shape) < -bias / np.maximum(1e-9, means[:, None]))
    return np.where(flip, 0.0, truth)


def one_grid(rng, *, questions, epsilon, delta, batch, judge_bias=0.0, label_rate=None) -> tuple[bool, int, int, int]:
    """(chosen within epsilon of the best by the true means, evaluations used, full grid's, labels used)."""
    k = int(rng.integers(12, 49))
    best = rng.uniform(0.5, 0.8)
    means = best - np.concatenate([[0.0], rng.uniform(0.0, 0.4, k - 1)])
    means[1 : 1 + max(1, k // 12)] = best - rng.uniform(0, epsilon, max(1, k // 12))  # a few near the best
    truth = (rng.random((k, questions)) < means[:, None]).astype(float)
    scores, scale, labelled = truth, 1.0, np.zeros(questions, dtype=bool)
    if judge_bias:
        biases = rng.uniform(-judge_bias, judge_bias, k)
        scores = np.stack([judged(rng, truth[i : i + 1], means[i : i + 1], biases[i])[0] for i in range(k)])
    if label_rate is not None:
        labelled = rng.random(questions) < label_rate  # a question's answers are labelled together
        scores = np.array(
            [
                [audited(f, y if seen else None, label_rate) for f, y, seen in zip(fs, ys, labelled)]
                for fs, ys in zip(scores, truth)
            ]
        )
        scale = audit_scale(label_rate)
    names = [f"a{i}" for i in range(k)]
    values = {n: {} for n in names}
    alive, used, labels = list(names), 0, 0
    for start in range(0, questions, batch):
        stop = min(questions, start + batch)
        for n in alive:
            i = names.index(n)
            values[n].update({f"q{t}": scores[i, t] for t in range(start, stop)})
            used += stop - start
        labels += int(labelled[start:stop].sum()) * len(alive)
        arms, done = eliminate(values, alive, delta=delta, epsilon=epsilon, scale=scale)
        alive = [a.name for a in arms if a.status != "eliminated"]
        if done:
            break
    chosen = names.index(arms[0].name)
    return bool(means.max() - means[chosen] <= epsilon), used, k * questions, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grids", type=int, default=1000)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--epsilon", type=float, default=0.05)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--judge-bias", type=float, default=0.0, help="each arm's judge biased by U(-B, B)")
    parser.add_argument("--label-rate", type=float, help="a person's label on each question with this probability")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started, good, used, full, labels = time.perf_counter(), 0, 0, 0, 0
    settings = {"judge_bias": args.judge_bias, "label_rate": args.label_rate}
    for _ in range(args.grids):
        ok, u, f, n = one_grid(
            rng, questions=args.questions, epsilon=args.epsilon, delta=args.delta, batch=args.batch, **settings
        )
        good, used, full, labels = good + ok, used + u, full + f, labels + n
    print(
        f"{args.grids} grids of 12-48 arms, {args.questions} questions, epsilon {args.epsilon}, delta {args.delta}, "
        f"judge bias {args.judge_bias}, label rate {args.label_rate}: chosen within epsilon of the best in "
        f"{good / args.grids:.3f} (guarantee >= {1 - args.delta}); evaluations {used / full:.3f} of the full grid's; "
        f"labels {labels / max(1, used):.3f} of the evaluations; {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
