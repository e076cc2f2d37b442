"""Starting serve-llm: from the command line (`python -m helpers serve-llm`), or for the duration
of a block in a subprocess (`local_server`, the tests' and benchmarks' real local stand-in).

    with local_server(extra_args=["--responder", "fast", "--rpm", "600"]) as base_url:
        ...  # an OpenAI-compatible server on 127.0.0.1 that behaves like a hosted API
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from urllib.request import Request, urlopen

from helpers.errors import UserError
from helpers.llm.backends import build_backend
from helpers.llm.keys import is_loopback
from helpers.llm.llm_settings import LLMConfig
from helpers.llm.request_guards import TOKEN_ENV, checked_settings
from helpers.llm.responder import SchemaResponder
from helpers.llm.server import DEFAULT_MAX_CONNECTIONS, DEFAULT_TIMEOUT_S, build_server
from helpers.llm.simulate import Simulation

RESPONDERS = ("model", "fast")  # the bundled model, or helpers.llm.responder (no model: throughput tests)


def serve(
    host: str = "127.0.0.1",
    port: int = 8011,
    local_backend: str = "llama-cpp",
    model: str = "smollm2",
    *,
    token: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    responder: str = "model",
    simulation: Simulation | None = None,
) -> None:
    token = checked_settings(host, token, timeout_s, max_connections)  # before the model loads: fails at once
    if not is_loopback(host):
        print(
            f"warning: serve-llm on {host or '(all interfaces)'} is reachable from other machines; "
            "every request must send 'Authorization: Bearer <token>'",
            file=sys.stderr,
            flush=True,
        )
    if responder == "fast":
        backend, what = SchemaResponder(), "the fast deterministic responder"
    else:
        backend, what = (
            build_backend(LLMConfig(provider="local", model=model, local_backend=local_backend)),
            local_backend,
        )
        backend.chat([{"role": "user", "content": "hi"}], temperature=0, max_tokens=1, seed=0, timeout=None)  # load now
    # bound once loaded: until then a client is refused at once rather than left waiting in the backlog
    server = build_server(
        backend,
        model,
        host,
        port,
        token=token,
        timeout_s=timeout_s,
        max_connections=max_connections,
        simulation=simulation,
    )
    hosted = f", simulating a hosted API: {simulation}" if simulation is not None and simulation.active else ""
    print(f"serving {model} ({what}) at http://{host}:{port}/v1{hosted}", flush=True)
    server.serve_forever()


def add_arguments(parser) -> None:
    """serve-llm's flags (helpers.__main__)."""
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--local-backend", default="llama-cpp", choices=["llama-cpp", "transformers"])
    parser.add_argument("--model", default="smollm2", help="'smollm2', 'qwen2.5-coder-1.5b' or a .gguf path")
    parser.add_argument(
        "--token",
        help="require 'Authorization: Bearer TOKEN' (default: $SERVE_LLM_TOKEN; required "
        "off loopback; the variable keeps it out of the process list)",
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before an idle or slow client is dropped")
    parser.add_argument("--max-connections", type=int, default=64, help="connections served at once (503 beyond)")
    parser.add_argument(
        "--responder",
        default="model",
        choices=RESPONDERS,
        help="model: the local model answers; fast: a deterministic responder with no model (well-formed "
        "answers and JSON in microseconds, for throughput tests of the hosted path)",
    )
    hosted = parser.add_argument_group("behave like a hosted API (helpers.llm.simulate)")
    hosted.add_argument("--simulate-latency", type=float, default=0.0, metavar="MS", help="per-call latency")
    hosted.add_argument("--jitter", type=float, default=0.0, metavar="MS", help="+- uniform jitter on the latency")
    hosted.add_argument("--tokens-per-s", type=float, help="output tokens per second added to the latency")
    hosted.add_argument("--rpm", type=float, help="requests per minute (429 + Retry-After beyond)")
    hosted.add_argument("--tpm", type=float, help="tokens per minute (429 + Retry-After beyond)")
    hosted.add_argument("--max-in-flight", type=int, help="calls in progress at once (429 beyond)")
    hosted.add_argument("--fail-rate", type=float, default=0.0, help="share of calls that fail (0-1)")
    hosted.add_argument(
        "--failures", default="500,hang,drop", help="the kinds an injected failure is drawn from: 500, hang, drop"
    )
    hosted.add_argument("--hang-s", type=float, default=30.0, help="how long a hung call holds its connection")
    hosted.add_argument("--seed", type=int, default=0, help="seeds the failures and the jitter")
    hosted.add_argument("--ledger", help="append one JSON line per answered call (digest of the request) to this file")


def serve_cli(args) -> int:
    """`python -m helpers serve-llm`."""
    try:
        simulation = Simulation(
            latency_ms=args.simulate_latency,
            jitter_ms=args.jitter,
            tokens_per_s=args.tokens_per_s,
            rpm=args.rpm,
            tpm=args.tpm,
            max_in_flight=args.max_in_flight,
            fail_rate=args.fail_rate,
            failures=tuple(kind.strip() for kind in args.failures.split(",") if kind.strip()),
            hang_s=args.hang_s,
            seed=args.seed,
            ledger=args.ledger,
        )
    except ValueError as exc:
        raise UserError(f"serve-llm: {exc}") from None
    serve(
        args.host,
        args.port,
        args.local_backend,
        args.model,
        token=args.token,
        timeout_s=args.timeout,
        max_connections=args.max_connections,
        responder=args.responder,
        simulation=simulation,
    )
    return 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def local_server(
    port: int | None = None,
    local_backend: str = "llama-cpp",
    startup_timeout: float = 120,
    token: str | None = None,
    extra_args: list[str] | None = None,
):
    """Run the server in a subprocess for the duration of the block; yields its base URL.
    `token`: requests must carry it as a bearer token (a hosted API's key, stood in for).
    `extra_args`: more serve-llm flags, e.g. the hosted-API simulation's."""
    port = port or free_port()
    # on loopback: no token unless one is asked for (given in the environment, never on the command line)
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | ({TOKEN_ENV: token} if token else {})
    command = [sys.executable, "-m", "helpers", "serve-llm", "--port", str(port), "--local-backend", local_backend]
    process = subprocess.Popen(
        command + list(extra_args or []), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if process.poll() is not None:
                assert process.stdout is not None  # stdout=PIPE above
                raise RuntimeError(f"the local LLM server exited: {process.stdout.read()[-2000:]}")
            try:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                with urlopen(Request(f"{base_url}/models", headers=headers), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the local LLM server did not start within {startup_timeout}s") from None
                time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
