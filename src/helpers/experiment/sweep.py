"""Sweeps: a base config and axes expand into runs, each an ordinary run directory.

    python -m helpers sweep configs/sweeps/chunking.yaml [--executor ray] [--address HOST:PORT]
    python -m helpers report --sweep chunking

A sweep file:

    name: chunking
    base: ../smoke.yaml              # a config path (relative to this file) or an inline config
    set: {judges: {ragas: false}}    # optional overrides of the base, as nested keys
    axes:                            # dotted paths into the config -> the values to try
      dataset.options.chunk_size: [300, 500, 800]
      architectures: [bm25, dense]   # a name is a one-architecture list
      llm: [{name: local, provider: local}, {name: groq, provider: groq, model: llama-3.1-8b-instant}]

`llm` is special: the value is added to (or replaces, by name) the base's `llms` and becomes the
`generation_llm`. SPECIAL_AXES holds such axes (name -> how a value changes the config, and its
label in run ids); any other axis is a dotted path. Every combination is one run, with a readable
id (`chunking--chunk_size=300--architectures=bm25`); `results/sweeps/<name>/sweep.json` lists
them with their axis values. A finished run (summary.json ok, same config) is skipped, an
unfinished one resumes, and runs never write the same files, so they can go to Ray workers
(`run_on_ray`).

On Ray: one task per run, on this machine (a local instance, on loopback only) or on a cluster
(`address`: 'HOST:PORT' of a head started with `ray start --head`, 'ray://HOST:PORT' for Ray
Client, or the RAY_ADDRESS environment variable; start-up in helpers.ray_cluster). A run's store
is append-only, so a worker that dies mid-run loses no finished sample: Ray retries the task
(`max_retries`), and the retry resumes the run where the dead worker left it. Every worker must
see the same project checkout and `results/` (one machine, or a shared file system), as
`ray start` workers here do.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from tqdm.auto import tqdm

from helpers import paths
from helpers.errors import UserError
from helpers.experiment.config import ConfigError, ExperimentConfig
from helpers.inputs import inside, load_yaml, safe_name
from helpers.ray_cluster import MAX_RETRIES, ray_init


class SweepConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="results/sweeps/<name>/; run ids start with it (letters, digits, _ . + = -)")
    base: str | dict = Field(description="a config path relative to the sweep file, or an inline config")
    set: dict = Field(default_factory=dict, description="overrides of the base, nested keys")
    axes: dict[str, list] = Field(description="dotted config path -> values (every combination is a run)")

    @field_validator("name")
    @classmethod
    def _safe_name(cls, name):
        return safe_name(name, "sweep name")  # a folder under results/sweeps/ and a prefix of run ids


def _merge(target: dict, overrides: dict) -> dict:
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


def _set_llm(config: dict, value) -> None:
    llm = dict(value)
    llm.setdefault("name", llm.get("model") or llm.get("provider") or "llm")
    llms = [entry for entry in config.get("llms") or [] if entry.get("name") != llm["name"]]
    config["llms"] = [llm, *llms]
    config["generation_llm"] = llm["name"]


def _set_architectures(config: dict, value) -> None:
    config["architectures"] = [value] if isinstance(value, str) else copy.deepcopy(value)


@dataclass(frozen=True)
class Axis:
    """An axis that is not (only) a dotted path: `apply(config, value)` changes the raw config;
    `label(value)` is the text of `name=text` in run ids (None: as a path axis's value)."""

    apply: Callable[[dict, Any], None]
    label: Callable[[Any], str] | None = None


SPECIAL_AXES: dict[str, Axis] = {
    "llm": Axis(_set_llm, label=lambda value: value.get("name") or value.get("model")),
    "architectures": Axis(_set_architectures),  # a name is a one-architecture list
}


def _set_path(config: dict, dotted: str, value) -> None:
    if dotted in SPECIAL_AXES:
        SPECIAL_AXES[dotted].apply(config, value)
        return
    node = config
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"sweep axis {dotted!r}: {part!r} is not a section of the config")
    node[leaf] = copy.deepcopy(value)


