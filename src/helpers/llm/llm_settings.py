"""Typed LLM settings: one `provider` string chooses the backend (helpers.llm.providers)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from helpers.llm.keys import check_key_variable
from helpers.llm.presets import DEFAULT_PRICES, Price, limit_preset
from helpers.llm.providers import PROVIDERS, provider

# OpenAI's chat API (and Groq's, which mirrors it) accept at most 4 stop sequences.
MAX_STOP_SEQUENCES = 4
# llama-cpp prompt blocks (helpers.local_models.llama_prefix), chosen in benchmarks/llm_engine.py
PROMPT_BLOCK = 64


class LLMConfig(BaseModel):
    """Settings of one LLM. Unknown keys are rejected (a typo never passes silently)."""

    model_config = ConfigDict(extra="forbid")

    provider: str = Field(
        "local", description="a registered provider (helpers.llm.providers): local, groq, openai-compatible, ..."
    )
    model: str = Field("smollm2", description="model name; for `local`: 'smollm2' or a .gguf path")
    base_url: str | None = Field(None, description="server URL for openai-compatible (and groq, optional)")
    api_key_env: str | None = Field(None, description="environment variable holding the API key")
    local_backend: Literal["llama-cpp", "transformers"] = "llama-cpp"
    local_weights: Literal["auto", "q8_0", "as-is"] = Field(
        "auto",
        description=(
            "llama-cpp only: the weights it runs. q8_0: the GGUF re-encoded once as Q8_0 (llama.cpp's "
            "fast kernels; prompts 1.8x faster with flash attention for the bundled Q4_1 model here); as-is: the file itself; "
            "auto: q8_0 for the bundled smollm2, as-is for any other file"
        ),
    )
    flash_attn: bool = Field(True, description="llama-cpp only: flash attention (prompts 1.2-1.35x faster here)")
    local_workers: int | None = Field(
        None,
        ge=1,
        description=(
            "llama-cpp only: models loaded side by side, each answering one call at a time on "
            "cores // local_workers threads. None: one per core (at most 4) for the bundled smollm2, "
            "1 for any other file (helpers.local_models.local_weights.local_layout)"
        ),
    )
    prompt_block: int | None = Field(
        PROMPT_BLOCK,
        ge=16,
        le=4096,
        description=(
            "llama-cpp only: prompts are evaluated in blocks of this many tokens, and a call reuses "
            "the KV of the whole blocks it shares with its model's previous prompt, which leaves "
            "every answer as from an empty context (helpers.local_models.llama_prefix). None: no reuse, "
            "every prompt evaluated whole in llama-cpp-python's batches of 512"
        ),
    )
    prompt_store_mb: float = Field(
        1024,
        ge=0,
        description=(
            "llama-cpp only: memory for the KV of earlier prompts, so a prompt reuses the whole blocks it "
            "shares with any prompt its pool answered, not only its model's previous one (about 28 KB a "
            "token for the 1.5B model; answers unchanged, helpers.local_models.llama_prefix). 0: the previous prompt only"
        ),
    )
    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int = Field(256, gt=0)
    # 1.1: the default of llama-cpp-python's OpenAI-compatible server (llama_cpp/server/types.py,
    # `repeat_penalty_field`) and llama.cpp's long-time CLI default; the CTRL penalty (Keskar et
    # al. 2019) over the last 64 tokens. The bundled GGUF carries no sampling settings and
    # SmolLM2's model card suggests none (its example samples at temperature 0.2, top_p 0.9);
    # without a penalty the 135M model loops on the Spanish answers (benchmarks/answer_quality.py).
    repeat_penalty: float = Field(
        1.1,
        gt=0,
        le=2,
        description=(
            "local backends only: divide the logits of tokens seen in the last 64 by this (1.0 = off); "
            "hosted providers have no such parameter and never receive it"
        ),
    )
    stop: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None,
        max_length=MAX_STOP_SEQUENCES,
        description=(
            "stop sequences for every call (all providers). None (default): each prompt's own, e.g. "
            "the answer prompt stops at a new 'Pregunta:'/'Question:' line (helpers.generation.answering); "
            "[]: none at all"
        ),
    )
    structured_output: Literal["auto", "json_schema", "json_object", "off"] = Field(
        "auto",
        description=(
            "how a call that names a JSON schema is constrained: json_schema (llama.cpp turns it into a "
            "grammar; OpenAI-compatible servers get response_format json_schema), json_object (JSON mode, "
            "no schema), off (prompt only). auto: json_object for groq, json_schema otherwise"
        ),
    )
    seed: int = 0
    n_ctx: int = Field(8192, gt=0, description="context window of the local model")
    timeout_s: float = Field(60.0, gt=0, description="per-call timeout")
    max_retries: int = Field(5, ge=0)
    backoff_base_s: float = Field(1.0, gt=0)
    backoff_max_s: float = Field(60.0, gt=0)
    limits: str | None = Field(
        None,
        description=(
            "a provider's published rate limits (helpers.llm.presets.LIMIT_PRESETS, e.g. groq-free): "
            "fills requests_per_minute, tokens_per_minute and concurrency where they are unset"
        ),
    )
    requests_per_minute: float | None = Field(None, gt=0)
    tokens_per_minute: float | None = Field(None, gt=0)
    requests_per_day: float | None = Field(None, gt=0, description="checked by --dry-run (None: no daily limit)")
    tokens_per_day: float | None = Field(None, gt=0, description="checked by --dry-run (None: no daily limit)")
    concurrency: int = Field(4, gt=0, description="parallel calls to this provider")
    n_per_request: int = Field(
        1,
        ge=1,
        le=8,
        description=(
            "choices one request may ask for (OpenAI's `n`): several samples of one prompt, e.g. RAGAS's "
            "3 questions per answer, in one request. OpenAI, vLLM and serve-llm take n > 1; Groq takes 1 only"
        ),
    )
    cache: Literal["on", "off", "replay"] = Field("on", description="replay: never call out, cache only")
    prices: dict[str, Price] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, values):
        """`limits: <preset>`: the preset's numbers where the config sets none of its own."""
        if isinstance(values, dict) and values.get("limits"):
            preset = limit_preset(values["limits"])
            fill = {
                "requests_per_minute": preset.requests_per_minute,
                "tokens_per_minute": preset.tokens_per_minute,
                "requests_per_day": preset.requests_per_day,
                "tokens_per_day": preset.tokens_per_day,
                "concurrency": preset.concurrency,
            }
            values = {**{k: v for k, v in fill.items() if v is not None}, **values}
        return values

    @field_validator("provider")
    @classmethod
    def _registered(cls, name):
        if name not in PROVIDERS:
            raise ValueError(f"unknown provider {name!r}; valid: {', '.join(PROVIDERS)}")
        return name

    @model_validator(mode="after")
    def _one_choice(self):
        why = provider(self.provider).single_choice
        if why and self.n_per_request > 1:
            raise ValueError(f"n_per_request must be 1 for provider {self.provider}: {why}")
        return self

    @field_validator("api_key_env")
    @classmethod
    def _key_variable(cls, variable):
        # a shared config must not turn another secret (cloud credentials, tokens) into a bearer key
        return variable if variable is None else check_key_variable(variable)

    def price(self) -> Price:
        if provider(self.provider).local:
            return Price()
        return self.prices.get(self.model) or DEFAULT_PRICES.get(self.model) or Price()

    def resolved_api_key_env(self) -> str | None:
        if self.api_key_env:
            return self.api_key_env
        return provider(self.provider).key_variable


def response_format(config: "LLMConfig", json_schema: dict | None) -> dict | None:
    """The OpenAI-style `response_format` for a call that asks for `json_schema` (None: none)."""
    if json_schema is None or config.structured_output == "off":
        return None
    mode = config.structured_output
    if mode == "auto":
        mode = provider(config.provider).json_mode
    if mode == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": json_schema.get("title", "output"), "schema": json_schema}}
