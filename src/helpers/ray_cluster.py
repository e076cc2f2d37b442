"""Ray start-up: a local instance on loopback only, or a connection to a cluster.

    ray = ray_init(address)      # None: RAY_ADDRESS, else a local instance of this machine's CPUs

`address`: 'HOST:PORT' of a head started with `ray start --head`, 'ray://HOST:PORT' for Ray
Client, or the RAY_ADDRESS environment variable; none of them: `ray.init()` starts a local
instance. What runs on it: sweeps (helpers.experiment.sweep.run_on_ray) and corpus embedding
(helpers.retrieval.embedders.models.embed_on_ray). A task Ray retries after its worker died is retried
up to MAX_RETRIES times.

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
LOOPBACK_HEAD = (
    f"{KEEP_LOOPBACK_ENV}=0 ray start --head --node-ip-address={LOOPBACK} --include-dashboard=false --port=PORT"
)


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
    saved_flag = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)  # None: a Ray without it
    os.environ[KEEP_LOOPBACK_ENV] = "0"  # for the processes Ray starts now, which inherit it
    if saved_flag is not None:
        ray_constants.ENABLE_RAY_CLUSTER = False  # this process read the variable when it imported ray
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
            paths.private_dir(token.parent)  # ~/.ray, Ray's own folder
        paths.private_file(token)


def _start_local(ray, env: dict) -> None:
    """A Ray instance of this machine's CPUs, every port on 127.0.0.1 (checked, not assumed)."""
    with _loopback_node():
        ray.init(
            num_cpus=os.cpu_count() or 1,
            include_dashboard=False,
            runtime_env=env,
            log_to_driver=False,
            _node_ip_address=LOOPBACK,
        )
    _tighten_ray_token()
    node = ray.util.get_node_ip_address()
    if node != LOOPBACK:
        ray.shutdown()
        raise RayConnectionError(
            f"the local Ray instance registered node address {node}, not {LOOPBACK}, so its ports would be "
            f"open on the network (this Ray version ignores {KEEP_LOOPBACK_ENV}=0); stopped it. Start a head "
            f"yourself with `{LOOPBACK_HEAD}` and pass --address 127.0.0.1:PORT (or RAY_ADDRESS)"
        )


def _use_local_token() -> None:
    """Send this machine's Ray token, if there is one and RAY_AUTH_MODE is unset: a head on this
    machine turned token authentication on when it found the same token (`ray start` does), but
    Ray enables it on the driver's side by itself only for address 'auto'. A head without
    authentication accepts a driver that sends a token (checked with Ray 2.60)."""
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication
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
            "and give the cluster's token (RAY_AUTH_TOKEN_PATH, or ~/.ray/auth_token)"
        ) from None


def ray_init(address: str | None):
    """The `ray` module, initialised: joined to `address` (or RAY_ADDRESS), else a local instance."""
    import ray  # optional and slow to import: only where Ray is used

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
