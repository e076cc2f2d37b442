"""The prompt store (helpers.local_models.llama_prefix.PromptStore) on the default run: the same config run
cold twice, side by side in one invocation, without the store (`prompt_store_mb: 0`: each model
reuses only its previous prompt's blocks) and with it, then the answers compared word for word.

  python benchmarks/prompt_store.py [--config configs/default.yaml] [--sides off,on]
                                    [--workdir /tmp/prompt-store] [--out results/benchmarks/prompt_store.json]

Each side is `python -m helpers run` in a subprocess with an empty LLM cache (its own
HELPERS_CACHE_DIR, the machine's embeddings copied in, so only the answers are cold) and its own
results folder. Reported per side: wall seconds, the run's LLM seconds and tokens, and the prompt
tokens each side could reuse, counted on the run's own answer prompts with the model's tokenizer
(the previous prompt of the same model, approximated as every other prompt, against any prompt
answered before). The ratio is on/off, measured in this one invocation.
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

from helpers.paths import CACHE_DIR  # noqa: E402


def run_side(name: str, config: dict, workdir: Path) -> dict:
    side = workdir / name
    shutil.rmtree(side, ignore_errors=True)
    (side / "cache").mkdir(parents=True)
    if (CACHE_DIR / "embeddings.sqlite").exists():
        shutil.copy2(CACHE_DIR / "embeddings.sqlite", side / "cache" / "embeddings.sqlite")
    path = side / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    env = dict(os.environ, HELPERS_CACHE_DIR=str(side / "cache"), HELPERS_RESULTS_DIR=str(side / "results"))
    start = time.perf_counter()
    with open(side / "run.log", "w") as log:
        code = subprocess.call(
            [sys.executable, "-m", "helpers", "run", str(path)], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"side {name}: the run exited {code}; see {side / 'run.log'}")
    (run_dir,) = [p for p in (side / "results").iterdir() if (p / "summary.json").exists()]
    summary = json.loads((run_dir / "summary.json").read_text())
    usage = summary["llm_usage"][config["generation_llm"]]
    records = [json.loads(line) for line in (run_dir / "records.jsonl").open()]
    answers = {(r["architecture"], r["qid"]): r["answer"] for r in records if r.get("kind") == "answer"}
    return {
        "wall_s": round(wall, 1),
        "run_s": summary["seconds"],
        "llm_latency_s": usage["latency_s"],
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage["output_tokens"],
        "answers": answers,
        "records": records,
    }


def reusable_tokens(records: list[dict], config: dict) -> dict:
    """Prompt tokens reusable in whole blocks, in the run's order (architecture by architecture,
    questions in order), without the store (the same model's previous prompt) and with it."""
    import numpy as np
    from llama_cpp import Llama

    from helpers.generation.answering import build_messages
    from helpers.local_models.llama_prefix import shared_prefix
    from helpers.local_models.local_weights import resolve_local_model

    llm = next(x for x in config["llms"] if x["name"] == config["generation_llm"])
    block = llm.get("prompt_block", 64)
    vocab = Llama(model_path=str(resolve_local_model(llm["model"])), vocab_only=True, verbose=False)
    order = {a: i for i, a in enumerate(config["architectures"])}
    answers = sorted(
        (r for r in records if r.get("kind") == "answer"),
        key=lambda r: (order[r["architecture"]], int("".join(c for c in r["qid"] if c.isdigit()) or 0), r["qid"]),
    )
    prompts = []
    for r in answers:
        messages = build_messages(r["question"], [c["text"] for c in r["contexts"]], r["language"])
        # ChatML, the template of both bundled models (Qwen2.5 and SmolLM2)
        chat = (
            "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
            + "<|im_start|>assistant\n"
        )
        prompts.append(np.asarray(vocab.tokenize(chat.encode(), add_bos=False, special=True)))
    workers = llm.get("local_workers") or 1
    previous = store = 0
    for i, tokens in enumerate(prompts):
        limit = len(tokens) - 1
        if i >= workers:
            previous += min(shared_prefix(prompts[i - workers], tokens), limit) // block * block
        store += max((min(shared_prefix(p, tokens), limit) // block * block for p in prompts[:i]), default=0)
    total = int(sum(len(p) for p in prompts))
    return {"prompt_tokens": total, "block": block, "reusable_previous_only": previous, "reusable_with_store": store}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--sides", default="off,on")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/prompt-store"))
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "benchmarks" / "prompt_store.json")
    args = parser.parse_args()
    base = yaml.safe_load((ROOT / args.config).read_text())
    report = {"config": args.config, "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "sides": {}}
    report["commit"] = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    results = {}
    for name in args.sides.split(","):
        config = json.loads(json.dumps(base))
        for llm in config["llms"]:
            llm["prompt_store_mb"] = 0 if name == "off" else llm.get("prompt_store_mb", 1024)
        results[name] = run_side(name, config, args.workdir)
        print(name, {k: v for k, v in results[name].items() if k not in ("answers", "records")}, flush=True)
    for name, side in results.items():
        report["sides"][name] = {k: v for k, v in side.items() if k not in ("answers", "records")}
    if {"off", "on"} <= results.keys():
        off, on = results["off"], results["on"]
        report["on_over_off"] = {k: round(on[k] / off[k], 3) for k in ("wall_s", "run_s", "llm_latency_s")}
        same = sum(on["answers"].get(key) == text for key, text in off["answers"].items())
        report["answers_identical"] = f"{same} of {len(off['answers'])}"
    first = next(iter(results.values()))
    report["reusable"] = reusable_tokens(first["records"], base)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
