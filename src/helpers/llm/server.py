"""A small OpenAI-compatible chat server over the bundled local model.

`python -m helpers serve-llm --port 8011` serves POST /v1/chat/completions and GET /v1/models
(also under /openai/v1/, the path Groq's SDK uses), so any OpenAI or Groq client, LangChain or
ragas can talk to the offline model. It is what the tests use as a real local stand-in for hosted
providers. Non-streaming only.

Safety defaults (any web page the user visits can send requests to 127.0.0.1):
- only requests addressed to a loopback name or the bound host are answered (Host: no DNS
  rebinding), browser requests from non-loopback pages are refused (Origin), no CORS headers;
- a body is at most 1 MB, n at most 4, max_tokens at most 4096; bad fields answer 400 in
  OpenAI's error shape, naming the field;
- an idle or trickling connection is dropped after `timeout_s`; at most `max_connections`
  handlers run at once (503 with Retry-After beyond);
- on a non-loopback address it refuses to start without a bearer token (SERVE_LLM_TOKEN).
The checks of a request (who asks, its body, its fields) are plain functions in
helpers.llm.request_guards; this module is the HTTP plumbing around them and the model.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from helpers.llm.request_guards import (
    RequestError,
    body_length,
    check_bearer,
    check_host,
    check_origin,
    check_route,
    checked_settings,
    parse_body,
    parse_chat_request,
)
from helpers.llm.responder import message_tokens
from helpers.llm.simulate import Dropped, Refused, SimulatedProvider, Simulation, request_digest

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_TIMEOUT_S",
    "BoundedHTTPServer",
    "RequestError",
    "build_server",
    "build_handler",
]

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_CONNECTIONS = 64  # keep-alive clients hold one each until idle; browsers open ~6
RETRY_AFTER_S = 1


def build_handler(
    backend,
    model_name: str,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    provider: SimulatedProvider | None = None,
):
    """`provider`: a hosted API's behaviour (latency, limits, failures) around every chat call."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = timeout_s  # socket timeout: an idle or trickling client is dropped and its thread freed

        def log_message(self, *args):  # quiet: request lines would clutter test output
            pass

        def _send(self, status: int, body: dict, headers: dict | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def _fail(self, error: RequestError) -> None:
            self.close_connection = True  # the body may be unread: this connection cannot carry another request
            self._send(error.status, error.body(), error.headers)

        def _admit(self) -> None:
            """Who may ask, checked before anything is read or run."""
            address = self.server.server_address
            assert isinstance(address, tuple)  # a TCP server's (host, port, ...), not a Unix socket's path
            check_host(self.headers.get("Host"), host, address[1])
            check_origin(self.headers.get("Origin"), host)
            if token:
                check_bearer(self.headers.get("Authorization"), token)

        def _read_json(self):
            length = body_length(self.headers.get("Transfer-Encoding"), self.headers.get("Content-Length"))
            return parse_body(self.rfile.read(length))  # a client that stops sending hits the socket timeout

        def do_GET(self):
            try:
                self._admit()
                check_route(self.path, "/v1/models")
            except RequestError as error:
                return self._fail(error)
            self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})

        def do_POST(self):
            try:
                self._admit()
                check_route(self.path, "/v1/chat/completions")
                request = parse_chat_request(self._read_json(), model_name)
            except RequestError as error:
                return self._fail(error)
            if provider is not None:
                try:
                    latency = provider.admit(message_tokens(request["messages"]) * request["n"])
                except Refused as refused:
                    kind = "rate_limit_error" if refused.status == 429 else "server_error"
                    retry = {"Retry-After": f"{refused.retry_after:.2f}"} if refused.retry_after else {}
                    return self._fail(RequestError(str(refused), status=refused.status, kind=kind, headers=retry))
                except Dropped as dropped:  # no answer at all: the connection closes (after the hang)
                    time.sleep(dropped.wait_s)
                    self.close_connection = True
                    return None
            try:
                body = self._complete(request)
            except Exception as exc:  # noqa: BLE001 - any backend failure is said, not a dropped connection
                traceback.print_exc(file=sys.stderr)
                if provider is not None:
                    provider.done()
                return self._fail(
                    RequestError(f"the model failed: {type(exc).__name__}", status=500, kind="server_error")
                )
            if provider is not None:  # the hosted call's latency, then the answer
                provider.finish(body["usage"]["completion_tokens"], request_digest(request), latency)
            self._send(200, body)

        def _complete(self, request) -> dict:
            """The model's answer to a checked request, as OpenAI's response body."""
            choices, prompt_tokens, completion_tokens = [], 0, 0
            for i in range(request["n"]):
                out = backend.chat(
                    request["messages"],
                    temperature=request["temperature"],
                    max_tokens=request["max_tokens"],
                    seed=request["seed"] + i,
                    timeout=None,
                    **request["sampling"],
                )
                prompt_tokens = out.input_tokens
                completion_tokens += out.output_tokens
                choices.append(
                    {"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": out.text}}
                )
            return {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request["model"],
                "choices": choices,
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }

    return Handler


class BoundedHTTPServer(ThreadingHTTPServer):
    """A thread per connection, at most `max_connections` at once: past that, the accepting thread
    answers 503 + Retry-After itself, so a flood of connections cannot exhaust threads or memory."""

    block_on_close = False  # shutting down does not wait for idle keep-alive clients
    request_queue_size = 64  # connections the kernel holds while the accept loop is busy

    def __init__(self, address: tuple[str, int], handler, max_connections: int = DEFAULT_MAX_CONNECTIONS):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self._answer_busy(request)
            return self.shutdown_request(request)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def _answer_busy(self, request) -> None:
        error = RequestError(f"too many connections: retry after {RETRY_AFTER_S} s", status=503, kind="server_busy")
        body = json.dumps(error.body()).encode()
        head = (
            f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
            f"\r\nRetry-After: {RETRY_AFTER_S}\r\nConnection: close\r\n\r\n"
        ).encode()
        try:  # bounded waits: a client that never reads or closes cannot stall the accept loop for long
            request.settimeout(0.5)
            request.sendall(head + body)
            request.shutdown(socket.SHUT_WR)
            # read what the client sent until it closes: closing over unread bytes would reset the
            # connection, and the client could lose the 503
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline and request.recv(65536):
                pass
        except OSError:
            pass


def build_server(
    backend,
    model_name: str,
    host: str = "127.0.0.1",
    port: int = 8011,
    *,
    token: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    simulation: Simulation | None = None,
) -> BoundedHTTPServer:
    """The bound (not yet serving) server; port 0 picks a free one (server.server_address[1]).
    `simulation`: behave as a hosted API under load (helpers.llm.simulate)."""
    token = checked_settings(host, token, timeout_s, max_connections)
    provider = SimulatedProvider(simulation) if simulation is not None and simulation.active else None
    handler = build_handler(backend, model_name, host=host, token=token, timeout_s=timeout_s, provider=provider)
    return BoundedHTTPServer((host, port), handler, max_connections)
