"""LLM layer benchmark, side by side in one run.

  python benchmarks/llm.py [--backends llama-cpp,transformers] [--calls 20] [--out results/benchmarks/llm.json]

Measures: load time and tokens/s of each local backend; the latency of a cache hit vs a real
call; the overhead of the layer vs calling the OpenAI SDK directly against the local server.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.llm import LLM, ResponseCache
from helpers.llm.backends import build_backend
from helpers.llm.llm_settings import LLMConfig
from helpers.llm.serving import local_server

PROMPT = (
    "Context: Se recomienda realizar el primer control prenatal en el primer trimestre, idealmente "
    "antes de la semana 10 de gestación. " * 6 + "\nQuestion: ¿Cuándo iniciar los controles prenatales?"
)


def bench_backend(name: str, n_tokens: int = 128, repeats: int = 3) -> dict:
    start = time.perf_counter()
    backend = build_backend(LLMConfig(provider="local", local_backend=name))
    backend.chat([{"role": "user", "content": "hi"}], temperature=0, max_tokens=1, seed=0, timeout=None)
    load_s = time.perf_counter() - start
    rates, prompt_tokens = [], 0
    for i in range(repeats):
        t = time.perf_counter()
        out = backend.chat(
            [{"role": "user", "content": PROMPT + f" ({i})"}], temperature=0, max_tokens=n_tokens, seed=0, timeout=None
        )
        rates.append(out.output_tokens / (time.perf_counter() - t))
        prompt_tokens = out.input_tokens
    return {
        "backend": name,
        "load_s": round(load_s, 2),
        "prompt_tokens": prompt_tokens,
        "tokens_per_s_incl_prompt": round(statistics.median(rates), 1),
    }


def bench_layer(calls: int) -> dict:
    from openai import OpenAI

    prompts = [[{"role": "user", "content": f"Write one sentence about the number {i}."}] for i in range(calls)]
    with local_server() as url, tempfile.TemporaryDirectory() as tmp:
        client = OpenAI(base_url=url, api_key="not-needed", max_retries=0)
        llm = LLM(
            {"provider": "openai-compatible", "model": "smollm2", "base_url": url, "max_tokens": 32},
            cache=ResponseCache(Path(tmp) / "c.sqlite"),
        )
        client.chat.completions.create(model="smollm2", messages=prompts[0], max_tokens=1)  # warm
        direct, layered, hits = [], [], []
        for messages in prompts:  # interleaved, so drift hits both sides alike
            t = time.perf_counter()
            client.chat.completions.create(
                model="smollm2", messages=messages, max_tokens=32, temperature=0, seed=0, n=1
            )
            direct.append(time.perf_counter() - t)
            t = time.perf_counter()
            llm.complete(messages)
            layered.append(time.perf_counter() - t)
            t = time.perf_counter()
            llm.complete(messages)
            hits.append(time.perf_counter() - t)
    d, l, h = (statistics.median(x) for x in (direct, layered, hits))
    return {
        "calls": calls,
        "direct_sdk_median_s": round(d, 4),
        "layer_miss_median_s": round(l, 4),
        "layer_overhead_ratio": round(l / d, 3),
        "cache_hit_median_s": round(h, 5),
        "real_call_vs_cache_hit_ratio": round(l / h, 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="llama-cpp,transformers")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--out", default=str(paths.benchmark_output("llm")))
    args = parser.parse_args(argv)
    report = {"backends": [bench_backend(b) for b in args.backends.split(",") if b], "layer": bench_layer(args.calls)}
    paths.write_json(args.out, report, echo=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
