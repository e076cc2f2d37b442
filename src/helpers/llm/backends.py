"""The backends behind the LLM layer: the bundled local model (llama.cpp or transformers), Groq's
SDK, and any OpenAI-compatible server. Each implements helpers.llm.protocol.Backend: turns one chat
request into text and token counts, and maps its failures to RetryableError (worth retrying) or
LLMError (not)."""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from urllib.parse import urlparse

from helpers.llm.keys import check_destination, is_loopback, read_api_key
from helpers.llm.llm_errors import LLMError, MissingKeyError, RetryableError
from helpers.llm.llm_settings import LLMConfig
from helpers.llm.protocol import Completion, cut_at_stop  # noqa: F401 (the contract's types, imported from here too)
from helpers.llm.providers import ProviderEntry, provider, register_provider
from helpers.llm.transformers_backend import TransformersBackend
from helpers.local_models.llama_prefix import PromptStore, block_aligned_llama
from helpers.local_models.local_weights import (
    chosen_weights,
    local_key_fields,
    local_layout,
    local_workers,
    q8_0_copy,
    resolve_local_model,
)
from helpers.redaction import redact

# ----------------------------------------------------------------------------- local models

_MODELS_LOCK = threading.Lock()
# llama.cpp models by (file, context, weights, flash attention, threads, prompt block): a pool of up to
# `workers` loaded models each, shared by every LLM entry that names the same engine (the
# default config's `local` and `judge`); a model serves one call at a time (not thread-safe)
_POOLS: dict[tuple, "queue.LifoQueue"] = {}
_LOADED: dict[tuple, int] = {}
_STORES: dict[tuple, PromptStore] = {}  # one prompt store per pool: its models restore each other's prompts


class LlamaCppBackend:
    """llama-cpp-python over the GGUF file: up to `workers` models per process, each on
    `threads` threads, each serving one call at a time (helpers.local_models.local_weights.local_layout)."""

    def __init__(self, config: LLMConfig):
        self.path, self.n_ctx = resolve_local_model(config.model), config.n_ctx
        self.weights = chosen_weights(config.local_weights, config.model)
        self.flash_attn, self.prompt_block = config.flash_attn, config.prompt_block
        self.workers, self.threads = local_layout(config)
        self.repeat_penalty = config.repeat_penalty
        self.prompt_store_mb = config.prompt_store_mb

    def _load(self, key: tuple | None = None):
        """One model; `key`: its pool's, whose prompt store it shares (none without a key)."""
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise LLMError(
                "llama-cpp-python is not installed: run `make setup`, or set llm.local_backend: transformers"
            ) from exc
        path = q8_0_copy(self.path) if self.weights == "q8_0" else self.path
        return block_aligned_llama(
            model_path=str(path),
            n_ctx=self.n_ctx,
            n_threads=self.threads,
            n_threads_batch=self.threads,
            flash_attn=self.flash_attn,
            verbose=False,
            seed=0,
            block=self.prompt_block,
            store=_STORES.setdefault(key, PromptStore(self.prompt_store_mb)) if key and self.prompt_store_mb else None,
        )

    @contextlib.contextmanager
    def _model(self):
        """A free model of the pool (loaded when none is free and fewer than `workers` exist)."""
        key = ("llama-cpp", self.path, self.n_ctx, self.weights, self.flash_attn, self.threads, self.prompt_block)
        with _MODELS_LOCK:
            pool = _POOLS.setdefault(key, queue.LifoQueue())  # LIFO: the warmest model first
            model = None
            if pool.empty() and _LOADED.get(key, 0) < self.workers:
                model = self._load(key)
                _LOADED[key] = _LOADED.get(key, 0) + 1
        model = model or pool.get()
        try:
            yield model
        finally:
            pool.put(model)

    def chat(
        self,
        messages,
        *,
        temperature,
        max_tokens,
        seed,
        timeout,
        stop=(),
        repeat_penalty=None,
        response_format=None,
        n=1,
    ) -> Completion:
        """repeat_penalty: None = the config's. response_format json_schema: llama-cpp-python
        compiles the schema into a GBNF grammar, so the output is JSON of that schema (cut short
        only by max_tokens); json_object: any JSON. n: one choice whatever is asked (the client
        asks for the other samples one by one, each with its own seed)."""
        penalty = self.repeat_penalty if repeat_penalty is None else repeat_penalty
        grammar = {}
        if response_format:
            schema = (response_format.get("json_schema") or {}).get("schema")
            grammar = {"response_format": {"type": "json_object", **({"schema": schema} if schema else {})}}
        with self._model() as model:
            # the model reuses only whole blocks of its previous prompt (helpers.local_models.llama_prefix):
            # which model took which call before never changes an answer, so a resumed run agrees
            out = model.create_chat_completion(
                messages=messages,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
                stop=list(stop or ()),
                repeat_penalty=penalty,
                **grammar,
            )
            model.remember_prompt()
        usage = out.get("usage", {})
        return Completion(
            out["choices"][0]["message"]["content"] or "",
            usage.get("prompt_tokens", 0),
            usage.get("completion_tokens", 0),
            reused_tokens=model.reused_tokens,
        )