def _label(dotted: str, value) -> str:
    """A short, file-safe `name=value` for run ids."""
    name = dotted.split(".")[-1]
    special = SPECIAL_AXES.get(dotted)
    if special and special.label:
        text = special.label(value)
    elif isinstance(value, (list, tuple)):
        text = "+".join(map(str, value))
    elif isinstance(value, dict):
        text = value.get("name") or "-".join(f"{k}{v}" for k, v in sorted(value.items()))
    else:
        text = str(value)
    return f"{name}={re.sub(r'[^A-Za-z0-9_.+-]+', '_', str(text))[:40]}"


def load_sweep(path: str | Path) -> tuple[SweepConfig, Path]:
    path = Path(path)
    try:
        raw = load_yaml(path, "sweep") or {}
    except UserError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return SweepConfig(**raw), path
    except ValidationError as exc:
        problems = "; ".join(f"'{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {problems}") from None


def expand(sweep: SweepConfig, sweep_path: Path | None = None, dataset: dict | None = None) -> list[dict]:
    """[{run_id, axes: {axis: value}, config: ExperimentConfig}] for every combination, checked
    (a bad axis value fails here, naming the run, before anything runs). `dataset`: in place of
    the base's (a user's folder: `search --documents`), before the axes apply to it."""
    if isinstance(sweep.base, str):
        base_path = (sweep_path.parent if sweep_path else Path.cwd()) / sweep.base
        try:
            base = load_yaml(base_path, f"sweep {sweep.name!r}: base config") or {}
        except UserError as exc:
            raise ConfigError(str(exc)) from None
    else:
        base = copy.deepcopy(sweep.base)
    base = _merge(base, sweep.set)
    if dataset is not None:
        base["dataset"] = copy.deepcopy(dataset)
    if not sweep.axes or any(not values for values in sweep.axes.values()):
        raise ConfigError(f"sweep {sweep.name!r}: every axis needs at least one value")
    runs, seen = [], set()
    for combination in itertools.product(*sweep.axes.values()):
        config = copy.deepcopy(base)
        axes = dict(zip(sweep.axes, combination))
        for dotted, value in axes.items():
            _set_path(config, dotted, value)
        run_id = "--".join([sweep.name, *(_label(d, v) for d, v in axes.items())])
        if run_id in seen:
            raise ConfigError(
                f"sweep {sweep.name!r}: two combinations give the run id {run_id!r}; give the values distinct names"
            )
        seen.add(run_id)
        config.update(run_id=run_id, name=sweep.name)
        try:
            checked = ExperimentConfig(**config)
        except ValidationError as exc:
            problems = "; ".join(f"'{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors())
            raise ConfigError(f"sweep {sweep.name!r}, run {run_id}: {problems}") from None
        runs.append({"run_id": run_id, "axes": {d: _jsonable(v) for d, v in axes.items()}, "config": checked})
    return runs


def _jsonable(value):
    return json.loads(json.dumps(value, default=str))


def sweep_dir(name: str, results_dir: Path | None = None) -> Path:
    return inside(Path(results_dir or paths.RESULTS_DIR) / "sweeps", name, what="sweep name")


def finished(run: dict, results_dir: Path | None = None) -> bool:
    """The run's summary says ok and its stored config is this one (a changed axis value is a
    new run id anyway; a changed base reruns what changed, resuming the rest)."""
    directory = inside(results_dir or paths.RESULTS_DIR, run["run_id"], what="run id")
    summary, stored = directory / "summary.json", directory / "config.yaml"
    if not summary.exists() or not stored.exists():
        return False
    same = yaml.safe_load(stored.read_text(encoding="utf-8")) == run["config"].model_dump(mode="json")
    return same and json.loads(summary.read_text(encoding="utf-8")).get("ok", False)


def run_one(config: dict, results_dir: str | None = None) -> dict:
    """One run of a sweep, in this process (what a Ray task calls): its summary."""
    from helpers.experiment.runner import Experiment  # matplotlib, pandas, scipy: loaded only when this runs

    return Experiment(ExperimentConfig(**config), Path(results_dir) if results_dir else None).run()


def write_index(sweep: SweepConfig, runs: list[dict], statuses: dict, results_dir: Path | None = None) -> Path:
    out = sweep_dir(sweep.name, results_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = {
        "name": sweep.name,
        "axes": list(sweep.axes),
        "runs": [{"run_id": r["run_id"], "axes": r["axes"], **statuses.get(r["run_id"], {})} for r in runs],
    }
    target = out / "sweep.json"
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(index, indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(target)
    return target


def run_on_ray(
    runs: list[dict],
    *,
    address: str | None = None,
    results_dir=None,
    progress: bool = True,
    max_retries: int = MAX_RETRIES,
) -> dict[str, dict]:
    """{run_id: status} of every run in `runs` (from `expand`), each run one Ray task of one CPU;
    a worker process that dies is retried up to `max_retries` times."""
    ray = ray_init(address)
    task = ray.remote(num_cpus=1, max_retries=max_retries)(run_one)
    pending = {
        task.remote(r["config"].model_dump(mode="json"), str(results_dir) if results_dir else None): r["run_id"]
        for r in runs
    }
    statuses: dict[str, dict] = {}
    bar = tqdm(total=len(pending), desc="sweep on ray", unit="run", disable=not progress)
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        run_id = pending.pop(done[0])
        try:
            summary = ray.get(done[0])
            statuses[run_id] = {
                "status": "finished" if summary["ok"] else "failed",
                "failure_rate": summary["failure_rate"],
            }
        except Exception as exc:  # the run's own error, or retries exhausted: recorded, the sweep goes on
            statuses[run_id] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]}
        bar.update(1)
    bar.close()
    return statuses


def run_sweep(
    path: str | Path,
    *,
    executor: str = "local",
    address: str | None = None,
    results_dir: Path | None = None,
    progress: bool = True,
) -> dict:
    """Expand the sweep at `path`, run what is not finished (`executor` 'local': one after another
    in this process; 'ray': one Ray task per run, `run_on_ray`), and write
    results/sweeps/<name>/sweep.json. Returns the index with each run's status."""
    sweep, sweep_path = load_sweep(path)
    runs = expand(sweep, sweep_path)
    statuses = {r["run_id"]: {"status": "finished", "skipped": True} for r in runs if finished(r, results_dir)}
    todo = [r for r in runs if r["run_id"] not in statuses]
    write_index(sweep, runs, statuses, results_dir)
    if executor == "ray":
        for run_id, outcome in run_on_ray(todo, address=address, results_dir=results_dir, progress=progress).items():
            statuses[run_id] = outcome
    elif executor == "local":
        bar = tqdm(todo, desc=f"sweep {sweep.name}", unit="run", disable=not progress)
        for run in bar:
            bar.set_postfix_str(run["run_id"][len(sweep.name) + 2 :][:60])
            try:
                summary = run_one(run["config"].model_dump(mode="json"), str(results_dir) if results_dir else None)
                statuses[run["run_id"]] = {
                    "status": "finished" if summary["ok"] else "failed",
                    "failure_rate": summary["failure_rate"],
                }
            except Exception as exc:  # one run's failure is recorded; the sweep goes on
                statuses[run["run_id"]] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    else:
        raise ConfigError(f"executor must be 'local' or 'ray', got {executor!r}")
    write_index(sweep, runs, statuses, results_dir)
    return json.loads((sweep_dir(sweep.name, results_dir) / "sweep.json").read_text(encoding="utf-8"))
