"""How often does `helpers compare` call an unchanged config worse? (issue 62; A/A tests.)

Two arms with the same true mean (0/1 scores per question, p = 0.6; independent draws, as two runs of
one config with a sampling LLM), 300 questions, 200 seeds: the share of seeds whose verdict is
"worse" (the guarantee: at most alpha, at any number of questions), and how the verdicts spread.
And with a true difference of -0.15 (the candidate worse by more than the margin): how many
questions until "worse".

    python benchmarks/compare_aa.py [--seeds 200] [--questions 300] [--alpha 0.05] [--margin 0.05]

Results: docs/measurements/search.md.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from helpers.experiment.compare import verdict
from helpers.inference.sequential import confidence_sequence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--margin", type=float, default=0.05)
    args = parser.parse_args()
    verdicts, ever_worse, until = Counter(), 0, []
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        a = (rng.random(args.questions) < 0.6).astype(float)
        b = (rng.random(args.questions) < 0.6).astype(float)
        verdicts[verdict(b - a, alpha=args.alpha, margin=args.margin)["status"]] += 1
        _, high = confidence_sequence(b - a, alpha=args.alpha)
        ever_worse += bool((high < 0).any())  # "worse" at any look, not only the last
        worse = (rng.random(args.questions) < 0.45).astype(float)
        _, high = confidence_sequence(worse - a, alpha=args.alpha)
        hits = np.flatnonzero(high < 0)
        until.append(int(hits[0]) + 1 if len(hits) else None)
    found = [u for u in until if u]
    print(
        f"A/A over {args.seeds} seeds, {args.questions} questions: verdicts {dict(verdicts)}; "
        f"'worse' at the end {verdicts['worse'] / args.seeds:.3f}, at any look {ever_worse / args.seeds:.3f} "
        f"(alpha {args.alpha}); a candidate worse by 0.15: 'worse' in {len(found)} of {args.seeds} seeds, "
        f"median {int(np.median(found)) if found else 'n/a'} questions"
    )


if __name__ == "__main__":
    main()
