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
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
import socket
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from helpers.errors import UserError
from helpers.llm.keys import is_loopback
from helpers.llm.responder import message_tokens
from helpers.llm.simulate import Dropped, Refused, SimulatedProvider, Simulation, request_digest

MAX_BODY_BYTES = 1_000_000
MAX_N = 4
MAX_TOKENS = 4096  # half the bundled model's 8192-token context: room left for the prompt
DEFAULT_MAX_TOKENS = 256
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_CONNECTIONS = 64  # keep-alive clients hold one each until idle; browsers open ~6
RETRY_AFTER_S = 1
TOKEN_ENV = "SERVE_LLM_TOKEN"
ROLES = ("system", "user", "assistant")
_HOST_HEADER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::([0-9]{1,5}))?")


class RequestError(ValueError):
    """A refused request: answered `status` with OpenAI's error JSON naming `param`."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        status: int = 400,
        kind: str = "invalid_request_error",
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.param, self.status, self.kind, self.headers = param, status, kind, headers or {}

    def body(self) -> dict:
        return {"error": {"message": str(self), "type": self.kind, "param": self.param, "code": None}}


def _ip(host: str):
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _is_wildcard(host: str) -> bool:
    return host.strip("[]") in ("", "0.0.0.0", "::")


def checked_settings(host: str, token: str | None, timeout_s: float, max_connections: int) -> str | None:
    """The bearer token (given, else $SERVE_LLM_TOKEN); one is required off loopback, where
    other machines (and their users) can reach the model. UserError (one line) on bad settings."""
    if timeout_s <= 0 or max_connections < 1:
        raise UserError("serve-llm needs --timeout > 0 and --max-connections >= 1")
    token = token or os.environ.get(TOKEN_ENV) or None
    if not token and not is_loopback(host):
        raise UserError(
            f"serve-llm --host {host or '(all interfaces)'} is reachable from other machines and "
            f"needs a token: set {TOKEN_ENV}=<secret> (or --token) and have clients send "
            f"'Authorization: Bearer <secret>', or serve on --host 127.0.0.1"
        )
    return token


def check_host(value: str | None, bound_host: str, port: int) -> None:
    """DNS rebinding: a page on attacker.example whose name now resolves to 127.0.0.1 still sends
    `Host: attacker.example`, so only loopback names, the bound name (and, on a wildcard bind, IP
    literals, which no DNS answer can change) are accepted, with the bound port."""
    match = _HOST_HEADER.fullmatch(value or "")
    if not match:
        raise RequestError(f"the Host header {value!r:.80} is not host[:port]", status=403, kind="permission_error")
    name, given_port = match[1].strip("[]").lower(), int(match[2] or 80)
    bound = bound_host.strip("[]").lower()
    allowed = is_loopback(name) or name == bound or (_is_wildcard(bound) and _ip(name) is not None)
    if not allowed or given_port != port:
        raise RequestError(
            f"Host {value!r:.80} is not allowed: serve-llm answers only requests addressed to "
            f"localhost, 127.0.0.1 or [::1] (or --host) on port {port} (DNS-rebinding guard)",
            status=403,
            kind="permission_error",
        )


def check_origin(origin: str | None, bound_host: str) -> None:
    """Browsers send Origin with cross-site POSTs (even the 'simple' text/plain ones that skip the
    CORS preflight): only pages served from loopback (or the bound host) may call the model.
    Clients outside a browser (SDKs, curl) send no Origin."""
    if origin is None:
        return
    try:
        parts = urlsplit(origin)
        name = parts.hostname or ""
    except ValueError:
        parts, name = None, ""
    bound = bound_host.strip("[]").lower()
    allowed = is_loopback(name) or (name == bound and not _is_wildcard(bound))
    if not parts or parts.scheme not in ("http", "https") or not allowed:
        raise RequestError(
            f"Origin {origin!r:.80} is not allowed: serve-llm answers browser requests only from "
            f"pages on localhost (cross-site request guard)",
            status=403,
            kind="permission_error",
        )


def check_bearer(header: str | None, token: str) -> None:
    scheme, _, given = (header or "").partition(" ")
    # compare_digest: the time taken does not reveal how much of a guess was right
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise RequestError(
            f"missing or wrong token: send 'Authorization: Bearer <token>' (the server's --token or {TOKEN_ENV})",
            status=401,
            kind="authentication_error",
            headers={"WWW-Authenticate": "Bearer"},
        )


def _integer(request: dict, name: str, default: int, low: int, high: int) -> int:
    value = request.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RequestError(f"{name} must be an integer from {low} to {high}, got {value!r:.40}", name)
    return value


def _messages(value) -> list[dict]:
    """role + text content only; OpenAI's list of text parts is joined into one string."""
    if not isinstance(value, list) or not value:
        raise RequestError("messages must be a non-empty list of {'role', 'content'} objects", "messages")
    checked = []
    for i, message in enumerate(value):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and all(
            isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content
        ):
            content = "\n".join(p["text"] for p in content)
        if not isinstance(content, str) or message.get("role") not in ROLES:
            raise RequestError(
                f"messages[{i}] must be {{'role': system|user|assistant, 'content': a string}}, got {message!r:.60}",
                f"messages[{i}]",
            )
        checked.append({"role": message["role"], "content": content})
    return checked


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
            raise RequestError("stop must be a non-empty string or a list of them", "stop")
        options["stop"] = stop
    name = "repeat_penalty" if "repeat_penalty" in request else "repetition_penalty"
    penalty = request.get(name)
    if penalty is not None:
        if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or penalty <= 0:
            raise RequestError(f"{name} must be a positive number", name)
        options["repeat_penalty"] = float(penalty)
    fmt = request.get("response_format")
    if fmt:
        if not isinstance(fmt, dict) or fmt.get("type") not in ("json_object", "json_schema", "text"):
            raise RequestError(
                "response_format must be {'type': 'json_object' | 'json_schema' | 'text', ...}", "response_format"
            )
        if fmt["type"] == "json_schema" and not isinstance((fmt.get("json_schema") or {}).get("schema"), dict):
            raise RequestError("response_format json_schema needs json_schema.schema (an object)", "response_format")
        if fmt["type"] != "text":
            options["response_format"] = fmt
    return options


