"""The package's scripted backend (helpers.llm.scripted), the tests' stand-in for a model: replies
from a string, a list or a function, failures on demand, every request recorded, one choice
whatever n asks; and the client calling it with every option of the Backend protocol."""

import threading

import pytest

from helpers.llm import LLM, LLMError, RetryableError
from helpers.llm.protocol import Completion
from helpers.llm.scripted import ScriptedBackend

HELLO = [{"role": "user", "content": "Say hello."}]
OPTIONS = {"temperature": 0.0, "max_tokens": 8, "seed": 3, "timeout": None}


def test_replies_from_a_string_a_list_or_a_function():
    assert ScriptedBackend("hi", tokens=(5, 2)).chat(HELLO, **OPTIONS) == Completion("hi", 5, 2)
    estimated = ScriptedBackend("two words").chat(HELLO, **OPTIONS)
    assert estimated.input_tokens > 0 and estimated.output_tokens == 2
    listed = ScriptedBackend(["one", Completion("two", 1, 1), LLMError("three")])
    assert listed.chat(HELLO, **OPTIONS).text == "one" and listed.chat(HELLO, **OPTIONS).text == "two"
    with pytest.raises(LLMError, match="three"):
        listed.chat(HELLO, **OPTIONS)
    with pytest.raises(LookupError, match="3 replies and got request 4"):
        listed.chat(HELLO, **OPTIONS)
    shouting = ScriptedBackend(lambda call: call.prompt.upper())
    assert shouting.chat(HELLO, **OPTIONS).text == "SAY HELLO."


def test_every_request_is_recorded_with_its_options_and_thread():
    backend = ScriptedBackend("ok")
    backend.chat(HELLO, **OPTIONS, stop=("\n",), response_format={"type": "json_object"}, n=2)
    call = backend.calls[-1]
    assert (call.prompt, call.seed, call.stop, call.n, call.thread) == (
        "Say hello.",
        3,
        ["\n"],
        2,
        threading.get_ident(),
    )
    assert call.options() == OPTIONS | {
        "stop": ["\n"],
        "repeat_penalty": None,
        "response_format": {"type": "json_object"},
    }


def test_the_client_passes_every_option_and_retries_a_scripted_failure():
    backend = ScriptedBackend([RetryableError("busy", kind="server_error"), "Hola. Adiós."])
    llm = LLM({"provider": "groq", "cache": "off", "max_retries": 1, "backoff_base_s": 0.01}, backend=backend)
    result = llm.complete(HELLO, stop=["."], json_schema={"type": "object"})
    assert result.text == "Hola" and result.record.retried == ["server_error"] and len(backend.calls) == 2
    call = backend.calls[-1]
    assert call.stop == ["."] and call.response_format == {"type": "json_object"} and call.n == 1


def test_samples_asked_together_from_a_backend_that_gives_one_choice(tmp_path):
    backend = ScriptedBackend(lambda call: f"sample {call.seed}")
    config = {"provider": "openai-compatible", "base_url": "http://127.0.0.1:9/v1", "model": "m", "cache": "off"}
    llm = LLM(config | {"n_per_request": 3}, backend=backend)
    assert [r.text for r in llm.complete_samples(HELLO, 3)] == ["sample 0", "sample 1", "sample 2"]
    assert [c.n for c in backend.calls] == [3, 1, 1]  # one request for three, then the two missing alone
