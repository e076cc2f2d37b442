"""Successive elimination by hand (notebook 10): a toy grid of six arms with known means, each
question scored 0 or 1 (an answer right or wrong), looked at every `batch` questions. At each look
the leader is the arm of highest mean so far; every other arm gets the anytime-valid confidence
sequence of (leader - arm) on the questions both answered (helpers.inference.sequential); an arm whose
interval lies above 0 is worse than the leader, and dropped for good. The search stops when one
arm is left or every survivor is within epsilon of the leader. This is exactly what
`python -m helpers search` does with each (cell, architecture) of a sweep (helpers.inference.sequential.eliminate).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from helpers.inference.sequential import eliminate
from helpers.teaching.exercises import exercise

# the true means of the toy grid's arms: a user never knows them; the search finds the best anyway
TOY_MEANS = {
    "bm25 k=3": 0.40,
    "bm25 k=5": 0.45,
    "dense k=3": 0.55,
    "dense k=5": 0.60,
    "hybrid k=3": 0.70,
    "hybrid k=5": 0.72,
}


def toy_scores(means: dict[str, float] = TOY_MEANS, n: int = 300, seed: int = 0) -> dict[str, dict[str, float]]:
    """{arm: {qid: 0 or 1}}: each arm right on each question with its own probability."""
    rng = np.random.default_rng(seed)
    return {arm: {f"q{i}": float(rng.random() < p) for i in range(n)} for arm, p in means.items()}


def elimination_steps(values: dict[str, dict[str, float]], *, delta=0.05, epsilon=0.05, batch=20) -> pd.DataFrame:
    """Each look of the search, one row per arm still racing: questions used, arm, mean so far, the
    interval of (leader - arm) and its status (leader, open, eliminated at this look)."""
    order = list(next(iter(values.values())))
    alive = list(values)
    seen: dict[str, dict[str, float]] = {arm: {} for arm in values}
    rows: list = []
    for start in range(0, len(order), batch):
        chunk = order[start : start + batch]
        for arm in alive:
            seen[arm].update({q: values[arm][q] for q in chunk})
        arms, done = eliminate(seen, alive, delta=delta, epsilon=epsilon)
        used = start + len(chunk)
        rows += [
            {"questions": used, "arm": a.name, "mean": a.mean, "low": a.low, "high": a.high, "status": a.status}
            for a in arms
        ]
        alive = [a.name for a in arms if a.status != "eliminated"]
        if done:
            break
    return pd.DataFrame(rows)


def evaluations(steps: pd.DataFrame, batch: int = 20) -> int:
    """Answers the search scored: each arm, `batch` questions at each look it took part in (the
    last look may be shorter: the questions ran out)."""
    looks = sorted(steps["questions"].unique())
    sizes = dict(zip(looks, np.diff([0, *looks])))
    return int(sum(sizes[q] for q in steps["questions"]))


def dropped_order(steps: pd.DataFrame) -> list[str]:
    """The arms in the order they were eliminated."""
    out = steps[steps["status"] == "eliminated"].sort_values(["questions", "mean"])
    return list(out["arm"])


def elimination_figure(steps: pd.DataFrame, epsilon: float = 0.05):
    """Every arm's interval of (leader - arm) at each look: dropped when it lies above 0."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (arm, part) in enumerate(steps[steps["status"] != "leader"].groupby("arm", sort=False)):
        colour = f"C{i}"
        x = part["questions"].to_numpy()
        ax.fill_between(x, part["low"], part["high"], step="post", color=colour, alpha=0.15, linewidth=0)
        ax.step(x, (part["low"] + part["high"]) / 2, where="post", color=colour, label=arm)
        gone = part[part["status"] == "eliminated"]
        ax.scatter(gone["questions"], gone["low"], color=colour, marker="x", zorder=3)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.axhline(-epsilon, color="grey", linewidth=0.8, linestyle="--", label=f"-epsilon ({epsilon})")
    ax.set_xlabel("questions used")
    ax.set_ylabel("leader - arm (interval at each look)")
    ax.set_title("successive elimination: x = dropped (its interval above 0)", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def guarantee_rate(grids: int = 100, *, delta=0.05, epsilon=0.05, seed: int = 0) -> tuple[float, float]:
    """(share of random toy grids whose chosen arm is within epsilon of the best, share of the full
    grid's answers used): six arms, means drawn at random, 300 questions each."""
    rng = np.random.default_rng(seed)
    good, used, full = 0, 0, 0
    for g in range(grids):
        means = dict(zip(TOY_MEANS, rng.uniform(0.3, 0.8, len(TOY_MEANS))))
        steps = elimination_steps(toy_scores(means, seed=seed + g + 1), delta=delta, epsilon=epsilon)
        chosen = steps[steps["questions"] == steps["questions"].max()].iloc[0]["arm"]
        good += max(means.values()) - means[chosen] <= epsilon
        used, full = used + evaluations(steps), full + 300 * len(means)
    return good / grids, used / full


exercise(
    "search-first-dropped",
    "10-search",
    "Which arm of the toy grid (seed 0, delta 0.05, epsilon 0.05, batches of 20) is dropped first?",
    lambda: dropped_order(elimination_steps(toy_scores()))[0],
    "Run elimination_steps(toy_scores()) and look at the first row with status 'eliminated'.",
)
exercise(
    "search-evaluations",
    "10-search",
    "How many answers did the toy search score (the full grid scores 6 x 300 = 1,800)?",
    lambda: evaluations(elimination_steps(toy_scores())),
    "Each arm scores 20 answers at each look it takes part in: evaluations(steps).",
    tolerance=0,
)
exercise(
    "search-pairs",
    "10-search",
    "delta is split over the pairs the guarantee needs: over how many pairs, for the six toy arms?",
    lambda: len(TOY_MEANS) - 1,
    "Only the pairs (best arm, another arm) must hold: K - 1 (helpers.inference.sequential.eliminate's docstring).",
    tolerance=0,
)
