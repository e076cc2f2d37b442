"""The LLM layer against real parts: the bundled model, and a real OpenAI-compatible server on
127.0.0.1 serving it, with a fault-injecting proxy in between."""

import logging

import pytest
from pydantic import BaseModel

from faults import FaultProxy
from helpers.errors import UserError
from helpers.llm import (
    LLM,
    CacheMissError,
    LLMConfig,
    LLMError,
    MissingKeyError,
    ResponseCache,
    complete_json,
    extract_json,
)
from helpers.llm.limits import RateLimiter, backoff_delay
from helpers.llm.serving import local_server

HELLO = [{"role": "user", "content": "Say hello in Spanish."}]
# Greedy SmolLM2 answers this with a numbered list "1. 1\n2. 2\n3. 3\n..." that runs to the token
# limit: a stop at "\n5." cuts it, and the repeat penalty changes it (measured, llama.cpp 0.3.36).
COUNT = [{"role": "user", "content": "Count from 1 to 20, separated by commas."}]
SECRET = "sk-test-SECRET-0123456789"


@pytest.fixture(scope="module")
def server_url():
    with local_server() as url:
        yield url


@pytest.fixture
def cache(tmp_path):
    return ResponseCache(tmp_path / "llm.sqlite")


def _oai(base_url, cache, **overrides):
    config = {
        "provider": "openai-compatible",
        "model": "smollm2",
        "base_url": base_url,
        "max_tokens": 16,
        "api_key_env": "TEST_OAI_API_KEY",
        "timeout_s": 5,
        "max_retries": 3,
        "backoff_base_s": 0.05,
        "backoff_max_s": 2,
        **overrides,
    }
    return LLM(config, cache=cache)


def test_local_model_generates_offline(cache):
    llm = LLM({"provider": "local", "max_tokens": 24}, cache=cache)
    result = llm.complete([{"role": "user", "content": "What is the capital of France? Answer in one word."}])
    assert "paris" in result.text.lower()
    assert result.record.input_tokens > 5 and 0 < result.record.output_tokens <= 24
    assert result.record.cost_usd == 0 and not result.record.cached


def test_cache_hit_miss_and_replay(cache):
    llm = LLM({"provider": "local", "max_tokens": 12}, cache=cache)
    first = llm.complete(HELLO)
    again = llm.complete(HELLO)
    assert again.record.cached and again.text == first.text and len(cache) == 1
    llm.complete(HELLO, max_tokens=13)  # any parameter change is a miss
    llm.complete(HELLO, temperature=0.7)
    llm.complete(HELLO, sample=1)  # another independent sample
    assert len(cache) == 4 and llm.totals()["cache_hits"] == 1
    assert llm.totals(since=1) == {**llm.totals(since=1), "calls": 4, "cache_hits": 1}  # one stage's share
    assert llm.totals(since=2)["cache_hits"] == 0 and llm.totals(since=5)["calls"] == 0
    replay = LLM({"provider": "local", "max_tokens": 12, "cache": "replay"}, cache=cache)
    assert replay.complete(HELLO).text == first.text
    with pytest.raises(CacheMissError, match="replay mode: no cached answer for 'Never asked"):
        replay.complete([{"role": "user", "content": "Never asked before"}])
    with pytest.raises(CacheMissError, match="1 of 2 requests are not cached"):
        replay.complete_many([HELLO, [{"role": "user", "content": "Never asked before"}]])


def test_openai_compatible_and_groq_sdk_paths(server_url, cache, monkeypatch):
    monkeypatch.setenv("TEST_OAI_API_KEY", SECRET)
    oai = _oai(server_url, cache)
    text = oai.complete(HELLO).text
    assert text.strip()
    groq = LLM(
        {
            "provider": "groq",
            "model": "smollm2",
            "base_url": server_url.removesuffix("/v1"),
            "api_key_env": "TEST_OAI_API_KEY",
            "max_tokens": 16,
            "max_retries": 0,
        },
        cache=cache,
    )
    # Groq's SDK posts to {base_url}/openai/v1/chat/completions; the server serves that path too
    result = groq.complete(HELLO)
    assert result.text.strip() and not result.record.cached and result.record.output_tokens > 0


