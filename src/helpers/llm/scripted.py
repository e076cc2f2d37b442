"""`ScriptedBackend`: a backend (helpers.llm.protocol.Backend) that answers from a script and
records every request, for tests of the code above the LLM layer: what a prompt carried, which
seeds and stops reached the backend, how many calls ran and on which threads, and how a caller
takes a failure, with no model and no server.

    backend = ScriptedBackend("El sulfato de magnesio.")              # every request
    backend = ScriptedBackend(["first", RetryableError("busy"), "third"])  # one per request, in order
    backend = ScriptedBackend(lambda call: call.prompt.upper())        # a function of the request
    llm = LLM({"provider": "groq", "cache": "off"}, backend=backend)
    llm.complete(messages); backend.calls[-1].seed, backend.calls[-1].prompt

A reply is a string (answered with `tokens`, else estimated counts), a Completion (as it is) or
an exception (raised: a failure on demand). It answers one choice whatever `n` asks, as a server
that ignores n does (the client asks for the other samples one by one). helpers.llm.responder's
SchemaResponder is the other deterministic backend: well-formed answers to any prompt (JSON of a
schema), for throughput tests and dry runs; this one says exactly what each test needs said.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from helpers.llm.protocol import Completion
from helpers.llm.responder import estimate_tokens, message_tokens

Reply = str | Completion | BaseException


@dataclass
class Call:
    """One request as the backend received it, and the thread that sent it."""

    messages: list[dict]
    temperature: float
    max_tokens: int
    seed: int
    timeout: float | None
    stop: list[str]
    repeat_penalty: float | None
    response_format: dict | None
    n: int
    thread: int

    @property
    def prompt(self) -> str:
        """The last message's text (the user's question, with its contexts)."""
        return self.messages[-1].get("content") or ""

    def options(self) -> dict:
        """The keyword options of the request, as a backend's `chat` takes them (n aside)."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "timeout": self.timeout,
            "stop": self.stop,
            "repeat_penalty": self.repeat_penalty,
            "response_format": self.response_format,
        }


class ScriptedBackend:
    """`replies`: one reply for every request, a list of them (request i gets the i-th; one more
    request is an error), or a function of the Call. `tokens`: the (input, output) counts a string
    reply reports (default: helpers.llm.responder's estimates of the prompt and the reply)."""

    def __init__(
        self,
        replies: Reply | Sequence[Reply] | Callable[[Call], Reply],
        *,
        tokens: tuple[int, int] | None = None,
    ):
        self.replies, self.tokens = replies, tokens
        self.calls: list[Call] = []
        self._lock = threading.Lock()  # requests from several threads (complete_many) are numbered once each

    def chat(
        self,
        messages: list[dict],
        *,
        temperature: float,
        max_tokens: int,
        seed: int,
        timeout: float | None,
        stop: Sequence[str] = (),
        repeat_penalty: float | None = None,
        response_format: dict | None = None,
        n: int = 1,
    ) -> Completion:
        call = Call(
            messages,
            temperature,
            max_tokens,
            seed,
            timeout,
            list(stop or ()),
            repeat_penalty,
            response_format,
            n,
            threading.get_ident(),
        )
        with self._lock:
            index = len(self.calls)
            self.calls.append(call)
        reply = self._reply(call, index)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, Completion):
            return reply
        input_tokens, output_tokens = self.tokens or (message_tokens(messages), estimate_tokens(reply))
        return Completion(reply, input_tokens, output_tokens)

    def _reply(self, call: Call, index: int) -> Reply:
        if callable(self.replies):
            return self.replies(call)
        if isinstance(self.replies, (str, Completion, BaseException)):
            return self.replies
        if index >= len(self.replies):
            raise LookupError(f"ScriptedBackend has {len(self.replies)} replies and got request {index + 1}")
        return self.replies[index]
