"""`python -m helpers search SWEEP.yaml`: the best cell of a grid, with a guarantee, for a fraction
of the grid's evaluations (issue 62).

Each (cell of the sweep's grid, architecture of that cell) is an arm. Questions come in a seeded
order, a batch at a time; every arm still in the race is evaluated on the batch, then
helpers.inference.sequential.eliminate drops each arm whose anytime-valid confidence sequence of (leader -
arm) lies above 0. The search stops when one arm is left, when every other survivor is within
`epsilon` of the leader (a tie within epsilon), or when the questions run out. With probability at
least 1 - delta the best arm is never dropped and the chosen one is within epsilon of it (the
guarantee is checked by simulation: benchmarks/search_guarantee.py).

Two stages, each such a race:
- retrieval, with no LLM call, where the questions have qrels: the metric is one of the `retrieval`
  judge's (`ndcg`, `recall`, `mrr`) at one depth for every cell (`at`, default 10): a cell's
  `retrieval.k` (how many contexts the generator gets) is no retrieval axis, since recall@10 beats
  recall@5 by construction; cells that differ only in it (or in generation settings) do the same
  retrieval work, raced once. Arms that retrieve with the LLM (HyDE, multi-query) skip it.
- answers, when the sweep's configs generate (`generate: true`): the arms the retrieval stage kept
  answer questions, scored by the answer metric (helpers.experiment.search_answers). The retrieval
  stage is a screen on another metric: the answer stage's guarantee is about the arms it raced.
  With both stages, each runs at delta / 2, so that both guarantees hold at once with
  probability >= 1 - delta.

Hands back (results/search/NAME/): `search.json` (the trace: each stage's question order, every
round's estimates, intervals and statuses, each arm's values, and the summary `--json` prints) and
`chosen.yaml`, the chosen arm as a config that `python -m helpers run chosen.yaml` reproduces.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers.errors import UserError
from helpers.experiment.search_answers import AnswerArms, answer_work, check_metric, label_column
from helpers.experiment.search_labels import LabelsNeeded, SearchLabels, write_needed
from helpers.experiment.search_report import search_dir, write_result
from helpers.experiment.search_retrieval import RetrievalArms, same_work
from helpers.experiment.sweep import expand, load_sweep
from helpers.inference.sequential import eliminate
from helpers.retrieval.evaluation.metrics import parse_metric
from helpers.retrieval.registry import needs_llm

KINDS = ("ndcg", "recall", "mrr")  # the retrieval judge's metrics, at each cell's k


def arms_of(runs: list[dict]) -> list[dict]:
    """One arm per (cell, architecture): {name, axes, architecture, config, cell}. An arm that retrieves
    with the LLM needs the answer stage (configs that generate)."""
    arms = []
    for run in runs:
        config = run["config"]
        for architecture in config.architectures:
            axes = {k: v for k, v in run["axes"].items() if k != "architectures"} | {"architecture": architecture}
            name = " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in axes.items())
            if needs_llm(architecture, config.retrieval.options) and not config.generate:
                raise UserError(
                    f"search: arm {name!r} retrieves with the LLM ({architecture}) and the sweep does not generate: "
                    "set `generate: true` in its base (the answer stage races it) or leave hyde and multi_query out"
                )
            cell = f"{run['run_id']}--{architecture}"  # the sweep's readable id: the answer stage's run name
            arms.append({"name": name, "axes": axes, "architecture": architecture, "config": config, "cell": cell})
    if not arms:
        raise UserError("search: the grid has no arm (every axis needs values, and a cell an architecture)")
    return arms


@dataclass
class Race:
    """One stage of a search: its arms' racers (arms doing the same work race as one), the question
    order, the values, each look's statuses, and why it stopped."""

    stage: str
    racer: dict[str, str]  # arm name -> the racer whose values and fate it shares
    order: list[str]
    values: dict[str, dict[str, float]] = field(default_factory=dict)
    statuses: list = field(default_factory=list)  # the last look's helpers.inference.sequential.Arm list
    rounds: list[dict] = field(default_factory=list)
    dropped: dict[str, dict] = field(default_factory=dict)  # racer -> the look that eliminated it
    failed: dict[str, str] = field(default_factory=dict)
    done: bool = False
    stopped: str = "questions ran out"

    @property
    def racers(self) -> list[str]:
        return list(dict.fromkeys(self.racer.values()))

    @property
    def survivors(self) -> list[str]:
        """Arms (not racers) whose racer was neither eliminated nor failed."""
        return [a for a, r in self.racer.items() if r not in self.dropped and r not in self.failed]


def stage_racers(keys: dict[str, str]) -> dict[str, str]:
    """arm name -> the racer it shares values and fate with: the first arm with the same work key."""
    return {name: next(n for n, k in keys.items() if k == key) for name, key in keys.items()}


