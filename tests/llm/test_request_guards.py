"""serve-llm's request guards (helpers.llm.request_guards) without a socket: each accepts a good
request and refuses a bad one with its status, error type, field and message. The same guards
behind a real server, against raw clients: tests/llm/test_security_server.py."""

import pytest

from helpers.errors import UserError
from helpers.llm.request_guards import (
    DEFAULT_MAX_TOKENS,
    MAX_BODY_BYTES,
    MAX_N,
    MAX_TOKENS,
    TOKEN_ENV,
    RequestError,
    body_length,
    check_bearer,
    check_host,
    check_origin,
    check_route,
    checked_settings,
    parse_body,
    parse_chat_request,
    sampling_options,
)

HELLO = [{"role": "user", "content": "Say hello."}]


def refused(call, *args) -> RequestError:
    with pytest.raises(RequestError) as caught:
        call(*args)
    return caught.value


def test_settings_need_a_token_off_loopback(monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert checked_settings("127.0.0.1", None, 30, 64) is None
    assert checked_settings("0.0.0.0", "s3cret", 30, 64) == "s3cret"
    with pytest.raises(UserError, match=f"{TOKEN_ENV}="):
        checked_settings("0.0.0.0", None, 30, 64)
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert checked_settings("0.0.0.0", None, 30, 64) == "from-env"
    with pytest.raises(UserError, match="--timeout > 0"):
        checked_settings("127.0.0.1", None, 0, 64)
    with pytest.raises(UserError, match="--max-connections >= 1"):
        checked_settings("127.0.0.1", None, 30, 0)


def test_host_must_be_loopback_or_the_bound_name_on_the_bound_port():
    for host in ("127.0.0.1:8011", "localhost:8011", "LOCALHOST:8011", "[::1]:8011"):
        check_host(host, "127.0.0.1", 8011)
    check_host("192.0.2.7:8011", "0.0.0.0", 8011)  # an IP literal on a wildcard bind: no DNS involved
    check_host("box.lan:8011", "box.lan", 8011)
    for host, bound in (("evil.example:8011", "127.0.0.1"), ("127.0.0.1:1", "127.0.0.1"), ("evil.example:8011", "::")):
        error = refused(check_host, host, bound, 8011)
        assert (error.status, error.kind) == (403, "permission_error") and "DNS-rebinding" in str(error)
    for host in ("", None, "localhost:8011@evil.example"):
        error = refused(check_host, host, "127.0.0.1", 8011)
        assert error.status == 403 and "not host[:port]" in str(error)


def test_origin_only_from_pages_on_loopback():
    for origin in (None, "http://localhost:8888", "https://127.0.0.1:3000", "http://[::1]"):
        check_origin(origin, "127.0.0.1")
    for origin in ("http://evil.example", "https://127.0.0.1.evil.example", "null", "file://", "ftp://localhost"):
        error = refused(check_origin, origin, "127.0.0.1")
        assert (error.status, error.kind) == (403, "permission_error") and "cross-site" in str(error)
    check_origin("http://box.lan", "box.lan")
    assert refused(check_origin, "http://0.0.0.0", "0.0.0.0").status == 403  # a wildcard bind names no page


def test_bearer_token():
    check_bearer("Bearer s3cret", "s3cret")
    check_bearer("bearer s3cret", "s3cret")
    for header in (None, "Bearer wrong", "Bearer s3cre", "Basic s3cret", "s3cret"):
        error = refused(check_bearer, header, "s3cret")
        assert (error.status, error.kind) == (401, "authentication_error") and "token" in str(error)
        assert error.headers == {"WWW-Authenticate": "Bearer"}


def test_routes_under_any_prefix():
    check_route("/v1/models", "/v1/models")
    check_route("/openai/v1/chat/completions/", "/v1/chat/completions")
    error = refused(check_route, "/v1/nowhere", "/v1/chat/completions")
    assert error.status == 404 and "no route /v1/nowhere" in str(error)


@pytest.mark.parametrize(
    "encoding,length,status,says",
    [
        (None, "-1", 400, "non-negative integer"),
        (None, "ten", 400, "non-negative integer"),
        (None, "1e3", 400, "non-negative integer"),
        (None, "١٢", 400, "non-negative integer"),  # Arabic-Indic digits: isdigit() but not ASCII
        (None, None, 411, "required"),
        ("chunked", "10", 411, "chunked"),
        (None, str(MAX_BODY_BYTES + 1), 413, "over"),
        (None, str(10**18), 413, "over"),
        (None, "9" * 5000, 413, "over"),
    ],
)
def test_body_length_is_checked_from_the_headers(encoding, length, status, says):
    error = refused(body_length, encoding, length)
    assert error.status == status and says in str(error)


def test_body_length_accepts_up_to_the_cap():
    assert body_length(None, "0") == 0 and body_length("identity", str(MAX_BODY_BYTES)) == MAX_BODY_BYTES


def test_body_must_be_json():
    assert parse_body(b'{"messages": []}') == {"messages": []}
    for body in (b"not json", b"[" * 100_000 + b"]" * 100_000):  # the second nested past the recursion limit
        error = refused(parse_body, body)
        assert (error.status, error.param) == (400, None) and "not JSON" in str(error)


def test_a_good_chat_request_is_read_with_its_defaults():
    parsed = parse_chat_request({"messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]}, "m")
    assert parsed == {
        "messages": [{"role": "user", "content": "Hi"}],
        "n": 1,
        "max_tokens": DEFAULT_MAX_TOKENS,
        "seed": 0,
        "temperature": 0.0,
        "model": "m",
        "sampling": {},
    }
    at_caps = parse_chat_request(
        {"messages": HELLO, "n": MAX_N, "max_tokens": MAX_TOKENS, "temperature": 2, "seed": 7, "model": "x"}, "m"
    )
    assert (at_caps["n"], at_caps["max_tokens"], at_caps["temperature"], at_caps["model"]) == (
        MAX_N,
        MAX_TOKENS,
        2,
        "x",
    )


@pytest.mark.parametrize(
    "body,param,says",
    [
        ([{"messages": HELLO}], None, "JSON object"),
        ({"messages": "hi"}, "messages", "non-empty list"),
        ({"messages": []}, "messages", "non-empty list"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0]", "role"),
        ({"messages": [*HELLO, {"role": "user", "content": 7}]}, "messages[1]", "content"),
        ({"messages": HELLO, "max_tokens": "ten"}, "max_tokens", "integer"),
        ({"messages": HELLO, "max_tokens": 1.5}, "max_tokens", "integer"),
        ({"messages": HELLO, "max_tokens": MAX_TOKENS + 1}, "max_tokens", f"from 1 to {MAX_TOKENS}"),
        ({"messages": HELLO, "n": MAX_N + 1}, "n", f"from 1 to {MAX_N}"),
        ({"messages": HELLO, "n": True}, "n", "integer"),
        ({"messages": HELLO, "seed": "x"}, "seed", "integer"),
        ({"messages": HELLO, "temperature": "hot"}, "temperature", "number"),
        ({"messages": HELLO, "temperature": 2.5}, "temperature", "from 0 to 2"),
        ({"messages": HELLO, "stream": True}, "stream", "streaming"),
    ],
)
def test_bad_chat_requests_are_refused_naming_the_field(body, param, says):
    error = refused(parse_chat_request, body, "m")
    assert (error.status, error.kind, error.param) == (400, "invalid_request_error", param)
    assert says.lower() in str(error).lower()
    assert error.body() == {"error": {"message": str(error), "type": error.kind, "param": param, "code": None}}


def test_sampling_options():
    schema = {"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}
    assert sampling_options({"stop": "\n", "repetition_penalty": 1.1, "response_format": schema}) == {
        "stop": ["\n"],
        "repeat_penalty": 1.1,
        "response_format": schema,
    }
    assert sampling_options({"repeat_penalty": 2, "response_format": {"type": "text"}}) == {"repeat_penalty": 2.0}
    for request, param, says in (
        ({"stop": [3]}, "stop", "stop"),
        ({"stop": [""]}, "stop", "stop"),
        ({"repetition_penalty": -1}, "repetition_penalty", "positive"),
        ({"repeat_penalty": True}, "repeat_penalty", "positive"),
        ({"response_format": {"type": "yaml"}}, "response_format", "response_format"),
        ({"response_format": {"type": "json_schema"}}, "response_format", "json_schema.schema"),
    ):
        error = refused(sampling_options, request)
        assert (error.status, error.param) == (400, param) and says in str(error)
