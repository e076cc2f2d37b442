"""The anytime-valid decisions of `run --until-decided` (helpers.inference.sequential) over simulated runs.

    python benchmarks/sequential_decisions.py                 # 2,000 runs per case
    python benchmarks/sequential_decisions.py --runs 500 --json out.json

Two architectures answer the same questions; each answer is correct (1) or not (0).
1. No true difference (both correct with probability 0.5; four architectures, all pairs; and a
   score uniform in [0, 1] for both): a
   decision is checked after every question up to --max-questions. Reported: the share of runs that
   ever declare a winner, for the confidence sequence (target <= alpha) and, for contrast, for a
   paired t-test at the same alpha peeked at after every question.
2. A difference of 0.3 (0.65 against 0.35): the questions the sequential run uses, against the
   fixed design of the same power (helpers.inference.classical.questions_needed for a paired t-test at alpha and
   power 0.8): median, and the mean when the sequential run is cut at the question count where
   80 % of runs have stopped (the same power as the fixed design). Other differences beside it.
3. The bets: the same for the plug-in bet alone, constant bets alone, and mixtures of both.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from scipy import stats

from helpers.inference.classical import questions_needed
from helpers.inference.sequential import first_rejection


def stopping_times(d: np.ndarray, *, alpha: float, bets, adaptive: bool = True) -> np.ndarray:
    """The first question at which the CS of each run (row) leaves out 0; max + 1 where it never does."""
    out = np.full(len(d), d.shape[1] + 1)
    for r, row in enumerate(d):
        hit = first_rejection(row, alpha=alpha, bets=bets, adaptive=adaptive)
        if hit is not None:
            out[r] = hit
    return out


def peeked_t_test(d: np.ndarray, *, alpha: float) -> float:
    """Share of runs in which a fixed-n paired t-test, checked after every question (n >= 2), ever rejects."""
    t = np.arange(1, d.shape[1] + 1)
    mean = np.cumsum(d, axis=1) / t
    var = (np.cumsum(d**2, axis=1) - t * mean**2) / np.maximum(t - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = mean / np.sqrt(var / t)
    critical = stats.t.ppf(1 - alpha / 2, np.maximum(t - 1, 1))
    reject = (np.abs(statistic) > critical) & (t >= 2) & (var > 0)
    return float(reject.any(axis=1).mean())


def null_case(rng, *, runs, max_questions, alpha, architectures, bets, metric="0/1") -> dict:
    draws = rng.random((architectures, runs, max_questions))
    answers = (draws < 0.5).astype(float) if metric == "0/1" else draws  # "uniform": a score in [0, 1]
    pairs = [(a, b) for a in range(architectures) for b in range(a + 1, architectures)]
    per_pair = alpha / len(pairs)
    declared = np.zeros(runs, dtype=bool)
    for a, b in pairs:
        declared |= stopping_times(answers[a] - answers[b], alpha=per_pair, bets=bets) <= max_questions
    peeked = peeked_t_test(answers[0] - answers[1], alpha=alpha) if architectures == 2 else None
    return {
        "architectures": architectures,
        "metric": metric,
        "declared_a_winner": float(declared.mean()),
        "peeked_t_test": peeked,
    }


def difference_case(rng, *, runs, max_questions, alpha, p_better, p_worse, bets, adaptive=True) -> dict:
    a = (rng.random((runs, max_questions)) < p_better).astype(float)
    b = (rng.random((runs, max_questions)) < p_worse).astype(float)
    tau = stopping_times(a - b, alpha=alpha, bets=bets, adaptive=adaptive)
    sd = math.sqrt(p_better * (1 - p_better) + p_worse * (1 - p_worse))
    fixed = questions_needed(p_better - p_worse, sd, alpha=alpha, power=0.8)
    cut = float(np.quantile(tau, 0.8))
    return {
        "difference": round(p_better - p_worse, 3),
        "p": [p_better, p_worse],
        "fixed_n_power_0.8": fixed,
        "decided_by_max": float((tau <= max_questions).mean()),
        "median_questions": float(np.median(tau)),
        "questions_at_80_percent": cut,
        "mean_questions_same_power": float(np.minimum(tau, cut).mean()),
        "ratio_to_fixed": float(np.minimum(tau, cut).mean() / fixed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--null-runs", type=int, default=10000, help="runs of the no-difference cases")
    parser.add_argument("--max-questions", type=int, default=300)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    common = {"runs": args.runs, "max_questions": args.max_questions, "alpha": args.alpha}
    out = {"args": vars(args), "null": [], "difference": [], "bets": []}
    null = dict(common, runs=args.null_runs)
    for k, metric in ((2, "0/1"), (4, "0/1"), (2, "uniform")):
        out["null"].append(null_case(rng, architectures=k, bets=(0.5,), metric=metric, **null))
    for p_better, p_worse in ((0.65, 0.35), (0.6, 0.4), (0.7, 0.3), (0.55, 0.25)):
        out["difference"].append(difference_case(rng, p_better=p_better, p_worse=p_worse, bets=(0.5,), **common))
    for adaptive, bets in (
        (True, (0.5,)),
        (False, (0.5,)),
        (True, ()),
        (False, (0.25, 0.5, 0.75)),
        (True, (0.25, 0.75)),
    ):
        row = difference_case(rng, p_better=0.65, p_worse=0.35, bets=bets, adaptive=adaptive, **common)
        out["bets"].append({"adaptive": adaptive, "bets": list(bets), **row})
    print(f"{args.runs} simulated runs per case, decisions checked after every question up to {args.max_questions}")
    print(f"\nNo true difference ({args.null_runs} runs): share of runs that ever declare a winner (target <= alpha)")
    for row in out["null"]:
        peek = (
            ""
            if row["peeked_t_test"] is None
            else f"; a t-test peeked at after every question: {row['peeked_t_test']:.3f}"
        )
        print(
            f"  {row['architectures']} architectures, {row['metric']} metric: "
            f"confidence sequence {row['declared_a_winner']:.4f}{peek}"
        )
    print("\nA true difference (0/1 metric): questions used, sequential against the fixed design of power 0.8")
    print("  diff  p            fixed n | median  80% stopped by  mean at the same power  ratio")
    for row in out["difference"]:
        print(
            f"  {row['difference']:.2f}  {row['p']}  {row['fixed_n_power_0.8']:7d} | {row['median_questions']:6.0f}"
            f"  {row['questions_at_80_percent']:14.0f}  {row['mean_questions_same_power']:22.1f}  {row['ratio_to_fixed']:.2f}"
        )
    print("\nBets (difference 0.3): mean questions at the same power / fixed n")
    for row in out["bets"]:
        bet = ("plug-in + " if row["adaptive"] else "") + (f"constant {row['bets']}" if row["bets"] else "")
        print(f"  {bet.strip(' +')}: median {row['median_questions']:.0f}, ratio {row['ratio_to_fixed']:.2f}")
    print(f"\ntook {time.perf_counter() - start:.1f} s")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(out, handle, indent=2)


if __name__ == "__main__":
    main()
