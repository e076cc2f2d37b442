"""The bundled model's llama.cpp engine, side by side in one run on the default run's own prompts.

  python benchmarks/llm_engine.py [--questions 8] [--sides engines,threads,calling,prefix,openmp,models] [--out F]

The prompts are the default benchmark's answer prompts (the guideline's questions, BM25's top 5
contexts, the Spanish answer prompt, 160 tokens at temperature 0). Sides:
- weights as shipped (Q4_1) or re-encoded as Q8_0 (helpers.local_models.local_weights), flash attention
  off or on: seconds for all answers, prompt tokens/s, ms per generated token;
- threads: one model on every core, or one model per core on one thread each (two at once),
  called from worker threads as the runner does; and ms per token from the main thread or another;
- OpenMP waiting (each in a fresh process, idle and beside one busy process): libgomp's default,
  OMP_WAIT_POLICY=PASSIVE, and GOMP_SPINCOUNT=1000 (helpers.offline_defaults's default): ms per token.
- models: the bundled SmolLM2-135M and Qwen2.5-Coder-1.5B (helpers.local_models.split_models) side by side
  through the LLM layer as a run calls them, each in a fresh process (so peak RSS is its own):
  load seconds, prompt tokens/s, ms per generated token, seconds per answer, peak RSS, and for the
  1.5B model its layouts (one model on both cores, or two one-thread models) and prompt blocks.
Answers identical to the shipped engine's (Q4_1, no flash attention) are counted: the engines
agree to rounding, not bit for bit. And answers given after other prompts (the KV of a shared
prefix reused) are compared with answers from an empty context, for llama-cpp-python's own reuse
and for the backend's reuse of whole prompt blocks (helpers.local_models.llama_prefix).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers import paths
from helpers.data import load_dataset
from helpers.generation.answering import answer_stops, build_messages, select_contexts
from helpers.local_models.local_weights import bundled_gguf, q8_0_copy
from helpers.retrieval.architectures.sparse import BM25


def prompts(n: int) -> list[list[dict]]:
    data = load_dataset("obstetrics", chunk_size=500, chunk_overlap=100, boundary="sentence")
    qids = sorted(data.queries, key=lambda q: int(q[1:]) if q[1:].isdigit() else q)[:n]
    run = BM25("es").index(data.corpus).retrieve({q: data.queries[q] for q in qids}, 5)
    out = []
    for qid in qids:
        contexts, _ = select_contexts(run[qid], data.corpus, k=5, language="es")
        out.append(build_messages(data.queries[qid], [c["text"] for c in contexts], "es"))
    return out


def load(path, threads: int, flash_attn: bool):
    from llama_cpp import Llama

    return Llama(
        model_path=str(path),
        n_ctx=8192,
        n_threads=threads,
        n_threads_batch=threads,
        flash_attn=flash_attn,
        verbose=False,
        seed=0,
    )


def answer(model, messages) -> dict:
    model.reset()  # no prefix reuse between prompts: every side evaluates every prompt whole
    return model.create_chat_completion(
        messages=messages, temperature=0.0, max_tokens=160, seed=0, stop=answer_stops("es"), repeat_penalty=1.1
    )


def engine_side(path, flash_attn: bool, batch: list, threads: int) -> dict:
    model = load(path, threads, flash_attn)
    answer(model, batch[0])  # warm-up
    start = time.perf_counter()
    outs = [answer(model, messages) for messages in batch]
    seconds = time.perf_counter() - start
    tokens = model.tokenize(batch[0][1]["content"].encode())
    model.reset()
    t = time.perf_counter()
    model.eval(tokens)
    prompt_s = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(64):
        model.eval([tokens[-1]])
    per_token_ms = (time.perf_counter() - t) / 64 * 1000
    return {
        "seconds": round(seconds, 2),
        "prompt_tokens_per_s": round(len(tokens) / prompt_s),
        "generation_ms_per_token": round(per_token_ms, 1),
        "output_tokens": sum(o["usage"]["completion_tokens"] for o in outs),
        "answers": [o["choices"][0]["message"]["content"] for o in outs],
    }


def threads_side(path, batch: list, workers: int) -> dict:
    """All answers from worker threads, as the runner and ragas call the model."""
    threads = max(1, (os.cpu_count() or 1) // workers)
    models = [load(path, threads, True) for _ in range(workers)]
    for model in models:
        answer(model, batch[0])
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:  # ctypes releases the GIL inside llama.cpp
        outs = sum(pool.map(lambda w: [answer(models[w], m) for m in batch[w::workers]], range(workers)), [])
    return {
        "seconds": round(time.perf_counter() - start, 2),
        "output_tokens": sum(o["usage"]["completion_tokens"] for o in outs),
    }


def calling_thread_side(path) -> dict:
    """ms per generated token when llama.cpp is called from the main thread or from another one."""
    import threading

    out = {}
    for threads in (os.cpu_count() or 1, 1):
        model = load(path, threads, True)
        tokens = model.tokenize(("hola mundo " * 300).encode())

        def measure(where):
            model.reset()
            model.eval(tokens)
            start = time.perf_counter()
            for _ in range(64):
                model.eval([tokens[5]])
            out[f"{threads} thread(s), {where}"] = round((time.perf_counter() - start) / 64 * 1000, 1)

        measure("main thread")
        worker = threading.Thread(target=measure, args=("worker thread",))
        worker.start()
        worker.join()
    return out


def prefix_reuse_side(path, batch: list) -> dict:
    """Answers given after other prompts, without a reset in between, against answers from an
    empty context: llama-cpp-python's own reuse (the longest shared prefix, flash attention off
    and on) and the backend's reuse of whole blocks (helpers.local_models.llama_prefix, flash attention
    on): how many agree, seconds, and prompt tokens reused. Two prompt sets: the answer prompts
    (they share the system prompt and the template) and one context with every question (they
    share the context as well, as ragas's prompts share their instructions)."""
    from helpers.llm.llm_settings import PROMPT_BLOCK
    from helpers.local_models.llama_prefix import block_aligned_llama

    shared = [
        [batch[0][0], {"role": "user", "content": batch[0][1]["content"] + "\n" + m[1]["content"][-150:]}]
        for m in batch
    ]
    settings = {
        "llama-cpp-python, flash_attn=False": (False, None),
        "llama-cpp-python, flash_attn=True": (True, None),
        f"whole blocks of {PROMPT_BLOCK}, flash_attn=True": (True, PROMPT_BLOCK),
    }
    out = {}
    for name, (flash_attn, block) in settings.items():
        if block is None:
            model = load(path, 1, flash_attn)
        else:
            model = block_aligned_llama(
                model_path=str(path),
                n_ctx=8192,
                n_threads=1,
                n_threads_batch=1,
                flash_attn=flash_attn,
                verbose=False,
                seed=0,
                block=block,
            )
        for prompt_set, messages_list in (("answer prompts", batch), ("one context, every question", shared)):
            start = time.perf_counter()
            fresh = [answer(model, m)["choices"][0]["message"]["content"] for m in messages_list]
            fresh_s = time.perf_counter() - start
            reused, tokens, start = [], 0, time.perf_counter()
            for messages in messages_list[::-1]:  # no reset: each call starts from the previous prompt's KV
                reused.append(
                    model.create_chat_completion(
                        messages=messages,
                        temperature=0.0,
                        max_tokens=160,
                        seed=0,
                        stop=answer_stops("es"),
                        repeat_penalty=1.1,
                    )["choices"][0]["message"]["content"]
                )
                tokens += getattr(model, "reused_tokens", 0) if block else 0
            out[f"{name}, {prompt_set}"] = {
                "identical": f"{sum(a == b for a, b in zip(fresh, reused[::-1]))}/{len(messages_list)}",
                "seconds_from_empty": round(fresh_s, 1),
                "seconds_reusing": round(time.perf_counter() - start, 1),
                **({"prompt_tokens_reused": tokens} if block else {}),
            }
            print(name, prompt_set, out[f"{name}, {prompt_set}"], flush=True)
    return out


# one process per setting: libgomp reads its variables when it loads
_GENERATION = """
import os, sys, time
from llama_cpp import Llama
m = Llama(model_path=sys.argv[1], n_ctx=2048, n_threads=os.cpu_count(), n_threads_batch=os.cpu_count(),
          flash_attn=True, verbose=False)
tokens = m.tokenize(("hola mundo " * 300).encode())
m.eval(tokens)
t = time.perf_counter()
for _ in range(64):
    m.eval([tokens[5]])
print((time.perf_counter() - t) / 64 * 1000)
"""
OPENMP = {
    "libgomp default": {},
    "OMP_WAIT_POLICY=PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
    "GOMP_SPINCOUNT=1000": {"GOMP_SPINCOUNT": "1000"},
}


def openmp_side(path) -> dict:
    """ms per generated token for each OpenMP setting, idle and beside one busy process."""
    clean = {k: v for k, v in os.environ.items() if k not in {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}}
    out = {}
    for load in ("idle", "busy"):
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load == "busy" else None
        try:
            for name, extra in OPENMP.items():
                done = subprocess.run(
                    [sys.executable, "-c", _GENERATION, str(path)],
                    env={**clean, **extra},
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                out.setdefault(name, {})[load] = round(float(done.stdout.split()[-1]), 1)
        finally:
            if hog:
                hog.kill()
    return out


# one process per model setting: its peak RSS is that model's alone
_MODEL_SIDE = """
import json, os, resource, sys, time
import helpers
from helpers.llm import LLM, LLMConfig
settings, batch = json.loads(sys.argv[1]), json.loads(sys.argv[2])
llm = LLM(LLMConfig(cache="off", max_tokens=160, temperature=0.0, **settings))
backend = llm.backend
start = time.perf_counter()
with backend._model() as model:
    load_s = time.perf_counter() - start
    tokens = model.tokenize(batch[0][1]["content"].encode())
    model.reset()
    t = time.perf_counter(); model.eval(tokens); prompt_s = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(32):
        model.eval([tokens[-1]])
    per_token_ms = (time.perf_counter() - t) / 32 * 1000
    model.reset()
llm.complete_many([batch[0]] * llm.workers)  # warm-up: every model of the pool loaded
start = time.perf_counter()
results = llm.complete_many(batch[1:])
seconds = time.perf_counter() - start
print(json.dumps({"load_s": round(load_s, 1), "prompt_tokens": len(tokens),
                  "prompt_tokens_per_s": round(len(tokens) / prompt_s, 1),
                  "generation_ms_per_token": round(per_token_ms, 1),
                  "seconds_per_answer": round(seconds / len(results), 2),
                  "output_tokens_per_answer": round(sum(r.record.output_tokens for r in results) / len(results), 1),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                  "answers": [r.text for r in results]}))
"""
MODEL_SETTINGS = {
    "smollm2-135m (q8_0, 2 models x 1 thread: the default)": {"model": "smollm2"},
    "qwen2.5-coder-1.5b (q4_k_m, 1 model x 2 threads, blocks of 64)": {
        "model": "qwen2.5-coder-1.5b",
        "local_workers": 1,
    },
    "qwen2.5-coder-1.5b (q4_k_m, 2 models x 1 thread, blocks of 64)": {
        "model": "qwen2.5-coder-1.5b",
        "local_workers": 2,
    },
    "qwen2.5-coder-1.5b (q4_k_m, 1 model x 2 threads, blocks of 512)": {
        "model": "qwen2.5-coder-1.5b",
        "local_workers": 1,
        "prompt_block": 512,
    },
    "qwen2.5-coder-1.5b (q8_0, 1 model x 2 threads, blocks of 64)": {
        "model": "qwen2.5-coder-1.5b",
        "local_workers": 1,
        "local_weights": "q8_0",
    },
}


def models_side(batch: list, only: str | None = None) -> dict:
    import json

    out = {}
    for name, settings in MODEL_SETTINGS.items():
        if only and only not in name:
            continue
        done = subprocess.run(
            [sys.executable, "-c", _MODEL_SIDE, json.dumps(settings), json.dumps(batch)],
            capture_output=True,
            text=True,
            timeout=3600,
        )
        if done.returncode != 0:
            out[name] = {"error": done.stderr.strip().splitlines()[-1:]}
        else:
            out[name] = json.loads(done.stdout.strip().splitlines()[-1])
        print(name, {k: v for k, v in out[name].items() if k != "answers"}, flush=True)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--out", default=None, help="default: results/benchmarks/llm_engine.json")
    parser.add_argument(
        "--sides",
        default="engines,threads,calling,prefix,openmp,models",
        help="which sides to run (comma-separated; default all)",
    )
    parser.add_argument("--models", default=None, help="models side: only the settings whose name holds this")
    args = parser.parse_args(argv)
    run = set(args.sides.split(","))
    batch = prompts(args.questions)
    shipped, q8 = bundled_gguf(), q8_0_copy(bundled_gguf())
    sides, report = (
        {},
        {"questions": len(batch), "cpus": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2)},
    )
    if "engines" in run:
        for name, path, flash_attn in (
            ("q4_1", shipped, False),
            ("q4_1+flash_attn", shipped, True),
            ("q8_0", q8, False),
            ("q8_0+flash_attn", q8, True),
        ):
            sides[name] = engine_side(path, flash_attn, batch, os.cpu_count() or 1)
            print(
                f"{name:<18} {sides[name]['seconds']:>7} s  prompt {sides[name]['prompt_tokens_per_s']:>4} tok/s  "
                f"generation {sides[name]['generation_ms_per_token']:>5} ms/token",
                flush=True,
            )
        reference = sides["q4_1"]["answers"]
        for row in sides.values():
            row["identical_answers"] = sum(a == b for a, b in zip(row.pop("answers"), reference))
            row["speedup_vs_q4_1"] = round(sides["q4_1"]["seconds"] / row["seconds"], 2)
        report["engines"] = sides
    if "threads" in run:
        report["threads_from_worker_threads"] = {
            f"{w} model(s) x {max(1, (os.cpu_count() or 1) // w)} thread(s)": threads_side(q8, batch, w) for w in (1, 2)
        }
    if "calling" in run:
        report["calling_thread_ms_per_token"] = calling_thread_side(q8)
    if "prefix" in run:
        report["prefix_reuse"] = prefix_reuse_side(q8, batch)
    if "openmp" in run:
        report["openmp_ms_per_token"] = openmp_side(q8)
    if "models" in run:
        report["models"] = models_side(batch, args.models)
    out = paths.write_json(args.out or paths.benchmark_output("llm_engine"), report)
    for name, row in sides.items():
        print(f"{name:<18} x{row['speedup_vs_q4_1']:<5} identical answers {row['identical_answers']}/{len(batch)}")
    for key, label in (
        ("threads_from_worker_threads", "threads (answers from worker threads)"),
        ("calling_thread_ms_per_token", "calling thread, ms per generated token"),
        ("prefix_reuse", "answers after other prompts vs from an empty context"),
        ("openmp_ms_per_token", "OpenMP, ms per generated token (idle / beside a busy process)"),
        ("models", "models side by side"),
    ):
        if key in report:
            print(f"{label}:", report[key])
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