def test_missing_key_names_the_variable(monkeypatch, cache):
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    monkeypatch.setattr("helpers.llm.backends.read_api_key", lambda variable: None)
    llm = LLM({"provider": "groq", "model": "llama-3.1-8b-instant"}, cache=cache)
    with pytest.raises(MissingKeyError, match="GROQ_API_KEY") as caught:
        llm.complete(HELLO)
    # the user's to fix: the command line reports a UserError on one line; callers still catch LLMError
    assert isinstance(caught.value, UserError) and isinstance(caught.value, LLMError)


@pytest.mark.parametrize(
    "faults,kind",
    [
        ([("429", 0.2), ("429", 0.2)], "rate_limit"),
        ([("500", None), ("500", None)], "server_error"),
        ([("malformed", None)], "malformed_response"),
        ([("drop", None)], "connection"),
        ([("hang", 6)], "timeout"),
    ],
)
def test_faults_are_retried_then_succeed(server_url, cache, monkeypatch, faults, kind):
    monkeypatch.setenv("TEST_OAI_API_KEY", SECRET)
    with FaultProxy(server_url.removesuffix("/v1")) as proxy:
        proxy.faults.extend(faults)
        llm = _oai(proxy.url + "/v1", cache, timeout_s=3 if kind == "timeout" else 30)
        result = llm.complete(HELLO)
        assert result.text.strip() and result.record.retried[: len(faults)] == [kind] * len(faults)
        assert result.record.attempts == len(result.record.retried) + 1 == proxy.requests


def test_retry_after_is_honoured(server_url, cache, monkeypatch):
    monkeypatch.setenv("TEST_OAI_API_KEY", SECRET)
    with FaultProxy(server_url.removesuffix("/v1")) as proxy:
        proxy.faults.append(("429", 1))
        result = _oai(proxy.url + "/v1", cache).complete(HELLO)
        assert result.record.attempts == 2 and result.record.latency_s >= 1.0


def test_failure_recorded_and_never_cached(server_url, cache, monkeypatch, caplog):
    monkeypatch.setenv("TEST_OAI_API_KEY", SECRET)
    with FaultProxy(server_url.removesuffix("/v1")) as proxy:
        proxy.faults.extend([("500", None)] * 3)
        llm = _oai(proxy.url + "/v1", cache, max_retries=2, concurrency=1)
        with caplog.at_level(logging.INFO), pytest.raises(LLMError, match="gave up after 3 attempts"):
            llm.complete(HELLO)
        assert len(cache) == 0
        # in a batch the failure is recorded and the other items go on
        proxy.faults.extend([("500", None)] * 3)
        results = llm.complete_many([HELLO, [{"role": "user", "content": "Count to three."}]])
        assert [r.ok for r in results].count(False) == 1
        failed = next(r for r in results if not r.ok)
        assert failed.record.error_kind == "server_error" and "gave up" in failed.record.error
        assert len(cache) == 1 and llm.totals()["errors"] == 2
    # the key never reaches the cache, the records or the logs
    assert SECRET.encode() not in (
        cache.path.read_bytes() + b"".join(p.read_bytes() for p in cache.path.parent.glob("llm.sqlite*"))
    )
    assert SECRET not in str(llm.records()) and SECRET not in caplog.text


def test_accounting_and_prices(server_url, cache, monkeypatch):
    monkeypatch.setenv("TEST_OAI_API_KEY", SECRET)
    llm = _oai(server_url, cache, prices={"smollm2": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}})
    record = llm.complete(HELLO).record
    assert record.cost_usd == pytest.approx((record.input_tokens + 2 * record.output_tokens) / 1e6)
    llm.complete(HELLO)
    totals = llm.totals()
    assert totals["calls"] == 2 and totals["cache_hits"] == 1 and totals["cost_usd"] == pytest.approx(record.cost_usd)


class Verdict(BaseModel):
    verdict: int
    reason: str


