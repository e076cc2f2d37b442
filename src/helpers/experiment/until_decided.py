"""`python -m helpers run CONFIG --until-decided [--budget 30m|50k tokens|$2]`: answer as few
questions as the decision needs.

The questions come in a seeded random order (statistics.seed), every architecture answering a
question before the next; after each question, an anytime-valid confidence sequence
(helpers.inference.sequential) for each architecture against the leader on the decision metric
(decisions.metric). The run stops when every pair is settled at decisions.alpha (a difference,
or within ±decisions.margin), when the questions run out, or when the budget is spent. Answers
are written `decisions.batch` questions at a time (default: as many as the LLM answers at once),
and the decision is looked at after each question of the batch, so a batch may hold questions
past the one that settled it: those answers are kept, and left out of the decision.

Everything is stored as in a plain run (`records.jsonl`), so an interrupted run resumes: the
questions already answered are replayed from the store in the same order, and the decision is
recomputed on them. What a run decided, and the path there, go to `decisions.json` in its folder:

    {"metric", "alpha", "margin", "bets", "adaptive", "questions_used", "questions_available", "answered", "stopped",
     "settled", "leader", "pairs": [Pair...], "path": [{"questions", "pairs": [...]}], "seconds"}
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from helpers.errors import UserError
from helpers.experiment.analysis import DECISIONS_FILE
from helpers.experiment.runner import Experiment
from helpers.inference.sequential import OPEN, all_settled, settle
from helpers.judges import active_judges

_BUDGET = re.compile(
    r"^\s*(?:(?P<dollar>\$)\s*(?P<d>[\d.]+)|(?P<n>[\d.]+)\s*(?P<k>k)?\s*(?P<unit>s|sec|m|min|h|tokens?|usd|\$)?)\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Budget:
    """How much a run may spend: minutes of wall time, LLM tokens (in + out) or dollars."""

    kind: str  # "minutes", "tokens" or "dollars"
    amount: float

    @classmethod
    def parse(cls, text: str) -> Budget:
        """'30m', '90s', '2h', '45 min', '50000 tokens', '50k tokens', '$2', '2 usd'."""
        match = _BUDGET.match(text or "")
        if not match:
            raise UserError(
                f"--budget {text!r}: give minutes (30m, 90s, 2h), tokens (50000 tokens, 50k tokens) or dollars ($2)"
            )
        if match["dollar"]:
            return cls("dollars", float(match["d"]))
        unit = (match["unit"] or "").lower()
        amount = float(match["n"]) * (1000 if match["k"] else 1)
        if unit in ("usd", "$"):
            return cls("dollars", amount)
        if unit.startswith("token"):
            return cls("tokens", amount)
        if not unit:
            raise UserError(f"--budget {text!r}: say its unit: 30m (minutes), 50000 tokens or $2")
        return cls("minutes", amount * {"s": 1 / 60, "sec": 1 / 60, "m": 1, "min": 1, "h": 60}[unit])

    def spent(self, answers: Sequence[Mapping[str, Any]], seconds: float) -> float:
        """What the run has spent of this budget's kind: the tokens or dollars of every stored answer
        (a resumed run counts what it spent before), or the minutes of this invocation."""
        if self.kind == "minutes":
            return seconds / 60
        if self.kind == "tokens":
            return float(sum((a.get("input_tokens") or 0) + (a.get("output_tokens") or 0) for a in answers))
        return float(sum(a.get("cost_usd") or 0 for a in answers))

    def __str__(self) -> str:
        return {"minutes": f"{self.amount:g} min", "tokens": f"{self.amount:,.0f} tokens"}.get(
            self.kind, f"${self.amount:g}"
        )


def question_order(queries: dict[str, str], seed: int) -> list[str]:
    order = sorted(queries)
    random.Random(seed).shuffle(order)
    return order


def metric_values(scores, metric: str, architectures: list[str]) -> dict[str, dict[str, float]]:
    """{architecture: {qid: value}} of `metric` ('judge/metric'); NaN values left out. Values must
    lie in [0, 1]: a paired difference of two is then in [-1, 1], the confidence sequence's range."""
    judge, _, name = metric.partition("/")
    part = scores[(scores["judge"] == judge) & (scores["metric"] == name)].dropna(subset=["value"])
    if len(part) and ((part["value"] < 0) | (part["value"] > 1)).any():
        raise UserError(
            f"decisions.metric {metric}: values outside [0, 1] ({part['value'].min():.3g}..{part['value'].max():.3g}); "
            "choose a metric in [0, 1] (correctness/correctness, retrieval/ndcg@k, retrieval/recall@k)"
        )
    return {
        a: dict(zip(part.loc[part["architecture"] == a, "qid"], part.loc[part["architecture"] == a, "value"]))
        for a in architectures
    }


