"""What hosted providers allow and charge: rate-limit presets and list prices, each with its source
and the date it was read. Providers change both without notice: a run's config can override any
number (`requests_per_minute`, `prices: {model: {...}}`), and the provider's own console is the
authority for an account.

    llms:
      - {name: groq, provider: groq, model: llama-3.1-8b-instant, limits: groq-free}

fills `requests_per_minute`, `tokens_per_minute` and `concurrency` (where the config leaves them
unset) so that a free key paces itself instead of failing; `helpers run --dry-run` also checks a
run's calls and tokens against the daily limits.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

GROQ_LIMITS = "https://console.groq.com/docs/rate-limits (free plan table)"
GROQ_PRICES = "https://groq.com/pricing"
OPENAI_LIMITS = "OpenAI usage tier 1 (platform.openai.com/docs/models, 'Rate limits' per model)"
OPENAI_PRICES = "https://openai.com/api/pricing"
READ_ON = "2026-12-03"  # read from the stored copies of those pages; check before relying on them


@dataclass(frozen=True)
class LimitPreset:
    provider: str
    model: str
    requests_per_minute: float
    tokens_per_minute: float
    requests_per_day: float | None
    tokens_per_day: float | None
    concurrency: int
    source: str
    read_on: str = READ_ON


# Concurrency: enough calls in flight to reach the request rate at ~1-2 s per hosted call, and no
# more (more only queues at the provider): ceil(rpm / 60 * 2), at least 2.
LIMIT_PRESETS: dict[str, LimitPreset] = {
    "groq-free": LimitPreset("groq", "llama-3.1-8b-instant", 30, 6_000, 14_400, 500_000, 2, GROQ_LIMITS),
    "groq-free-70b": LimitPreset("groq", "llama-3.3-70b-versatile", 30, 12_000, 1_000, 100_000, 2, GROQ_LIMITS),
    "groq-free-gpt-oss-20b": LimitPreset("groq", "openai/gpt-oss-20b", 30, 8_000, 1_000, 200_000, 2, GROQ_LIMITS),
    "openai-tier1-mini": LimitPreset("openai-compatible", "gpt-4o-mini", 500, 200_000, 10_000, None, 17, OPENAI_LIMITS),
}


def limit_preset(name: str) -> LimitPreset:
    if name not in LIMIT_PRESETS:
        raise ValueError(f"unknown limits preset {name!r}; valid: {', '.join(sorted(LIMIT_PRESETS))}")
    return LIMIT_PRESETS[name]


class Price(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_per_mtok: float = Field(0.0, ge=0, description="USD per million input tokens")
    output_per_mtok: float = Field(0.0, ge=0, description="USD per million output tokens")
    # where the numbers were read: on the price itself, so a new price cannot come without one
    # (tests/test_contributor_map.py); left out of dumps, so a config's resolved form (and its
    # run id) is the numbers alone, as before prices carried their source
    source: str | None = Field(None, exclude=True, description="where the price was read (documentation only)")


# List prices, USD per million tokens (on-demand, no batch or cache discounts), read on READ_ON.
DEFAULT_PRICES: dict[str, Price] = {
    "llama-3.1-8b-instant": Price(input_per_mtok=0.05, output_per_mtok=0.08, source=GROQ_PRICES),
    "llama-3.3-70b-versatile": Price(input_per_mtok=0.59, output_per_mtok=0.79, source=GROQ_PRICES),
    "openai/gpt-oss-20b": Price(input_per_mtok=0.075, output_per_mtok=0.30, source=GROQ_PRICES),
    "gpt-4o-mini": Price(input_per_mtok=0.15, output_per_mtok=0.60, source=OPENAI_PRICES),
}
