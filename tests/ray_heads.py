"""A real Ray head on 127.0.0.1 for the tests, started as the README says, and stopped by its own
processes only (`ray stop --force` would stop every Ray instance on the machine)."""

import os
import subprocess
import sys
from pathlib import Path

# Ray 2.60 on Linux swaps --node-ip-address=127.0.0.1 for the machine's address unless this is 0
# (helpers.ray_cluster.KEEP_LOOPBACK_ENV)
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}


def start_head(temp: str, port: int, *, num_cpus: int = 2, env: dict | None = None) -> subprocess.CompletedProcess:
    """`ray start --head` on 127.0.0.1:`port` with its files in `temp` (short: Ray's socket paths
    must fit in 107 bytes)."""
    ray = Path(sys.executable).with_name("ray")
    return subprocess.run(
        [
            str(ray),
            "start",
            "--head",
            f"--port={port}",
            "--node-ip-address=127.0.0.1",
            f"--num-cpus={num_cpus}",
            "--include-dashboard=false",
            f"--temp-dir={temp}",
        ],
        env={**(env or os.environ), **LOOPBACK_ENV},
        capture_output=True,
        text=True,
        timeout=180,
    )


def stop_head(temp: str, port: int) -> None:
    """Stop the head started with --temp-dir `temp` and --port `port`, and its children."""
    import psutil

    mine = [
        p
        for p in psutil.process_iter(["cmdline"])
        if p.pid != os.getpid()
        and any(temp in arg or arg == f"--address=127.0.0.1:{port}" for arg in p.info["cmdline"] or [])
    ]
    mine += [child for p in mine for child in p.children(recursive=True)]
    for proc in mine:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    # a short grace: the head's gcs_server and monitor do not exit on SIGTERM (measured: still
    # alive after 15 s), and a test head has nothing to save
    for proc in psutil.wait_procs(mine, timeout=3)[1]:
        proc.kill()