def _check_metric(metric: str, scores) -> None:
    present = sorted({f"{j}/{m}" for j, m in zip(scores["judge"], scores["metric"]) if j != "system"})
    if metric not in present:
        raise UserError(
            f"decisions.metric {metric!r} was not produced by this run's judges; metrics it has: {present}. "
            f"Set decisions.metric in the config to one of them"
        )


def run_until_decided(experiment: Experiment, *, budget: Budget | None = None) -> dict:
    """Run `experiment` question by question until its comparison is settled (module docstring);
    returns the run's summary with its `decision` (also written to decisions.json)."""
    cfg = experiment.config
    if len(cfg.architectures) < 2:
        raise UserError(f"--until-decided compares architectures: {cfg.architectures} has fewer than 2")
    started = time.perf_counter()
    metric = cfg.decision_metric()
    alpha = cfg.decisions.alpha or cfg.statistics.alpha
    data, queries = experiment.start()
    order = question_order(queries, cfg.statistics.seed)
    gen_name = cfg.generation_llm or cfg.llms[0].name
    batch = cfg.decisions.batch or (experiment.llm(gen_name).workers if cfg.generate else 8)
    stored = [j for j in active_judges(cfg, data) if j.stored] if cfg.generate else []
    path, pairs, used, stopped = [], [], 0, "questions ran out"
    bar = tqdm(total=len(order), desc="until decided", unit="q")
    for start in range(0, len(order), batch):
        chunk = {q: queries[q] for q in order[start : start + batch]}
        experiment.answers(data, chunk)
        for judge in stored:
            experiment.score(judge, experiment.answered(chunk), data)
        answered = experiment.answered({q: queries[q] for q in order[: start + len(chunk)]})
        scores, _, _ = experiment.score_table(data, answered)
        if start == 0:
            _check_metric(metric, scores)
        values = metric_values(scores, metric, cfg.architectures)
        for i in range(start, start + len(chunk)):
            seen, seen_set = order[: i + 1], set(order[: i + 1])
            pairs = settle(
                {a: {q: v for q, v in values[a].items() if q in seen_set} for a in cfg.architectures},
                seen,
                alpha=alpha,
                margin=cfg.decisions.margin,
                bets=cfg.decisions.bets,
                adaptive=cfg.decisions.adaptive,
            )
            used = i + 1
            path.append({"questions": used, "pairs": [p.as_dict() for p in pairs]})
            bar.update(1)
            bar.set_postfix(open=sum(p.status == OPEN for p in pairs), leader=pairs[0].better)
            if all_settled(pairs):
                stopped = "settled"
                break
        if stopped == "settled":
            break
        if budget and budget.spent(answered, time.perf_counter() - started) >= budget.amount:
            stopped = f"budget spent ({budget})"
            break
    bar.close()
    answered = experiment.answered({q: queries[q] for q in order[:used]})
    all_answered = experiment.answered(queries)
    summary = experiment.finish(data, answered, time.perf_counter() - started)
    decision = {
        "metric": metric,
        "alpha": alpha,
        "margin": cfg.decisions.margin,
        "bets": list(cfg.decisions.bets),
        "adaptive": cfg.decisions.adaptive,
        "questions_used": used,
        "questions_available": len(order),
        "answered": len({a["qid"] for a in all_answered}),
        "stopped": stopped,
        "settled": stopped == "settled",
        "leader": pairs[0].better if pairs else None,
        "pairs": [p.as_dict() for p in pairs],
        "order": order[:used],
        "path": path,
        "seconds": round(time.perf_counter() - started, 1),
    }
    experiment.store.write_json(decision, DECISIONS_FILE)
    summary["decision"] = {k: v for k, v in decision.items() if k not in ("path", "order")}
    return summary