def race(
    stage,
    keys: dict[str, str],
    order,
    evaluate,
    *,
    delta,
    epsilon,
    batch,
    log,
    spent=None,
    checked=None,
    scale=1.0,
    before=None,
) -> Race:
    """Successive elimination over `order`, `batch` questions a look (helpers.inference.sequential.eliminate).
    keys: arm name -> its work (equal keys: one racer); evaluate(racer, qids) -> {qid: value} (in
    [0, 1], or a range of differences `scale` wide: audited values); spent(): True when a budget is
    spent (checked after each look); checked(): after each look's evaluations, raises to stop the
    search there (people's labels still to give); before(racers, qids): at each look, before the
    evaluations (the answer stage's Ray tasks)."""
    state = Race(stage, stage_racers(keys), list(order))
    state.values = {r: {} for r in state.racers}
    alive = list(state.racers)
    for start in range(0, len(order), batch):
        chunk = order[start : start + batch]
        if before is not None:
            before(list(alive), chunk)
        for name in list(alive):
            try:
                state.values[name].update(evaluate(name, chunk))
            except LabelsNeeded:
                raise
            except Exception as exc:  # noqa: BLE001 - one arm's failure is recorded, the search goes on
                state.failed[name] = f"{type(exc).__name__}: {exc}"
                alive.remove(name)
                log(f"search ({stage}): arm {name!r} failed and left the search ({state.failed[name]})")
        if not alive:
            raise UserError(
                f"search ({stage}): every arm failed ({'; '.join(f'{k}: {v}' for k, v in state.failed.items())}); "
                "fix the cause and rerun: what was done is kept"
            )
        if checked is not None:
            try:
                checked()
            except LabelsNeeded as needed:  # the panel proposes the answers of the cells near the top first
                needed.standing = [a.name for a in state.statuses]
                raise
        kept = {r: v for r, v in state.values.items() if r not in state.failed}
        state.statuses, state.done = eliminate(kept, alive, delta=delta, epsilon=epsilon, scale=scale)
        used = start + len(chunk)
        for arm in state.statuses:
            if arm.status == "eliminated":
                state.dropped[arm.name] = {"questions": used, "mean": arm.mean, "low": arm.low, "high": arm.high}
        state.rounds.append({"questions": used, "arms": [a.__dict__ for a in state.statuses]})
        alive = [a.name for a in state.statuses if a.status != "eliminated"]
        log(f"search ({stage}): {used} questions, {len(alive)} of {len(state.racers)} distinct arms left")
        if state.done:
            state.stopped = "one arm left" if len(alive) == 1 else "a tie within epsilon"
            break
        if spent is not None and spent():
            state.stopped = "budget spent"
            break
    return state


