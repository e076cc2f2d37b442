"""Sweeps on Ray, and corpus embedding spread over Ray workers.

Sweeps: one task per run, on this machine (`ray.init()` starts a local instance) or on a
cluster (`address`: 'HOST:PORT' of a head started with `ray start --head`, 'ray://HOST:PORT' for
Ray Client, or the RAY_ADDRESS environment variable).

Runs never write the same files (one run directory each), and a run's store is append-only, so a
worker that dies mid-run loses no finished sample: Ray retries the task (`max_retries`), and the
retry resumes the run where the dead worker left it. Every worker must see the same project
checkout and `results/` (one machine, or a shared file system), as `ray start` workers here do.

The local instance listens on 127.0.0.1 only: a Ray port accepts tasks, that is code to run, from
whoever reaches it. A head on this machine for the `address` route is started the same way (see
LOOPBACK_HEAD); a cluster of several machines is the operator's to secure (token authentication,
a firewall, a private network).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from helpers import paths
from helpers.errors import UserError
from helpers.llm.keys import is_loopback

MAX_RETRIES = 3
LOOPBACK = "127.0.0.1"
# Ray (2.60, Linux) swaps a node address of 127.0.0.1 for the machine's network address, and
# then its GCS, raylet, agents and workers listen on every interface; with this variable "0" it
# keeps 127.0.0.1 and they listen on loopback only (measured with psutil, tests/test_security_storage.py)
KEEP_LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
# how to start a head on this machine that the `address` route reaches on loopback only
LOOPBACK_HEAD = (f"{KEEP_LOOPBACK_ENV}=0 ray start --head --node-ip-address={LOOPBACK} "
                 "--include-dashboard=false --port=PORT")


class RayConnectionError(UserError, RuntimeError):
    """No Ray cluster at the address given, or a local instance that would not stay on loopback."""


def _host(address: str) -> str:
    """The host of 'HOST:PORT', 'ray://HOST:PORT' or '[::1]:PORT'."""
    rest = address.split("://", 1)[-1]
    host = rest.rsplit(":", 1)[0] if rest.count(":") == 1 or rest.startswith("[") else rest
    return host.strip("[]")


@contextmanager
def _loopback_node():
    """While inside, Ray keeps 127.0.0.1 as this machine's node address (so it binds loopback)."""
    from ray._private import ray_constants

    saved_env = os.environ.get(KEEP_LOOPBACK_ENV)
    saved_flag = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)   # None: a Ray without it
    os.environ[KEEP_LOOPBACK_ENV] = "0"        # for the processes Ray starts now, which inherit it
    if saved_flag is not None:
        ray_constants.ENABLE_RAY_CLUSTER = False   # this process read the variable when it imported ray
    try:
        yield
    finally:
        if saved_flag is not None:
            ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(KEEP_LOOPBACK_ENV, None)
        else:
            os.environ[KEEP_LOOPBACK_ENV] = saved_env


def _tighten_ray_token() -> None:
    """Loopback ports are open to every user of this machine; Ray's token authentication (on by
    default for a local instance in Ray 2.60) keeps them out only if they cannot read the token,
    which Ray writes world-readable (~/.ray/auth_token, 0644). Make it the owner's alone."""
    chosen = os.environ.get("RAY_AUTH_TOKEN_PATH")
    token = Path(chosen) if chosen else Path.home() / ".ray" / "auth_token"
    if token.is_file():
        if not chosen:
            paths.private_dir(token.parent)   # ~/.ray, Ray's own folder
        paths.private_file(token)


def _start_local(ray, env: dict) -> None:
    """A Ray instance of this machine's CPUs, every port on 127.0.0.1 (checked, not assumed)."""
    with _loopback_node():
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, runtime_env=env, log_to_driver=False,
                 _node_ip_address=LOOPBACK)
    _tighten_ray_token()
    node = ray.util.get_node_ip_address()
    if node != LOOPBACK:
        ray.shutdown()
        raise RayConnectionError(
            f"the local Ray instance registered node address {node}, not {LOOPBACK}, so its ports would be "
            f"open on the network (this Ray version ignores {KEEP_LOOPBACK_ENV}=0); stopped it. Start a head "
            f"yourself with `{LOOPBACK_HEAD}` and pass --address 127.0.0.1:PORT (or RAY_ADDRESS)")


def _use_local_token() -> None:
    """Send this machine's Ray token, if there is one and RAY_AUTH_MODE is unset: a head on this
    machine turned token authentication on when it found the same token (`ray start` does), but
    Ray enables it on the driver's side by itself only for address 'auto'. A head without
    authentication accepts a driver that sends a token (checked with Ray 2.60)."""
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:   # a Ray without token authentication
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _connect(ray, address: str, env: dict) -> None:
    """Join the cluster at `address`; a loopback address keeps this driver on loopback too."""
    try:
        if is_loopback(_host(address)) and "://" not in address:
            _use_local_token()
            with _loopback_node():
                ray.init(address=address, runtime_env=env, log_to_driver=False)
        else:
            ray.init(address=address, runtime_env=env, log_to_driver=False)
    except ConnectionError as exc:
        raise RayConnectionError(
            f"no Ray cluster answered at {address!r} (--address / RAY_ADDRESS): {exc}. Start a head on this "
            f"machine with `{LOOPBACK_HEAD}`; if the cluster uses token authentication, set RAY_AUTH_MODE=token "
            "and give the cluster's token (RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token)") from None


def _ray_init(address: str | None):
    import ray

    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = address or os.environ.get("RAY_ADDRESS")
    # workers import the package from this checkout, and keep the project's paths
    env = {"env_vars": {key: value for key, value in os.environ.items() if key.startswith("HELPERS_")}}
    if address:
        _connect(ray, address, env)
    else:
        _start_local(ray, env)
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
