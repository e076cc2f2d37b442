"""`python -m helpers compare BASELINE CANDIDATE`: is a change better, not worse, or worse, with an
error rate a CI gate can rely on (issue 62).

BASELINE and CANDIDATE are two finished runs (their ids) or two configs (each run first, resumable,
as `helpers run` would). Each is one arm: a run with several architectures names one with
`RUN_ID:ARCHITECTURE` (default: the config's baseline architecture, else the only one). The metric
(default the candidate's decision metric: correctness/correctness, or retrieval/ndcg@k when no
answers are written) is compared question by question on the questions both have, in a seeded
order, by the anytime-valid confidence sequence of candidate - baseline (helpers.sequential; Howard
et al. 2021, Waudby-Smith & Ramdas 2024):

    better       the sequence lies above 0
    not worse    it lies above -margin (within the margin at worst)
    worse        it lies below 0, and reaches below -margin
    undecided    none of these yet: about N more questions, the first length at which the same
                 sequence decides when the differences seen so far go on as they were (cycled), up
                 to 20 times as many; None beyond that

Exit status 0 for better or not worse, 1 for worse, 3 for undecided, so it can gate a change. On two
identical configs (A/A) the sequence lies below 0 with probability at most alpha, at any number of
questions (benchmarks/compare_aa.py measures it).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from helpers.errors import UserError
from helpers.experiment.analysis import load_scores, run_config, run_dir
from helpers.sequential import confidence_sequence

EXIT = {"better": 0, "not worse": 0, "worse": 1, "undecided": 3}


def read_arm(spec: str, results_dir: Path | None = None) -> tuple[str, str, object]:
    """(run id, architecture, its config) of RUN_ID[:ARCHITECTURE] or a config file (run first)."""
    if Path(spec).is_file():
        from helpers.experiment.config import load_config
        from helpers.experiment.runner import Experiment  # the runner: loaded only for a config

        config = load_config(spec)
        run_id = Experiment(config, results_dir=results_dir).run()["run_id"]
        architecture = None
    else:
        run_id, _, architecture = spec.partition(":")
        if not (run_dir(run_id, results_dir) / "scores.parquet").exists():
            raise UserError(f"compare: {spec!r} is neither a config file nor a finished run under results/")
    config = run_config(run_id, results_dir)
    architectures = config.architectures if config else []
    if not architecture:
        baseline = config.statistics.baseline if config else None
        if len(architectures) == 1:
            architecture = architectures[0]
        elif baseline in architectures:
            architecture = baseline
        else:
            raise UserError(f"compare: {spec} has architectures {architectures}: name one as {run_id}:ARCHITECTURE")
    elif architectures and architecture not in architectures:
        raise UserError(f"compare: {run_id} has no architecture {architecture!r}; it has {architectures}")
    return run_id, architecture, config


def values_of(run_id: str, architecture: str, metric: str, results_dir: Path | None = None) -> dict[str, float]:
    """{qid: value} of one arm's metric ('judge/metric'), NaN left out; values must lie in [0, 1]."""
    judge, _, name = metric.partition("/")
    scores = load_scores(run_id, results_dir)
    part = scores[(scores["judge"] == judge) & (scores["metric"] == name) & (scores["architecture"] == architecture)]
    part = part.dropna(subset=["value"])
    if part.empty:
        present = sorted({f"{j}/{m}" for j, m in zip(scores["judge"], scores["metric"]) if j != "system"})
        raise UserError(f"compare: {run_id}:{architecture} has no {metric} scores; its metrics: {present}")
    if ((part["value"] < 0) | (part["value"] > 1)).any():
        raise UserError(f"compare: {metric} has values outside [0, 1]; choose a metric in [0, 1]")
    return dict(zip(part["qid"], part["value"].astype(float)))


def _status(low: float, high: float, margin: float) -> str:
    if low > 0:
        return "better"
    if low >= -margin:
        return "not worse"
    return "worse" if high < 0 else "undecided"


def verdict(differences, *, alpha: float, margin: float) -> dict:
    """The status of candidate - baseline differences (in the order they were seen); the module
    docstring says which."""
    d = np.asarray(differences, dtype=float)
    if len(d) == 0:
        raise UserError("compare: the two arms share no question with a score")
    low, high = confidence_sequence(d, alpha=alpha)
    lo, hi = float(low[-1]), float(high[-1])
    status, more = _status(lo, hi, margin), None
    # the first question at which the sequence reached the verdict it ends with (None: undecided)
    reached = [t for t in range(len(d)) if _status(low[t], high[t], margin) == status != "undecided"]
    decided_at = reached[0] + 1 if reached else None
    if status == "undecided":  # the same differences again and again: when would the sequence decide?
        longer = np.resize(d, 20 * len(d))
        low, high = confidence_sequence(longer, alpha=alpha)
        decided = [t for t in range(len(d), len(longer)) if _status(low[t], high[t], margin) != "undecided"]
        more = decided[0] + 1 - len(d) if decided else None
    return {
        "status": status,
        "n": len(d),
        "decided_at": decided_at,
        "mean_diff": float(d.mean()),
        "low": lo,
        "high": hi,
        "more_questions": more,
    }


def compare(
    baseline: str,
    candidate: str,
    *,
    metric: str | None = None,
    margin: float = 0.05,
    alpha: float = 0.05,
    seed: int = 0,
    results_dir: Path | None = None,
) -> dict:
    """The comparison of two arms (module docstring) as one JSON-ready dict."""
    if not 0 <= margin < 1 or not 0 < alpha < 1:
        raise UserError(f"compare: margin in [0, 1) and alpha in (0, 1); got {margin}, {alpha}")
    base_run, base_arch, _ = read_arm(baseline, results_dir)
    cand_run, cand_arch, cand_config = read_arm(candidate, results_dir)
    metric = metric or (cand_config.decision_metric() if cand_config else "correctness/correctness")
    a = values_of(base_run, base_arch, metric, results_dir)
    b = values_of(cand_run, cand_arch, metric, results_dir)
    order = sorted(set(a) & set(b))
    random.Random(seed).shuffle(order)
    result = verdict([b[q] - a[q] for q in order], alpha=alpha, margin=margin)
    return {
        "baseline": f"{base_run}:{base_arch}",
        "candidate": f"{cand_run}:{cand_arch}",
        "metric": metric,
        "margin": margin,
        "alpha": alpha,
        **result,
    }


def format_result(result: dict) -> str:
    more = (
        f": about {result['more_questions']} more questions"
        if result["status"] == "undecided"
        else f" (reached at question {result['decided_at']} of {result['n']})"
    )
    return (
        f"{result['candidate']} against {result['baseline']} on {result['metric']}: {result['status']}{more} "
        f"(candidate - baseline {result['mean_diff']:+.3f}, anytime-valid {1 - result['alpha']:.0%} interval "
        f"[{result['low']:+.3f}, {result['high']:+.3f}] over {result['n']} questions; margin {result['margin']:g})"
    )