def search(
    sweep_path: str | Path,
    *,
    metric: str = "ndcg",
    at: int = 10,
    answer_metric: str = "correctness/correctness",
    epsilon: float = 0.02,
    delta: float = 0.05,
    batch: int = 10,
    seed: int = 0,
    budget=None,
    label_rate: float | None = None,
    label_floor: float | None = None,
    executor: str = "local",
    address: str | None = None,
    documents: dict | None = None,
    results_dir: Path | None = None,
    log=print,
) -> dict:
    """Search the sweep's grid (module docstring); returns the summary `--json` prints.
    budget: a helpers.experiment.until_decided.Budget for the answer stage; label_rate: the answer
    stage's judge corrected by people's labels on questions drawn at this rate
    (helpers.experiment.search_labels; a look that needs labels raises LabelsNeeded); label_floor:
    active labelling, each answer's rate from label_rate (the judge least sure) down to this floor
    (the judge sure); executor 'ray' (address: a cluster's): the answer stage's answers as Ray tasks
    (helpers.experiment.search_answers); documents: a
    dataset section (a user's folder) in place of the sweep base's."""
    if metric not in KINDS:
        raise UserError(f"search: metric {metric!r} is not one the retrieval stage measures; valid: {', '.join(KINDS)}")
    parse_metric(f"{metric}@1")
    if not 0 <= epsilon < 1 or not 0 < delta < 1 or batch < 1 or at < 1:
        raise UserError(
            f"search: epsilon in [0, 1), delta in (0, 1), batch >= 1, at >= 1; got {epsilon}, {delta}, {batch}, {at}"
        )
    if budget is not None and budget.amount <= 0:
        raise UserError(
            f"search: --budget {budget} leaves nothing to spend; give a positive amount (30m, 50k tokens, $2)"
        )
    if executor not in ("local", "ray"):
        raise UserError(f"search: --executor {executor!r} is not one of: local, ray")
    if label_floor is not None and label_rate is None:
        raise UserError("search: --label-floor needs --label-rate (the rate where the judge is least sure)")
    started = time.perf_counter()
    sweep, path = load_sweep(sweep_path)
    arms = arms_of(expand(sweep, path, dataset=documents))
    generate = {a["config"].generate for a in arms}
    if len(generate) > 1:
        raise UserError(
            "search: some cells generate and some do not; set `generate` in the sweep's base, not as an axis"
        )
    generate = generate.pop()
    labels = None
    if generate:
        check_metric(answer_metric)
        if label_rate is not None:
            labels = SearchLabels(label_rate, label_column(answer_metric), seed=seed, floor=label_floor)
    elif label_rate is not None:
        raise UserError("search: --label-rate labels answers; this sweep does not generate (set `generate: true`)")
    screened = [a for a in arms if not needs_llm(a["architecture"], a["config"].retrieval.options)]
    engine = RetrievalArms(screened, metric, at)
    order = engine.questions() if screened else []
    if not order and not generate:
        raise UserError("search: no question of the grid's dataset has qrels; the retrieval stage needs them")
    share = delta / 2 if generate and order else delta  # both stages' guarantees at once
    settings = {"epsilon": epsilon, "delta": share, "batch": batch, "log": log}
    races = []
    if order:
        random.Random(seed).shuffle(order)
        races.append(race("retrieval", engine.keys, order, engine.evaluate, **settings))
    else:
        log("search: no qrels for these questions: no retrieval stage, every arm answers")
    counts = {
        "evaluations": engine.evaluations,
        "full_grid_evaluations": len(set(engine.keys.values())) * len(order),
        "llm_calls": 0,
        "full_grid_llm_calls": 0,
    }
    answers = None
    if generate:
        kept = set(races[0].survivors) if races else {a["name"] for a in screened}
        unscreened = {a["name"] for a in arms} - {a["name"] for a in screened}  # HyDE, multi-query
        entering = [a for a in arms if a["name"] in kept | unscreened]
        try:
            stage, answers, calls = _answer_stage(
                arms,
                entering,
                answer_metric,
                seed=seed,
                budget=budget,
                started=started,
                settings=settings,
                results_dir=results_dir,
                labels=labels,
                executor=executor,
                address=address,
            )
        except LabelsNeeded as needed:  # the labelling panel's queue: LabelPanel.for_search(NAME)
            write_needed(search_dir(sweep.name, results_dir), needed)
            raise
        races.append(stage)
        counts |= calls
    return write_result(
        sweep.name,
        arms,
        races,
        answers,
        counts | {"seconds": round(time.perf_counter() - started, 1)},
        metric=answer_metric if generate else f"retrieval/{metric}@{at}",
        delta=share,
        epsilon=epsilon,
        scale=labels.scale if labels is not None else 1.0,
        results_dir=results_dir,
    )


def _answer_stage(arms, entering, metric, *, seed, budget, started, settings, results_dir, labels, executor, address):
    """The answer stage's race over the arms `entering` it, (race, AnswerArms, LLM call counts);
    the full grid's calls: every distinct arm of the grid on every question, at the calls an answer
    took here (HyDE and multi-query take more than one)."""
    keys = {a["name"]: same_work(a) for a in arms}
    answers = AnswerArms(
        entering, keys, metric, results_dir=results_dir, labels=labels, executor=executor, address=address
    )
    order = answers.questions(next(iter(answers.arms)))
    if not order:
        raise UserError("search: no question of the grid's dataset has a reference; the answer stage needs them")
    random.Random(seed + 1).shuffle(order)

    def spent() -> bool:
        return budget is not None and budget.spent(answers.answered(), time.perf_counter() - started) >= budget.amount

    audit = {"checked": labels.check, "scale": labels.scale} if labels is not None else {}
    try:
        stage = race(
            "answers",
            answers.keys,
            order,
            answers.evaluate,
            spent=spent,
            before=answers.answer_all,
            **settings,
            **audit,
        )
    except LabelsNeeded as needed:
        racer = stage_racers(answers.keys)
        needed.racer_of_run = {run: racer[name] for name, run in answers.run_ids().items()}
        raise
    finally:  # stopped for labels too: each run's scores so far are readable (the labelling panel)
        answers.finish(time.perf_counter() - started)
    calls = [c for per in answers.calls.values() for c in per.values()]
    distinct = len({answer_work(a, keys[a["name"]]) for a in arms})
    full = round(distinct * len(order) * sum(calls) / max(1, len(calls)))
    counts = {"llm_calls": sum(calls), "full_grid_llm_calls": full}
    if labels is not None:
        counts["labels"] = {"rate": labels.rate, "floor": labels.floor, "column": labels.column, **labels.used}
    return stage, answers, counts
