"""What a search hands back (helpers.experiment.search): the summary `--json` prints, search.json (the
summary plus each stage's question order, looks and values), chosen.yaml, the table a person reads,
and the figure of every arm's interval against the questions it used.

Each cell's `low`/`high` is the (1 - delta) confidence sequence of its own mean at the questions it
used (helpers.inference.sequential; one arm at a time, not simultaneous); `leader_minus_low`/`_high` is the
interval the elimination read: the stage leader's mean minus this cell's, at delta split over the
pairs with the best arm.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

from helpers import paths
from helpers.inference.sequential import confidence_sequence
from helpers.inputs import inside


def _own_interval(values: dict[str, float], order: list[str], delta: float, scale: float = 1.0):
    """(low, high) of the CS of one arm's mean; values in [0, 1], or audited values in [1 - 1/rate,
    1/rate] (`scale` = 2/rate - 1 for their differences: divided by 1/rate = (scale + 1) / 2 first)."""
    seen = [values[q] for q in order if q in values]
    if not seen:
        return None, None
    width = (scale + 1) / 2
    low, high = confidence_sequence(np.array(seen, dtype=float) / width, alpha=delta)
    return float(low[-1]) * width, float(high[-1]) * width


def _cell(arm: dict, stage, final: bool, chosen: str, delta: float, runs: dict[str, str], scale: float) -> dict:
    own = stage.racer[arm["name"]]
    seen = stage.values.get(own, {})
    estimate = float(np.mean(list(seen.values()))) if seen else None
    last = {a.name: a for a in stage.statuses}.get(own)
    if own in stage.failed:
        status, gap = "failed", (None, None)
    elif own in stage.dropped:
        status, gap = "eliminated", (stage.dropped[own]["low"], stage.dropped[own]["high"])
    elif final and stage.statuses and own == stage.statuses[0].name:
        status, gap = ("chosen" if arm["name"] == chosen else "same as chosen"), (None, None)
    else:
        status, gap = ("tied" if stage.done else "open"), (last.low, last.high) if last else (None, None)
    low, high = _own_interval(seen, stage.order, delta, scale if stage.stage == "answers" else 1.0)
    cell = {"axes": arm["axes"], "status": status, "stage": stage.stage, "questions": len(seen)}
    cell |= {"estimate": estimate, "low": low, "high": high, "leader_minus_low": gap[0], "leader_minus_high": gap[1]}
    cell |= {"run": runs[own]} if own in runs and stage.stage == "answers" else {}  # the run that answered
    return cell | ({"error": stage.failed[own]} if own in stage.failed else {})


def search_dir(name: str, results_dir: Path | None = None) -> Path:
    """results/search/NAME: a search's hand-back (search.json, chosen.yaml, labels-needed.json)."""
    return inside(Path(results_dir or paths.RESULTS_DIR) / "search", name, what="search name")


