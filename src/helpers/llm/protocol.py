"""`Backend`: the one contract every backend of the LLM layer implements, and the only way the
client (helpers.llm.client.LLM) and serve-llm (helpers.llm.server) call one; with it, what a call
returns (`Completion`) and the stop rule every answer goes through (`cut_at_stop`). Both are
imported from helpers.llm.backends too, where they were first defined.

Implemented by the local model (llama.cpp, transformers), Groq's SDK and any OpenAI-compatible
server (helpers.llm.backends), the fast schema-filling responder behind `serve-llm --responder
fast` and `--dry-run` (helpers.llm.responder.SchemaResponder), and the scripted backend the tests
use (helpers.llm.scripted.ScriptedBackend). A backend of one's own passed as `LLM(config,
backend=...)` implements the same signature: the client passes every option to every backend, so
a backend says by its behaviour, not by its signature, what it does with an option.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass
class Completion:
    text: str
    input_tokens: int
    output_tokens: int
    choices: list[str] | None = None  # every choice's text, when n > 1 was asked for (text = choices[0])
    reused_tokens: int = 0  # prompt tokens whose KV was reused, not computed (llama.cpp's prompt blocks)


def cut_at_stop(text: str, stop=()) -> str:
    """`text` up to the earliest stop sequence, the stop itself excluded: what OpenAI's API returns.
    Applied to every backend's output, so a server that ignores `stop` gives the same text."""
    end = len(text)
    for sequence in stop or ():
        found = text.find(sequence)
        if found != -1:
            end = min(end, found)
    return text[:end]


class Backend(Protocol):
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
        """One chat request, answered as a Completion (its text and token counts).

        messages: {'role': system|user|assistant, 'content': str} dicts, checked by the caller.
        timeout: seconds a hosted call may take (None: no limit, as for the local model).
        stop: the text ends before the first of these; a backend may ignore them (the client
        cuts every answer at its stops, as OpenAI's API does).
        repeat_penalty: None = the backend's own setting; backends without one ignore it.
        response_format: OpenAI's (json_object, or json_schema with the schema); None: free text.
        A backend that cannot constrain its output may ignore it: the caller validates the JSON.
        n: choices asked for, choice j seeded seed + j; a backend may return fewer (Completion.choices
        shorter, or None for one), and the client asks for the rest one by one.
        Failures: RetryableError (worth retrying: 429, 5xx, timeouts) or LLMError (not); any
        other exception is a bug or a broken model, and reaches the caller unretried."""
        ...