# ----------------------------------------------------------------------------- hosted / servers


def _map_sdk_error(exc: Exception) -> Exception:
    """OpenAI's and Groq's SDKs (both Stainless-generated) raise the same shapes of error."""
    name = type(exc).__name__
    text = redact(str(exc))  # a server may echo the Authorization header in its error
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    if status == 429 or name == "RateLimitError":
        retry_after = None
        if response is not None:
            try:
                retry_after = float(response.headers.get("retry-after"))
            except (TypeError, ValueError):
                retry_after = None
        return RetryableError(f"rate limited (429): {text}", retry_after=retry_after, kind="rate_limit")
    if status is not None and status >= 500:
        return RetryableError(f"server error {status}: {text}", kind="server_error")
    if name in {"APITimeoutError"}:
        return RetryableError(f"timed out: {text}", kind="timeout")
    if name in {"APIConnectionError"}:
        return RetryableError(f"connection failed: {text}", kind="connection")
    if name in {"APIResponseValidationError", "JSONDecodeError"}:
        return RetryableError(f"malformed response: {text}", kind="malformed_response")
    if status is not None:
        return LLMError(f"request rejected ({status}): {text}")
    return RetryableError(f"unexpected failure ({name}): {text}", kind="unexpected")


def key_needs(config: LLMConfig) -> tuple[str | None, str | None, bool]:
    """(the server's URL, the variable its key comes from, whether it is a keyless local server) of
    an SDK provider's config (helpers.llm.providers: its default server and key)."""
    entry = provider(config.provider)
    env_url = os.environ.get(entry.url_variable) if entry.url_variable else None
    url = config.base_url or env_url or entry.default_url
    local = entry.keyless_on_loopback and is_loopback(urlparse(url or "").hostname)
    # a server on this machine gets a key only when the config names its variable: the
    # provider default (OPENAI_API_KEY) is OpenAI's key, not the local server's
    return url, (config.api_key_env if local else config.resolved_api_key_env()), local


def missing_key_message(config: LLMConfig, variable: str | None) -> str:
    return (
        f"provider '{config.provider}' needs an API key in the environment variable {variable} "
        "(or in the project's .env file)"
    )


def missing_key(config: LLMConfig) -> str | None:
    """Why a call through `config` would fail for want of a key (None: it has one, or needs none),
    found before any call is made."""
    if provider(config.provider).local:
        return None
    _, variable, local = key_needs(config)
    if local or (variable and read_api_key(variable)):
        return None
    return missing_key_message(config, variable)


