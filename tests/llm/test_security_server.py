"""serve-llm against hostile or broken clients (issue 24, finding 5): a real server on 127.0.0.1
(a free port) over the real bundled model, spoken to with raw http.client and sockets. Each test
was first a reproduction: before the fix the server answered any Host and Origin, dropped the
connection with a traceback on a bad body, waited forever on `Content-Length: -1` or an idle
client, took unbounded n/max_tokens and connections, and bound 0.0.0.0 with no token."""

import contextlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from helpers.errors import UserError
from helpers.llm.backends import build_backend
from helpers.llm.llm_settings import LLMConfig
from helpers.llm.request_guards import MAX_BODY_BYTES, MAX_N, MAX_TOKENS, TOKEN_ENV
from helpers.llm.server import build_server
from helpers.llm.serving import free_port

HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def backend():
    # the real bundled model, loaded at its first call: refused requests never load it
    return build_backend(LLMConfig(provider="local", model="smollm2"))


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)


@contextlib.contextmanager
def running(backend, host="127.0.0.1", **options):
    """build_server on a free port, served from a thread; yields the port."""
    server = build_server(backend, "smollm2", host, 0, **options)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def port(backend):
    with running(backend, timeout_s=5) as port:
        yield port


def call(port, method="GET", path="/v1/models", body=None, headers=None):
    """(status, headers, JSON body) over a fresh connection; a dict body is sent as JSON."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        raw = response.read()
        try:
            return response.status, response.headers, json.loads(raw)
        except ValueError:  # http.server's own HTML error pages (501 for OPTIONS)
            return response.status, response.headers, raw
    finally:
        connection.close()


def raw_exchange(port, data: bytes, timeout=5) -> bytes:
    """Send bytes as they are; what the server answers before it closes (or the timeout)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        with contextlib.suppress(TimeoutError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


def assert_error(status, body, expected_status, param=None, kind="invalid_request_error", says=""):
    assert status == expected_status, body
    assert body["error"]["type"] == kind and body["error"]["param"] == param
    assert says.lower() in body["error"]["message"].lower()


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:{port}",
        "attacker.localhost.example:{port}",
        "127.0.0.1:1",
        "localhost:{port}@evil.example",
        "",
    ],
)
def test_host_header_must_be_loopback_with_the_bound_port(port, host):
    """DNS rebinding: a page on evil.example whose name now resolves to 127.0.0.1 sends its own Host."""
    for method, body in (("GET", None), ("POST", {"messages": HELLO, "max_tokens": 1})):
        status, _, answer = call(
            port,
            method,
            "/v1/" + ("models" if body is None else "chat/completions"),
            body,
            {"Host": host.format(port=port)},
        )
        assert_error(status, answer, 403, kind="permission_error", says="Host")


def test_loopback_host_names_are_answered(port):
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
        status, _, answer = call(port, headers={"Host": host})
        assert status == 200 and answer["data"][0]["id"] == "smollm2"


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "https://127.0.0.1.evil.example", "null", "file://", "http://localhost.evil.example:8011"],
)
def test_cross_site_origin_is_refused_without_cors(port, origin):
    status, headers, answer = call(
        port,
        "POST",
        "/v1/chat/completions",
        {"messages": HELLO, "max_tokens": 1},
        {"Origin": origin, "Content-Type": "text/plain"},
    )  # a CORS "simple" request
    assert_error(status, answer, 403, kind="permission_error", says="cross-site")
    assert "Access-Control-Allow-Origin" not in headers
    preflight, headers, _ = call(
        port, "OPTIONS", "/v1/chat/completions", headers={"Origin": origin, "Access-Control-Request-Method": "POST"}
    )
    assert preflight >= 400 and "Access-Control-Allow-Origin" not in headers


def test_loopback_origin_is_answered(port):
    status, headers, _ = call(port, headers={"Origin": "http://localhost:8888"})
    assert status == 200 and "Access-Control-Allow-Origin" not in headers


@pytest.mark.parametrize(
    "body,param,says",
    [
        ([{"messages": HELLO}], None, "JSON object"),
        ("not json", None, "not JSON"),
        ("[" * 100_000 + "]" * 100_000, None, "not JSON"),  # nested past Python's recursion limit
        ({"messages": "hi"}, "messages", "non-empty list"),
        ({"messages": []}, "messages", "non-empty list"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0]", "role"),
        ({"messages": [*HELLO, {"role": "user", "content": 7}]}, "messages[1]", "content"),
        ({"messages": HELLO, "max_tokens": "ten"}, "max_tokens", "integer"),
        ({"messages": HELLO, "max_tokens": 1.5}, "max_tokens", "integer"),
        ({"messages": HELLO, "max_tokens": MAX_TOKENS + 1}, "max_tokens", f"from 1 to {MAX_TOKENS}"),
        ({"messages": HELLO, "n": 1000}, "n", f"from 1 to {MAX_N}"),
        ({"messages": HELLO, "n": True}, "n", "integer"),
        ({"messages": HELLO, "seed": "x"}, "seed", "integer"),
        ({"messages": HELLO, "temperature": "hot"}, "temperature", "number"),
        ({"messages": HELLO, "stop": [3]}, "stop", "stop"),
        ({"messages": HELLO, "repetition_penalty": -1}, "repetition_penalty", "positive"),
        ({"messages": HELLO, "response_format": {"type": "yaml"}}, "response_format", "response_format"),
        ({"messages": HELLO, "stream": True}, "stream", "streaming"),
    ],
)
def test_bad_bodies_answer_400_naming_the_field(port, body, param, says):
    status, _, answer = call(port, "POST", "/v1/chat/completions", body if not isinstance(body, str) else body.encode())
    assert_error(status, answer, 400, param=param, says=says)