def parse_chat_request(request, model_name: str) -> dict:
    """The checked fields of a chat request; RequestError (400, naming the field) otherwise."""
    if not isinstance(request, dict):
        raise RequestError(f"the body must be a JSON object, got {type(request).__name__}")
    if request.get("stream"):
        raise RequestError("streaming is not supported", "stream")
    temperature = request.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2
    ):
        raise RequestError(f"temperature must be a number from 0 to 2, got {temperature!r:.40}", "temperature")
    model = request.get("model")
    return {
        "messages": _messages(request.get("messages")),
        "n": _integer(request, "n", 1, 1, MAX_N),
        "max_tokens": _integer(request, "max_tokens", DEFAULT_MAX_TOKENS, 1, MAX_TOKENS),
        "seed": _integer(request, "seed", 0, 0, 2**31 - 1),
        "temperature": float(temperature or 0.0),
        "model": model if isinstance(model, str) else model_name,
        "sampling": sampling_options(request),
    }


def make_handler(
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
            check_host(self.headers.get("Host"), host, self.server.server_address[1])
            check_origin(self.headers.get("Origin"), host)
            if token:
                check_bearer(self.headers.get("Authorization"), token)

        def _read_json(self):
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                raise RequestError("chunked bodies are not supported: send Content-Length", status=411)
            length = self.headers.get("Content-Length")
            if length is None:
                raise RequestError("Content-Length is required", status=411)
            if not (length.isascii() and length.isdigit()):
                raise RequestError(f"Content-Length must be a non-negative integer, got {length!r:.20}")
            if len(length) > 9 or int(length) > MAX_BODY_BYTES:  # length first: int() refuses 4300+ digits
                raise RequestError(f"the body is over {MAX_BODY_BYTES} bytes", status=413)
            body = self.rfile.read(int(length))  # a client that stops sending hits the socket timeout
            try:
                return json.loads(body)
            except (ValueError, RecursionError) as exc:  # RecursionError: [[[[... nested past Python's limit
                raise RequestError(f"the body is not JSON: {str(exc)[:80]}") from None

        def do_GET(self):
            try:
                self._admit()
                if not self.path.rstrip("/").endswith("/v1/models"):
                    raise RequestError(f"no route {self.path[:80]}", status=404)
            except RequestError as error:
                return self._fail(error)
            self._send(200, {"object": "list", "data": [{"id": model_name, "object": "model"}]})

        def do_POST(self):
            try:
                self._admit()
                if not self.path.rstrip("/").endswith("/v1/chat/completions"):
                    raise RequestError(f"no route {self.path[:80]}", status=404)
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
    handler = make_handler(backend, model_name, host=host, token=token, timeout_s=timeout_s, provider=provider)
    return BoundedHTTPServer((host, port), handler, max_connections)
