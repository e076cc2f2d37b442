"""The search against three baselines at equal budget, on a real grid (issue 62).

Every distinct retrieval of the sweep is scored on every question once (the full grid); its mean on
all questions is the truth a pick is judged by: regret = the best arm's mean - the chosen arm's.
Then, for each seed (a question order), with the evaluations the search used as the budget B:

- search: `helpers.experiment.search.race` (successive elimination, anytime-valid intervals);
- full grid, then the best mean: every arm on the first B / K questions of the order;
- AutoRAG's way (node by node, the best mean at each node, the other axes at their first value):
  the retrieval node (architecture x embedder) at the first chunk size, then the chunking node
  (chunk sizes) with the retrieval chosen; each candidate on the first B / (candidates) questions;
- Optuna's TPE sampler (optuna.samplers.TPESampler, as RAGBuilder searches): one trial = one arm
  on every question (the mean, as those tools score a config), trials until B is spent.

    python benchmarks/search_baselines.py [SWEEP] [--seeds 50] [--epsilon 0.05] [--delta 0.05]

Results: docs/measurements/search.md.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from helpers.experiment.search import arms_of, race
from helpers.experiment.search_retrieval import RetrievalArms
from helpers.experiment.sweep import expand, load_sweep


def full_matrix(sweep_path: str, metric: str, at: int):
    """(racer -> {qid: value} on every question, racer -> its axes, the question ids)."""
    sweep, path = load_sweep(sweep_path)
    arms = arms_of(expand(sweep, path))
    engine = RetrievalArms(arms, metric, at)
    order = engine.questions()
    racer = {name: next(n for n, k in engine.keys.items() if k == key) for name, key in engine.keys.items()}
    racers = list(dict.fromkeys(racer.values()))
    axes = {a["name"]: a["axes"] for a in arms}
    return {r: engine.evaluate(r, order) for r in racers}, {r: axes[r] for r in racers}, order


def best_mean(values, names, qids) -> str:
    return max(names, key=lambda n: np.mean([values[n][q] for q in qids]))


def autorag(values, axes, order, budget: int) -> str:
    """Node by node: the retrieval node at the first chunk size, then the chunking node."""
    chunk = next(k for k in next(iter(axes.values())) if k.endswith("chunk_size"))
    sizes = list(dict.fromkeys(a[chunk] for a in axes.values()))
    first = [r for r, a in axes.items() if a[chunk] == sizes[0]]

    def same_retrieval(r, chosen):
        keep = ("architecture", "retrieval.dense.embedder")
        return all(axes[r].get(k) == axes[chosen].get(k) for k in keep)

    candidates = len(first) + len(sizes) - 1
    qids = order[: max(1, budget // candidates)]
    retrieval = best_mean(values, first, qids)
    chunking = [r for r in values if same_retrieval(r, retrieval)]
    return best_mean(values, chunking, qids)


def tpe(values, axes, order, budget: int, seed: int) -> str:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    names = list(axes)
    keys = [k for k in axes[names[0]] if k != "retrieval.k"]
    choices = {k: sorted({str(axes[n][k]) for n in names}) for k in keys}
    by_axes = {tuple(str(axes[n][k]) for k in keys): n for n in names}
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    evaluated: set[str] = set()
    while (len(evaluated) + 1) * len(order) <= budget:
        trial = study.ask()
        point = tuple(trial.suggest_categorical(k, choices[k]) for k in keys)
        name = by_axes.get(point) or _same_work(point, keys, by_axes)
        evaluated.add(name)
        study.tell(trial, float(np.mean(list(values[name].values()))))
    best = study.best_trial.params
    point = tuple(best[k] for k in keys)
    return by_axes.get(point) or _same_work(point, keys, by_axes)


def _same_work(point, keys, by_axes) -> str:
    """bm25 with another embedder: the racer that does its work (the embedder left out)."""
    skip = keys.index("retrieval.dense.embedder")
    return next(n for p, n in by_axes.items() if all(a == b for i, (a, b) in enumerate(zip(p, point)) if i != skip))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sweep", nargs="?", default="configs/sweeps/search-retrieval.yaml")
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--epsilon", type=float, default=0.05)
    parser.add_argument("--delta", type=float, default=0.05)
    parser.add_argument("--batch", type=int, default=10)
    args = parser.parse_args()
    started = time.perf_counter()
    values, axes, qids = full_matrix(args.sweep, "ndcg", 10)
    truth = {r: float(np.mean(list(v.values()))) for r, v in values.items()}
    best = max(truth.values())
    rows = {name: [] for name in ("search", "full grid", "AutoRAG node by node", "Optuna TPE")}
    for seed in range(args.seeds):
        order = list(qids)
        random.Random(seed).shuffle(order)
        keys = {r: r for r in values}
        state = race(
            "retrieval",
            keys,
            order,
            lambda r, chunk: {q: values[r][q] for q in chunk},
            delta=args.delta,
            epsilon=args.epsilon,
            batch=args.batch,
            log=lambda _: None,
        )
        budget = sum(len(v) for v in state.values.values())
        picks = {
            "search": state.statuses[0].name,
            "full grid": best_mean(values, list(values), order[: max(1, budget // len(values))]),
            "AutoRAG node by node": autorag(values, axes, order, budget),
            "Optuna TPE": tpe(values, axes, order, budget, seed),
        }
        for name, pick in picks.items():
            rows[name].append((best - truth[pick], budget))
    full = len(values) * len(qids)
    print(
        f"{args.sweep}: {len(values)} distinct arms, {len(qids)} questions, full grid {full} evaluations; "
        f"best mean {best:.3f}; {args.seeds} seeds, epsilon {args.epsilon}, delta {args.delta}; "
        f"{time.perf_counter() - started:.0f} s"
    )
    print("| method | mean regret | regret <= epsilon | worst regret | evaluations (of the full grid's) |")
    print("|---|---|---|---|---|")
    for name, found in rows.items():
        regret = np.array([r for r, _ in found])
        used = np.mean([b for _, b in found])
        print(
            f"| {name} | {regret.mean():.4f} | {np.mean(regret <= args.epsilon + 1e-12):.2f} | {regret.max():.4f} | "
            f"{used:.0f} ({used / full:.2f}) |"
        )


if __name__ == "__main__":
    main()
