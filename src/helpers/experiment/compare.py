"""`python -m helpers compare BASELINE CANDIDATE`: is a change better, not worse, or worse, with an
error rate a CI gate can rely on (issue 62).

BASELINE and CANDIDATE are each a finished run (`RUN_ID[:ARCHITECTURE]`) or a config file
(`CONFIG[:ARCHITECTURE]`); the architecture defaults to the config's baseline architecture, else its
only one. The metric (default the candidate's decision metric: correctness/correctness, or
retrieval/ndcg@k when it writes no answers) is compared question by question on the questions both
can be scored on, in a seeded order, by the anytime-valid confidence sequence of candidate -
baseline (helpers.inference.sequential; Howard et al. 2021, Waudby-Smith & Ramdas 2024):

    better       the sequence lies above 0
    not worse    it lies above -margin (within the margin at worst)
    worse        it lies below 0, and reaches below -margin
    undecided    none of these yet: about N more questions, the first length at which the same
                 sequence decides when the differences seen so far go on as they were (cycled), up
                 to 20 times as many; None beyond that

A config is not run on every question first: it is evaluated `batch` questions at a time, with the
search's engines (helpers.experiment.search), and the comparison stops at the first look that
decides. A retrieval metric is measured with no LLM call; an answer metric answers through one
ordinary run per config, named `NAME--ARCHITECTURE`, with only the metric's judge on (resumable: a
second compare asks the LLM nothing again; `helpers report RUN` reads it). The sequence is
anytime-valid, so looking after every batch costs nothing in error.

Exit status 0 for better or not worse, 1 for worse, 3 for undecided, so it can gate a change. On two
identical configs (A/A) the sequence lies below 0 with probability at most alpha, at any number of
questions (benchmarks/compare_aa.py measures it).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np

from helpers.errors import UserError
from helpers.experiment.analysis import load_scores, run_config, run_dir
from helpers.experiment.config import load_config
from helpers.experiment.search import stage_racers
from helpers.experiment.search_answers import AnswerArms
from helpers.experiment.search_retrieval import RetrievalArms, same_work
from helpers.inference.sequential import confidence_sequence
from helpers.retrieval.evaluation.metrics import parse_metric

EXIT = {"better": 0, "not worse": 0, "worse": 1, "undecided": 3}


def _architecture(spec: str, name: str, config, architecture: str) -> str:
    architectures = config.architectures if config else []
    if not architecture:
        baseline = config.statistics.baseline if config else None
        if len(architectures) == 1:
            return architectures[0]
        if baseline in architectures:
            return str(baseline)
        raise UserError(f"compare: {spec} has architectures {architectures}: name one as {name}:ARCHITECTURE")
    if architectures and architecture not in architectures:
        raise UserError(f"compare: {name} has no architecture {architecture!r}; it has {architectures}")
    return architecture


def read_arm(spec: str, results_dir: Path | None = None) -> dict:
    """One side of a comparison: {"spec", "architecture", "config", and "run_id" (a finished run) or
    "path" (a config file, evaluated question by question)}."""
    name, _, architecture = spec.partition(":")
    if Path(name).is_file():
        config = load_config(name)
        return {
            "spec": spec,
            "path": name,
            "config": config,
            "architecture": _architecture(spec, name, config, architecture),
        }
    if not (run_dir(name, results_dir) / "scores.parquet").exists():
        raise UserError(f"compare: {spec!r} is neither a config file nor a finished run under results/")
    stored = run_config(name, results_dir)  # None: a run folder without its config
    return {
        "spec": spec,
        "run_id": name,
        "config": stored,
        "architecture": _architecture(spec, name, stored, architecture),
    }


def _in_unit(metric: str, values) -> None:
    """The sequence's differences must lie in [-1, 1]: a metric outside [0, 1] is refused."""
    if any(not 0 <= v <= 1 for v in values):
        raise UserError(f"compare: {metric} has values outside [0, 1]; choose a metric in [0, 1]")


def values_of(run_id: str, architecture: str, metric: str, results_dir: Path | None = None) -> dict[str, float]:
    """{qid: value} of one arm's metric ('judge/metric'), NaN left out; values must lie in [0, 1]."""
    judge, _, name = metric.partition("/")
    scores = load_scores(run_id, results_dir)
    part = scores[(scores["judge"] == judge) & (scores["metric"] == name) & (scores["architecture"] == architecture)]
    part = part.dropna(subset=["value"])
    if part.empty:
        present = sorted({f"{j}/{m}" for j, m in zip(scores["judge"], scores["metric"]) if j != "system"})
        raise UserError(f"compare: {run_id}:{architecture} has no {metric} scores; its metrics: {present}")
    _in_unit(metric, part["value"])
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
        raise UserError("compare: the two sides share no question with a score")
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


