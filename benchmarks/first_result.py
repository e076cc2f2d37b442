"""Time to first result: a fresh clone to the default run's tables and figures, step by step, as a
timeline (JSON and a figure), with each step's peak resident memory.

  python benchmarks/first_result.py [--workdir /tmp/first-result] [--config configs/default.yaml]
                                    [--cold-pip] [--out results/benchmarks/first_result.json]

Steps, each a subprocess in the clone, timed by /usr/bin/time (wall seconds, peak RSS of the
largest process of the step):
  clone           git clone of this repository's HEAD, ../shared linked beside it
  setup           make setup: venv, torch, the lock, llama-cpp-python (built from source unless
                  pip's wheel cache has it; --cold-pip gives pip an empty cache, as a new machine)
  prepare-data    python -m helpers prepare-data
  train-reranker  python -m helpers train-reranker --if-missing
  train-judge     python -m helpers train-judge --if-missing
  run-cold        python -m helpers run CONFIG, caches empty (the clone's own data/cache)
  run-warm        the same config in a new run directory: embeddings and answers from the caches
The evidence model (make evidence-model, about an hour) is not trained: the issue counts it on its
own line, and the default run uses it only when it is there.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def timed(name: str, command: list[str], cwd: Path, env: dict, log_dir: Path) -> dict:
    """Run `command`, its output to log_dir/<name>.log; wall seconds and peak RSS (MB)."""
    stats = log_dir / f"{name}.time"
    log = log_dir / f"{name}.log"
    start = time.perf_counter()
    with open(log, "w") as out:
        result = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", str(stats), *command], cwd=cwd, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    peak_kb = next((int(line) for line in stats.read_text().splitlines()[::-1] if line.strip().isdigit()), 0)
    step = {"step": name, "seconds": round(seconds, 1), "peak_rss_mb": round(peak_kb / 1024), "returncode": result.returncode,
            "log": str(log)}
    print(json.dumps(step), flush=True)
    if result.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"step {name} failed ({result.returncode}); the end of {log}:\n{tail}")
    return step


def timeline_figure(steps: list[dict], title: str):
    from helpers.figures import plt

    fig, ax = plt.subplots(figsize=(8, 0.45 * len(steps) + 1.2))
    start = 0.0
    for i, step in enumerate(steps):
        ax.barh(i, step["seconds"] / 60, left=start / 60, color="#4C72B0")
        ax.text((start + step["seconds"]) / 60, i, f" {step['seconds'] / 60:.1f} min, {step['peak_rss_mb']} MB",
                va="center", fontsize=8)
        start += step["seconds"]
    ax.set_yticks(range(len(steps)), [s["step"] for s in steps])
    ax.invert_yaxis()
    ax.set_xlabel("minutes since the clone started")
    ax.set_xlim(0, start / 60 * 1.35)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/first-result"))
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--cold-pip", action="store_true", help="an empty pip cache (llama.cpp is compiled)")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks" / "first_result.json")
    args = parser.parse_args()

    shutil.rmtree(args.workdir, ignore_errors=True)
    clone, logs = args.workdir / "main", args.workdir / "logs"
    logs.mkdir(parents=True)
    (args.workdir / "shared").symlink_to(ROOT.parent / "shared")
    # the clone's own folders, whatever this shell points HELPERS_* at
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELPERS_")}
    if args.cold_pip:
        env["PIP_CACHE_DIR"] = str(args.workdir / "pip-cache")
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    steps = [timed("clone", ["git", "clone", "-q", str(ROOT), str(clone)], args.workdir, env, logs)]
    python = str(clone / ".venv" / "bin" / "python")
    steps.append(timed("setup", ["make", "setup"], clone, env, logs))
    for name, command in (("prepare-data", ["prepare-data"]), ("train-reranker", ["train-reranker", "--if-missing"]),
                          ("train-judge", ["train-judge", "--if-missing"])):
        steps.append(timed(name, [python, "-m", "helpers", *command], clone, env, logs))
    steps.append(timed("run-cold", [python, "-m", "helpers", "run", args.config], clone, env, logs))
    config = yaml.safe_load((clone / args.config).read_text())
    warm_config = clone / "configs" / "_warm.yaml"
    warm_config.write_text(yaml.safe_dump({**config, "run_id": f"{config.get('name', 'run')}-warm"}))
    steps.append(timed("run-warm", [python, "-m", "helpers", "run", str(warm_config)], clone, env, logs))

    cold_summary = next(p for p in (clone / "results").glob("*/summary.json") if not p.parent.name.endswith("-warm"))
    total = sum(s["seconds"] for s in steps)
    result = {"started": started, "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True,
                                                            text=True).stdout.strip(),
              "config": args.config, "cold_pip": args.cold_pip, "steps": steps,
              "total_s": round(total, 1), "to_first_result_s": round(total - steps[-1]["seconds"], 1),
              "setup_s": round(sum(s["seconds"] for s in steps[:5]), 1),
              "peak_rss_mb_of_run": max(s["peak_rss_mb"] for s in steps if s["step"].startswith("run")),
              "cold_run_summary": json.loads(cold_summary.read_text())}
    from helpers.figures import save_figure

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str))   # before the figure: never lose the numbers
    fig = timeline_figure(steps, f"Fresh clone to the first result ({args.config}): "
                                 f"{result['to_first_result_s'] / 60:.1f} min")
    result["figure"] = str(save_figure(fig, "first-result-timeline", config={k: str(v) for k, v in vars(args).items()},
                                       data_sources=[str(args.out)])["png"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps({k: v for k, v in result.items() if k != "cold_run_summary"}, indent=2, default=str))


if __name__ == "__main__":
    main()