def test_structured_output_repair_and_recorded_failure(server_url, cache, monkeypatch):
    monkeypatch.setenv("TEST_OAI_API_KEY", SECRET)
    with FaultProxy(server_url.removesuffix("/v1")) as proxy:
        llm = _oai(proxy.url + "/v1", cache)
        proxy.faults.extend(
            [
                ("content", "Sure! Here it is: {verdict: yes"),
                ("content", 'Fixed:\n```json\n{"verdict": 1, "reason": "supported"}\n```'),
            ]
        )
        ok = complete_json(llm, [{"role": "user", "content": "Judge A"}], Verdict)
        assert ok.ok and ok.value == Verdict(verdict=1, reason="supported") and len(ok.raw_texts) == 2
        proxy.faults.extend([("content", '{"verdict": "maybe"}'), ("content", "no idea")])
        bad = complete_json(llm, [{"role": "user", "content": "Judge B"}], Verdict)
        assert not bad.ok and bad.value is None and "invalid JSON output after 2 attempt(s)" in bad.error


def test_extract_json_variants():
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('The answer is {"a": [1, 2]} as requested.') == {"a": [1, 2]}
    assert extract_json("Here: [1, 2] done") == [1, 2]
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("no json here {oops")


def test_langchain_adapter_shares_cache(cache):
    from langchain_core.messages import HumanMessage

    from helpers.llm.langchain_chat import WorkbenchChatModel

    llm = LLM({"provider": "local", "max_tokens": 12}, cache=cache)
    chat = WorkbenchChatModel(llm=llm)
    direct = llm.complete(HELLO).text
    assert chat.invoke([HumanMessage(content=HELLO[0]["content"])]).content == direct
    assert llm.calls[-1].cached
    result = chat.generate([[HumanMessage(content="Name a colour.")]], n=2)
    assert len(result.generations[0]) == 2  # n samples, one request each


def test_backoff_and_rate_window():
    import random

    rng = random.Random(0)
    assert backoff_delay(1, base=1, cap=60, retry_after=7, rng=rng) >= 7
    assert all(0 <= backoff_delay(a, base=1, cap=4, retry_after=None, rng=rng) <= 4 for a in range(1, 10))
    limiter = RateLimiter(requests_per_minute=2, tokens_per_minute=100, concurrency=1, window_s=60)
    limiter._requests.extend([0.0, 1.0])
    assert limiter._wait_time(10.0, 0) == pytest.approx(50.0)  # 2 requests in the window: wait
    assert limiter._wait_time(61.0, 0) == 0  # window has moved on
    limiter._tokens.append((61.0, 90))
    assert limiter._wait_time(62.0, 20) == pytest.approx(59.0)  # tokens per minute exceeded


def test_bad_config_and_messages(cache):
    with pytest.raises(ValueError, match="temprature"):
        LLMConfig(provider="local", temprature=0.1)
    with pytest.raises(ValueError, match="provider"):
        LLMConfig(provider="anthropic")
    with pytest.raises(ValueError, match=r"messages\[0\]"):
        LLM({"provider": "local"}, cache=cache).complete([{"role": "user"}])


def test_local_stop_and_repeat_penalty_are_applied(cache):
    plain = LLM({"provider": "local", "max_tokens": 40, "repeat_penalty": 1.0, "stop": []}, cache=cache)
    full = plain.complete(COUNT)
    assert "\n5." in full.text and full.record.output_tokens == 40
    stopped = LLM(
        {"provider": "local", "max_tokens": 40, "repeat_penalty": 1.0, "stop": ["\n5."]}, cache=cache
    ).complete(COUNT)
    # llama.cpp stopped generating there (fewer tokens), and the stop itself is not in the text
    assert full.text.startswith(stopped.text) and "5." not in stopped.text and stopped.text.strip()
    assert stopped.record.output_tokens < full.record.output_tokens
    penalised = LLM({"provider": "local", "max_tokens": 40, "repeat_penalty": 1.3, "stop": []}, cache=cache).complete(
        COUNT
    )
    assert penalised.text != full.text and not penalised.record.cached
    # the prompt's own stops (complete(stop=...)) apply unless the config sets its own
    by_prompt = LLM({"provider": "local", "max_tokens": 40, "repeat_penalty": 1.0}, cache=cache)
    assert by_prompt.complete(COUNT, stop=["\n5."]).text == stopped.text
    assert plain.complete(COUNT, stop=["\n5."]).text == full.text  # config stop: [] turns them off