class Live:
    """The config sides of a comparison, evaluated on demand by the search's engines: RetrievalArms
    for a retrieval metric (no LLM call), AnswerArms (one run per config) for an answer metric."""

    def __init__(self, sides: dict[str, dict], metric: str, results_dir: Path | None = None):
        self.sides = sides
        arms = [
            {"name": side, "config": arm["config"], "architecture": arm["architecture"]}
            | {"cell": f"{arm['config'].name}--{arm['architecture']}"}
            for side, arm in sides.items()
        ]
        judge, _, name = metric.partition("/")
        if judge == "retrieval":
            try:
                kind, at = parse_metric(name)
            except ValueError as exc:
                raise UserError(f"compare: --metric {metric}: {exc}") from None
            self.ranked: RetrievalArms | None = RetrievalArms(arms, kind, at or 10)
            self.answers: AnswerArms | None = None
        else:
            keys = {a["name"]: same_work(a) for a in arms}
            self.ranked = None
            self.answers = AnswerArms(arms, keys, metric, results_dir=results_dir, flag="compare: --metric")
        # two sides that answer alike (an A/A check of one config) are one run, answered once
        self.racer = stage_racers(self.answers.keys) if self.answers is not None else {s: s for s in sides}

    def questions(self, side: str) -> list[str]:
        """The questions the side can be scored on: with qrels (retrieval), with a reference (answers)."""
        if self.answers is not None:
            return self.answers.questions(self.racer[side])
        assert self.ranked is not None  # one of the two engines, by the metric
        config = self.sides[side]["config"]
        data, _ = self.ranked.data(config)
        return [q for q in config.questions_of(data) if data.qrels.get(q)]

    def evaluate(self, side: str, qids: list[str]) -> dict[str, float]:
        engine = self.answers if self.answers is not None else self.ranked
        assert engine is not None
        return engine.evaluate(self.racer[side], qids)

    def finish(self, seconds: float) -> dict[str, str]:
        """Each answering side's run written as a plain run; {side: its label RUN_ID:ARCHITECTURE}."""
        if self.answers is None:
            return {}
        self.answers.finish(seconds)
        runs = self.answers.run_ids()
        return {
            side: f"{runs[self.racer[side]]}:{arm['architecture']}"
            for side, arm in self.sides.items()
            if self.racer[side] in runs  # a side never evaluated (stopped before) has no run
        }


def compare(
    baseline: str,
    candidate: str,
    *,
    metric: str | None = None,
    margin: float = 0.05,
    alpha: float = 0.05,
    seed: int = 0,
    batch: int = 10,
    results_dir: Path | None = None,
) -> dict:
    """The comparison of two sides (module docstring) as one JSON-ready dict: the verdict, and how
    many questions each side was evaluated on (`evaluated`) out of those both have (`available`)."""
    if not 0 <= margin < 1 or not 0 < alpha < 1 or batch < 1:
        raise UserError(f"compare: margin in [0, 1), alpha in (0, 1), batch >= 1; got {margin}, {alpha}, {batch}")
    started = time.perf_counter()
    sides = {"baseline": read_arm(baseline, results_dir), "candidate": read_arm(candidate, results_dir)}
    config = sides["candidate"]["config"]
    metric = metric or (config.decision_metric() if config else "correctness/correctness")
    values = {
        s: values_of(a["run_id"], a["architecture"], metric, results_dir) for s, a in sides.items() if "run_id" in a
    }
    configs = {s: a for s, a in sides.items() if "path" in a}
    live = Live(configs, metric, results_dir) if configs else None
    scorable = [set(live.questions(s)) for s in configs] if live is not None else []
    shared = set.intersection(*[set(v) for v in values.values()], *scorable)
    order = sorted(shared)
    random.Random(seed).shuffle(order)
    if live is None:  # two finished runs: every shared question at once
        batch = max(1, len(order))
    values |= {s: {} for s in configs}
    result = None
    try:
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            for side in configs:
                assert live is not None  # a config side is evaluated live
                got = live.evaluate(side, chunk)
                _in_unit(metric, got.values())
                values[side].update(got)
            seen = [q for q in order[: start + len(chunk)] if q in values["baseline"] and q in values["candidate"]]
            if not seen:  # no answer of this batch could be scored on both sides (failed answers): go on
                continue
            result = verdict([values["candidate"][q] - values["baseline"][q] for q in seen], alpha=alpha, margin=margin)
            if result["status"] != "undecided":
                break
    finally:  # stopped or interrupted: the answers so far are a readable run
        runs = live.finish(time.perf_counter() - started) if live is not None else {}
    if result is None:
        raise UserError("compare: the two sides share no question that can be scored")
    label = {
        s: runs.get(s) or (f"{a['run_id']}:{a['architecture']}" if "run_id" in a else a["spec"])
        for s, a in sides.items()
    }
    return {
        "baseline": label["baseline"],
        "candidate": label["candidate"],
        "metric": metric,
        "margin": margin,
        "alpha": alpha,
        **result,
        "evaluated": {s: len(values[s]) if s in configs else 0 for s in sides},
        "available": len(order),
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
        f"[{result['low']:+.3f}, {result['high']:+.3f}] over {result['n']} of the {result['available']} questions both have; "
        f"margin {result['margin']:g})"
    )
