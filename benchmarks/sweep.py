"""Sweeps in-process vs on a local Ray cluster, and a Chroma server's index shared by workers vs
each worker embedding on its own, side by side in one run.

  python benchmarks/sweep.py [--pages 124-143] [--questions 40] [--out results/benchmarks/sweep.json]

1. The chunking grid (chunk size 300/500/800 x bm25, dense, hybrid, rerank; retrieval only, on
   obstetrics-es's test questions over a page range of the guideline) run twice with empty
   caches: one run after another in this process, then one Ray task per run on a `ray start
   --head` with two worker CPUs. Reported: wall seconds of each, their ratio, the peak resident
   memory of this process and of each Ray worker that ran a task (from the runs' own record).
2. Two worker processes index the same corpus with the multilingual e5: each with its own empty
   embedding cache (as on two machines), then both against one `chroma run` server. Reported:
   texts each one embedded, and seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _grid(work: Path, pages: str, questions: int) -> Path:
    base = {
        "name": "bench",
        "dataset": {
            "name": "obstetrics-es",
            "options": {"query_split": "test", "pages": pages},
            "n_questions": questions,
        },
        "architectures": ["bm25", "dense", "hybrid", "rerank"],
        "retrieval": {"k": 10},
        "generate": False,
        "statistics": {"n_resamples": 1000},
        "figures": False,
    }
    (work / "base.yaml").write_text(yaml.safe_dump(base))
    path = work / "chunking.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": "chunking", "base": "base.yaml", "axes": {"dataset.options.chunk_size": [300, 500, 800]}},
            sort_keys=False,
        )
    )
    return path


def _sweep(grid: Path, work: Path, label: str, extra: list[str]) -> dict:
    env = {
        **os.environ,
        "HELPERS_RESULTS_DIR": str(work / label / "results"),
        "HELPERS_CACHE_DIR": str(work / label / "cache"),
        "HELPERS_INDEX_DIR": str(work / label / "cache" / "indexes"),
        "HELPERS_FIGURES_DIR": str(work / label / "figures"),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "helpers", "sweep", str(grid), *extra], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{label} sweep failed:\n{done.stderr[-3000:]}")
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    summaries = [json.loads(p.read_text()) for p in (work / label / "results").glob("chunking--*/summary.json")]
    return {
        "seconds": round(seconds, 1),
        "runs": len(summaries),
        "max_child_rss_mb_so_far": round(peak_kb / 1024),
        "run_peak_rss_mb": sorted(s.get("peak_rss_mb") for s in summaries),
    }


def _index_worker(corpus_file: str, cache: str, chroma: str | None) -> str:
    """A separate Python process that indexes the corpus: the texts it embedded and its seconds."""
    code = (
        "import json, sys, time\n"
        "from helpers.retrieval import Dense\n"
        "from helpers.retrieval.embedders.models import EmbeddingCache\n"
        f"corpus = json.load(open({corpus_file!r}))\n"
        f"chroma = {json.loads(chroma) if chroma else None!r}\n"
        "start = time.perf_counter()\n"
        f"dense = Dense(None, language='es', cache=EmbeddingCache({cache!r}), chroma=chroma).index(corpus)\n"
        "print(json.dumps({'embedded': dense.embedder.computed, 'seconds': round(time.perf_counter() - start, 1)}))\n"
    )
    return code


def _two_workers(corpus: dict, work: Path, chroma: dict | None) -> list[dict]:
    corpus_file = work / "corpus.json"
    corpus_file.write_text(json.dumps(corpus))
    out = []
    for worker in ("a", "b"):
        code = _index_worker(
            str(corpus_file),
            str(work / f"cache-{worker}-{bool(chroma)}.sqlite"),
            json.dumps(chroma) if chroma else None,
        )
        env = {
            **os.environ,
            "HELPERS_CACHE_DIR": str(work / f"worker-{worker}"),  # nothing shared on disk
            "HELPERS_INDEX_DIR": str(work / f"worker-{worker}" / "indexes"),
        }
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-3000:])
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", default="124-143", help="guideline pages chunked (the gold passages are added)")
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--out", default=str(ROOT / "results" / "benchmarks" / "sweep.json"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sweepbench", dir="/tmp"))
    grid = _grid(work, args.pages, args.questions)
    report: dict = {
        "grid": "chunk size 300/500/800 x bm25, dense, hybrid, rerank (retrieval only)",
        "pages": args.pages,
        "questions": args.questions,
    }
    report["in_process"] = _sweep(grid, work, "local", [])
    ray = Path(sys.executable).with_name("ray")
    port = _free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run(
        [
            str(ray),
            "start",
            "--head",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            "--num-cpus=2",
            "--include-dashboard=false",
            f"--temp-dir={work / 'ray'}",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    try:
        report["ray_two_workers"] = _sweep(grid, work, "ray", ["--executor", "ray", "--address", f"127.0.0.1:{port}"])
    finally:
        subprocess.run([str(ray), "stop", "--force"], env=env, capture_output=True)
    report["wall_ratio_in_process_over_ray"] = round(
        report["in_process"]["seconds"] / report["ray_two_workers"]["seconds"], 2
    )

    from helpers.data import load_dataset

    corpus = load_dataset("obstetrics-es", pages=args.pages, chunk_size=500).corpus
    report["index_workers_own_embedding"] = _two_workers(corpus, work, None)
    port = _free_port()
    chroma = subprocess.Popen(
        [
            str(Path(sys.executable).with_name("chroma")),
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--path",
            str(work / "chroma"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import chromadb

        for _ in range(200):
            try:
                chromadb.HttpClient(host="127.0.0.1", port=port).heartbeat()
                break
            except Exception:
                time.sleep(0.3)
        report["index_workers_chroma_server"] = _two_workers(corpus, work, {"host": "127.0.0.1", "port": port})
    finally:
        chroma.terminate()
    report["documents"] = len(corpus)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
