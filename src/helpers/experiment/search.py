"""`python -m helpers search SWEEP.yaml`: the best cell of a grid, with a guarantee, for a fraction
of the grid's evaluations (issue 62).

Each (cell of the sweep's grid, architecture of that cell) is an arm. Questions come in a seeded
order, a batch at a time; every arm still in the race is evaluated on the batch, then
helpers.sequential.eliminate drops each arm whose anytime-valid confidence sequence of (leader -
arm) lies above 0. The search stops when one arm is left, when every other survivor is within
`epsilon` of the leader (a tie within epsilon), or when the questions run out. With probability at
least 1 - delta the best arm is never dropped and the chosen one is within epsilon of it (the
guarantee is checked by simulation: benchmarks/search_guarantee.py).

Stage: retrieval, with no LLM call: the metric is one of the `retrieval` judge's (`ndcg`, `recall`,
`mrr`) at one depth for every cell (`at`, default 10) against the dataset's qrels: a cell's
`retrieval.k` (how many contexts the generator gets) is no retrieval axis, since recall@10 beats
recall@5 by construction; cells that differ only in it do the same retrieval work. Arms that need
the LLM to retrieve (HyDE, multi-query) and the answer stage (correctness on the survivors) are not
searched yet: the first are refused by name, the second is issue 62's next step.

Hands back (results/search/NAME/): `search.json` (the trace: every round's estimates, intervals
and statuses, and the summary `--json` prints) and `chosen.yaml`, the chosen arm as a config that
`python -m helpers run chosen.yaml` reproduces (retrieval only: `generate: false`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import yaml

from helpers import paths
from helpers.errors import UserError
from helpers.experiment.sweep import expand, load_sweep
from helpers.inputs import inside
from helpers.retrieval.evaluation.metrics import parse_metric, per_query
from helpers.retrieval.registry import architecture as registry_entry
from helpers.retrieval.registry import build_retriever, needs_llm
from helpers.sequential import eliminate

KINDS = ("ndcg", "recall", "mrr")  # the retrieval judge's metrics, at each cell's k


def arms_of(runs: list[dict]) -> list[dict]:
    """One arm per (cell, architecture): {name, axes, architecture, config}."""
    arms = []
    for run in runs:
        config = run["config"]
        for architecture in config.architectures:
            axes = {k: v for k, v in run["axes"].items() if k != "architectures"} | {"architecture": architecture}
            name = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in axes.items())
            if needs_llm(architecture, config.retrieval.options):
                raise UserError(
                    f"search: arm {name!r} retrieves with the LLM ({architecture}); the search's retrieval stage "
                    "calls none: leave hyde and multi_query out of the grid (or compare them with `run`)"
                )
            arms.append({"name": name, "axes": axes, "architecture": architecture, "config": config})
    if not arms:
        raise UserError("search: the grid has no arm (every axis needs values, and a cell an architecture)")
    return arms


def sections(name: str, options) -> list[str]:
    """The retrieval option sections architecture `name` reads: its own and its parts' (a
    rerank over hybrid reads rerank, hybrid, dense and bm25)."""
    entry, found = registry_entry(name), [name]
    parts = list(entry.parts) + ([getattr(options, entry.first_stage).base] if entry.first_stage else [])
    for part in parts:
        found += [s for s in sections(part, options) if s not in found]
    return found


def same_work(arm: dict) -> str:
    """What an arm's retrieval depends on: the dataset, the architecture and the option sections it
    reads. Arms with the same key (bm25 in cells that differ only in the embedder, or in k) are one
    evaluation, done once and shared."""
    config = arm["config"]
    options = config.retrieval.options
    used = {
        s: getattr(options, s).model_dump(mode="json")
        for s in sections(arm["architecture"], options)
        if hasattr(options, s)
    }
    key = [config.dataset.name, config.dataset.options, arm["architecture"], used]
    return json.dumps(key, sort_keys=True, default=str)


class RetrievalArms:
    """Evaluate arms on questions by retrieval against qrels; each cell's dataset and each arm's
    index built once, on first use (indexes shared between arms of one cell)."""

    def __init__(self, arms: list[dict], kind: str, at: int = 10):
        self.arms, self.kind, self.at = {a["name"]: a for a in arms}, kind, at
        self._data: dict[str, object] = {}
        self._shared: dict[str, dict] = {}
        self._retrievers: dict[str, object] = {}
        self._done: dict[tuple[str, str], float] = {}  # (same_work key, qid) -> value: each evaluated once
        self.keys = {name: same_work(arm) for name, arm in self.arms.items()}

    @property
    def evaluations(self) -> int:
        """Distinct retrievals scored (arms doing the same work count once)."""
        return len(self._done)

    def data(self, config):
        from helpers.data import load_dataset  # the loaders: loaded only when a search runs

        key = json.dumps([config.dataset.name, config.dataset.options], sort_keys=True, default=str)
        if key not in self._data:
            self._data[key] = load_dataset(config.dataset.name, **config.dataset.options)
            self._shared[key] = {}
        return self._data[key], self._shared[key]

    def questions(self) -> list[str]:
        """The question ids every arm can be scored on: in the config's questions and with qrels,
        the same for every cell (a grid over datasets is not one search)."""
        found = None
        for arm in self.arms.values():
            data, _ = self.data(arm["config"])
            qids = [q for q in arm["config"].questions_of(data) if data.qrels.get(q)]
            if found is not None and set(qids) != set(found):
                raise UserError(
                    "search: the cells do not share their questions (a grid over datasets or questions): "
                    "search one dataset at a time"
                )
            found = qids
        if not found:
            raise UserError("search: no question of the grid's dataset has qrels; the retrieval stage needs them")
        return found

    def evaluate(self, name: str, qids: list[str]) -> dict[str, float]:
        arm, key = self.arms[name], self.keys[name]
        todo = [q for q in qids if (key, q) not in self._done]
        if todo:
            config = arm["config"]
            data, shared = self.data(config)
            if key not in self._retrievers:
                retriever = build_retriever(
                    arm["architecture"], language=data.language, options=config.retrieval.options, shared=shared
                )
                self._retrievers[key] = retriever.index(data.corpus)
            metric = f"{self.kind}@{self.at}"
            run = self._retrievers[key].retrieve({q: data.queries[q] for q in todo}, self.at)
            scores = per_query({q: data.qrels[q] for q in todo}, run, [metric])
            self._done.update({(key, q): scores.get(q, {}).get(metric, 0.0) for q in todo})
        return {q: self._done[(key, q)] for q in qids}


def search(
    sweep_path: str | Path,
    *,
    metric: str = "ndcg",
    at: int = 10,
    epsilon: float = 0.02,
    delta: float = 0.05,
    batch: int = 10,
    seed: int = 0,
    results_dir: Path | None = None,
    log=print,
) -> dict:
    """Search the sweep's grid (module docstring); returns the summary `--json` prints."""
    if metric not in KINDS:
        raise UserError(f"search: metric {metric!r} is not one the retrieval stage measures; valid: {', '.join(KINDS)}")
    parse_metric(f"{metric}@1")
    if not 0 <= epsilon < 1 or not 0 < delta < 1 or batch < 1 or at < 1:
        raise UserError(
            f"search: epsilon in [0, 1), delta in (0, 1), batch >= 1, at >= 1; got {epsilon}, {delta}, {batch}, {at}"
        )
    sweep, path = load_sweep(sweep_path)
    arms = arms_of(expand(sweep, path))
    engine = RetrievalArms(arms, metric, at)
    order = engine.questions()
    random.Random(seed).shuffle(order)
    # one racer per distinct retrieval (arms doing the same work share its values and its fate), so
    # delta is split over the pairs of distinct racers only
    racer = {name: next(n for n, k in engine.keys.items() if k == key) for name, key in engine.keys.items()}
    racers = list(dict.fromkeys(racer.values()))
    values: dict[str, dict[str, float]] = {r: {} for r in racers}
    alive, trace, rounds, failed = list(racers), [], [], {}
    statuses, done = [], False
    for start in range(0, len(order), batch):
        chunk = order[start : start + batch]
        for name in list(alive):
            try:
                values[name].update(engine.evaluate(name, chunk))
            except Exception as exc:  # noqa: BLE001 - one arm's failure is recorded, the search goes on
                failed[name] = f"{type(exc).__name__}: {exc}"
                alive.remove(name)
                log(f"search: arm {name!r} failed and left the search ({failed[name]})")
        if not alive:
            raise UserError(f"search: every arm failed ({'; '.join(f'{k}: {v}' for k, v in failed.items())})")
        statuses, done = eliminate(values, alive, delta=delta, epsilon=epsilon)
        used = start + len(chunk)
        for arm in statuses:
            if arm.status == "eliminated":
                trace.append({"arm": arm.name, "questions": used, "mean": arm.mean, "low": arm.low, "high": arm.high})
        rounds.append({"questions": used, "arms": [a.__dict__ for a in statuses]})
        alive = [a.name for a in statuses if a.status != "eliminated"]
        log(f"search: {used} questions, {len(alive)} of {len(racers)} distinct retrievals left ({len(arms)} arms)")
        if done:
            break
    # the work done: each distinct retrieval once; the full grid's: every distinct arm on every question
    counts = {"evaluations": engine.evaluations, "full_grid_evaluations": len(racers) * len(order)}
    looks = {"order": order, "rounds": rounds}  # the question order, then each look
    settings = (f"{metric}@{at}", epsilon, delta)
    return _result(sweep.name, arms, racer, values, statuses, done, trace, looks, failed, counts, settings, results_dir)


