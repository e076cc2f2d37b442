"""Retries with exponential backoff and jitter, and per-provider rate and concurrency limits."""

from __future__ import annotations

import random
import threading
import time
from collections import deque

# The client's minute is a little longer than the provider's: the provider stamps a request when it
# arrives, after this process did, so a window of exactly 60 s here would send the 601st request
# a few milliseconds before the provider's window has freed a place for it.
WINDOW_S = 60.5


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
    """Requests and tokens per sliding minute, plus a cap on concurrent calls.

    One instance per (provider, base_url, key variable), shared by every LLM object that talks
    to it, so two notebooks' clients in one process never exceed the provider's limits together.

    A provider that quotes "600 requests per minute" may enforce it over the minute (a sliding
    window: a burst of 600 is fine) or over shorter periods (10 per second: OpenAI's rate-limit
    guide says limits may be quantized). The limiter starts with the minute, the faster of the two,
    and the first 429 teaches it otherwise: every call to the provider pauses for the 429's
    Retry-After (`pause`), and from then on requests start at least 60/rpm s apart, after a burst
    of `concurrency` (a generic cell rate algorithm, ITU-T I.371, with that burst tolerance).
    """

    _registry: dict[tuple, "RateLimiter"] = {}
    _registry_lock = threading.Lock()

    def __init__(
        self,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        concurrency: int,
        *,
        window_s: float = WINDOW_S,
    ):
        self.rpm, self.tpm, self.window_s = requests_per_minute, tokens_per_minute, window_s
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._requests: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._interval = 0.0  # 60 / rpm once a 429 showed the provider enforces over short periods
        self._concurrency = concurrency
        self._burst = 0.0
        self._theoretical = 0.0  # GCRA's theoretical arrival time of the next request
        self._paused_until = 0.0
        self.paused = 0  # how many 429s paused the provider

    @classmethod
    def shared(cls, key: tuple, requests_per_minute, tokens_per_minute, concurrency) -> "RateLimiter":
        with cls._registry_lock:
            if key not in cls._registry:
                cls._registry[key] = cls(requests_per_minute, tokens_per_minute, concurrency)
            return cls._registry[key]

    def _wait_time(self, now: float, tokens: int) -> float:
        while self._requests and now - self._requests[0] >= self.window_s:
            self._requests.popleft()
        while self._tokens and now - self._tokens[0][0] >= self.window_s:
            self._tokens.popleft()
        wait = max(0.0, self._paused_until - now)
        if self._interval:
            wait = max(wait, self._theoretical - self._burst - now)
        if self.rpm and len(self._requests) >= self.rpm:
            wait = max(wait, self.window_s - (now - self._requests[0]))
        if self.tpm and self._tokens and sum(t for _, t in self._tokens) + tokens > self.tpm:
            wait = max(wait, self.window_s - (now - self._tokens[0][0]))
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
                    self._theoretical = max(self._theoretical, now) + self._interval
                    return
            time.sleep(min(wait, 1.0))

    def release(self) -> None:
        self._slots.release()

    def pause(self, seconds: float) -> None:
        """The provider said 429 with Retry-After: no call to it starts for `seconds`."""
        with self._lock:
            self._paused_until = max(self._paused_until, time.monotonic() + max(seconds, 0.0))
            self.paused += 1
            if self.rpm and not self._interval:  # the provider enforces over shorter periods: pace evenly
                self._interval = 60.0 / self.rpm
                self._burst = self._interval * max(self._concurrency - 1, 0)
                self._theoretical = self._paused_until