def write_result(
    name: str,
    arms: list[dict],
    races: list,
    answers,
    counts: dict,
    *,
    metric,
    delta,
    epsilon,
    scale=1.0,
    results_dir=None,
) -> dict:
    """The summary (module docstring), with search.json and chosen.yaml written under
    results/search/NAME/. `answers`: the answer stage's helpers.experiment.search_answers.AnswerArms
    (None: retrieval only)."""
    last = races[-1]
    leader = last.statuses[0].name
    chosen = next(a for a in arms if last.racer.get(a["name"]) == leader)
    runs = answers.run_ids() if answers is not None else {}
    cells = []
    for arm in arms:
        stage = next(r for r in reversed(races) if arm["name"] in r.racer)
        cells.append(_cell(arm, stage, stage is last, chosen["name"], delta, runs, scale))
    low, high = _own_interval(last.values[leader], last.order, delta, scale if last.stage == "answers" else 1.0)
    summary = {
        "metric": metric,
        "epsilon": epsilon,
        "delta": delta,
        "stages": [r.stage for r in races],
        "stopped": last.stopped,
        "chosen": {
            "axes": chosen["axes"],
            "estimate": float(np.mean(list(last.values[leader].values()))),
            "low": low,
            "high": high,
        },
        "cells": cells,
        **counts,
    }
    directory = search_dir(name, results_dir)
    directory.mkdir(parents=True, exist_ok=True)
    if answers is not None:
        config = answers.chosen_config(chosen["name"])
    else:
        config = chosen["config"].model_dump(mode="json") | {
            "run_id": None,
            "generate": False,
            "name": f"{name}-chosen",
        }
        config["architectures"] = [chosen["architecture"]]
    (directory / "chosen.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    summary["chosen_config"] = str(directory / "chosen.yaml")
    trace = [
        {"stage": r.stage, "order": r.order, "rounds": r.rounds, "values": r.values, "stopped": r.stopped}
        for r in races
    ]
    (directory / "search.json").write_text(json.dumps(summary | {"trace": trace}, indent=2, default=float))
    return summary


def _label(axes: dict) -> str:
    return " ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in axes.items())


def format_table(summary: dict) -> str:
    """The cells as a person reads them: status, stage, questions used, estimate and intervals."""
    calls = (
        f"; {summary['llm_calls']:,} of the full grid's {summary['full_grid_llm_calls']:,} LLM calls"
        if "answers" in summary["stages"]
        else ""
    )
    lines = [
        f"search on {summary['metric']} (epsilon {summary['epsilon']}, delta {summary['delta']}, stages: "
        f"{' then '.join(summary['stages'])}): {summary['stopped']}; {summary['evaluations']:,} of the full grid's "
        f"{summary['full_grid_evaluations']:,} retrieval evaluations{calls}; {summary['seconds']:g} s",
    ]
    width = max(len(_label(c["axes"])) for c in summary["cells"])
    order = {"answers": 0, "retrieval": 1}
    for cell in sorted(summary["cells"], key=lambda c: (order[c["stage"]], -(c["estimate"] or -1))):
        estimate = "n/a" if cell["estimate"] is None else f"{cell['estimate']:.3f}"
        own = f" [{cell['low']:.3f}, {cell['high']:.3f}]" if cell["low"] is not None else ""
        gap = (
            f"  leader - this in [{cell['leader_minus_low']:+.3f}, {cell['leader_minus_high']:+.3f}]"
            if cell["leader_minus_low"] is not None
            else ""
        )
        lines.append(
            f"  {_label(cell['axes']):<{width}}  {cell['status']:<14} {cell['stage']:<9} {cell['questions']:>4} q  "
            f"{estimate}{own}{gap}"
        )
    if "labels" in summary:
        used = summary["labels"]
        lines.append(
            f"people's labels ({used['column']}): questions drawn at rate {used['rate']:g}; {used['labelled']} "
            "answers labelled and raced as the judge corrected by them (helpers.experiment.search_labels)"
        )
    lines.append(f"chosen config: {summary['chosen_config']} (python -m helpers run it to reproduce)")
    return "\n".join(lines)


def search_figure(trace: dict):
    """One panel per stage: for every distinct arm at each look, the interval of the stage leader's
    mean minus this arm's, the one the elimination reads (an arm is dropped when it lies above 0; a
    tie is declared when every one lies above -epsilon), against the questions used; from
    search.json (`trace`). Grey: eliminated; orange: left at the end."""
    import matplotlib.pyplot as plt  # the figure only: a search without it needs no matplotlib

    stages = trace["trace"]
    fig, axes = plt.subplots(1, len(stages), figsize=(6 * len(stages), 4), squeeze=False)
    for ax, stage in zip(axes[0], stages):
        paths: dict[str, list] = {}
        for look in stage["rounds"]:
            for arm in look["arms"][1:]:  # the first is the leader
                paths.setdefault(arm["name"], []).append((look["questions"], arm["low"], arm["high"]))
        for points in paths.values():
            x, low, high = (np.array(v, dtype=float) for v in zip(*points))
            colour = "0.55" if low[-1] > 0 else "C1"
            ax.fill_between(x, low, high, step="post", color=colour, alpha=0.12, linewidth=0)
            ax.step(x, (low + high) / 2, where="post", color=colour, linewidth=0.8)
        ax.axhline(0, color="black", linewidth=0.8)
        ax.axhline(-trace["epsilon"], color="C0", linewidth=0.8, linestyle="--", label=f"-epsilon ({trace['epsilon']})")
        ax.set_title(f"{stage['stage']} stage: {len(stage['values'])} distinct arms, {stage['stopped']}", fontsize=10)
        ax.set_xlabel("questions used")
        ax.set_ylabel("leader - arm (interval at each look)")
        ax.legend(loc="upper right", fontsize=7)
    chosen = _label(trace["chosen"]["axes"])
    fig.suptitle(
        f"search on {trace['metric']}; chosen: {chosen}\ngrey: eliminated, orange: left at the end", fontsize=9
    )
    fig.tight_layout()
    return fig