class _SDKBackend:
    """Shared logic of the two SDK backends; subclasses build the client."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self.url, variable, local = key_needs(config)
        if variable and self.url:  # no URL: _client says which setting is missing
            check_destination(variable, self.url)
        key = read_api_key(variable) if variable else None
        if not key:
            if local:
                key = "not-needed"  # local servers (Ollama, vLLM, llama.cpp) take any key
            else:
                raise MissingKeyError(missing_key_message(config, variable))
        self.client = self._client(key)

    def _client(self, key: str):  # pragma: no cover - abstract
        raise NotImplementedError

    def chat(
        self,
        messages,
        *,
        temperature,
        max_tokens,
        seed,
        timeout,
        stop=(),
        repeat_penalty=None,
        response_format=None,
        n=1,
    ) -> Completion:
        """`stop` is sent (OpenAI-compatible servers and Groq accept up to 4), and so is
        `response_format` (json_schema for vLLM, Ollama and serve-llm; json_object for Groq).
        `repeat_penalty` is not: OpenAI's API has no such parameter and rejects unknown ones.
        `n` > 1: that many choices in one request (OpenAI, vLLM, serve-llm; a server that ignores
        n returns fewer, and the caller asks for the rest)."""
        extra = ({"stop": list(stop)} if stop else {}) | (
            {"response_format": response_format} if response_format else {}
        )
        try:
            out = self.client.chat.completions.create(
                model=self.config.model,
                messages=messages,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
                n=n,
                timeout=timeout,
                **extra,
            )
            texts = [redact(choice.message.content) for choice in out.choices]  # nor may it echo a key
            text = texts[0] if texts else None
            usage = out.usage
        except Exception as exc:  # every SDK failure is classified, none escapes unmapped
            raise _map_sdk_error(exc) from None  # the SDK's own text may hold the key: redacted above
        if text is None or any(t is None for t in texts):
            raise RetryableError("the response had no text", kind="empty_response")
        return Completion(
            text,
            getattr(usage, "prompt_tokens", 0) or 0,
            getattr(usage, "completion_tokens", 0) or 0,
            texts if n > 1 else None,
        )


class OpenAICompatibleBackend(_SDKBackend):
    def _client(self, key: str):
        from openai import OpenAI

        if not self.url:
            raise LLMError(
                f"provider '{self.config.provider}' needs llm.base_url (e.g. http://127.0.0.1:11434/v1 "
                "for Ollama) or the OPENAI_BASE_URL variable"
            )
        return OpenAI(api_key=key, base_url=self.url, max_retries=0, timeout=self.config.timeout_s)


class GroqBackend(_SDKBackend):
    def _client(self, key: str):
        from groq import Groq

        return Groq(api_key=key, base_url=self.config.base_url, max_retries=0, timeout=self.config.timeout_s)


def _local(config: LLMConfig):
    return LlamaCppBackend(config) if config.local_backend == "llama-cpp" else TransformersBackend(config)


# the built-in providers (helpers.llm.providers), in the order errors list them
for _entry in (
    ProviderEntry(
        "local",
        _local,
        local=True,
        workers=local_workers,
        key_fields=local_key_fields,
        description="the bundled model, in this process",
    ),
    ProviderEntry(
        "groq",
        GroqBackend,
        key_variable="GROQ_API_KEY",
        default_url="https://api.groq.com",
        json_mode="json_object",  # Groq's API takes JSON mode, not a schema
        single_choice="Groq's API accepts n=1 only",
        description="Groq's hosted API",
    ),
    ProviderEntry(
        "openai-compatible",
        OpenAICompatibleBackend,
        key_variable="OPENAI_API_KEY",
        url_variable="OPENAI_BASE_URL",
        key_hosts=("api.openai.com",),  # OPENAI_API_KEY is OpenAI's key, whatever server is named
        keyless_on_loopback=True,  # Ollama, vLLM, llama.cpp on this machine take any key
        key_fields=lambda config: {"base_url": config.base_url},  # two servers: two models
        description="OpenAI or any server with its API (vLLM, Ollama, serve-llm)",
    ),
):
    register_provider(_entry)


def build_backend(config: LLMConfig):
    """The backend of the config's provider, built by its registry entry (an unknown provider is
    an error listing the valid names)."""
    return provider(config.provider).build(config)
