"""Two llama.cpp builds side by side (AVX2 only, and with AVX-512): prompt and generation speed of
the 1.5B model on one thread, on the default run's own answer prompts, and whether their greedy
answers agree.

  python benchmarks/llama_builds.py --builds avx2=/tmp/lcp2,avx512=installed
        [--run results/obstetrics-default-8eb4bca9] [--prompts 4] [--rounds 2] [--out F]

A build is a folder that `pip install --no-deps --target FOLDER WHEEL` filled (put first on
PYTHONPATH), or `installed` (the venv's). Each build runs in its own process, the builds
alternating for `--rounds` rounds; the process evaluates each prompt from an empty context in
blocks of 64 (the default's prompt_block, flash attention on) and then generates up to 48 tokens
greedily. How the builds were made: the Makefile's LLAMA_CMAKE_ARGS, with and without the
AVX-512 flags (`CMAKE_ARGS=... pip wheel --no-deps --no-cache-dir llama-cpp-python==0.3.36`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(run: Path, prompts: int) -> dict:
    """In this process: the speeds of the llama_cpp it imports."""
    import llama_cpp
    from llama_cpp import Llama

    from helpers.generation.answering import build_messages
    from helpers.local_models.local_weights import llama_kernels, resolve_local_model

    records = [json.loads(line) for line in (run / "records.jsonl").open()]
    answers = [r for r in records if r.get("kind") == "answer"][:prompts]
    model = Llama(
        model_path=str(resolve_local_model("qwen2.5-coder-1.5b")),
        n_ctx=4096,
        n_threads=1,
        n_threads_batch=1,
        n_batch=64,
        n_ubatch=64,
        flash_attn=True,
        verbose=False,
        seed=0,
    )
    prompt_tokens = prompt_s = generated = generate_s = 0
    texts = []
    for r in answers:
        messages = build_messages(r["question"], [c["text"] for c in r["contexts"]], r["language"])
        chat = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        tokens = model.tokenize((chat + "<|im_start|>assistant\n").encode(), add_bos=False, special=True)
        model.reset()
        start = time.perf_counter()
        model.eval(tokens)
        prompt_s += time.perf_counter() - start
        prompt_tokens += len(tokens)
        start = time.perf_counter()  # the prompt is in the KV: this is generation (and one token)
        out = model.create_completion(prompt=tokens, max_tokens=48, temperature=0.0)
        generate_s += time.perf_counter() - start
        generated += out["usage"]["completion_tokens"]
        texts.append(out["choices"][0]["text"])
    return {
        "llama_cpp": llama_cpp.__file__,
        "kernels": llama_kernels() or "avx2",
        "prompt_tokens_per_s": round(prompt_tokens / prompt_s, 1),
        "generated_tokens_per_s": round(generated / generate_s, 2),
        "answers": texts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--builds", default="avx2=/tmp/lcp2,avx512=installed")
    parser.add_argument("--run", type=Path, default=ROOT / "results" / "obstetrics-default-8eb4bca9")
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)  # the child process
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks" / "llama_builds.json")
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.run, args.prompts)))
        return
    builds = dict(item.split("=", 1) for item in args.builds.split(","))
    rounds: dict[str, list[dict]] = {name: [] for name in builds}
    for _ in range(args.rounds):
        for name, folder in builds.items():
            env = dict(os.environ)
            if folder != "installed":
                env["PYTHONPATH"] = os.pathsep.join([folder, str(ROOT / "src"), env.get("PYTHONPATH", "")])
            command = [sys.executable, __file__, "--measure", "--run", str(args.run), "--prompts", str(args.prompts)]
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            rounds[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    report = {"run": str(args.run), "prompts": args.prompts, "rounds": args.rounds, "builds": {}}
    for name, results in rounds.items():
        report["builds"][name] = {
            "kernels": results[0]["kernels"],
            "prompt_tokens_per_s": statistics.median(r["prompt_tokens_per_s"] for r in results),
            "generated_tokens_per_s": statistics.median(r["generated_tokens_per_s"] for r in results),
            "answers": results[0]["answers"],
        }
    names = list(builds)
    if len(names) == 2:
        a, b = (report["builds"][n] for n in names)
        report[f"{names[1]}_over_{names[0]}"] = {
            "prompt": round(b["prompt_tokens_per_s"] / a["prompt_tokens_per_s"], 2),
            "generation": round(b["generated_tokens_per_s"] / a["generated_tokens_per_s"], 2),
            "answers_identical": f"{sum(x == y for x, y in zip(a['answers'], b['answers']))} of {len(a['answers'])}",
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    print(json.dumps({k: v for k, v in report.items() if k != "builds"}, indent=1))
    for name, build in report["builds"].items():
        print(name, build["kernels"], build["prompt_tokens_per_s"], build["generated_tokens_per_s"])


if __name__ == "__main__":
    main()
