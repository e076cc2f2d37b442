"""The hosted-LLM path at scale, side by side in one run, against a local stand-in for a hosted API.

  python benchmarks/hosted.py [--questions 500] [--compare 200] [--latency-ms 300] [--rpm 600]
                              [--in-flight 30] [--fail-rate 0.05] [--seed 0] [--out results/benchmarks/hosted.json]

The stand-in: `serve-llm --responder fast` (well-formed answers and JSON in microseconds, so the
provider's latency and limits are what is measured, not a model) with 300 ms a call, 600
requests a minute, 30 calls in flight and 5 % of calls failing (500s, hangs, dropped
connections), seeded. Measured:

1. the study (configs/hosted-sim.yaml: `questions` RAGBench questions x BM25 and dense = 2 x
   questions samples; answers, TRACe LLM judge, RAGAS's four metrics): wall time against the
   ideal (calls x latency / in-flight, bounded by the rate limit), calls, retries, 429s, tokens,
   cost at gpt-4o-mini's prices, samples lost, peak RSS;
2. the same command again: what it redoes (only the failed samples) and the calls it makes;
3. on `compare` of those samples, each with a fresh cache: the runner's RAGAS judge against
   ragas's own way (its collections metrics over `llm_factory`, same server, `in_flight` at once), and the
   runner's TRACe LLM judge against the seed capstone's way (one sample after another).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import yaml

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_dataset
from helpers.experiment.config import ExperimentConfig
from helpers.experiment.runner import Experiment
from helpers.experiment.store import RunStore
from helpers.llm import LLM, ResponseCache
from helpers.llm.limits import RateLimiter
from helpers.llm.serving import local_server
from helpers.llm.simulate import read_ledger

CONFIG = paths.PROJECT_ROOT / "configs" / "hosted-sim.yaml"
PRICE = {"input_per_mtok": 0.15, "output_per_mtok": 0.60}  # gpt-4o-mini (helpers.llm.presets)


def study_config(base_url: str, questions: int, in_flight: int, rpm: float, **update) -> ExperimentConfig:
    raw = yaml.safe_load(CONFIG.read_text())
    raw["dataset"]["options"]["n"] = questions
    raw["llms"][0].update(base_url=base_url, concurrency=in_flight, requests_per_minute=rpm, prices={"stand-in": PRICE})
    for key, value in update.items():
        raw[key] = value if not isinstance(value, dict) else {**raw.get(key, {}), **value}
    return ExperimentConfig(**raw)


def run_study(config: ExperimentConfig, results: Path, cache: Path) -> tuple[dict, float]:
    """One `helpers run`, with this benchmark's own cache and its own rate limiter (each phase
    starts with a fresh minute, as it does against its own fresh server)."""
    experiment = Experiment(config, results_dir=results)
    entry = config.llms[0]
    limiter = RateLimiter(entry.requests_per_minute, entry.tokens_per_minute, entry.concurrency)
    experiment.make_llm = lambda settings: LLM(settings, cache=ResponseCache(cache), limiter=limiter)
    start = time.perf_counter()
    summary = experiment.run()
    return summary, time.perf_counter() - start


def accounted(summary: dict, results: Path) -> dict:
    """Every sample scored, or recorded as failed with its kind; none missing."""
    store = RunStore(results / summary["run_id"])  # the newest record of each key
    answers, scores = store.of_kind("answer"), store.of_kind("score")
    return {
        "answers_recorded": len(answers),
        "answers_failed": sum(bool(r.get("error")) for r in answers),
        "scores_recorded": len(scores),
        "scores_failed": sum(bool(r.get("error")) for r in scores),
        "failure_kinds": summary["failures"],
        "nan_scores": summary["nan_scores"],
    }


def ideal_s(calls: int, latency_s: float, in_flight: int, rpm: float) -> float:
    return max(calls * latency_s / in_flight, calls / (rpm / 60))


def ragas_evaluate(samples: list[dict], base_url: str, in_flight: int, timeout_s: float) -> dict:
    """ragas's own way, as ragas 0.4 documents it: its collections metrics over `llm_factory` (the
    instructor library, JSON mode, an AsyncOpenAI client with its default 2 retries) against the same
    server, every (sample, metric) scored with `ascore` under `in_flight` at once; a failure is NaN.
    (ragas.evaluate() takes only the legacy metric classes, which ragas deprecates.)"""
    import asyncio

    from openai import AsyncOpenAI
    from ragas.llms import llm_factory
    from ragas.metrics.collections import AnswerRelevancy, ContextPrecisionWithReference, ContextRecall, Faithfulness

    from helpers.ragas_eval import WorkbenchEmbeddings, default_embedder
    from helpers.ragas_eval.ragas_scoring import metric_inputs

    client = AsyncOpenAI(base_url=base_url, api_key="not-needed", timeout=timeout_s)
    llm = llm_factory("stand-in", provider="openai", client=client)
    embeddings = WorkbenchEmbeddings(default_embedder("en"))
    metrics = [
        Faithfulness(llm=llm),
        AnswerRelevancy(llm=llm, embeddings=embeddings),
        ContextPrecisionWithReference(llm=llm),
        ContextRecall(llm=llm),
    ]

    async def one(metric, sample: dict, gate: asyncio.Semaphore) -> float:
        wanted = metric_inputs(metric, sample["question"], sample["answer"], sample["contexts"], sample["reference"])
        async with gate:
            try:
                return float((await asyncio.wait_for(metric.ascore(**wanted), 180)).value)
            except Exception:  # as evaluate(raise_exceptions=False): NaN, and the rest goes on
                return float("nan")

    async def everything() -> list[list[float]]:
        gate = asyncio.Semaphore(in_flight)
        flat = await asyncio.gather(*(one(m, s, gate) for s in samples for m in metrics))
        return [flat[i : i + len(metrics)] for i in range(0, len(flat), len(metrics))]

    start = time.perf_counter()
    values = asyncio.run(everything())
    wall = time.perf_counter() - start
    names = [m.name for m in metrics]
    nan = [[v != v for v in row] for row in values]
    return {
        "wall_s": round(wall, 1),
        "samples": len(samples),
        "nan": {name: sum(row[i] for row in nan) for i, name in enumerate(names)},
        "lost_samples": sum(all(row) for row in nan),
    }


def seed_loop(samples: list[dict], base_url: str, cache: Path) -> dict:
    """The seed capstone's way: `for test_case in test_cases: evaluator.evaluate(...)`, one after another."""
    from helpers.judges.models.trace_annotator import llm_judge

    llm = LLM(
        {"provider": "openai-compatible", "base_url": base_url, "model": "stand-in", "max_tokens": 256, "timeout_s": 5},
        cache=ResponseCache(cache),
    )
    start, failed = time.perf_counter(), 0
    for s in samples:
        failed += llm_judge(llm, s["question"], s["contexts"], s["answer"]).error is not None
    return {"wall_s": round(time.perf_counter() - start, 1), "samples": len(samples), "failed": failed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=500, help="RAGBench questions (x 2 architectures)")
    parser.add_argument("--compare", type=int, default=200, help="samples for the ragas / seed comparisons")
    parser.add_argument("--latency-ms", type=float, default=300)
    parser.add_argument("--rpm", type=float, default=600)
    parser.add_argument("--in-flight", type=int, default=30)
    parser.add_argument("--fail-rate", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(paths.RESULTS_DIR / "benchmarks" / "hosted.json"))
    parser.add_argument("--skip-study", action="store_true", help="only the side-by-side comparisons (3.)")
    args = parser.parse_args()
    out: dict = {"settings": vars(args)}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_study:
            out |= study(args, Path(tmp))
        out |= side_by_side(args, Path(tmp))
    out["benchmark_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, default=str))
    print(f"wrote {args.out}")
    lost = out["study"]["samples"] - out["study"]["answers_recorded"] if "study" in out else 0
    return 1 if lost else 0


def stand_in(args, ledger: Path):
    """A fresh stand-in per phase: each starts with an empty minute and the same seeded failures."""
    flags = [
        "--responder", "fast", "--simulate-latency", str(args.latency_ms), "--rpm", str(args.rpm),
        "--max-in-flight", str(args.in_flight), "--fail-rate", str(args.fail_rate), "--seed", str(args.seed),
        "--hang-s", "10", "--max-connections", "512", "--ledger", str(ledger),
    ]  # fmt: skip
    return local_server(extra_args=flags)


def study(args, tmp: Path) -> dict:
    """1. The study, then 2. the same command again (it redoes only what failed)."""
    ledger = tmp / "ledger.jsonl"
    with stand_in(args, ledger) as url:
        config = study_config(url, args.questions, args.in_flight, args.rpm)
        summary, wall = run_study(config, tmp / "results", tmp / "cache.sqlite")
        usage = summary["llm_usage"]["hosted"]
        answered = len(read_ledger(ledger))
        ideal = ideal_s(answered, args.latency_ms / 1000, args.in_flight, args.rpm)
        llm_steps = sum(s["seconds"] for s in summary["timeline"] if s["step"].split()[0] in ("answer", "judge"))
        out = {
            "samples": summary["answers"],
            "wall_s": round(wall, 1),
            "llm_stages_s": round(llm_steps, 1),
            "ideal_s": round(ideal, 1),
            "wall_over_ideal": round(wall / ideal, 3),
            "llm_stages_over_ideal": round(llm_steps / ideal, 3),
            "requests_answered": answered,
            "requests_sent": usage["requests"],
            "retries": usage["retries"],
            "rate_limited_429": usage["rate_limited"],
            "input_tokens": usage["input_tokens"],
            "output_tokens": usage["output_tokens"],
            "cost_usd_at_gpt_4o_mini_prices": usage["cost_usd"],
            "peak_rss_mb": summary["peak_rss_mb"],
            "timeline": summary["timeline"],
            **accounted(summary, tmp / "results"),
        }
        print(json.dumps(out, indent=1), flush=True)
        before = len(read_ledger(ledger))
        again, wall_again = run_study(config, tmp / "results", tmp / "cache.sqlite")
        usage_again = again["llm_usage"].get("hosted", {})
        rerun = {
            "wall_s": round(wall_again, 1),
            "failed_before": out["answers_failed"] + out["scores_failed"],
            "requests_to_server": len(read_ledger(ledger)) - before,
            "llm_calls": usage_again.get("calls", 0),
            "cache_hits": usage_again.get("cache_hits", 0),
            "failed_after": again["failed_samples"],
        }
        print(json.dumps(rerun, indent=1), flush=True)
    return {"study": out, "rerun": rerun}


def side_by_side(args, tmp: Path) -> dict:
    """3. On `compare` samples: their answers first (cached), then each judge alone, each way
    against a fresh server (an empty minute, the same seeded failures): the runner's RAGAS judge
    and ragas's own way, the runner's TRACe LLM judge and the seed's loop."""
    cache = tmp / "cache-compare.sqlite"
    no_judges = {"trace_llm": None, "ragas": None}
    with stand_in(args, tmp / "ledger-answers.jsonl") as url:
        probe = study_config(url, args.questions, args.in_flight, args.rpm)
        data = load_dataset(probe.dataset.name, **probe.dataset.options)
        base = {
            "run_id": "hosted-compare",
            "architectures": ["bm25"],
            "dataset": {"questions": sorted(data.queries)[: args.compare]},
        }
        config = study_config(url, args.questions, args.in_flight, args.rpm, **base, judges=no_judges)
        run_study(config, tmp / "results", cache)
    samples = _samples(tmp / "results" / "hosted-compare", data.answers)
    ours = {}
    for judge in ("ragas", "trace_llm"):
        ledger = tmp / f"ledger-{judge}.jsonl"
        with stand_in(args, ledger) as url:
            config = study_config(
                url, args.questions, args.in_flight, args.rpm, **base, judges=no_judges | {judge: "hosted"}
            )
            summary, _ = run_study(config, tmp / "results", cache)
        steps = {s["step"]: s["seconds"] for s in summary["timeline"]}
        ours[judge] = {
            "wall_s": steps[f"judge {judge}"],
            "samples": len(samples),
            "requests_answered": len(read_ledger(ledger)),
        }
    with stand_in(args, tmp / "ledger-ragas-evaluate.jsonl") as url:
        theirs = ragas_evaluate(samples, url, args.in_flight, timeout_s=5)
    theirs["requests_answered"] = len(read_ledger(tmp / "ledger-ragas-evaluate.jsonl"))
    ragas = {
        "ours": ours["ragas"],
        "ragas_evaluate": theirs,
        "ours_speedup": round(theirs["wall_s"] / ours["ragas"]["wall_s"], 2),
    }
    print(json.dumps(ragas, indent=1), flush=True)
    with stand_in(args, tmp / "ledger-seed.jsonl") as url:
        seed = seed_loop(samples, url, tmp / "cache-seed.sqlite")
    trace = {
        "ours": ours["trace_llm"],
        "seed_loop": seed,
        "ours_speedup": round(seed["wall_s"] / ours["trace_llm"]["wall_s"], 2),
    }
    print(json.dumps(trace, indent=1), flush=True)
    return {"ragas": ragas, "trace_llm": trace}


def _samples(run_dir: Path, references: dict[str, str]) -> list[dict]:
    """The compare run's answered samples, as ragas and the seed loop take them."""
    return [
        {
            "qid": r["qid"],
            "question": r["question"],
            "answer": r["answer"],
            "contexts": [c["text"] for c in r["contexts"]],
            "reference": references.get(r["qid"]) or "",
        }
        for r in RunStore(run_dir).of_kind("answer")
        if r.get("answer")
    ]


if __name__ == "__main__":
    sys.exit(main())