@pytest.mark.parametrize(
    "length,status,says",
    [
        ("-1", 400, "non-negative integer"),
        ("ten", 400, "non-negative integer"),
        ("1e3", 400, "non-negative integer"),
        (None, 411, "required"),
        (str(MAX_BODY_BYTES + 1), 413, "over"),
        (str(10**18), 413, "over"),
        ("9" * 5000, 413, "over"),
    ],
)
def test_content_length_is_checked_before_the_body_is_read(port, length, status, says):
    header = f"Content-Length: {length}\r\n" if length is not None else ""
    started = time.monotonic()
    answer = raw_exchange(
        port,
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\n{header}\r\n".encode(),
    )
    assert time.monotonic() - started < 3  # answered and closed at once, not after a wait for a body
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()) and b"Connection: close" in head
    assert says in json.loads(body)["error"]["message"]


def test_idle_and_slow_clients_are_dropped(backend):
    with running(backend, timeout_s=0.5) as port:
        for data in (
            b"",  # connects and says nothing
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f'Content-Length: 100\r\n\r\n{{"messages"'.encode(),
        ):  # stops halfway through its body
            started = time.monotonic()
            assert raw_exchange(port, data, timeout=5) == b""  # closed by the server, no answer
            assert time.monotonic() - started < 3


def test_connections_past_the_cap_get_503_with_retry_after(backend):
    with running(backend, timeout_s=5, max_connections=2) as port:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        try:
            status, headers, answer = call(port)
            assert_error(status, answer, 503, kind="server_busy", says="too many connections")
            assert headers["Retry-After"] == "1"
        finally:
            for sock in held:
                sock.close()
        deadline = time.monotonic() + 5  # the handlers notice the closed connections and free their slots
        while (status := call(port)[0]) == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status == 200


def test_non_loopback_bind_needs_a_token(backend, monkeypatch):
    with pytest.raises(UserError, match=TOKEN_ENV):
        build_server(backend, "smollm2", "0.0.0.0", 0)
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    cli = [sys.executable, "-m", "helpers", "serve-llm", "--host", "0.0.0.0", "--port", str(free_port())]
    refused = subprocess.run(cli, check=False, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1  # one line, before the model loads
    assert refused.stderr.startswith("error: ") and f"{TOKEN_ENV}=" in refused.stderr
    # with a token it starts, warning that other machines can reach it
    started = subprocess.Popen(
        cli, env={**env, TOKEN_ENV: "s3cret-token"}, stderr=subprocess.PIPE, text=True, stdout=subprocess.DEVNULL
    )
    try:
        lines = [started.stderr.readline() for _ in range(1)]
        while not lines[-1].startswith("warning: ") and lines[-1] and len(lines) < 20:  # past any import noise
            lines.append(started.stderr.readline())
        assert lines[-1].startswith("warning: serve-llm on 0.0.0.0 is reachable from other machines")
    finally:
        started.terminate()
        started.wait(timeout=10)
    # bound to all interfaces (connected to through 127.0.0.1 only): every request needs the token
    monkeypatch.setenv(TOKEN_ENV, "s3cret-token")
    with running(backend, "0.0.0.0", timeout_s=5) as port:
        for authorization in (None, "Bearer wrong", "Bearer s3cret-toke", "Basic s3cret-token", "s3cret-token"):
            status, headers, answer = call(port, headers={"Authorization": authorization} if authorization else {})
            assert_error(status, answer, 401, kind="authentication_error", says="token")
            assert headers["WWW-Authenticate"] == "Bearer"
        assert call(port, headers={"Authorization": "Bearer s3cret-token"})[0] == 200
        # still no DNS rebinding: a name is refused, an IP literal (no DNS involved) is not
        auth = {"Authorization": "Bearer s3cret-token"}
        assert call(port, headers={**auth, "Host": f"evil.example:{port}"})[0] == 403
        assert call(port, headers={**auth, "Host": f"192.0.2.7:{port}"})[0] == 200


def test_a_token_on_loopback_is_optional_but_enforced_when_given(backend):
    with running(backend, token="loop-token", timeout_s=5) as port:
        assert call(port)[0] == 401
        assert call(port, headers={"Authorization": "Bearer loop-token"})[0] == 200


def test_valid_requests_still_answer_at_the_caps(port):
    """The caps are inclusive, text content parts are read, and a refused request left the model idle."""
    body = {
        "model": "smollm2",
        "n": 2,
        "max_tokens": 2,
        "temperature": 0,
        "seed": 7,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello."}]}],
    }
    status, _, answer = call(
        port,
        "POST",
        "/openai/v1/chat/completions",
        body,
        {"Origin": "http://127.0.0.1:3000", "Host": f"localhost:{port}"},
    )
    assert status == 200 and [c["index"] for c in answer["choices"]] == [0, 1]
    assert 0 < answer["usage"]["completion_tokens"] <= 4 and answer["model"] == "smollm2"
    status, _, answer = call(port, "POST", "/v1/nowhere", body)
    assert_error(status, answer, 404, says="no route")