def _result(name, arms, racer, values, statuses, done, trace, looks, failed, counts, settings, results_dir):
    """The summary, search.json and chosen.yaml; `racer`: each arm's name -> the racer whose
    values and status it shares (the chosen arm: the leader racer's first arm)."""
    metric, epsilon, delta = settings
    by_name = {a["name"]: a for a in arms}
    final = {a.name: a for a in statuses}
    leader = statuses[0].name
    dropped = {t["arm"]: t for t in trace}
    cells = []
    for arm in arms:
        own = racer[arm["name"]]
        seen = values[own]
        estimate = float(np.mean(list(seen.values()))) if seen else None
        if own in failed:
            status, low, high = "failed", None, None
        elif own == leader:
            status, low, high = ("chosen" if arm["name"] == leader else "same as chosen"), None, None
        elif own in dropped:
            status, low, high = "eliminated", dropped[own]["low"], dropped[own]["high"]
        else:
            status = "tied" if done else "open"
            low, high = final[own].low, final[own].high
        cells.append(
            {"axes": arm["axes"], "status": status, "stage": "retrieval", "questions": len(seen)}
            | {"estimate": estimate, "leader_minus_low": low, "leader_minus_high": high}
            | ({"error": failed[own]} if own in failed else {})
        )
    chosen = by_name[leader]
    summary = {
        "metric": f"retrieval/{metric}",
        "epsilon": epsilon,
        "delta": delta,
        "stopped": "one arm left or a tie within epsilon" if done else "questions ran out",
        "chosen": {"axes": chosen["axes"], "estimate": float(np.mean(list(values[leader].values())))},
        "cells": cells,
        **counts,
        "llm_calls": 0,
        "full_grid_llm_calls": 0,
    }
    directory = inside(Path(results_dir or paths.RESULTS_DIR) / "search", name, what="search name")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "search.json").write_text(json.dumps(summary | looks, indent=2, default=float))
    config = chosen["config"].model_dump(mode="json") | {"run_id": None, "generate": False}
    config["architectures"] = [chosen["architecture"]]
    config["name"] = f"{name}-chosen"
    (directory / "chosen.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    summary["chosen_config"] = str(directory / "chosen.yaml")
    return summary


def format_table(summary: dict) -> str:
    """The cells as a person reads them: status, questions used, estimate."""
    lines = [
        f"search on {summary['metric']} (epsilon {summary['epsilon']}, delta {summary['delta']}): {summary['stopped']}; "
        f"{summary['evaluations']:,} of the full grid's {summary['full_grid_evaluations']:,} evaluations",
    ]
    width = max(len(" ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in c["axes"].items())) for c in summary["cells"])
    for cell in sorted(summary["cells"], key=lambda c: -(c["estimate"] or -1)):
        label = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in cell["axes"].items())
        estimate = "n/a" if cell["estimate"] is None else f"{cell['estimate']:.3f}"
        gap = (
            f"  leader - this in [{cell['leader_minus_low']:+.3f}, {cell['leader_minus_high']:+.3f}]"
            if cell["leader_minus_low"] is not None
            else ""
        )
        lines.append(f"  {label:<{width}}  {cell['status']:<10} {cell['questions']:>4} questions  {estimate}{gap}")
    lines.append(f"chosen config: {summary['chosen_config']} (python -m helpers run it to reproduce)")
    return "\n".join(lines)
