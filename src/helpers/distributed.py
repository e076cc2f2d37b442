"""Sweeps on Ray, and corpus embedding spread over Ray workers.

Sweeps: one task per run, on this machine (`ray.init()` starts a local instance) or on a
cluster (`address`: 'HOST:PORT' of a head started with `ray start --head`, 'ray://HOST:PORT' for
Ray Client, or the RAY_ADDRESS environment variable).

Runs never write the same files (one run directory each), and a run's store is append-only, so a
worker that dies mid-run loses no finished sample: Ray retries the task (`max_retries`), and the
retry resumes the run where the dead worker left it. Every worker must see the same project
checkout and `results/` (one machine, or a shared file system), as `ray start` workers here do.
"""
from __future__ import annotations

import os

MAX_RETRIES = 3


def _ray_init(address: str | None):
    import ray

    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = address or os.environ.get("RAY_ADDRESS")
    # workers import the package from this checkout, and keep the project's paths
    env = {"env_vars": {key: value for key, value in os.environ.items() if key.startswith("HELPERS_")}}
    if address:
        ray.init(address=address, runtime_env=env, log_to_driver=False)
    else:
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, runtime_env=env, log_to_driver=False)
    return ray


def run_on_ray(runs: list[dict], *, address: str | None = None, results_dir=None, progress: bool = True,
               max_retries: int = MAX_RETRIES) -> dict[str, dict]:
    """{run_id: status} of every run in `runs` (from helpers.experiment.sweep.expand), each run
    one Ray task of one CPU; a worker process that dies is retried up to `max_retries` times."""
    from tqdm.auto import tqdm

    from helpers.experiment.sweep import run_one

    ray = _ray_init(address)
    task = ray.remote(num_cpus=1, max_retries=max_retries)(run_one)
    pending = {task.remote(r["config"].model_dump(mode="json"), str(results_dir) if results_dir else None): r["run_id"]
               for r in runs}
    statuses: dict[str, dict] = {}
    bar = tqdm(total=len(pending), desc="sweep on ray", unit="run", disable=not progress)
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        run_id = pending.pop(done[0])
        try:
            summary = ray.get(done[0])
            statuses[run_id] = {"status": "finished" if summary["ok"] else "failed",
                                "failure_rate": summary["failure_rate"]}
        except Exception as exc:  # the run's own error, or retries exhausted: recorded, the sweep goes on
            statuses[run_id] = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]}
        bar.update(1)
    bar.close()
    return statuses


def _embed_batch(embedder: str | None, language: str, texts: list[str]):
    """A Ray task: document embeddings of `texts`, returned to the caller (so a cluster needs no
    shared file system for the cache)."""
    from helpers.retrieval.embeddings import make_embedder

    return make_embedder(embedder, language).embed_documents(texts)


def embed_on_ray(cached, embedder: str | None, language: str, texts: list[str], *, batch_size: int = 256,
                 address: str | None = None, progress: bool = True) -> int:
    """Fill `cached` (a CachedEmbedder) with the document embeddings of `texts` it lacks, one Ray
    task per batch of `batch_size`; each batch is cached as it comes back, so an interrupt loses
    little. Returns how many texts were embedded on the workers."""
    from tqdm.auto import tqdm

    missing = cached.missing_documents(texts)
    if not missing:
        return 0
    ray = _ray_init(address)
    task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(_embed_batch)
    batches = {task.remote(embedder, language, missing[i:i + batch_size]): missing[i:i + batch_size]
               for i in range(0, len(missing), batch_size)}
    bar = tqdm(total=len(missing), desc=f"embedding on ray ({cached.name.split('|')[0]})", unit="text",
               disable=not progress)
    while batches:
        done, _ = ray.wait(list(batches), num_returns=1)
        part = batches.pop(done[0])
        cached.add_documents(part, ray.get(done[0]))
        bar.update(len(part))
    bar.close()
    return len(missing)
