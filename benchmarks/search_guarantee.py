"""Does the search keep its guarantee? (issue 62; helpers.inference.sequential.eliminate, the engine of
`python -m helpers search`.)

Synthetic grids of 12-48 arms with known means: per question each arm scores 0/1 with its own
probability (a retrieval hit, a correct answer), the best arm's mean 0.5-0.8 and the others spread
below it, a few within epsilon. Questions come in batches; arms are eliminated as the search goes.
Measured: the share of grids whose chosen arm is within epsilon of the best (the guarantee: at least
1 - delta), and the evaluations used against the full grid's (every arm on every question).

With `--judge-bias B` the search sees a judge's scores, not the truth: each arm's judge is right
except for flips that move its mean by its own bias, drawn uniformly in [-B, B] (a judge biased per
cell); `--label-rate R` adds a person's label on each question with probability R, and the search
races the audited values (helpers.inference.sequential.audited: the judge corrected by the labels, inverse
probability weighted), whose mean is the truth's whatever the bias.

With `--soft-judge` the judge gives each answer a probability instead of a verdict: the answer's own
chance of being right s ~ Beta(cm, c(1 - m)) for its arm's mean m (c: `--concentration`, default 2;
smaller, a judge sure of more answers), the person's label ~ Bernoulli(s),
the judge's score clip(s + bias, 0, 1) (sure of some answers, unsure of others, biased per arm).
`--label-floor F` then labels actively: each answer at its own rate, `--label-rate` where the judge
is least sure down to F where it is sure (helpers.inference.sequential.active_rate), one uniform draw per
question shared by the arms, as `helpers search --label-floor` does.

    python benchmarks/search_guarantee.py [--grids 1000] [--questions 300] [--epsilon 0.05] [--delta 0.05]
    python benchmarks/search_guarantee.py --judge-bias 0.1 [--label-rate 0.3]
    python benchmarks/search_guarantee.py --soft-judge --judge-bias 0.1 --label-rate 0.35 [--label-floor 0.1]

Results: docs/measurements/search.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from helpers.inference.sequential import active_rate, audit_scale, audited, eliminate


def judged(rng, truth: np.ndarray, means: np.ndarray, bias: float) -> np.ndarray:
    """What the judge says, question by question: the truth, with flips that move the mean by the
    arm's bias (false positives for a positive bias, false negatives for a negative one)."""
    if bias >= 0:
        flip = (truth == 0) & (rng.random(truth.shape) < bias / max(1e-9, 1 - means[:, None]))
        return np.where(flip, 1.0, truth)
    flip = (truth == 1) & (rng.random(truth.shape) < -bias / np.maximum(1e-9, means[:, None]))
    return np.where(flip, 0.0, truth)


def one_grid(
    rng,
    *,
    questions,
    epsilon,
    delta,
    batch,
    judge_bias=0.0,
    label_rate=None,
    soft_judge=False,
    label_floor=None,
    concentration=2.0,
) -> tuple[bool, int, int, int]:
    """(chosen within epsilon of the best by the true means, evaluations used, full grid's, labels used)."""
    k = int(rng.integers(12, 49))
    best = rng.uniform(0.5, 0.8)
    means = best - np.concatenate([[0.0], rng.uniform(0.0, 0.4, k - 1)])
    means[1 : 1 + max(1, k // 12)] = best - rng.uniform(0, epsilon, max(1, k // 12))  # a few near the best
    biases = rng.uniform(-judge_bias, judge_bias, k)
    if soft_judge:  # each answer's chance of being right, its label drawn from it, the judge's biased score
        c = concentration
        chance = rng.beta(c * means[:, None], c * (1 - means[:, None]), (k, questions))
        truth = (rng.random((k, questions)) < chance).astype(float)
        scores = np.clip(chance + biases[:, None], 0.0, 1.0)
    else:
        truth = (rng.random((k, questions)) < means[:, None]).astype(float)
        scores = truth
        if judge_bias:
            scores = np.stack([judged(rng, truth[i : i + 1], means[i : i + 1], biases[i])[0] for i in range(k)])
    scale, labelled = 1.0, np.zeros((k, questions), dtype=bool)
    if label_rate is not None:
        draw = rng.random(questions)  # one uniform per question, shared by the arms: answers labelled together
        rates = np.full((k, questions), label_rate)
        if label_floor is not None:
            rates = np.vectorize(lambda f: active_rate(f, label_rate, label_floor))(scores)
        labelled = draw[None, :] < rates
        scores = np.array(
            [
                [audited(f, y if seen else None, r) for f, y, seen, r in zip(fs, ys, ls, rs)]
                for fs, ys, ls, rs in zip(scores, truth, labelled, rates)
            ]
        )
        scale = audit_scale(label_rate if label_floor is None else label_floor)
    names = [f"a{i}" for i in range(k)]
    values = {n: {} for n in names}
    alive, used, labels = list(names), 0, 0
    for start in range(0, questions, batch):
        stop = min(questions, start + batch)
        for n in alive:
            i = names.index(n)
            values[n].update({f"q{t}": scores[i, t] for t in range(start, stop)})
            used += stop - start
        labels += sum(int(labelled[names.index(n), start:stop].sum()) for n in alive)
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
    parser.add_argument("--soft-judge", action="store_true", help="the judge gives each answer a probability")
    parser.add_argument("--concentration", type=float, default=2.0, help="the soft judge's Beta concentration")
    parser.add_argument("--label-floor", type=float, help="active labelling: the rate where the judge is sure")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started, good, used, full, labels = time.perf_counter(), 0, 0, 0, 0
    settings = {"judge_bias": args.judge_bias, "label_rate": args.label_rate}
    settings |= {"soft_judge": args.soft_judge, "label_floor": args.label_floor, "concentration": args.concentration}
    for _ in range(args.grids):
        ok, u, f, n = one_grid(
            rng, questions=args.questions, epsilon=args.epsilon, delta=args.delta, batch=args.batch, **settings
        )
        good, used, full, labels = good + ok, used + u, full + f, labels + n
    print(
        f"{args.grids} grids of 12-48 arms, {args.questions} questions, epsilon {args.epsilon}, delta {args.delta}, "
        f"judge bias {args.judge_bias} ({f'soft, concentration {args.concentration}' if args.soft_judge else '0/1'}), label rate {args.label_rate}, "
        f"floor {args.label_floor}: chosen within epsilon of the best in "
        f"{good / args.grids:.3f} (guarantee >= {1 - args.delta}); evaluations {used / full:.3f} of the full grid's; "
        f"labels {labels / max(1, used):.3f} of the evaluations; {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
