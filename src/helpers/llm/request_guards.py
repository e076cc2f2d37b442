"""The request guards of `serve-llm` (helpers.llm.server), as plain functions: who may ask (Host,
Origin, bearer token), how the body is framed (Content-Length, JSON) and what a chat request may
ask for (messages, n, max_tokens, sampling). Each returns the checked value or raises
RequestError, which the server answers in OpenAI's error shape; none touches a socket, so each is
tested on its own (tests/llm/test_request_guards.py) and, through a real server, in
tests/llm/test_security_server.py.

Why each guard exists (any web page the user visits can send requests to 127.0.0.1):
- Host: DNS rebinding; Origin: cross-site POSTs from a browser; a bearer token off loopback;
- a body is at most 1 MB, n at most 4, max_tokens at most 4096: one request cannot take the
  machine's memory or the model for minutes; bad fields answer 400, naming the field.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import re
from urllib.parse import urlsplit

from helpers.errors import UserError
from helpers.llm.keys import is_loopback

MAX_BODY_BYTES = 1_000_000
MAX_N = 4
MAX_TOKENS = 4096  # half the bundled model's 8192-token context: room left for the prompt
DEFAULT_MAX_TOKENS = 256
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


# ----------------------------------------------------------------------------- who may ask


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


def check_route(path: str, endpoint: str) -> None:
    """`endpoint` ('/v1/models') under any prefix: OpenAI's SDK asks /v1/..., Groq's /openai/v1/..."""
    if not path.rstrip("/").endswith(endpoint):
        raise RequestError(f"no route {path[:80]}", status=404)


# ----------------------------------------------------------------------------- the body


def body_length(transfer_encoding: str | None, content_length: str | None) -> int:
    """The bytes to read, from the request's headers, checked before any is read: a client that
    sends no length (or a chunked body) could otherwise hold the handler reading without end."""
    if "chunked" in (transfer_encoding or "").lower():
        raise RequestError("chunked bodies are not supported: send Content-Length", status=411)
    if content_length is None:
        raise RequestError("Content-Length is required", status=411)
    if not (content_length.isascii() and content_length.isdigit()):
        raise RequestError(f"Content-Length must be a non-negative integer, got {content_length!r:.20}")
    if len(content_length) > 9 or int(content_length) > MAX_BODY_BYTES:  # length first: int() refuses 4300+ digits
        raise RequestError(f"the body is over {MAX_BODY_BYTES} bytes", status=413)
    return int(content_length)


def parse_body(body: bytes):
    """The body's JSON (any JSON value: parse_chat_request checks its shape)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:  # RecursionError: [[[[... nested past Python's limit
        raise RequestError(f"the body is not JSON: {str(exc)[:80]}") from None


# ----------------------------------------------------------------------------- the chat request


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
    options: dict[str, object] = {}
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
