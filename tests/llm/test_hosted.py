"""The hosted-LLM path at scale: a stand-in that behaves like a hosted API (429s with Retry-After,
500s, hangs, dropped connections), the client's pacing and retries against it, the Groq SDK
pointed at it, several samples in one request, limit presets and the deterministic responder."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time

import pytest

from helpers.llm import LLM, ResponseCache
from helpers.llm.limits import RateLimiter
from helpers.llm.llm_settings import LLMConfig
from helpers.llm.presets import DEFAULT_PRICES, LIMIT_PRESETS
from helpers.llm.responder import SchemaResponder, embedded_schema, estimate_tokens
from helpers.llm.scripted import ScriptedBackend
from helpers.llm.server import build_server
from helpers.llm.simulate import Simulation, read_ledger

HELLO = [{"role": "user", "content": "Context: The cat sleeps all day. It likes the sun.\nQuestion: What does it do?"}]


@contextlib.contextmanager
def stand_in(**simulation):
    """serve-llm with the fast responder and `simulation`, in a thread; yields (host, port)."""
    server = build_server(SchemaResponder(), "stand-in", port=0, simulation=Simulation(**simulation))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[:2]
    finally:
        server.shutdown()
        server.server_close()


def post(address, body: dict, timeout: float = 5.0) -> tuple[int, dict, dict]:
    connection = http.client.HTTPConnection(*address, timeout=timeout)
    try:
        connection.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read() or b"{}")
    finally:
        connection.close()


def client(address, cache_path, **settings) -> LLM:
    config = {
        "provider": "openai-compatible",
        "base_url": f"http://{address[0]}:{address[1]}/v1",
        "model": "stand-in",
        "timeout_s": 0.5,
        "backoff_base_s": 0.05,
        "backoff_max_s": 2,
        "max_retries": 8,
    } | settings
    limiter = RateLimiter(config.get("requests_per_minute"), None, config.get("concurrency", 4))
    return LLM(config, cache=ResponseCache(cache_path), limiter=limiter)


# ----------------------------------------------------------------------------- the stand-in


def test_past_its_limits_the_stand_in_answers_429_with_retry_after():
    with stand_in(rpm=2, window_s=1.5) as address:
        statuses = [post(address, {"messages": HELLO, "seed": i})[0] for i in range(3)]
        status, headers, body = post(address, {"messages": HELLO, "seed": 9})
        assert statuses == [200, 200, 429] and status == 429
        assert 0 < float(headers["Retry-After"]) <= 1.5
        assert body["error"]["type"] == "rate_limit_error" and "2 requests per minute" in body["error"]["message"]
        time.sleep(float(headers["Retry-After"]) + 0.05)
        assert post(address, {"messages": HELLO})[0] == 200  # the window has moved on
    with stand_in(tpm=50, window_s=5) as address:  # ~30 tokens a call: the second passes the tokens a minute
        assert [post(address, {"messages": HELLO})[0] for _ in range(2)] == [200, 429]


def test_injected_failures_are_500s_hangs_and_dropped_connections():
    with stand_in(fail_rate=0.99, failures=("500",)) as address:  # seeded: the first draw fails
        status, _, body = post(address, {"messages": HELLO})
        assert status == 500 and "injected" in body["error"]["message"]
    with stand_in(fail_rate=0.99, failures=("drop",)) as address:
        with pytest.raises(http.client.RemoteDisconnected):
            post(address, {"messages": HELLO})
    with stand_in(fail_rate=0.99, failures=("hang",), hang_s=2.0) as address:
        start = time.perf_counter()
        with pytest.raises((TimeoutError, socket.timeout)):
            post(address, {"messages": HELLO}, timeout=0.4)
        assert 0.35 < time.perf_counter() - start < 1.5  # no answer: the client gave up
    with pytest.raises(ValueError, match="unknown kinds"):
        Simulation(failures=("500", "teapot"))
    with pytest.raises(ValueError, match="fail-rate"):
        Simulation(fail_rate=1.0)


def test_the_stand_in_keeps_its_latency_and_a_ledger_of_what_it_answered(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    with stand_in(latency_ms=200, tokens_per_s=1000, ledger=str(ledger)) as address:
        start = time.perf_counter()
        status, _, body = post(address, {"messages": HELLO})
        elapsed = time.perf_counter() - start
    assert status == 200 and elapsed >= 0.2
    assert elapsed >= 0.2 + body["usage"]["completion_tokens"] / 1000 - 0.01
    assert len(read_ledger(ledger)) == 1


# ----------------------------------------------------------------------------- the client against it


def test_the_layer_rides_out_bursts_of_failures_and_loses_nothing(tmp_path):
    with stand_in(latency_ms=20, fail_rate=0.3, hang_s=1.0, seed=3) as address:
        llm = client(address, tmp_path / "c.sqlite", concurrency=8)
        batch = [
            [{"role": "user", "content": f"Context: Item {i} is a cat. Question: what is item {i}?"}] for i in range(60)
        ]
        results = llm.complete_many(batch)
    retried = [kind for r in results for kind in r.record.retried]
    assert all(r.ok for r in results)  # every request answered in the end
    assert {"server_error", "timeout", "connection"} <= set(retried)  # 500s, hangs and drops all happened
    assert llm.usage(llm.calls)["retries"] == len(retried) > 0


def test_a_429_pauses_every_call_and_then_paces_them(tmp_path):
    with stand_in(rpm=4, window_s=1.0) as address:
        llm = client(address, tmp_path / "c.sqlite", concurrency=6, requests_per_minute=None)
        start = time.perf_counter()
        results = llm.complete_many([[{"role": "user", "content": f"Question {i}?"}] for i in range(10)])
        elapsed = time.perf_counter() - start
    assert all(r.ok for r in results)
    assert any("rate_limit" in r.record.retried for r in results)
    assert llm.limiter.paused >= 1
    assert elapsed >= 1.0  # 10 requests at 4 a second-long window: at least two windows


def test_requests_start_evenly_once_the_provider_has_said_429():
    limiter = RateLimiter(requests_per_minute=6000, tokens_per_minute=None, concurrency=2)
    start = time.perf_counter()
    for _ in range(20):  # the minute's burst: no wait
        limiter.acquire()
        limiter.release()
    assert time.perf_counter() - start < 0.05
    limiter.pause(0.0)
    start = time.perf_counter()
    for _ in range(20):  # then 10 ms apart after a burst of 2
        limiter.acquire()
        limiter.release()
    assert time.perf_counter() - start >= 0.17


def test_the_groq_sdk_works_against_the_stand_in(tmp_path, monkeypatch):
    monkeypatch.setenv("GROQ_API_KEY", "gsk-test-stand-in")
    with stand_in(latency_ms=10, fail_rate=0.2, hang_s=1.0, seed=1) as address:
        llm = LLM(
            {
                "provider": "groq",
                "model": "llama-3.1-8b-instant",
                "base_url": f"http://{address[0]}:{address[1]}",  # the SDK adds /openai/v1
                "limits": "groq-free",
                "timeout_s": 0.5,
                "backoff_base_s": 0.05,
                "max_retries": 8,
            },
            cache=ResponseCache(tmp_path / "c.sqlite"),
            limiter=RateLimiter(None, None, 2),
        )
        results = llm.complete_many([[{"role": "user", "content": f"Question {i}: what?"}] for i in range(12)])
    assert all(r.ok for r in results)
    assert llm.totals()["cost_usd"] > 0  # priced as llama-3.1-8b-instant


def test_samples_of_one_prompt_go_in_one_request_where_the_provider_takes_n(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    with stand_in(ledger=str(ledger)) as address:
        llm = client(address, tmp_path / "c.sqlite", n_per_request=3, temperature=0.7)
        texts = [r.text for r in llm.complete_samples(HELLO, 3)]
        assert len(read_ledger(ledger)) == 1  # one request, three choices
        again = [r.text for r in llm.complete_samples(HELLO, 3)]
        assert again == texts and len(read_ledger(ledger)) == 1  # each choice cached as its own sample
        one_by_one = client(address, tmp_path / "d.sqlite", n_per_request=1, temperature=0.7)
        one_by_one.complete_samples(HELLO, 3)
        assert len(read_ledger(ledger)) == 4  # n=1 only (Groq): three requests


# ----------------------------------------------------------------------------- presets, prices, responder


def test_limit_presets_fill_what_the_config_leaves_unset_and_name_their_source():
    groq = LLMConfig(provider="groq", model="llama-3.1-8b-instant", limits="groq-free")
    assert (groq.requests_per_minute, groq.tokens_per_minute, groq.requests_per_day) == (30, 6000, 14400)
    assert LLMConfig(provider="groq", limits="groq-free", requests_per_minute=1000).requests_per_minute == 1000
    with pytest.raises(ValueError, match="valid: groq-free"):
        LLMConfig(limits="groq-fre")
    assert all(p.source and p.read_on for p in LIMIT_PRESETS.values())
    assert all(p.source for p in DEFAULT_PRICES.values())


def test_the_responder_fills_schemas_from_the_prompt_and_is_deterministic():
    schema = {
        "type": "object",
        "properties": {
            "verdicts": {"type": "array", "minItems": 2, "maxItems": 2, "items": {"$ref": "#/$defs/V"}},
            "all_relevant_sentence_keys": {"type": "array", "items": {"type": "string"}},
        },
        "$defs": {
            "V": {
                "type": "object",
                "properties": {"reason": {"type": "string"}, "verdict": {"type": "integer", "enum": [0, 1]}},
            }
        },
    }
    prompt = [{"role": "user", "content": "Documents:\n0a. The cat sleeps all day. 0b. It likes the sun.\n"}]
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    out = json.loads(SchemaResponder().chat(prompt, response_format=fmt).text)
    assert len(out["verdicts"]) == 2 and all(v["verdict"] in (0, 1) for v in out["verdicts"])
    assert set(out["all_relevant_sentence_keys"]) <= {"0a", "0b"} and out["all_relevant_sentence_keys"]
    assert SchemaResponder().chat(prompt, response_format=fmt).text == json.dumps(out)  # same request, same answer
    ragas_style = (
        "Say it.\nPlease return the output in a JSON format that complies with the following schema as specified in JSON Schema:\n"
        + json.dumps(schema)
        + "Do not use single quotes"
    )
    assert embedded_schema(ragas_style) == schema
    text = SchemaResponder().chat(HELLO).text
    assert text and "{" not in text
    assert 8 <= estimate_tokens("The cat sleeps all day, and it likes the sun.") <= 14


def test_a_dry_run_that_would_have_to_call_the_llm_first_says_so(tmp_path):
    from runs import cli_in_process

    result = cli_in_process("run", "--documents", tmp_path, "--dry-run")
    assert result.returncode == 2
    assert "--dry-run --documents needs --questions" in result.stderr


def one_choice() -> ScriptedBackend:
    """A server that ignores `n` (as Ollama does): one choice, whatever was asked (SchemaResponder's)."""
    return ScriptedBackend(lambda call: SchemaResponder().answer(call.messages, **call.options()))


def _offline(tmp_path, backend=None, **settings) -> LLM:
    config = {"provider": "openai-compatible", "base_url": "http://127.0.0.1:9/v1", "model": "m"} | settings
    return LLM(config, cache=ResponseCache(tmp_path / "c.sqlite"), backend=backend, limiter=RateLimiter(None, None, 4))


def test_samples_are_accounted_once_whatever_the_server_returns(tmp_path):
    llm = _offline(tmp_path, one_choice(), n_per_request=3, max_tokens=100)
    results = llm.complete_samples(HELLO, 3)
    usage = llm.usage(llm.calls)
    assert len(results) == 3 and all(r.ok for r in results)
    assert usage["calls"] == 3 and usage["max_output_tokens"] == 300  # no record left for the missing choices
    # cached samples never build the backend (nor need its key): replayed from the cache alone
    again = _offline(tmp_path, None, n_per_request=3, max_tokens=100, cache="replay")
    assert [r.text for r in again.complete_samples(HELLO, 3)] == [r.text for r in results]


def test_choices_of_one_request_are_consecutive_samples(tmp_path):
    llm = _offline(tmp_path, SchemaResponder(), n_per_request=3, temperature=0.7)
    alone = [llm.complete(HELLO, sample=i).text for i in range(3)]  # each sample as its own request
    fresh = _offline(tmp_path / "b", SchemaResponder(), n_per_request=3, temperature=0.7)
    fresh.complete(HELLO, sample=1)  # sample 1 cached: 0 and 2 are not consecutive, asked for alone
    assert [r.text for r in fresh.complete_samples(HELLO, 3)] == alone
    assert [
        r.text
        for r in _offline(tmp_path / "c", SchemaResponder(), n_per_request=3, temperature=0.7).complete_samples(
            HELLO, 3
        )
    ] == alone


def test_output_tokens_are_split_without_loss():
    from helpers.llm.call_records import split_total

    assert split_total(10, [5, 5, 5]) == [3, 3, 4]
    assert split_total(30, [0, 0, 0]) == [10, 10, 10]
    assert sum(split_total(7, [1, 100, 3])) == 7


def test_a_failing_ledger_never_leaves_a_call_in_flight(tmp_path):
    from helpers.llm.simulate import SimulatedProvider

    provider = SimulatedProvider(Simulation(max_in_flight=1, ledger=str(tmp_path / "missing" / "ledger.jsonl")))
    for _ in range(3):
        provider.admit(10)
        with pytest.raises(FileNotFoundError):
            provider.finish(5, "digest")
    assert provider.counts["answered"] == 0


def test_groq_takes_one_choice_per_request():
    with pytest.raises(ValueError, match="n_per_request must be 1 for provider groq"):
        LLMConfig(provider="groq", n_per_request=3)
