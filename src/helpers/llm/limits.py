"""Retries with exponential backoff and jitter, and per-provider rate and concurrency limits."""

from __future__ import annotations

import random
import threading
import time
from collections import deque


def backoff_delay(attempt: int, *, base: float, cap: float, retry_after: float | None, rng: random.Random) -> float:
    """Seconds to wait before retry `attempt` (1-based).

    Retry-After, when the server sends it, is honoured as a floor; otherwise "full jitter"
    exponential backoff (Brooker, AWS Architecture Blog 2015): uniform(0, min(cap, base * 2**attempt)).
    """
    jittered = rng.uniform(0, min(cap, base * 2**attempt))
    if retry_after is not None:
        return min(cap, max(retry_after, 0.0)) + rng.uniform(0, base * 0.1)
    return jittered


class RateLimiter:
    """Sliding one-minute window on requests and tokens, plus a cap on concurrent calls.

    One instance per (provider, base_url, key variable), shared by every LLM object that talks
    to it, so two notebooks' clients in one process never exceed the provider's limits together.
    """

    _registry: dict[tuple, "RateLimiter"] = {}
    _registry_lock = threading.Lock()

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None, concurrency: int):
        self.rpm, self.tpm = requests_per_minute, tokens_per_minute
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._requests: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()

    @classmethod
    def shared(cls, key: tuple, requests_per_minute, tokens_per_minute, concurrency) -> "RateLimiter":
        with cls._registry_lock:
            if key not in cls._registry:
                cls._registry[key] = cls(requests_per_minute, tokens_per_minute, concurrency)
            return cls._registry[key]

    def _wait_time(self, now: float, tokens: int) -> float:
        while self._requests and now - self._requests[0] >= 60:
            self._requests.popleft()
        while self._tokens and now - self._tokens[0][0] >= 60:
            self._tokens.popleft()
        wait = 0.0
        if self.rpm and len(self._requests) >= self.rpm:
            wait = max(wait, 60 - (now - self._requests[0]))
        if self.tpm and self._tokens and sum(t for _, t in self._tokens) + tokens > self.tpm:
            wait = max(wait, 60 - (now - self._tokens[0][0]))
        return wait

    def acquire(self, estimated_tokens: int = 0) -> None:
        self._slots.acquire()
        while True:
            with self._lock:
                now = time.monotonic()
                wait = self._wait_time(now, estimated_tokens)
                if wait <= 0:
                    self._requests.append(now)
                    self._tokens.append((now, estimated_tokens))
                    return
            time.sleep(min(wait, 1.0))

    def release(self) -> None:
        self._slots.release()
