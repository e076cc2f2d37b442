"""Coverage and width of the three estimates (helpers.inference.ppi) over synthetic runs: a judge biased by
+0.15, n people's labels of N answers drawn at random, the true rate known.

    python benchmarks/ppi_coverage.py                    # 1,000 runs per judge quality, 20 labels of 200
    python benchmarks/ppi_coverage.py --runs 200 --json out.json

Each run draws N answers whose label is 1 with probability `rate` and a judge score
f = rate + 0.15 + b·(Y - rate) + σ·ε (ε standard normal): the judge's mean is the true rate + 0.15
(its bias), and its AUROC against the labels is Φ(b / (σ·√2)); b = 1 and σ are set for each target
AUROC. n of the N are labelled at random. Reported per AUROC: each method's share of runs whose
interval covers the true rate, and its mean width; the PPI / labels-only width ratio. Issue 46's
targets: PPI covers >= 93 % at 95 %, and is narrower than labels-only whenever AUROC >= 0.8.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
from scipy import stats

from helpers.inference.ppi import METHODS, three_estimates

AUROCS = (0.55, 0.65, 0.7, 0.8, 0.9, 0.95, 0.99)


def simulate(*, runs: int, n_labels: int, n_items: int, rate: float, bias: float, target_auroc: float, seed: int):
    rng = np.random.default_rng(seed)
    sigma = 1 / (math.sqrt(2) * stats.norm.ppf(target_auroc))  # AUROC = Φ(1 / (σ√2)) for b = 1
    covered = {m: 0 for m in METHODS}
    widths = {m: [] for m in METHODS}
    observed_auroc = []
    for _ in range(runs):
        y = (rng.random(n_items) < rate).astype(float)
        f = rate + bias + (y - rate) + sigma * rng.standard_normal(n_items)
        labels = np.full(n_items, np.nan)
        chosen = rng.choice(n_items, size=n_labels, replace=False)
        labels[chosen] = y[chosen]
        if 0 < y.sum() < n_items:
            observed_auroc.append(_auroc(y, f))
        for estimate in three_estimates(labels, f):
            covered[estimate.method] += estimate.low <= rate <= estimate.high
            widths[estimate.method].append(estimate.width)
    return {
        "target_auroc": target_auroc,
        "auroc": float(np.mean(observed_auroc)),
        "coverage": {m: covered[m] / runs for m in METHODS},
        "width": {m: float(np.mean(widths[m])) for m in METHODS},
        "ppi_over_labels_width": float(np.mean(widths["ppi"]) / np.mean(widths["labels"])),
    }


def _auroc(y, f) -> float:
    from helpers.inference.classical import auroc

    return auroc(y, f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--labels", type=int, default=20)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--rate", type=float, default=0.4)
    parser.add_argument("--bias", type=float, default=0.15)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    start = time.perf_counter()
    rows = [
        simulate(
            runs=args.runs,
            n_labels=args.labels,
            n_items=args.items,
            rate=args.rate,
            bias=args.bias,
            target_auroc=a,
            seed=i,
        )  # fmt: skip
        for i, a in enumerate(AUROCS)
    ]
    print(
        f"{args.runs} runs each; {args.labels} labels of {args.items}; true rate {args.rate}; judge bias +{args.bias}"
    )
    print("AUROC | coverage: labels  judge  ppi | mean width: labels  judge  ppi | ppi / labels width")
    for r in rows:
        c, w = r["coverage"], r["width"]
        print(
            f"{r['auroc']:.3f} | {c['labels']:.3f}  {c['judge']:.3f}  {c['ppi']:.3f} | "
            f"{w['labels']:.3f}  {w['judge']:.3f}  {w['ppi']:.3f} | {r['ppi_over_labels_width']:.3f}"
        )
    print(f"took {time.perf_counter() - start:.1f} s")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"args": vars(args), "rows": rows}, out, indent=2)


if __name__ == "__main__":
    main()
