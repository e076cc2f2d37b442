"""A LangChain chat model over the LLM layer, so ragas and LangChain chains share its cache,
limits, retries and accounting."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict

from helpers.llm.client import LLM
from helpers.llm.structured import RESPONSE_SCHEMA, normalise_json

_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


def to_openai_messages(messages: list[BaseMessage]) -> list[dict]:
    out = []
    for message in messages:
        role = _ROLES.get(message.type)
        if role is None:
            raise ValueError(f"message type {message.type!r} is not supported (use system, human or ai)")
        content = (
            message.content
            if isinstance(message.content, str)
            else "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in message.content)
        )
        out.append({"role": role, "content": content})
    return out


class WorkbenchChatModel(BaseChatModel):
    """`WorkbenchChatModel(llm=LLM(...))`. Supports `n` by drawing n independent samples
    (`LLM.complete_samples`: in one request where the provider takes n > 1 and the config's
    `n_per_request` says so, else one request each, as Groq needs)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    llm: LLM
    n: int = 1
    temperature: float | None = None
    max_tokens: int | None = None

    @property
    def _llm_type(self) -> str:
        return "helpers-llm"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"provider": self.llm.config.provider, "model": self.llm.config.model}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        request = to_openai_messages(messages)
        n = int(kwargs.get("n") or self.n)
        temperature = kwargs.get("temperature", self.temperature)
        generations, input_tokens, output_tokens = [], 0, 0
        schema = RESPONSE_SCHEMA.get()
        results = self.llm.complete_samples(
            request,
            n,
            temperature=temperature,
            max_tokens=kwargs.get("max_tokens", self.max_tokens),
            json_schema=schema,
        )
        for result in results:
            assert result.text is not None, "complete_samples raises rather than answer with no text"
            text = normalise_json(result.text) if schema is not None else result.text
            if stop:
                for token in stop:
                    text = text.split(token)[0]
            input_tokens += result.record.input_tokens
            output_tokens += result.record.output_tokens
            generations.append(ChatGeneration(message=AIMessage(content=text)))
        usage = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
        return ChatResult(generations=generations, llm_output={"token_usage": usage})

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        # the layer is thread-safe and rate-limited; run the blocking call off the event loop
        return await asyncio.to_thread(self._generate, messages, stop, None, **kwargs)
