"""A small OpenAI-compatible chat server over the bundled local model.

`python -m helpers serve-llm --port 8011` serves POST /v1/chat/completions and GET /v1/models
(also under /openai/v1/, the path Groq's SDK uses), so any OpenAI or Groq client, LangChain or
ragas can talk to the offline model. It is what the tests use as a real local stand-in for hosted
providers. Non-streaming only.
"""
from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.request import urlopen

from helpers.llm.backends import make_backend
from helpers.llm.config import LLMConfig


def sampling_options(request: dict) -> dict:
    """`stop` (a string or a list, as in OpenAI's API), a repeat penalty, under llama.cpp's
    server name `repeat_penalty` or vLLM's `repetition_penalty` (clients send either through
    `extra_body`; absent, the server's own setting applies), and OpenAI's `response_format`
    (json_object, or json_schema: constrained by a grammar on the llama.cpp backend)."""
    options = {}
    stop = request.get("stop")
    if stop:
        stop = [stop] if isinstance(stop, str) else stop
        if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
            raise ValueError("stop must be a non-empty string or a list of them")
        options["stop"] = stop
    penalty = request.get("repeat_penalty", request.get("repetition_penalty"))
    if penalty is not None:
        if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or penalty <= 0:
            raise ValueError("repeat_penalty must be a positive number")
        options["repeat_penalty"] = float(penalty)
    fmt = request.get("response_format")
    if fmt:
        if not isinstance(fmt, dict) or fmt.get("type") not in ("json_object", "json_schema", "text"):
            raise ValueError("response_format must be {'type': 'json_object' | 'json_schema' | 'text', ...}")
        if fmt["type"] == "json_schema" and not isinstance((fmt.get("json_schema") or {}).get("schema"), dict):
            raise ValueError("response_format json_schema needs json_schema.schema (an object)")
        if fmt["type"] != "text":
            options["response_format"] = fmt
    return options


def make_handler(backend, model_name: str):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet: request lines would clutter test output
            pass

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/").endswith("/v1/models"):
                return self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})
            return self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            if not self.path.rstrip("/").endswith("/v1/chat/completions"):
                return self._send(404, {"error": {"message": f"no route {self.path}"}})
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                messages = request["messages"]
            except (ValueError, KeyError) as exc:
                return self._send(400, {"error": {"message": f"bad request: {exc}"}})
            if request.get("stream"):
                return self._send(400, {"error": {"message": "streaming is not supported"}})
            try:
                sampling = sampling_options(request)
            except ValueError as exc:
                return self._send(400, {"error": {"message": f"bad request: {exc}"}})
            choices, prompt_tokens, completion_tokens = [], 0, 0
            for i in range(int(request.get("n") or 1)):
                out = backend.chat(messages, temperature=float(request.get("temperature") or 0.0),
                                   max_tokens=int(request.get("max_tokens") or 256),
                                   seed=int(request.get("seed") or 0) + i, timeout=None, **sampling)
                prompt_tokens = out.input_tokens
                completion_tokens += out.output_tokens
                choices.append({"index": i, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": out.text}})
            self._send(200, {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
                "created": int(time.time()), "model": request.get("model", model_name), "choices": choices,
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens},
            })

    return Handler


def serve(host: str = "127.0.0.1", port: int = 8011, local_backend: str = "llama-cpp",
          model: str = "smollm2") -> None:
    backend = make_backend(LLMConfig(provider="local", model=model, local_backend=local_backend))
    backend.chat([{"role": "user", "content": "hi"}], temperature=0, max_tokens=1, seed=0, timeout=None)  # load now
    server = ThreadingHTTPServer((host, port), make_handler(backend, model))
    print(f"serving {model} ({local_backend}) at http://{host}:{port}/v1", flush=True)
    server.serve_forever()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def local_server(port: int | None = None, local_backend: str = "llama-cpp", startup_timeout: float = 120):
    """Run the server in a subprocess for the duration of the block; yields its base URL."""
    port = port or free_port()
    process = subprocess.Popen([sys.executable, "-m", "helpers", "serve-llm", "--port", str(port),
                                "--local-backend", local_backend],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the local LLM server exited: {process.stdout.read()[-2000:]}")
            try:
                with urlopen(f"{base_url}/models", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the local LLM server did not start within {startup_timeout}s")
                time.sleep(0.2)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