def test_cache_key_covers_sampling_settings(cache):
    def key(**config):
        return LLM({"provider": "local", **config}, cache=cache).key_for(HELLO)

    assert len({key(), key(repeat_penalty=1.0), key(stop=["\nPregunta:"]), key(local_backend="transformers")}) == 4
    local = LLM({"provider": "local"}, cache=cache)
    assert local.key_for(HELLO, stop=["x"]) != local.key_for(HELLO)
    assert key(stop=[]) == key()  # no stops either way: the same request
    # hosted providers never receive repeat_penalty: it cannot make their answers stale
    groq = {"provider": "groq", "model": "llama-3.1-8b-instant"}
    assert LLM({**groq, "repeat_penalty": 1.0}, cache=cache).key_for(HELLO) == LLM(groq, cache=cache).key_for(HELLO)
    with pytest.raises(ValueError, match="at most 4"):
        LLMConfig(stop=["a", "b", "c", "d", "e"])  # OpenAI's and Groq's limit
    with pytest.raises(ValueError, match="at least 1 character"):
        LLMConfig(stop=[""])


def test_server_honours_stop_and_repeat_penalty(server_url, cache, monkeypatch):
    import json
    from urllib.error import HTTPError
    from urllib.request import Request, urlopen

    from openai import OpenAI

    client = OpenAI(base_url=server_url, api_key="not-needed", max_retries=0)

    def ask(**extra):
        out = client.chat.completions.create(model="smollm2", messages=COUNT, max_tokens=40, temperature=0, **extra)
        return out.choices[0].message.content, out.usage.completion_tokens

    full, full_tokens = ask(extra_body={"repeat_penalty": 1.0})
    stopped, stopped_tokens = ask(stop="\n5.", extra_body={"repeat_penalty": 1.0})
    assert full.startswith(stopped) and "5." not in stopped and stopped_tokens < full_tokens
    assert ask(extra_body={"repetition_penalty": 1.3})[0] != full  # vLLM's name for it works too
    request = Request(
        f"{server_url}/chat/completions",
        data=json.dumps({"messages": COUNT, "stop": [3]}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(HTTPError) as rejected:
        urlopen(request, timeout=30)
    assert rejected.value.code == 400
    # through the layer: the SDK backends send the stops
    monkeypatch.setenv("TEST_OAI_API_KEY", SECRET)
    result = _oai(server_url, cache, max_tokens=40, stop=["\n5."]).complete(COUNT)
    assert "5." not in result.text and result.record.output_tokens < full_tokens


@pytest.mark.slow
def test_transformers_backend_runs_with_stops_and_penalty(cache):
    """transformers' GGUF loader (~30 s to load): text, token counts, stops, the penalty."""
    config = {"provider": "local", "local_backend": "transformers", "max_tokens": 40, "stop": []}
    plain = LLM({**config, "repeat_penalty": 1.0}, cache=cache)
    full = plain.complete(COUNT)
    assert full.text.strip() and full.record.input_tokens > 10 and full.record.output_tokens == 40
    assert "\n5." in full.text
    stopped = LLM({**config, "repeat_penalty": 1.0, "stop": ["\n5."]}, cache=cache).complete(COUNT)
    assert full.text.startswith(stopped.text) and "5." not in stopped.text and stopped.text.strip()
    assert stopped.record.output_tokens < full.record.output_tokens  # ended at the stop, not max_tokens
    penalised = LLM({**config, "repeat_penalty": 1.3}, cache=cache).complete(COUNT)
    assert penalised.text != full.text
    llama = LLM({**config, "repeat_penalty": 1.0, "local_backend": "llama-cpp"}, cache=cache)
    assert llama.key_for(COUNT) != plain.key_for(COUNT)  # another backend, another cache entry


class Statements(BaseModel):
    statements: list[str]


class Verdicts(BaseModel):
    verdicts: list[Verdict]


STATEMENTS = [
    {
        "role": "user",
        "content": "Break this answer into statements: 'The first prenatal visit is "
        "before week 10. It includes blood tests.'",
    }
]


def test_json_schema_constrains_the_local_model_and_the_server(server_url, cache, monkeypatch):
    """Unconstrained, the bundled model does not write this schema's JSON; with the schema (a
    grammar in llama.cpp) every answer parses, nested models ($defs) included, locally and through
    serve-llm's response_format; `structured_output: off` goes back to the prompt alone."""
    local = LLM({"provider": "local", "max_tokens": 120}, cache=cache)
    free = local.complete(STATEMENTS)
    with pytest.raises((ValueError, TypeError)):  # not JSON, or JSON of another shape
        Statements.model_validate(extract_json(free.text))
    constrained = complete_json(local, STATEMENTS, Statements)
    assert constrained.ok and constrained.value.statements and len(constrained.raw_texts) == 1
    nested = complete_json(local, [{"role": "user", "content": "Judge: 'The sky is green.'"}], Verdicts)
    assert nested.ok and all(isinstance(v.verdict, int) for v in nested.value.verdicts)
    assert local.key_for(STATEMENTS) != local.key_for(STATEMENTS, json_schema=Statements.model_json_schema())
    monkeypatch.setenv("TEST_OAI_API_KEY", SECRET)
    remote = complete_json(_oai(server_url, cache, max_tokens=120), STATEMENTS, Statements)
    assert remote.ok and remote.value == constrained.value  # the same grammar on the same model
    off = LLM({"provider": "local", "max_tokens": 120, "structured_output": "off"}, cache=cache)
    assert off.complete(STATEMENTS, json_schema=Statements.model_json_schema()).text == free.text


def test_response_format_per_provider_and_bad_requests(server_url):
    import json
    from urllib.error import HTTPError
    from urllib.request import Request, urlopen

    from helpers.llm.llm_settings import response_format

    schema = Statements.model_json_schema()
    assert response_format(LLMConfig(provider="groq"), schema) == {"type": "json_object"}
    assert response_format(LLMConfig(), schema)["json_schema"]["schema"] == schema
    assert response_format(LLMConfig(structured_output="off"), schema) is None
    assert response_format(LLMConfig(), None) is None
    for bad in ({"type": "yaml"}, {"type": "json_schema", "json_schema": {"name": "x"}}):
        request = Request(
            f"{server_url}/chat/completions",
            headers={"Content-Type": "application/json"},
            data=json.dumps({"messages": HELLO, "response_format": bad}).encode(),
        )
        with pytest.raises(HTTPError) as rejected:
            urlopen(request, timeout=30)
        assert rejected.value.code == 400 and b"response_format" in rejected.value.read()


def test_engine_settings_enter_the_cache_key_and_the_q8_0_copy_is_the_same_model(cache, tmp_path):
    """Q8_0 weights, flash attention and the prompt blocks change the numbers, so they key the
    cache; the old engine (as-is, no flash attention, no blocks) keeps the keys replies had before
    these settings existed. The Q8_0
    copy of the bundled Q4_1 file is built once (named by its source's sha256) and answers as the
    shipped file does on a plain question."""
    from helpers.local_models.local_weights import bundled_gguf, chosen_weights, q8_0_copy

    def key(**config):
        return LLM({"provider": "local", **config}, cache=cache).key_for(HELLO)

    old = key(local_weights="as-is", flash_attn=False, prompt_block=None)
    assert (
        len(
            {
                key(),
                old,
                key(local_weights="as-is"),
                key(flash_attn=False),
                key(prompt_block=None),
                key(prompt_block=128),
            }
        )
        == 6
    )
    assert key(prompt_store_mb=0) == key()  # the prompt store never changes an answer
    with pytest.raises(ValueError, match="prompt_block"):
        LLMConfig(prompt_block=4)
    assert key(local_weights="q8_0") == key()  # auto is q8_0 for the bundled model
    assert chosen_weights("auto", "/models/llama-8b-q4_k_m.gguf") == "as-is"
    with pytest.raises(LLMError, match="local_weights"):
        chosen_weights("q2", "smollm2")
    with pytest.raises(ValueError, match="local_weights"):
        LLMConfig(local_weights="q2")
    copy = q8_0_copy(bundled_gguf(), tmp_path)
    assert copy.stat().st_size > 1.3 * __import__("os").path.getsize(
        bundled_gguf()
    )  # 8-bit blocks vs 4-bit (embeddings already 8-bit)
    assert (
        q8_0_copy(bundled_gguf(), tmp_path) == copy
        and copy.stat().st_mtime_ns == q8_0_copy(bundled_gguf(), tmp_path).stat().st_mtime_ns
    )  # built once
    question = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    for config in ({"local_weights": "q8_0", "flash_attn": True}, {"local_weights": "as-is", "flash_attn": False}):
        text = LLM({"provider": "local", "max_tokens": 8, **config}, cache=cache).complete(question).text
        assert "paris" in text.lower(), (config, text)


def test_local_models_answer_side_by_side_and_alike():
    """The bundled model loads one model per core (at most 4), each answering one call at a time:
    two calls at once run on two models, never one model from two threads, and the same
    question gets the same greedy answer from whichever model takes it."""
    import threading

    from helpers.llm import backends
    from helpers.local_models.local_weights import local_layout

    config = LLMConfig(provider="local", max_tokens=12, cache="off", local_workers=2)
    assert local_layout(config) == (2, max(1, (__import__("os").cpu_count() or 1) // 2))
    llm = LLM(config)
    assert llm.workers == 2
    question = [{"role": "user", "content": "Name a primary colour."}]
    results = llm.complete_many([question] * 4)
    assert len({r.text for r in results}) == 1 and results[0].text
    key = next(k for k in backends._LOADED if k[-2] == local_layout(config)[1] and k[3] == "q8_0")
    assert backends._LOADED[key] == 2 and backends._POOLS[key].qsize() == 2  # both back in the pool
    in_use, worst = [0], [0]
    original = backends.LlamaCppBackend._model

    def counting(self):
        manager = original(self)

        class Counted:
            def __enter__(inner):
                model = manager.__enter__()
                in_use[0] += 1
                worst[0] = max(worst[0], in_use[0])
                inner.model = model
                return model

            def __exit__(inner, *exc):
                in_use[0] -= 1
                return manager.__exit__(*exc)

        return Counted()

    backends.LlamaCppBackend._model = counting
    try:
        threads = [
            threading.Thread(target=llm.complete, args=([{"role": "user", "content": f"Say {w}."}],))
            for w in ("yes", "no", "maybe")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        backends.LlamaCppBackend._model = original
    assert worst[0] <= 2 and backends._LOADED[key] == 2


def test_a_prompt_sharing_blocks_with_an_earlier_one_reuses_them_and_says_how_many():
    """The backend's prompt store (helpers.local_models.llama_prefix): a second question over the same
    contexts reuses the first prompt's whole blocks; the call's record and the usage count them,
    so a run's compute floor can leave them out (benchmarks/llm_rates.py). No cache: both calls
    reach the model."""
    from helpers.generation.answering import build_messages

    context = "Low-dose aspirin from 12 weeks lowers the risk of preeclampsia in women at high risk. " * 6
    llm = LLM({"provider": "local", "max_tokens": 4, "prompt_block": 16}, cache=None)
    first = llm.complete(build_messages("What lowers the risk?", [context], "en"))
    second = llm.complete(build_messages("From which week?", [context], "en"))
    assert first.ok and second.ok
    assert second.record.reused_input_tokens >= 96 and second.record.reused_input_tokens % 16 == 0
    assert second.record.reused_input_tokens < second.record.input_tokens
    assert (
        llm.usage(llm.calls)["reused_input_tokens"]
        == first.record.reused_input_tokens + second.record.reused_input_tokens
    )
