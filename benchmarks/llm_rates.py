"""A run's compute floor: the local model's prompt and generation rates, measured here, applied to
the tokens the run used.

  python benchmarks/llm_rates.py [--config configs/default.yaml] [--summary results/RUN/summary.json]
                                 [--prompt-tokens 560] [--generate 96] [--repeats 3]

The model is loaded exactly as the run loads it (helpers.llm.backends.LlamaCppBackend: the same
weights, threads and prompt block), and fed a Spanish prompt cut from the guideline's chunks:
- prompt tokens/s: a fresh context (reset) evaluating --prompt-tokens tokens, one new token;
- generated tokens/s: the same prompt, --generate tokens at temperature 0, minus the first call.
The median of --repeats is kept. With --summary (a finished run's summary.json) the floor is
  input_tokens / (prompt tokens/s x workers) + output_tokens / (generated tokens/s x workers)
(the run's `local_workers` models answer side by side, one thread each), printed beside the
run's own answering seconds (its timeline's answer steps). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import _offline  # noqa: F401  (the offline defaults, before any hub library)
from helpers.data import load_dataset
from helpers.experiment.config import load_config
from helpers.llm.backends import LlamaCppBackend


def spanish_prompt(n_tokens: int, model) -> list[int]:
    """The guideline's first chunks, tokenised, cut to n_tokens."""
    data = load_dataset("obstetrics")
    text = " ".join(doc["text"] for doc in list(data.corpus.values())[:40])
    return model.tokenize(text.encode("utf-8"))[:n_tokens]


def timed_completion(model, tokens: list[int], max_tokens: int) -> tuple[float, int]:
    model.reset()  # no reuse of an earlier prompt: every call pays its whole prompt
    start = time.perf_counter()
    out = model.create_completion(tokens, max_tokens=max_tokens, temperature=0.0, stop=[])
    return time.perf_counter() - start, out["usage"]["completion_tokens"]


def measure(config_path: str, prompt_tokens: int, generate: int, repeats: int) -> dict:
    config = load_config(config_path)
    llm = next(entry for entry in config.llms if entry.name == config.generation_llm)
    backend = LlamaCppBackend(llm)
    model = backend._load()
    tokens = spanish_prompt(prompt_tokens, model)
    timed_completion(model, tokens, 1)  # warm-up: pages the weights in
    prefill, decode = [], []
    for _ in range(repeats):
        seconds_one, _ = timed_completion(model, tokens, 1)
        seconds_many, generated = timed_completion(model, tokens, generate)
        prefill.append(len(tokens) / seconds_one)
        decode.append((generated - 1) / max(seconds_many - seconds_one, 1e-9))
    return {
        "model": llm.model,
        "workers": backend.workers,
        "threads_per_worker": backend.threads,
        "weights": backend.weights,
        "prompt_tokens_measured": len(tokens),
        "prompt_tokens_per_s": round(statistics.median(prefill), 1),
        "generated_tokens_per_s": round(statistics.median(decode), 2),
    }


def floor(rates: dict, summary: dict) -> dict:
    """The run's answering time if the models did nothing but its tokens, side by side."""
    usage = summary["llm_usage"]
    input_tokens = sum(u["input_tokens"] for u in usage.values())
    reused = sum(u.get("reused_input_tokens", 0) for u in usage.values())
    output_tokens = sum(u["output_tokens"] for u in usage.values())
    workers = rates["workers"]

    def seconds(prompt_tokens: int) -> float:
        return prompt_tokens / (rates["prompt_tokens_per_s"] * workers) + output_tokens / (
            rates["generated_tokens_per_s"] * workers
        )

    answering = sum(s["seconds"] for s in summary["timeline"] if s["step"].startswith("answer "))
    every = seconds(input_tokens)  # every prompt token computed (the floor)
    computed = seconds(input_tokens - reused)  # reused prompt blocks (helpers.local_models.llama_prefix) are not
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "floor_s": round(every, 1),
        "answering_s": round(answering, 1),
        "run_s": summary["seconds"],
        "answering_over_floor": round(answering / every, 2),
        "reused_input_tokens": reused,
        "floor_computed_s": round(computed, 1),
        "answering_over_floor_computed": round(answering / computed, 2),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--summary", type=Path, default=None, help="a finished run's summary.json")
    parser.add_argument("--prompt-tokens", type=int, default=560, help="the default run's mean prompt (45,152 / 80)")
    parser.add_argument("--generate", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    result = measure(args.config, args.prompt_tokens, args.generate, args.repeats)
    if args.summary:
        result["floor"] = floor(result, json.loads(args.summary.read_text()))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
