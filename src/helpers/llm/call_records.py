"""What each LLM call cost and how calls add up: `CallRecord` (one call: tokens, cost, latency,
cache hit, attempts, error), `LLMResult` (its text and record) and `usage` (the sums a run, a
judge or a `track()` block reports). Kept apart from helpers.llm.client, which makes the calls,
because the runner, the judges and the RAGAS scorer read these without calling anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CallRecord:
    provider: str
    model: str
    key: str
    input_tokens: int = 0
    output_tokens: int = 0
    reused_input_tokens: int = 0  # of input_tokens, those a local model did not compute (prefix reuse)
    latency_s: float = 0.0
    cached: bool = False
    cost_usd: float = 0.0
    max_tokens: int = 0  # the most it could have cost in output (helpers.experiment.dry_run)
    attempts: int = 0
    error: str | None = None
    error_kind: str | None = None
    retried: list[str] = field(default_factory=list)  # kind of each failed attempt, in order


@dataclass
class LLMResult:
    text: str | None
    record: CallRecord

    @property
    def ok(self) -> bool:
        return self.text is not None


def usage(calls: list[CallRecord]) -> dict:
    """Calls, cache hits, errors, tokens, cost and latency summed over `calls`."""
    return {
        "calls": len(calls),
        "cache_hits": sum(r.cached for r in calls),
        "errors": sum(r.error is not None for r in calls),
        "input_tokens": sum(r.input_tokens for r in calls),
        "output_tokens": sum(r.output_tokens for r in calls),
        "reused_input_tokens": sum(r.reused_input_tokens for r in calls),
        "max_output_tokens": sum(r.max_tokens for r in calls),  # had every answer run to max_tokens
        "requests": sum(r.attempts for r in calls),  # sent, retries included (n choices: one request)
        "retries": sum(len(r.retried) for r in calls),  # failed attempts that were tried again
        "rate_limited": sum(kind == "rate_limit" for r in calls for kind in r.retried),  # 429s among them
        "cost_usd": round(sum(r.cost_usd for r in calls), 6),
        "latency_s": round(sum(r.latency_s for r in calls), 3),
    }


def split_total(total: int, weights: list[int]) -> list[int]:
    """`total` in whole parts proportional to `weights` (equal parts when all are 0), summing to it:
    a request's output tokens shared among its choices by their lengths."""
    weights = weights if any(weights) else [1] * len(weights)
    parts = [total * w // sum(weights) for w in weights]
    parts[-1] += total - sum(parts)
    return parts
