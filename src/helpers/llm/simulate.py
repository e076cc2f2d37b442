"""A local server that behaves like a hosted API: latency, rate limits, bursts of failures.

`python -m helpers serve-llm --responder fast --simulate-latency 300 --rpm 600 --max-in-flight 30
--fail-rate 0.05 --seed 0` answers as Groq or OpenAI do under load, so the hosted path (retries,
pacing, resume) is measured here, on 127.0.0.1, at the scale of a real study:

- latency: each answered call takes `latency_ms` (+- uniform `jitter_ms`) plus its output tokens
  at `tokens_per_s` (a hosted model streams ~100-1000 tokens/s);
- limits: requests and tokens per sliding minute (`rpm`, `tpm`) and calls in flight
  (`max_in_flight`); past one, 429 with Retry-After (seconds until the window frees), as
  OpenAI and Groq answer;
- failures: a share `fail_rate` of calls fails, each as one of `failures`: "500" (server error),
  "hang" (no answer until the client gives up, or `hang_s`) or "drop" (the connection closed
  with no answer). Drawn from a generator seeded with `seed`: the same run sees the same failures.

`ledger`: a JSONL file that gets one line per answered call (a digest of the request, its status),
so a test can prove what was asked twice.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

FAILURE_KINDS = ("500", "hang", "drop")


@dataclass(frozen=True)
class Simulation:
    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    tokens_per_s: float | None = None
    rpm: float | None = None
    tpm: float | None = None
    max_in_flight: int | None = None
    fail_rate: float = 0.0
    failures: tuple[str, ...] = FAILURE_KINDS
    hang_s: float = 30.0
    seed: int = 0
    ledger: str | None = None
    window_s: float = 60.0  # the limits' window (a minute; tests shorten it)

    def __post_init__(self):
        bad = [kind for kind in self.failures if kind not in FAILURE_KINDS]
        if bad or not self.failures:
            raise ValueError(f"--failures: unknown kinds {bad}; choose among {', '.join(FAILURE_KINDS)}")
        if not 0 <= self.fail_rate < 1:
            raise ValueError(f"--fail-rate must be in [0, 1), got {self.fail_rate}")
        for name in ("latency_ms", "jitter_ms", "hang_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 0")
        for name in ("tokens_per_s", "rpm", "tpm", "max_in_flight"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"--{name.replace('_', '-')} must be > 0 when given")

    @property
    def active(self) -> bool:
        return self != Simulation()


class Refused(Exception):
    """A call the simulated provider will not run now: 429 (limits) or an injected 500."""

    def __init__(self, status: int, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


class Dropped(Exception):
    """An injected failure with no answer at all: close the connection (after `wait_s`)."""

    def __init__(self, kind: str, wait_s: float = 0.0):
        super().__init__(kind)
        self.kind, self.wait_s = kind, wait_s


class SimulatedProvider:
    """The server side of a Simulation: one per server, shared by its handler threads."""

    def __init__(self, simulation: Simulation):
        self.sim = simulation
        self._rng = random.Random(simulation.seed)
        self._lock = threading.Lock()
        self._requests: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._in_flight = 0
        self.counts = {"answered": 0, "rate_limited": 0, "500": 0, "hang": 0, "drop": 0}

    def admit(self, prompt_tokens: int) -> float:
        """Count the call against the limits, or refuse it (Refused 429); then maybe inject a
        failure (Refused 500, Dropped hang/drop). Returns the call's latency (s), for `finish`;
        a call admitted must be followed by `finish` or `done()`."""
        sim = self.sim
        with self._lock:
            now = time.monotonic()
            window = sim.window_s
            while self._requests and now - self._requests[0] >= window:
                self._requests.popleft()
            while self._tokens and now - self._tokens[0][0] >= window:
                self._tokens.popleft()
            wait, why = 0.0, ""
            if sim.max_in_flight and self._in_flight >= sim.max_in_flight:
                wait, why = 1.0, f"{sim.max_in_flight} requests in flight"
            elif sim.rpm and len(self._requests) >= sim.rpm:
                wait, why = window - (now - self._requests[0]), f"{sim.rpm:g} requests per minute"
            elif sim.tpm and self._tokens and sum(t for _, t in self._tokens) + prompt_tokens > sim.tpm:
                wait, why = window - (now - self._tokens[0][0]), f"{sim.tpm:g} tokens per minute"
            if why:
                self.counts["rate_limited"] += 1
                raise Refused(429, f"rate limit reached: {why}; retry after {wait:.1f} s", retry_after=max(wait, 0.1))
            self._requests.append(now)
            self._tokens.append((now, prompt_tokens))
            self._in_flight += 1
            failure = self._rng.choice(sim.failures) if self._rng.random() < sim.fail_rate else None
            jitter = self._rng.uniform(-sim.jitter_ms, sim.jitter_ms) if sim.jitter_ms else 0.0
            latency = max(0.0, sim.latency_ms + jitter) / 1000
            if failure:
                self.counts[failure] += 1
        if failure == "500":
            self.done()
            time.sleep(latency)
            raise Refused(500, "injected server error (simulation)")
        if failure in ("hang", "drop"):
            self.done()
            raise Dropped(failure, sim.hang_s if failure == "hang" else latency)
        return latency

    def finish(self, output_tokens: int, request_digest: str, latency: float = 0.0) -> None:
        """After the model answered: the rest of the call's time (latency and generation), the
        output tokens counted against the token limit, the call written to the ledger."""
        sim = self.sim
        try:
            seconds = latency
            if sim.tokens_per_s:
                seconds += output_tokens / sim.tokens_per_s
            time.sleep(seconds)
            with self._lock:
                self._tokens.append((time.monotonic(), output_tokens))
                if sim.ledger:
                    with open(sim.ledger, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps({"digest": request_digest, "status": 200}) + "\n")
                self.counts["answered"] += 1
        finally:  # whatever happens, the call is no longer in flight
            self.done()

    def done(self) -> None:
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)


def request_digest(request: dict) -> str:
    """What makes two requests the same call (the ledger's key)."""
    fields = {k: request.get(k) for k in ("model", "messages", "temperature", "max_tokens", "seed", "response_format")}
    return hashlib.sha256(json.dumps(fields, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def read_ledger(path: str | Path) -> list[str]:
    """The digests of the answered calls, in order."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line)["digest"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
