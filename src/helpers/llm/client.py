"""`LLM`: every LLM call of the workbench goes through here: cache, retries, rate limits,
accounting. Keys never reach the cache, the records or the logs."""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from helpers.llm.backends import build_backend, cut_at_stop
from helpers.llm.cache import ResponseCache, cache_key
from helpers.llm.call_records import CallRecord, LLMResult, split_total, usage
from helpers.llm.limits import RateLimiter, backoff_delay
from helpers.llm.llm_errors import CacheMissError, LLMError, RetryableError
from helpers.llm.llm_settings import LLMConfig, response_format
from helpers.llm.protocol import Backend, Completion
from helpers.llm.providers import provider

log = logging.getLogger(__name__)


class LLM:
    """One configured LLM. `complete` raises LLMError when a call fails for good;
    `complete_many` records failures per item and goes on."""

    def __init__(
        self,
        config: LLMConfig | dict | None = None,
        *,
        cache: ResponseCache | None = None,
        backend: Backend | None = None,
        limiter: RateLimiter | None = None,
    ):
        """`backend`: None = the config's provider (helpers.llm.backends.build_backend); any object
        with Backend's `chat` (helpers.llm.protocol), e.g. helpers.llm.scripted.ScriptedBackend.
        `limiter`: None = the one shared by every client of this provider, base URL and key."""
        self.config = config if isinstance(config, LLMConfig) else LLMConfig(**(config or {}))
        self._backend = backend
        self.cache = cache if cache is not None else (ResponseCache() if self.config.cache != "off" else None)
        self.calls: list[CallRecord] = []
        self._rng = random.Random(self.config.seed)
        self._tracking = threading.local()  # per thread: the lists that `track` blocks collect into
        self.limiter = limiter or RateLimiter.shared(
            (self.config.provider, self.config.base_url, self.config.resolved_api_key_env()),
            self.config.requests_per_minute,
            self.config.tokens_per_minute,
            self.config.concurrency,
        )

    @property
    def backend(self) -> Backend:
        if self._backend is None:  # built lazily: a fully cached run never loads a model
            self._backend = build_backend(self.config)
        return self._backend

    @property
    def name(self) -> str:
        return f"{self.config.provider}:{self.config.model}"

    @property
    def workers(self) -> int:
        """How many calls to run at once, as the provider's registry entry says: the config's
        `concurrency` for a server; for the local model, the number of llama.cpp models loaded side
        by side (helpers.local_models.local_weights.local_workers)."""
        entry = provider(self.config.provider)
        return entry.workers(self.config) if entry.workers else self.config.concurrency

    def stops_for(self, stop=None) -> list[str]:
        """The stop sequences a call uses: the config's when it sets them, else the prompt's own
        (`stop`, e.g. helpers.generation.answering's answer stops)."""
        chosen = self.config.stop if self.config.stop is not None else (stop or [])
        return list(chosen)

    def _payload(self, messages, temperature, max_tokens, seed, sample, stop, json_schema=None) -> dict:
        """Everything that determines the answer. `stop` enters only when there is one, and the
        provider's own fields (its entry's `key_fields`, e.g. `repeat_penalty` only for the local
        backends) only for that provider, so entries made before these settings existed keep their
        keys."""
        c = self.config
        payload = {
            "provider": c.provider,
            "model": c.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "sample": sample,
        }
        if stop:
            payload["stop"] = stop
        if json_schema is not None:  # only when asked for, so older entries keep their keys
            payload["response_format"] = response_format(c, json_schema)
        entry = provider(c.provider)
        if entry.key_fields:  # e.g. the local engine's settings, a server's URL (helpers.llm.providers)
            payload.update(entry.key_fields(c))
        return payload

    def key_for(
        self, messages, *, temperature=None, max_tokens=None, seed=None, sample=0, stop=None, json_schema=None
    ) -> str:
        c = self.config
        return cache_key(
            self._payload(
                messages,
                c.temperature if temperature is None else temperature,
                max_tokens or c.max_tokens,
                c.seed if seed is None else seed,
                sample,
                self.stops_for(stop),
                json_schema,
            )
        )

    def complete(
        self,
        messages: list[dict],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        sample: int = 0,
        stop: list[str] | None = None,
        json_schema: dict | None = None,
    ) -> LLMResult:
        """One chat completion. `sample` > 0 asks for another independent sample of the same
        request (its own cache entry and seed): how n completions work on n=1-only providers.
        `stop`: the prompt's stop sequences (default none), replaced by `config.stop` when set;
        the text ends before the first one. `json_schema`: the answer must be JSON of this schema,
        constrained as `config.structured_output` says (llama.cpp: a grammar, so it always parses)."""
        _check_messages(messages)
        c = self.config
        temperature = c.temperature if temperature is None else temperature
        max_tokens = max_tokens or c.max_tokens
        seed = (c.seed if seed is None else seed) + sample
        stop = self.stops_for(stop)
        key = cache_key(self._payload(messages, temperature, max_tokens, seed - sample, sample, stop, json_schema))
        record = CallRecord(c.provider, c.model, key, max_tokens=max_tokens)
        self._track([record])
        start = time.perf_counter()
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                record.cached, record.input_tokens, record.output_tokens = (
                    True,
                    hit["input_tokens"],
                    hit["output_tokens"],
                )
                record.latency_s = time.perf_counter() - start
                return LLMResult(hit["text"], record)
            if c.cache == "replay":
                record.error, record.error_kind = "not in cache (replay mode)", CacheMissError.kind
                exc = CacheMissError(
                    f"replay mode: no cached answer for {_describe(messages)} "
                    f"({self.name}, key {key[:12]}); run once with cache: on to fill it"
                )
                exc.record = record
                raise exc
        try:
            completion = self._call_with_retries(
                record, messages, temperature, max_tokens, seed, stop, response_format(c, json_schema)
            )
        except LLMError as exc:
            record.error, record.error_kind = str(exc), getattr(exc, "kind", "error")
            record.latency_s = time.perf_counter() - start
            log.warning("LLM call failed for good (%s, %s): %s", self.name, record.error_kind, exc)
            exc.record = record
            raise
        record.latency_s = time.perf_counter() - start
        record.reused_input_tokens = completion.reused_tokens
        return self._settle(record, completion.text, completion.input_tokens, completion.output_tokens)

    def _track(self, records: list[CallRecord]) -> None:
        """Account `records` to this client and to every `track()` block open in this thread."""
        self.calls.extend(records)
        for tracked in getattr(self._tracking, "lists", ()):
            tracked.extend(records)

    def _settle(self, record: CallRecord, text: str, input_tokens: int, output_tokens: int) -> LLMResult:
        """A call answered: its tokens and cost on the record, the answer in the cache."""
        c, price = self.config, self.config.price()
        record.input_tokens, record.output_tokens = input_tokens, output_tokens
        record.cost_usd = (input_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6
        if self.cache is not None:
            self.cache.put(
                record.key,
                provider=c.provider,
                model=c.model,
                text=text,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
            )
        return LLMResult(text, record)

    def _call_with_retries(self, record, messages, temperature, max_tokens, seed, stop, fmt=None, n=1) -> Completion:
        c = self.config
        estimate = sum(len(m.get("content") or "") for m in messages) // 4 + max_tokens * n
        last: RetryableError | None = None
        for attempt in range(c.max_retries + 1):
            record.attempts = attempt + 1
            self.limiter.acquire(estimate)
            try:
                completion = self.backend.chat(  # every option, to every backend (helpers.llm.protocol)
                    messages,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=seed,
                    timeout=c.timeout_s,
                    stop=stop,
                    response_format=fmt,
                    n=n,
                )
                completion.text = cut_at_stop(completion.text, stop)
                return completion
            except RetryableError as exc:
                last = exc
                record.retried.append(exc.kind)
                if exc.kind == "rate_limit" and exc.retry_after:  # the provider said when: every call waits
                    self.limiter.pause(exc.retry_after)
            finally:
                self.limiter.release()
            if attempt < c.max_retries:
                assert last is not None  # a returned call left the loop: only a RetryableError gets here
                delay = backoff_delay(
                    attempt + 1, base=c.backoff_base_s, cap=c.backoff_max_s, retry_after=last.retry_after, rng=self._rng
                )
                log.info("retrying %s in %.1fs after %s", self.name, delay, last.kind)
                time.sleep(delay)
        raise RetryableError(
            f"gave up after {c.max_retries + 1} attempts: {last}",
            retry_after=None,
            kind=last.kind if last else "retryable",
        )

    def complete_samples(self, messages: list[dict], n: int, **params) -> list[LLMResult]:
        """`n` independent samples of one request: `complete(..., sample=i)` for i < n, each cached
        under its own key. Those not cached go in requests of up to `config.n_per_request` choices
        (one request for ragas's 3 questions per answer where the provider takes n > 1): choice j of
        a request seeded s is sample s + j, so only consecutive missing samples share a request. One
        by one where the provider takes n=1 only, returns fewer choices than asked (Ollama) or
        refuses n > 1 (a 400)."""
        if n <= 1 or self.config.n_per_request <= 1 or self.config.cache == "replay":
            return [self.complete(messages, sample=i, **params) for i in range(n)]
        results: dict[int, LLMResult] = {}
        runs: list[list[int]] = []  # consecutive samples not in the cache
        for i in range(n):
            if self.cache is not None and self.cache.get(self.key_for(messages, sample=i, **params)) is not None:
                results[i] = self.complete(messages, sample=i, **params)
            elif runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
        # a backend that returns fewer choices than asked (one, for the local model) gets asked
        # for the rest alone below; the backend is built by the first request: a fully cached
        # call never needs one (nor a key)
        per_request = self.config.n_per_request
        for run in runs:
            for start in range(0, len(run), per_request):
                chunk = run[start : start + per_request]
                if len(chunk) == 1:
                    continue  # asked for alone below
                try:
                    results |= self._complete_choices(messages, chunk, **params)
                except LLMError as exc:
                    if isinstance(exc, RetryableError):
                        raise
                    log.info("%s refused n=%d (%s); asking one by one", self.name, len(chunk), exc)
        for i in range(n):  # alone, or not returned by a server that gave fewer choices
            if i not in results:
                results[i] = self.complete(messages, sample=i, **params)
        return [results[i] for i in range(n)]

    def _complete_choices(
        self, messages, samples, *, temperature=None, max_tokens=None, seed=None, stop=None, json_schema=None
    ) -> dict[int, LLMResult]:
        """One request for len(samples) choices; choice j is sample samples[j], cached as such."""
        _check_messages(messages)
        c = self.config
        temperature = c.temperature if temperature is None else temperature
        max_tokens = max_tokens or c.max_tokens
        base_seed = c.seed if seed is None else seed
        stop = self.stops_for(stop)
        records = []
        for i in samples:
            key = cache_key(self._payload(messages, temperature, max_tokens, base_seed, i, stop, json_schema))
            records.append(CallRecord(c.provider, c.model, key, max_tokens=max_tokens))
        self._track(records)
        start = time.perf_counter()
        fmt = response_format(c, json_schema)
        try:
            completion = self._call_with_retries(
                records[0], messages, temperature, max_tokens, base_seed + samples[0], stop, fmt, n=len(samples)
            )
        except LLMError as exc:
            for record in records:
                record.error, record.error_kind = str(exc), getattr(exc, "kind", "error")
                record.latency_s = time.perf_counter() - start
            exc.record = records[0]
            raise
        texts = [cut_at_stop(t, stop) for t in (completion.choices or [completion.text])][: len(samples)]
        for record in records[len(texts) :]:  # choices the server did not return: asked for again, alone
            self.calls.remove(record)
            for tracked in getattr(self._tracking, "lists", ()):
                tracked.remove(record)
        shares = split_total(completion.output_tokens, [len(t) for t in texts])
        out = {}
        for j, (i, record, text) in enumerate(zip(samples, records, texts)):
            # the prompt is paid once, by the first choice, and so is the wait; the output tokens shared by length
            record.latency_s = time.perf_counter() - start if j == 0 else 0.0
            out[i] = self._settle(record, text, completion.input_tokens if j == 0 else 0, shares[j])
        return out

    def complete_many(self, batch: list[list[dict]], **params) -> list[LLMResult]:
        """Complete every request (in parallel up to the provider's concurrency); a failed item
        gets text None and its error recorded, the others go on."""
        if self.config.cache == "replay" and self.cache is not None:
            missing = [_describe(m) for m in batch if self.cache.get(self.key_for(m, **params)) is None]
            if missing:
                raise CacheMissError(
                    f"replay mode: {len(missing)} of {len(batch)} requests are not cached "
                    f"({self.name}): " + "; ".join(missing[:5])
                )

        def one(messages):
            try:
                return self.complete(messages, **params)
            except LLMError as exc:
                return LLMResult(None, exc.record)

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(one, batch))

    @contextlib.contextmanager
    def track(self) -> Iterator[list[CallRecord]]:
        """The calls this thread makes inside the block, as a list of CallRecords: one sample's own
        calls even while other threads call the same LLM for other samples.

            with llm.track() as calls:
                ...
            llm.usage(calls)
        """
        lists = self._tracking.__dict__.setdefault("lists", [])
        calls: list[CallRecord] = []
        lists.append(calls)
        try:
            yield calls
        finally:
            lists.remove(calls)

    def totals(self, since: int = 0) -> dict:
        """Accounting over every call made through this object (or those after `since`, an index
        into `calls`)."""
        return self.usage(self.calls[since:])

    usage = staticmethod(usage)  # helpers.llm.call_records.usage: the sums over any list of calls

    def records(self) -> list[dict]:
        return [asdict(r) for r in self.calls]


def _check_messages(messages) -> None:
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    for i, m in enumerate(messages):
        if (
            not isinstance(m, dict)
            or m.get("role") not in {"system", "user", "assistant"}
            or not isinstance(m.get("content"), str)
        ):
            raise ValueError(f"messages[{i}] must be {{'role': system|user|assistant, 'content': str}}, got {m!r:.80}")


def _describe(messages) -> str:
    text = " ".join((messages[-1].get("content") or "").split())
    return repr(text[:60] + ("…" if len(text) > 60 else ""))
